"""End-to-end check of the scale-out path that run-local.sh starts.

  send    build T GenAI agent traces (invoke_agent -> chat, execute_tool, chat) with the OpenTelemetry
          SDK, encode them as OTLP, and send them to the front Collector over OTLP/gRPC with C
          concurrent clients (a request is retried on UNAVAILABLE / DEADLINE_EXCEEDED, so every
          trace id listed was acknowledged: by front.yaml's design, that means it is in Kafka).
          Writes the trace ids to --ids and prints spans/s from first request to last answer.
  verify  for every trace id in --ids: which of the given otel-prov stores hold it (the
          otelprov:traceId literal; the stores are opened read-only, so the serves may still run),
          and, with --jaeger, whether Jaeger returns the trace with all its spans. Waits up to
          --wait seconds for the consumers to catch up. Exit 0 when every trace is in exactly one
          store (and complete in Jaeger).
  wait-sent  poll the consumer Collectors' metrics until they have exported N spans (for a
          throughput figure that includes Kafka and the serves).

    python e2e-check.py send --endpoint 127.0.0.1:4317 --traces 2000 --ids ids.txt
    python e2e-check.py wait-sent --metrics http://127.0.0.1:8890/metrics --metrics ... --spans N --since-now
    python e2e-check.py verify --ids ids.txt --store RUN/serve-1/store --store RUN/serve-2/store \
        --jaeger http://127.0.0.1:16686

Needs grpcio, opentelemetry-sdk, opentelemetry-exporter-otlp-proto-common and pyoxigraph (all in the
repo's .venv); it does not import otel_prov.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import threading
import time
import urllib.error
import urllib.request
from collections import Counter

EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
TRACE_ID_P = "https://w3id.org/otel-prov/ns#traceId"
SPANS_PER_TRACE = 4


def build_traces(n: int, seed: int) -> list[tuple[str, list]]:
    """n agent traces of SPANS_PER_TRACE spans each, as (hex trace id, [ReadableSpan])."""
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.sdk.trace.id_generator import RandomIdGenerator
    from opentelemetry.trace import SpanKind

    random.seed(seed)
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "scale-e2e-agent"}),
                              id_generator=RandomIdGenerator())
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("scale-e2e")
    for k in range(n):
        question = f"What is {k} times 7?"
        user_msg = json.dumps([{"role": "user", "parts": [{"type": "text", "content": question}]}])
        with tracer.start_as_current_span("invoke_agent calculator", kind=SpanKind.INTERNAL, attributes={
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "calculator",
            "gen_ai.conversation.id": f"conv-{seed}-{k}",
            "gen_ai.input.messages": user_msg,
        }) as root:
            with tracer.start_as_current_span("chat scripted-model", kind=SpanKind.CLIENT, attributes={
                "gen_ai.operation.name": "chat", "gen_ai.request.model": "scripted-model",
                "gen_ai.provider.name": "local",
                "gen_ai.input.messages": user_msg,
                "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [
                    {"type": "reasoning", "content": f"I should multiply {k} by 7."},
                    {"type": "tool_call", "id": f"call-{k}", "name": "multiply",
                     "arguments": {"a": k, "b": 7}}]}]),
                "gen_ai.usage.input_tokens": 20, "gen_ai.usage.output_tokens": 12,
            }):
                pass
            with tracer.start_as_current_span("execute_tool multiply", kind=SpanKind.INTERNAL, attributes={
                "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "multiply",
                "gen_ai.tool.call.id": f"call-{k}", "gen_ai.tool.type": "function",
                "gen_ai.tool.call.arguments": json.dumps({"a": k, "b": 7}),
                "gen_ai.tool.call.result": str(k * 7),
            }):
                pass
            with tracer.start_as_current_span("chat scripted-model", kind=SpanKind.CLIENT, attributes={
                "gen_ai.operation.name": "chat", "gen_ai.request.model": "scripted-model",
                "gen_ai.provider.name": "local",
                "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [
                    {"type": "text", "content": f"{k} times 7 is {k * 7}."}]}]),
            }):
                pass
            root.set_attribute("gen_ai.output.messages", json.dumps(
                [{"role": "assistant", "parts": [{"type": "text", "content": f"{k} times 7 is {k * 7}."}]}]))
    by_trace: dict[int, list] = {}
    for span in memory.get_finished_spans():
        by_trace.setdefault(span.context.trace_id, []).append(span)
    provider.shutdown()
    return [(f"{tid:032x}", spans) for tid, spans in by_trace.items()]


def send(args: argparse.Namespace) -> int:
    import grpc
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    t0 = time.perf_counter()
    traces = build_traces(args.traces, args.seed)
    # Requests of --traces-per-request whole traces; with --split, a trace's spans go in two
    # different requests (as a BatchSpanProcessor does), to check they still meet in one store.
    requests: list[tuple[bytes, list[str], int]] = []
    per = args.traces_per_request
    for i in range(0, len(traces), per):
        chunk = traces[i:i + per]
        if args.split:
            first = [s for _, spans in chunk for s in spans[: len(spans) // 2]]
            second = [s for _, spans in chunk for s in spans[len(spans) // 2:]]
            for part in (first, second):
                requests.append((encode_spans(part).SerializeToString(), [t for t, _ in chunk], len(part)))
        else:
            spans = [s for _, sp in chunk for s in sp]
            requests.append((encode_spans(spans).SerializeToString(), [t for t, _ in chunk], len(spans)))
    print(f"built {len(traces)} traces, {sum(n for *_, n in requests)} spans in {len(requests)} requests "
          f"({time.perf_counter() - t0:.1f}s)", file=sys.stderr)

    lock = threading.Lock()
    acked: list[str] = []
    stats = Counter()
    queue = list(reversed(requests))
    rate_delay = (1.0 / args.max_rps) if args.max_rps else 0.0

    def worker() -> None:
        channel = grpc.insecure_channel(args.endpoint, options=[("grpc.max_send_message_length", 64 << 20)])
        call = channel.unary_unary(EXPORT, request_serializer=None, response_deserializer=None)
        while True:
            with lock:
                if not queue:
                    break
                body, ids, n = queue.pop()
            while True:
                try:
                    call(body, timeout=args.timeout)
                    break
                except grpc.RpcError as err:
                    code = err.code()
                    with lock:
                        stats[f"retry {code.name}"] += 1
                    if code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED,
                                grpc.StatusCode.RESOURCE_EXHAUSTED, grpc.StatusCode.ABORTED):
                        time.sleep(0.5)
                        continue
                    raise
            with lock:
                acked.extend(ids)
                stats["spans"] += n
                stats["requests"] += 1
            if rate_delay:
                time.sleep(rate_delay * args.concurrency)
        channel.close()

    start = time.perf_counter()
    start_epoch = time.time()
    threads = [threading.Thread(target=worker) for _ in range(args.concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    secs = time.perf_counter() - start
    unique = sorted(set(acked))
    with open(args.ids, "w") as fh:
        fh.write("\n".join(unique) + "\n")
    print(json.dumps({"traces": len(unique), "spans": stats["spans"], "requests": stats["requests"],
                      "seconds": round(secs, 2), "spans_per_s": round(stats["spans"] / secs, 1),
                      "start_epoch": round(start_epoch, 3),
                      "retries": {k: v for k, v in stats.items() if k.startswith("retry")}}))
    return 0


def store_trace_ids(path: str) -> set[str]:
    import pyoxigraph

    try:
        store = pyoxigraph.Store.read_only(path)
    except OSError:
        return set()
    q = f"SELECT DISTINCT ?t WHERE {{ GRAPH ?g {{ ?s <{TRACE_ID_P}> ?t }} }}"
    ids = {sol["t"].value for sol in store.query(q)}
    q2 = f"SELECT DISTINCT ?t WHERE {{ ?s <{TRACE_ID_P}> ?t }}"
    ids |= {sol["t"].value for sol in store.query(q2)}
    return ids


def jaeger_span_count(base: str, trace_id: str) -> int:
    try:
        with urllib.request.urlopen(f"{base.rstrip('/')}/api/traces/{trace_id}", timeout=10) as resp:
            data = json.load(resp)
    except urllib.error.HTTPError as err:
        if err.code == 404:
            return 0
        raise
    return sum(len(t.get("spans", [])) for t in data.get("data") or [])


def verify(args: argparse.Namespace) -> int:
    ids = [line.strip() for line in open(args.ids) if line.strip()]
    want = set(ids)
    deadline = time.monotonic() + args.wait
    while True:
        per_store = {p: store_trace_ids(p) for p in args.store}
        where = Counter()
        for got in per_store.values():
            for t in got & want:
                where[t] += 1
        missing = [t for t in ids if where[t] == 0]
        if not missing or time.monotonic() > deadline:
            break
        print(f"  waiting: {len(missing)} of {len(ids)} traces not in any store yet", file=sys.stderr)
        time.sleep(2)
    twice = [t for t in ids if where[t] > 1]
    out = {
        "traces": len(ids),
        "per_store": {p: len(got & want) for p, got in per_store.items()},
        "in_no_store": len(missing),
        "in_more_than_one_store": len(twice),
        "unexpected_ids_in_stores": sum(len(got - want) for got in per_store.values()),
    }
    # After a consumer was killed, records it had exported but not yet committed are delivered
    # again by the next owner: with one store per serve that trace is then in two stores
    # (at-least-once; with one shared store it would be a no-op). --allow-duplicates accepts that.
    ok = not missing and (args.allow_duplicates or not twice)
    if args.jaeger:
        n = len(ids) if args.jaeger_sample <= 0 else min(args.jaeger_sample, len(ids))
        sample = ids if n == len(ids) else random.Random(1).sample(ids, n)
        incomplete = []
        jdeadline = time.monotonic() + args.wait
        pending = list(sample)
        while pending:
            pending = [t for t in pending if jaeger_span_count(args.jaeger, t) < SPANS_PER_TRACE]
            if not pending or time.monotonic() > jdeadline:
                break
            time.sleep(2)
        incomplete = pending
        out["jaeger_checked"] = len(sample)
        out["jaeger_incomplete_or_missing"] = len(incomplete)
        ok = ok and not incomplete
    if missing:
        out["missing_sample"] = missing[:5]
    if twice:
        out["twice_sample"] = twice[:5]
    out["ok"] = ok
    print(json.dumps(out, indent=1))
    return 0 if ok else 1


def metric_sum(url: str, name: str) -> float:
    """Sum of a Prometheus counter over all its series at url (0 when unreachable)."""
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            text = resp.read().decode()
    except OSError:
        return 0.0
    total = 0.0
    for line in text.splitlines():
        if line.startswith(name + "{") or line.startswith(name + " "):
            total += float(line.rsplit(" ", 1)[1])
    return total


def wait_sent(args: argparse.Namespace) -> int:
    """Poll the consumers' otelcol_exporter_sent_spans until they add up to --spans."""
    start = time.perf_counter()
    deadline = start + args.wait
    base = sum(metric_sum(u, args.metric) for u in args.metrics) if args.since_now else 0.0
    last, last_t, last_epoch = -1.0, start, time.time()
    while True:
        now_sent = sum(metric_sum(u, args.metric) for u in args.metrics) - base
        t = time.perf_counter()
        if now_sent != last:
            last, last_t, last_epoch = now_sent, t, time.time()
        if now_sent >= args.spans or t > deadline:
            break
        time.sleep(0.25)
    out = {"spans_expected": args.spans, "spans_sent_by_consumers": int(last),
           "seconds_to_last_change": round(last_t - start, 2), "last_change_epoch": round(last_epoch, 3)}
    print(json.dumps(out))
    return 0 if last >= args.spans else 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("send")
    s.add_argument("--endpoint", default="127.0.0.1:4317")
    s.add_argument("--traces", type=int, default=2000)
    s.add_argument("--traces-per-request", type=int, default=64)
    s.add_argument("--split", action="store_true", help="send each trace in two requests")
    s.add_argument("--concurrency", type=int, default=4)
    s.add_argument("--timeout", type=float, default=30.0)
    s.add_argument("--max-rps", type=float, default=0.0, help="requests per second in all (0: no limit)")
    s.add_argument("--seed", type=int, default=1)
    s.add_argument("--ids", required=True)
    v = sub.add_parser("verify")
    v.add_argument("--ids", required=True)
    v.add_argument("--store", action="append", default=[], help="an otel-prov store directory (repeat)")
    v.add_argument("--jaeger", default="", help="Jaeger query base URL")
    v.add_argument("--jaeger-sample", type=int, default=0, help="check only this many traces (0: all)")
    v.add_argument("--wait", type=float, default=120.0)
    v.add_argument("--allow-duplicates", action="store_true",
                   help="a trace in more than one store is fine (redelivery after a killed consumer)")
    w = sub.add_parser("wait-sent")
    w.add_argument("--metrics", action="append", default=[], help="a consumer's /metrics URL (repeat)")
    w.add_argument("--metric", default="otelcol_exporter_sent_spans")
    w.add_argument("--spans", type=int, required=True, help="stop when the sum reaches this")
    w.add_argument("--since-now", action="store_true", help="count from the current values")
    w.add_argument("--wait", type=float, default=600.0)
    args = ap.parse_args()
    return {"send": send, "verify": verify, "wait-sent": wait_sent}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
