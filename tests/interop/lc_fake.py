"""A scripted LangChain chat model that emits the story's tool calls (bind_tools works).

Import only where langchain-core is installed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import PrivateAttr

from .story import Step


class ScriptedChatModel(BaseChatModel):
    """Answers with the next scripted ``Step``: the thought as content (or as a reasoning block), and
    the tool calls."""

    steps: list[Any]
    reasoning_blocks: bool = False
    model_name: str = "scripted-model"
    _served: int = PrivateAttr(default=0)

    @property
    def _llm_type(self) -> str:
        return "scripted-chat-model"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model_name": self.model_name}

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Any:  # type: ignore[override]
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)

    def _message_for(self, step: Step) -> AIMessage:
        content: Any
        if step.final is not None:
            content = step.final
        elif self.reasoning_blocks:
            content = [{"type": "reasoning", "reasoning": step.thought}]
        else:
            content = step.thought or ""
        return AIMessage(
            content=content,
            tool_calls=[
                {"name": c.name, "args": dict(c.arguments), "id": c.call_id, "type": "tool_call"}
                for c in step.tool_calls
            ],
            usage_metadata={"input_tokens": 21, "output_tokens": 7, "total_tokens": 28},
            response_metadata={"model_name": self.model_name,
                               "finish_reason": "tool_calls" if step.tool_calls else "stop"},
            id=f"run-scripted-{self._served}",
        )

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        if self._served >= len(self.steps):
            raise RuntimeError("script exhausted")
        step = self.steps[self._served]
        self._served += 1
        return ChatResult(generations=[ChatGeneration(message=self._message_for(step))])

    @property
    def remaining(self) -> int:
        return len(self.steps) - self._served
