"""A scripted Anthropic Messages API server on 127.0.0.1 (stdlib only), played by the same ``Step``
script as the OpenAI-compatible one (tests/interop/llm_server.py, whose bookkeeping it shares).

It answers ``POST /v1/messages`` with the next ``Step``, as a ``message`` object or, for
``"stream": true``, as the SSE events message_start, content_block_start / _delta / _stop,
message_delta, message_stop.  A step's thought becomes a ``text`` block before its ``tool_use`` blocks
(id = the story's call id, ``input`` = the arguments object), ``stop_reason`` "tool_use"; a final step
is one ``text`` block, ``stop_reason`` "end_turn".  ``url`` is the base URL WITHOUT /v1 (the anthropic
client appends /v1/messages); ``requests`` records every request (``{"path", "body"}``).
"""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler
from typing import Any

from .llm_server import MODEL, ScriptedLLMServer
from .story import Step

USAGE = {"input_tokens": 21, "output_tokens": 7}


def content_blocks(step: Step) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    text = step.final or step.thought
    if text:
        blocks.append({"type": "text", "text": text})
    for call in step.tool_calls:
        blocks.append({"type": "tool_use", "id": call.call_id, "name": call.name,
                       "input": dict(call.arguments)})
    return blocks


def stop_reason(step: Step) -> str:
    return "tool_use" if step.tool_calls else "end_turn"


def message(step: Step, n: int, model: str) -> dict[str, Any]:
    return {"id": f"msg_{n:02d}", "type": "message", "role": "assistant", "model": model,
            "content": content_blocks(step), "stop_reason": stop_reason(step), "stop_sequence": None,
            "usage": dict(USAGE)}


def message_events(step: Step, n: int, model: str) -> list[tuple[str, dict[str, Any]]]:
    """The same answer as a stream: one start/delta/stop triple per content block."""
    start = {**message(step, n, model), "content": [], "stop_reason": None,
             "usage": {"input_tokens": USAGE["input_tokens"], "output_tokens": 1}}
    events: list[tuple[str, dict[str, Any]]] = [
        ("message_start", {"type": "message_start", "message": start})]
    for i, block in enumerate(content_blocks(step)):
        if block["type"] == "text":
            empty: dict[str, Any] = {"type": "text", "text": ""}
            delta: dict[str, Any] = {"type": "text_delta", "text": block["text"]}
        else:
            empty = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        events += [("content_block_start",
                    {"type": "content_block_start", "index": i, "content_block": empty}),
                   ("content_block_delta", {"type": "content_block_delta", "index": i, "delta": delta}),
                   ("content_block_stop", {"type": "content_block_stop", "index": i})]
    events.append(("message_delta", {"type": "message_delta",
                                     "delta": {"stop_reason": stop_reason(step), "stop_sequence": None},
                                     "usage": {"output_tokens": USAGE["output_tokens"]}}))
    events.append(("message_stop", {"type": "message_stop"}))
    return events


class ScriptedAnthropicServer(ScriptedLLMServer):
    """Serve ``steps`` in order as Anthropic messages; ``url`` is the base URL (no /v1)."""

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - silence stderr
                pass

            def _send(self, status: int, data: bytes, content_type: str) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(data)))
                self.send_header("request-id", "req_scripted")
                self.end_headers()
                self.wfile.write(data)

            def _send_error(self, status: int, kind: str, text: str) -> None:
                error = {"type": "error", "error": {"type": kind, "message": text}}
                self._send(status, json.dumps(error).encode(), "application/json")

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                path = self.path.split("?")[0].rstrip("/")
                if not path.endswith("/v1/messages"):
                    self._send_error(404, "not_found_error", f"no route {path}")
                    return
                n, step = server._next(path, body)
                if step is None:
                    self._send_error(500, "api_error", "script exhausted")
                    return
                model = body.get("model") or MODEL
                if body.get("stream"):
                    data = b"".join(f"event: {name}\ndata: {json.dumps(payload)}\n\n".encode()
                                    for name, payload in message_events(step, n, model))
                    self._send(200, data, "text/event-stream")
                else:
                    self._send(200, json.dumps(message(step, n, model)).encode(), "application/json")

        return Handler
