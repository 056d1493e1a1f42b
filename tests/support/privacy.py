"""Helpers of the content policy's tests through real stores (tests/ingest/test_privacy.py,
tests/serve/test_privacy.py): real SDK spans holding secrets and personal data in every field, every
file of a store searched for them, and a redaction plug-in installed for a test (an entry point in
the group ``otel_prov.redactors``, found by ``importlib.metadata`` on ``sys.path`` and, for the
processes a test starts, on ``PYTHONPATH``)."""

from __future__ import annotations

import importlib
import sys
import textwrap
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_prov import agent_session, doc_rag_session, graph_rag_session

SECRETS = {
    "email": "alice.liddell@example.com",
    "card": "4111 1111 1111 1111",
    "iban": "DE89 3704 0044 0532 0130 00",
    "phone": "+44 20 7946 0958",
    "ip": "203.0.113.77",
    "openai-key": "sk-proj-Zq8xY3vB7nM1kL4pR6tW9aE2sD5fG0hJ",
    "aws-key": "AKIAIOSFODNN7EXAMPLE",
    "github-token": "ghp_16C7e42F292c6912E7710c838347Ae178B4a",
    "jwt": "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0"
           ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
    "private-key": "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7\n"
                   "-----END PRIVATE KEY-----",
}
"""One of each kind the built-in detectors find (the texts to search the store's files for)."""
PLUGIN_SECRET = "EMP-204781"
"""What the test plug-in finds (an employee number: no built-in detector knows it)."""
NEEDLES = [*(s.split("\n")[1] if "\n" in s else s for s in SECRETS.values()), PLUGIN_SECRET]
"""What must not be in a store's files (a private key by its body's line)."""
QUESTION = "Which account does the contract name?"


def _all(separator: str = "; ") -> str:
    return separator.join([*SECRETS.values(), PLUGIN_SECRET])


def secret_spans(provider: TracerProvider | None = None) -> list[ReadableSpan]:
    """Real SDK spans of an agent session, a GraphRAG and a DocRAG query and a failed session,
    with every secret in every field: question, thought, arguments, observation, answer, edges,
    reasoning, chunk ids, synthesis, error."""
    memory = InMemorySpanExporter()
    own = provider is None
    provider = provider or TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    with agent_session(f"{QUESTION} {_all()}", tracer_provider=provider) as session:
        with session.iteration() as step:
            step.thought(f"I saw {_all()} earlier")
            step.call_tool("lookup", lambda **kw: f"The contract says: {_all()}.",
                           {"query": _all(), "keys": list(SECRETS.values())})
        session.conclude(f"It names {_all(' and ')}.")
    with graph_rag_session(f"Who? {SECRETS['email']}", tracer_provider=provider) as rag:
        edge = ("http://ex.org/alice", "http://ex.org/account", SECRETS["iban"])
        rag.exploration([edge])
        rag.focus([(edge, f"{SECRETS['phone']} confirms it")])
        rag.synthesis(f"Account {SECRETS['iban']}.")
    with doc_rag_session("Which document?", tracer_provider=provider) as doc:
        doc.exploration([f"doc-{SECRETS['email']}", PLUGIN_SECRET])
        doc.synthesis(f"See {SECRETS['card']}.")
    try:
        with agent_session("fails", tracer_provider=provider) as session:
            with session.iteration():
                raise PermissionError(f"no access for {SECRETS['openai-key']} at {SECRETS['ip']}")
    except PermissionError:
        pass
    spans = list(memory.get_finished_spans())
    if own:
        provider.shutdown()
    return spans


def files_holding(directory: Path, needle: str) -> list[Path]:
    """Every file under ``directory`` whose bytes hold ``needle`` (UTF-8, or as N-Triples escapes it:
    a private key's newlines are ``\\n``)."""
    wanted = {needle.encode(), needle.replace("\n", "\\n").encode()}
    return [path for path in sorted(directory.rglob("*"))
            if path.is_file() and any(w in path.read_bytes() for w in wanted)]


PLUGIN = '''
    """A redaction plug-in, as a package would ship one: an object with a name and find(text)."""
    import re

    class EmployeeNumber:
        name = "employee-id"
        _PATTERN = re.compile(r"\\bEMP-[0-9]{6}\\b")

        def find(self, text):
            return [m.span() for m in self._PATTERN.finditer(text)]
'''


def install_plugin(directory: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The package ``otel_prov_test_redactor``, installed in ``directory`` (its module and its
    ``.dist-info`` with an entry point ``employee-id`` in ``otel_prov.redactors``), found by this
    process and, through ``PYTHONPATH``, by the processes the test starts."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "otel_prov_test_redactor.py").write_text(textwrap.dedent(PLUGIN), encoding="utf-8")
    info = directory / "otel_prov_test_redactor-1.0.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: otel-prov-test-redactor\nVersion: 1.0\n",
                                   encoding="utf-8")
    (info / "entry_points.txt").write_text(
        "[otel_prov.redactors]\nemployee-id = otel_prov_test_redactor:EmployeeNumber\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(directory))
    monkeypatch.setenv("PYTHONPATH", str(directory))
    importlib.invalidate_caches()
    monkeypatch.delitem(sys.modules, "otel_prov_test_redactor", raising=False)
    return directory
