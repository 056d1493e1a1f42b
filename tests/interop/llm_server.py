"""A scripted OpenAI-compatible HTTP server on 127.0.0.1 (stdlib only).

It answers ``POST /v1/chat/completions`` and ``POST /v1/responses`` with the next ``Step`` of a script,
whatever the endpoint, and records every request body so a scenario can show what the framework sent.

Chat Completions: the thought goes into ``message.content`` next to ``tool_calls``.
Responses: the thought becomes a ``reasoning`` item (summary text) and/or an assistant ``message`` item
placed before the ``function_call`` items (``responses_thought`` chooses).
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from .story import Step

CREATED = 1_760_000_000
MODEL = "scripted-model"


def _usage_chat() -> dict[str, Any]:
    return {"prompt_tokens": 21, "completion_tokens": 7, "total_tokens": 28}


def _usage_responses() -> dict[str, Any]:
    return {
        "input_tokens": 21,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 7,
        "output_tokens_details": {"reasoning_tokens": 3},
        "total_tokens": 28,
    }


def chat_completion(step: Step, n: int, model: str) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": step.final or step.thought, "refusal": None}
    if step.tool_calls:
        message["tool_calls"] = [
            {
                "id": call.call_id,
                "type": "function",
                "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
            }
            for call in step.tool_calls
        ]
    return {
        "id": f"chatcmpl-{n}",
        "object": "chat.completion",
        "created": CREATED + n,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": "tool_calls" if step.tool_calls else "stop",
            }
        ],
        "usage": _usage_chat(),
    }


def chat_completion_chunks(step: Step, n: int, model: str) -> list[dict[str, Any]]:
    """The same answer as a stream: role+content chunk, one chunk per tool call, a finish chunk."""
    base = {"id": f"chatcmpl-{n}", "object": "chat.completion.chunk", "created": CREATED + n, "model": model}
    chunks = [{**base, "choices": [{"index": 0, "delta": {"role": "assistant",
                                                           "content": step.final or step.thought},
                                    "finish_reason": None}]}]
    for i, call in enumerate(step.tool_calls):
        delta = {"tool_calls": [{"index": i, "id": call.call_id, "type": "function",
                                 "function": {"name": call.name, "arguments": json.dumps(call.arguments)}}]}
        chunks.append({**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]})
    chunks.append({**base, "choices": [{"index": 0, "delta": {},
                                        "finish_reason": "tool_calls" if step.tool_calls else "stop"}],
                   "usage": _usage_chat()})
    return chunks


def response_object(step: Step, n: int, model: str, thought_as: str) -> dict[str, Any]:
    output: list[dict[str, Any]] = []
    if step.thought and thought_as in ("reasoning", "both"):
        output.append(
            {
                "type": "reasoning",
                "id": f"rs_{n}",
                "summary": [{"type": "summary_text", "text": step.thought}],
            }
        )
    text = step.final or (step.thought if thought_as in ("message", "both") else None)
    if text:
        output.append(
            {
                "type": "message",
                "id": f"msg_{n}",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}],
            }
        )
    for call in step.tool_calls:
        output.append(
            {
                "type": "function_call",
                "id": f"fc_{call.call_id}",
                "call_id": call.call_id,
                "name": call.name,
                "arguments": json.dumps(call.arguments),
                "status": "completed",
            }
        )
    return {
        "id": f"resp_{n}",
        "object": "response",
        "created_at": CREATED + n,
        "status": "completed",
        "model": model,
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "temperature": 1.0,
        "top_p": 1.0,
        "text": {"format": {"type": "text"}},
        "truncation": "disabled",
        "usage": _usage_responses(),
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "metadata": {},
    }


class ScriptedLLMServer:
    """Serve ``steps`` in order; ``url`` is the OpenAI base URL (ending in /v1)."""

    def __init__(self, steps: list[Step], *, responses_thought: str = "both") -> None:
        if responses_thought not in ("reasoning", "message", "both", "none"):
            raise ValueError(responses_thought)
        self.steps = list(steps)
        self.responses_thought = responses_thought
        self.requests: list[dict[str, Any]] = []
        self.errors: list[str] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._thread = threading.Thread(target=self._server.serve_forever, name="scripted-llm", daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> ScriptedLLMServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)

    @property
    def remaining(self) -> int:
        return len(self.steps)

    def _next(self, path: str, body: dict[str, Any]) -> tuple[int, Step | None]:
        with self._lock:
            self.requests.append({"path": path, "body": body})
            n = len(self.requests)
            if not self.steps:
                self.errors.append(f"script exhausted at request {n} ({path})")
                return n, None
            return n, self.steps.pop(0)

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - silence stderr
                pass

            def _send_json(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _send_sse(self, events: list[dict[str, Any]]) -> None:
                data = b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events)
                data += b"data: [DONE]\n\n"
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:  # noqa: N802
                if self.path.rstrip("/").endswith("/models"):
                    self._send_json(200, {"object": "list", "data": [{"id": MODEL, "object": "model"}]})
                else:
                    self._send_json(404, {"error": {"message": f"no route {self.path}"}})

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                path = self.path.split("?")[0].rstrip("/")
                if not (path.endswith("/chat/completions") or path.endswith("/responses")):
                    self._send_json(404, {"error": {"message": f"no route {path}"}})
                    return
                n, step = server._next(path, body)
                if step is None:
                    self._send_json(500, {"error": {"message": "script exhausted", "type": "server_error"}})
                    return
                model = body.get("model") or MODEL
                if path.endswith("/chat/completions"):
                    if body.get("stream"):
                        self._send_sse(chat_completion_chunks(step, n, model))
                    else:
                        self._send_json(200, chat_completion(step, n, model))
                elif body.get("stream"):
                    server.errors.append("streaming Responses API is not scripted")
                    self._send_json(400, {"error": {"message": "stream not supported"}})
                else:
                    self._send_json(200, response_object(step, n, model, server.responses_thought))

        return Handler
