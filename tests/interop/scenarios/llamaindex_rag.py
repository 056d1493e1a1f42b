"""LlamaIndex RAG: a ``RetrieverQueryEngine`` over a keyword retriever (a ``BaseRetriever`` subclass
returning the story's documents as ``NodeWithScore(TextNode(id_, text, metadata), score)``, from
:func:`story.retrieve`: no embedding model is needed, none can be downloaded here), whose response
synthesizer (the default, "compact") asks ``OpenAILike`` on the scripted server (Chat Completions, not
streamed) for story.RAG_ANSWER; instrumented by OpenInference's LlamaIndex instrumentation.

  --content on|off|redacted   see tests/interop/scenarios/openinference_content.py
                              (redacted: OPENINFERENCE_HIDE_INPUTS / _OUTPUTS; off: an exporter of
                              the scenario's own drops the content attributes)

usage: python -m tests.interop.scenarios.llamaindex_rag --out FILE [--content on|off|redacted]
"""

from __future__ import annotations

from tests.interop import capture

guard = capture.start()

from tests.interop.scenarios import openinference_content  # noqa: E402

CONTENT = openinference_content.configure()

from llama_index.core.query_engine import RetrieverQueryEngine  # noqa: E402
from llama_index.core.retrievers import BaseRetriever  # noqa: E402
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode  # noqa: E402
from llama_index.llms.openai_like import OpenAILike  # noqa: E402
from openinference.instrumentation.llama_index import LlamaIndexInstrumentor  # noqa: E402

from tests.interop import story  # noqa: E402
from tests.interop.llm_server import ScriptedLLMServer  # noqa: E402
from tests.interop.story import Step  # noqa: E402


class KeywordRetriever(BaseRetriever):
    """The story's documents ranked by shared words with the query (:func:`story.retrieve`)."""

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return [NodeWithScore(node=TextNode(id_=doc_id, text=text, metadata=dict(metadata)), score=score)
                for doc_id, text, metadata, score in story.retrieve(query_bundle.query_str)]


def main() -> None:
    provider, memory = openinference_content.tracer_provider(CONTENT)
    instrumentor = LlamaIndexInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        with ScriptedLLMServer([Step(final=story.RAG_ANSWER)]) as server:
            llm = OpenAILike(model="scripted-model", api_base=server.url, api_key="test-key", max_retries=0,
                             is_chat_model=True, context_window=8192)
            engine = RetrieverQueryEngine.from_args(KeywordRetriever(), llm=llm)
            response = engine.query(story.RAG_QUERY)
            assert server.remaining == 0 and not server.errors, (server.remaining, server.errors)
        assert str(response) == story.RAG_ANSWER, str(response)
        assert [n.node.node_id for n in response.source_nodes] == story.RETRIEVED
    finally:
        instrumentor.uninstrument()
    capture.finish(guard, provider, memory, str(capture.option("out")))


if __name__ == "__main__":
    main()
