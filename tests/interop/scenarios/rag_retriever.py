"""RETRIEVER spans: a LangChain retriever over in-memory documents, instrumented by OpenInference's
LangChain instrumentation.

  --mode chain   {context: retriever | format, question} | prompt | scripted model | StrOutputParser
  --mode agent   langchain.agents.create_agent whose knowledge_query tool calls the retriever

The retriever is a small keyword-scoring ``BaseRetriever`` (InMemoryVectorStore needs numpy, which
langchain-core does not depend on); documents carry ids and metadata, the score in the metadata.

usage: python -m tests.interop.scenarios.rag_retriever --out FILE --mode chain|agent
"""

from __future__ import annotations

from tests.interop import capture

guard = capture.start()

from typing import Any  # noqa: E402

from langchain_core.callbacks import CallbackManagerForRetrieverRun  # noqa: E402
from langchain_core.documents import Document  # noqa: E402
from langchain_core.messages import HumanMessage  # noqa: E402
from langchain_core.output_parsers import StrOutputParser  # noqa: E402
from langchain_core.prompts import ChatPromptTemplate  # noqa: E402
from langchain_core.retrievers import BaseRetriever  # noqa: E402
from langchain_core.runnables import RunnablePassthrough  # noqa: E402
from langchain_core.tools import tool  # noqa: E402
from openinference.instrumentation.langchain import LangChainInstrumentor  # noqa: E402

from tests.interop import story  # noqa: E402
from tests.interop.lc_fake import ScriptedChatModel  # noqa: E402
from tests.interop.story import Step, ToolCall  # noqa: E402

MODE = capture.option("mode")


class KeywordRetriever(BaseRetriever):
    """The story's documents ranked by shared words with the query (:func:`story.retrieve`)."""

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun
                                ) -> list[Document]:
        return [Document(id=doc_id, page_content=text, metadata={**metadata, "score": score})
                for doc_id, text, metadata, score in story.retrieve(query)]


RETRIEVER = KeywordRetriever()


def run_chain() -> str:
    prompt = ChatPromptTemplate.from_messages([("system", "Answer from the context:\n{context}"),
                                               ("human", "{question}")])
    model = ScriptedChatModel(steps=[Step(final=story.RAG_ANSWER)])

    def format_docs(docs: list[Document]) -> str:
        return "\n".join(d.page_content for d in docs)

    chain: Any = ({"context": RETRIEVER | format_docs, "question": RunnablePassthrough()}
                  | prompt | model | StrOutputParser())
    return str(chain.invoke(story.RAG_QUERY, config={"metadata": {"session_id": "session-7"}}))


def run_agent() -> str:
    from langchain.agents import create_agent

    @tool
    def knowledge_query(question: str) -> str:
        """Answer a factual question from the knowledge base."""
        return RETRIEVER.invoke(question)[0].page_content

    @tool
    def calculator(expression: str) -> str:
        """Evaluate an arithmetic expression."""
        return story.calculator(expression)

    steps = [
        Step(story.THOUGHT_1, [ToolCall(story.TOOL_1, dict(story.TOOL_1_ARGS), "call_1")]),
        Step(story.THOUGHT_2, [ToolCall(story.TOOL_2, dict(story.TOOL_2_ARGS), "call_2")]),
        Step(final=story.FINAL_ANSWER),
    ]
    agent = create_agent(ScriptedChatModel(steps=steps), [knowledge_query, calculator],
                         system_prompt="Answer with the tools.", name=story.AGENT)
    state = agent.invoke({"messages": [HumanMessage(story.QUESTION)]},
                         config={"configurable": {"thread_id": "thread-1"}})
    return str(state["messages"][-1].content)


def main() -> None:
    provider, memory = capture.tracer_provider()
    instrumentor = LangChainInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        answer = run_chain() if MODE == "chain" else run_agent()
        assert answer == (story.RAG_ANSWER if MODE == "chain" else story.FINAL_ANSWER), answer
    finally:
        instrumentor.uninstrument()
    capture.finish(guard, provider, memory, str(capture.option("out")))


if __name__ == "__main__":
    main()
