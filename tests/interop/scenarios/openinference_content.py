"""The ``--content on|off|redacted`` switch of the OpenInference scenarios that take it (LlamaIndex,
DSPy), shared by them; imports nothing of a framework, so it is called before the framework import.

  --content on        OpenInference's default TraceConfig: everything recorded
  --content redacted  OpenInference's own hiding, OPENINFERENCE_HIDE_INPUTS=true and
                      OPENINFERENCE_HIDE_OUTPUTS=true (read by TraceConfig()): input.value,
                      output.value and the retrieved documents' content and metadata become
                      "__REDACTED__"; the LLM spans' llm.input_messages.* / llm.output_messages.* /
                      llm.tools.* / mime types are left out
  --content off       OpenInference has no switch that leaves content out (its hide options write
                      "__REDACTED__" over input.value / output.value): the scenario's own exporter
                      (tests/interop/scenarios/native_redaction.py, drop=True) removes the
                      content-bearing attributes (:func:`is_content`), as a user's filter would

    CONTENT = openinference_content.configure()        # before the framework import
    provider, memory = openinference_content.tracer_provider()
"""

from __future__ import annotations

import os
from typing import Any

from tests.interop import capture

MODES = ("on", "off", "redacted")
HIDE = ("OPENINFERENCE_HIDE_INPUTS", "OPENINFERENCE_HIDE_OUTPUTS")

_EXACT = {"input.value", "output.value", "input.mime_type", "output.mime_type",
          "gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions",
          "gen_ai.tool.call.arguments", "gen_ai.tool.call.result", "gen_ai.retrieval.query.text",
          "gen_ai.retrieval.documents"}
_PREFIXES = ("llm.input_messages.", "llm.output_messages.", "llm.prompts", "llm.choices",
             "llm.prompt_template.variables", "embedding.embeddings.", "reranker.query",
             "reranker.input_documents.", "reranker.output_documents.")
_DOCUMENT_PARTS = (".document.content", ".document.metadata")


def is_content(key: str) -> bool:
    """Whether an OpenInference (or its GenAI-semconv) attribute carries content: messages, inputs,
    outputs (tool arguments and results are a tool span's input.value / output.value), prompts,
    retrieved documents' texts and metadata.  Kept: ids, scores, names, model, tokens, schemas."""
    if key in _EXACT or key.startswith(_PREFIXES):
        return True
    return key.startswith("retrieval.documents.") and key.endswith(_DOCUMENT_PARTS)


def configure() -> str:
    """Reads ``--content`` and sets the OpenInference variables it needs (before TraceConfig())."""
    content = capture.option("content", "on") or "on"
    if content not in MODES:
        raise SystemExit(f"unknown --content {content}")
    for name in HIDE:
        if content == "redacted":
            os.environ[name] = "true"
        else:
            os.environ.pop(name, None)
    return content


def tracer_provider(content: str) -> tuple[Any, Any]:
    """capture's provider, or for ``off`` one whose exporter drops the content attributes."""
    if content == "off":
        from tests.interop.scenarios.native_redaction import redacting_tracer_provider

        return redacting_tracer_provider(is_content, drop=True)
    return capture.tracer_provider()
