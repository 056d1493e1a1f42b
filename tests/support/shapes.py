"""GenAI spans of an agent run, in the conventions' shapes (chat calls with their messages, tool
calls with their ids, the agent around them), to build with :func:`tests.support.genai.make`."""

from __future__ import annotations

import json
from typing import Any

from opentelemetry.trace import SpanKind

from tests.support.genai import S


def msgs(*messages: dict[str, Any]) -> str:
    return json.dumps(list(messages))


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "parts": [{"type": "text", "content": text}]}


def said(text: str | None, *calls: tuple[str, str, dict[str, Any]]) -> dict[str, Any]:
    parts: list[dict[str, Any]] = [{"type": "text", "content": text}] if text else []
    parts += [{"type": "tool_call", "id": i, "name": n, "arguments": a} for i, n, a in calls]
    return {"role": "assistant", "parts": parts}


def results(*pairs: tuple[str | None, str]) -> dict[str, Any]:
    return {
        "role": "tool",
        "parts": [
            {"type": "tool_call_response", "response": r, **({"id": i} if i else {})} for i, r in pairs
        ],
    }


def chat(start: int, inputs: list[dict[str, Any]], output: dict[str, Any], **extra: Any) -> S:
    return S(
        "chat m",
        start,
        start + 5,
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": "m",
            "gen_ai.input.messages": msgs(*inputs),
            "gen_ai.output.messages": msgs(output),
            **extra,
        },
        kind=SpanKind.CLIENT,
    )


def tool(start: int, name: str, call_id: str | None, args: dict[str, Any], result: str, **extra: Any) -> S:
    attrs = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": name,
        "gen_ai.tool.call.arguments": json.dumps(args),
        "gen_ai.tool.call.result": result,
        **extra,
    }
    if call_id:
        attrs["gen_ai.tool.call.id"] = call_id
    return S(f"execute_tool {name}", start, start + 2, attrs)


def agent(children: list[S], name: str = "weather", end: int = 1000, **attrs: Any) -> S:
    return S(
        f"invoke_agent {name}",
        0,
        end,
        {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": name, **attrs},
        children,
    )
