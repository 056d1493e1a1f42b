"""The docs say what the code does: docs/cli.md's error examples are run and compared, its CLI table
lists the options and choices ``--help`` has, every option of ``settings.py`` is documented on its one
page, and README's GraphRAG and DocRAG example runs as written."""

from __future__ import annotations

import argparse
import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from otel_prov import PROFILES
from otel_prov.cli import build_parser
from tests.support.procs import REPO, clean_env

CLI_MD = (REPO / "docs" / "cli.md").read_text(encoding="utf-8")
README = (REPO / "README.md").read_text(encoding="utf-8")


def _examples(text: str) -> list[tuple[str, str]]:
    """``$ otel-prov ...`` commands (a quoted argument may span lines) and the line after each."""
    lines, found, i = text.splitlines(), [], 0
    while i < len(lines):
        if not lines[i].startswith("$ otel-prov"):
            i += 1
            continue
        command = lines[i][2:]
        while True:
            try:
                shlex.split(command)
                break
            except ValueError:  # an open quote: the command goes on
                i += 1
                command += "\n" + lines[i]
        found.append((command, lines[i + 1]))
        i += 2
    return found


def test_cli_md_error_examples_are_what_the_commands_say(tmp_path: Path) -> None:
    block = CLI_MD[CLI_MD.index("What they say (real output):"):]
    block = block[:block.index("\n```\n", block.index("```") + 3)]
    examples = _examples(block)
    assert len(examples) >= 5, examples
    env = clean_env({"XDG_DATA_HOME": str(tmp_path / "xdg")})
    demo = subprocess.run([sys.executable, "-m", "otel_prov.cli", "demo", "-q"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=180)
    assert demo.returncode == 0, demo.stderr
    assert (tmp_path / "xdg" / "otel-prov" / "store").is_dir()
    for command, said in examples:
        argv = shlex.split(command)[1:]
        run = subprocess.run([sys.executable, "-m", "otel_prov.cli", *argv], cwd=tmp_path, env=env,
                             capture_output=True, text=True, timeout=120)
        assert run.returncode != 0, command
        assert run.stderr.splitlines()[0] == said, f"docs/cli.md: {command}"


# -- the option lists -----------------------------------------------------------------------------------


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def _rows(text: str) -> dict[str, str]:
    """The CLI table's first cells, by subcommand: ``otel-prov list [--type a\\|b] ...``."""
    rows = {}
    for match in re.finditer(r"^\| `otel-prov (\w+)([^`]*)` \|(.*)$", text, re.M):
        rows[match.group(1)] = match.group(2).replace("\\|", "|") + " " + match.group(3)
    return rows


@pytest.mark.parametrize("name,text", [("docs/cli.md", CLI_MD)])
def test_documented_options_are_the_parsers(name: str, text: str) -> None:
    """Each row of the CLI table names the command's flags (all of them but --store, which every
    command takes; demo's --ui stands for the view's flags) and exactly the choices --help offers."""
    parsers = _subparsers()
    rows = _rows(text)
    assert {"list", "show", "export", "query", "demo", "ui"} <= set(rows), (name, sorted(rows))
    ui_flags = {o for a in parsers["ui"]._actions for o in a.option_strings}
    for command, row in rows.items():
        if command == "serve":  # its options: docs/collector.md's table
            continue
        parser = parsers[command]
        flags = {o: a for a in parser._actions for o in a.option_strings if o.startswith("--")}
        usage = row.split(" | ")[0] if " | " in row else row
        documented = set(re.findall(r"(--[a-z][a-z0-9-]*)", usage))
        assert documented <= set(flags), (name, command, documented - set(flags))
        expected = set(flags) - {"--help", "--store"}
        if command == "demo":
            expected -= ui_flags - {"--store", "--jaeger-url"}
        assert expected <= documented, (name, command, expected - documented)
        for flag, values in re.findall(r"\[(--[a-z0-9-]+) ([a-z][a-z-]*(?:\|[a-z][a-z-]*)+)\]", usage):
            choices = flags[flag].choices or (PROFILES if flag == "--profile" else None)
            assert choices is not None, (name, command, flag)
            assert sorted(values.split("|")) == sorted(choices), (name, command, flag, values, list(choices))


# -- the options of settings.py: each documented once, generated ---------------------------------------


def test_every_options_table_is_generated_from_settings() -> None:
    """Each page's option table is exactly what settings.py gives (one text per option, written there),
    every variable settings.py reads is in one of them, and the README names none (it points to the
    pages)."""
    from otel_prov.settings import ENV_VARS, TABLES
    from tests.support import options_doc

    for page, name in options_doc.PAGES.items():
        assert options_doc.current(page) == options_doc.block(name), (
            f"{page}: its options table is not settings.py's; run python -m tests.support.options_doc")
    assert {option.env for options in TABLES.values() for option in options} == set(ENV_VARS)
    assert set(options_doc.PAGES.values()) == set(TABLES)
    assert "OTEL_PROV_" not in README


# -- README's Python ---------------------------------------------------------------------------------


def test_readme_graph_rag_and_doc_rag_example_runs(tmp_path: Path) -> None:
    """The second Python block of "Instrument an agent", under a global provider (as the first block
    sets one up), records both sessions with nothing left out."""
    section = README[README.index("## Instrument an agent"):]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert "graph_rag_session(" in blocks[1] and "doc_rag_session(" in blocks[1]
    script = tmp_path / "rag.py"
    script.write_text(
        "from opentelemetry import trace\n"
        "from opentelemetry.sdk.trace import TracerProvider\n"
        "from opentelemetry.sdk.trace.export import SimpleSpanProcessor\n"
        "from otel_prov import ProvSpanExporter\n"
        "provider = TracerProvider()\n"
        "provider.add_span_processor(SimpleSpanProcessor(ProvSpanExporter()))\n"
        "trace.set_tracer_provider(provider)\n"
        + blocks[1]
        + "print(dict(rag.problems), dict(doc.problems))\nprovider.shutdown()\n", encoding="utf-8")
    env = clean_env({"OTEL_PROV_STORE": str(tmp_path / "store")})
    run = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines()[-1] == "{} {}"
    def cli(*argv: str) -> str:
        done = subprocess.run([sys.executable, "-m", "otel_prov.cli", *argv], env=env, capture_output=True,
                              text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        return done.stdout

    rows = json.loads(cli("list", "--format", "json"))
    assert sorted(row["type"] for row in rows) == ["DocRAG", "GraphRAG"]
    shown = cli("show", next(row["id"] for row in rows if row["type"] == "GraphRAG"))
    assert "Selected 2 edges:" in shown and "Reasoning: names the capital" in shown
