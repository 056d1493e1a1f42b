"""Standard GenAI agent traces (no otel_prov attributes) -> the seed model.  Pure.  (stub)"""

from __future__ import annotations

from collections.abc import Sequence

from . import attributes as A
from ._mapping import Mapped
from ._spans import SpanRecord


def genai_relevant(rec: SpanRecord) -> bool:
    op = rec.attributes.get(A.GEN_AI_OPERATION_NAME)
    return op in ("invoke_agent", "execute_tool")


def map_genai_trace(spans: Sequence[SpanRecord], profile: str) -> Mapped:
    return Mapped()
