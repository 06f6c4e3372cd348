"""Every Python block of every plugins/*/README.md runs, the way tests/test_docs_python.py
runs the docs (tests/page_runner.py): one fresh process per README, models answered by a
loopback server with the turns scripted here, the tools a README names in passing defined
by its ``setup``, what it shows checked by its ``after`` and ``stdout``. Each TOML block
(an agent file, or its ``[[middleware]]`` tables) is then loaded into an agent.
"""

from __future__ import annotations

import ast
import re
import textwrap
from pathlib import Path

import pytest
from docs_provider import Turn, call, say
from page_runner import (
    REPO,
    SEARCH,
    Page,
    check_pages,
    has_blocks,
    mcp_http_url,
    postgres_database_url,
    run_page,
    tool,
)

PLUGINS = REPO / "plugins"
FIXTURES = (mcp_http_url, postgres_database_url)  # the READMEs' ``replace`` use them

FETCH_PAGE = tool("fetch_page", "url: str", "Fetch a web page.", "f'<html>{url}</html>'")
SEND_EMAIL = tool("send_email", "to: str, body: str", "Send an e-mail.", "f'sent to {to}'")
GET_WEATHER = tool("get_weather", "city: str", "Get the weather.", "f'{city}: sunny'")

READMES: dict[str, Page] = {
    "agents_md": Page(
        files={
            "AGENTS.md": "Use uv.\n",
            "packages/api/AGENTS.md": "Run the API tests with `pytest -q api`.\n",
        },
        turns=(say("Run `pytest -q api`."),),
        after={
            0: textwrap.dedent(
                """
                [tool] = agent.tools
                assert tool.name == "update_agents_md", tool
                """
            )
        },
        stdout="Run `pytest -q api`.\n",
        needs=("plait_agents_md",),
    ),
    "anthropic": Page(
        setup="import os\nos.mkdir('docs')\n",
        after={0: "assert 'str_replace_based_edit_tool' in [t.name for t in agent.tools]"},
        needs=("plait_anthropic",),
    ),
    "context_editing": Page(setup=SEARCH + FETCH_PAGE, needs=("plait_context_editing",)),
    "dbos": Page(
        replace={"postgresql://app@db/plait": "postgres_database_url"},
        needs=("plait_dbos", "psycopg"),
    ),
    "filesystem": Page(needs=("plait_filesystem",)),
    "langchain": Page(
        stdout="2 + 3 = 5\nHello from LangChain.\n", needs=("plait_langchain", "langchain_core")
    ),
    "google": Page(
        turns=(call("get_weather", city="Paris"), say("Sunny, 22C in Paris.")),
        stdout="Sunny, 22C in Paris.\n",
        needs=("plait_google",),
    ),
    "guardrails": Page(
        setup=SEND_EMAIL,
        stdout="no_homework asks for homework\n",
        agent_tools=("send_email",),
        needs=("plait_guardrails",),
    ),
    "handoff": Page(
        setup=tool("refund", "order: str", "Refund an order.", "f'refunded {order}'"),
        turns=(call("transfer_to_billing"), say("Order A7 is refunded.")),
        after={
            0: textwrap.dedent(
                """
                assert result.state["handoff"]["agent"] == "billing", result.state
                assert [m.metadata.get("agent") for m in result.messages if m.type == "ai"] == [
                    None, "billing"]
                """
            )
        },
        stdout="billing Order A7 is refunded.\n",
        needs=("plait_handoff",),
    ),
    "human_in_the_loop": Page(
        setup=SEARCH
        + SEND_EMAIL
        + tool("delete_file", "path: str", "Delete a file.", "f'deleted {path}'"),
        turns=(
            Turn(
                "",
                (
                    ("send_email", {"to": "ann@example.com", "body": "The report."}),
                    ("delete_file", {"path": "draft.txt"}),
                ),
            ),
            say("I sent Ann the report and kept the draft."),
        ),
        after={
            0: textwrap.dedent(
                """
                assert result.text == "I sent Ann the report and kept the draft."
                tool_messages = [m.text for m in result.messages if m.type == "tool"]
                [sent] = [t for t in tool_messages if t.endswith("sent to ann@example.com")]
                assert "Report attached." in sent, sent
                assert any("Their reason: keep the draft" in t for t in tool_messages)
                """
            )
        },
        agent_table='[agent]\nmodel = "openai:gpt-4.1"\ncheckpointer = "memory"\n',
        agent_tools=("send_email", "delete_file", "search"),
        stdout=(
            "send_email {'to': 'ann@example.com', 'body': 'The report.'}\n"
            "delete_file {'path': 'draft.txt'}\n"
        ),
        needs=("plait_human_in_the_loop",),
    ),
    "llm_tool_emulator": Page(
        setup=SEARCH
        + GET_WEATHER
        + tool("book_flight", "to: str", "Book a flight.", "f'booked to {to}'"),
        needs=("plait_llm_tool_emulator",),
    ),
    "llm_tool_selector": Page(
        setup=SEARCH
        + SEND_EMAIL
        + GET_WEATHER
        + tool("calculator", "expression: str", "Evaluate arithmetic.", "'4'")
        + tool("translate", "text: str, to: str", "Translate text.", "text"),
        needs=("plait_llm_tool_selector",),
    ),
    "mcp": Page(
        replace={"http://127.0.0.1:8000/mcp": "mcp_http_url"},
        turns=(
            call("get_current_time", timezone="Asia/Tokyo"),
            say("It is morning in Tokyo."),
        ),
        stdout="It is morning in Tokyo.\n",
        needs=("plait_mcp", "mcp_server_time"),
    ),
    "model_call_limit": Page(
        setup=SEARCH,
        turns=tuple(call("search", query=f"part {n}") for n in range(10)),
        after={
            0: textwrap.dedent(
                """
                last = result.messages[-1].text
                assert last.startswith("Model call limit reached: run limit (10/10). The agent"
                                       " stopped"), last
                """
            )
        },
        needs=("plait_model_call_limit",),
    ),
    "model_fallback": Page(setup=SEARCH, needs=("plait_model_fallback",)),
    "model_retry": Page(setup=SEARCH, needs=("plait_model_retry",)),
    "otel": Page(
        setup=SEARCH,
        otlp=("/otlp/v1/traces",),
        after={
            0: textwrap.dedent(
                """
                from opentelemetry.sdk.trace.export import SimpleSpanProcessor
                from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
                    InMemorySpanExporter,
                )
                spans = InMemorySpanExporter()
                provider.add_span_processor(SimpleSpanProcessor(spans))
                agent.invoke("And the invoice?", thread_id="t1")
                names = [span.name for span in spans.get_finished_spans()]
                assert "invoke_agent support" in names, names
                """
            )
        },
        needs=("plait_otel", "opentelemetry.exporter"),
    ),
    "pii": Page(
        setup=tool("lookup_customer", "email: str", "Find a customer.", "'Ann, since 2019'"),
        stdout="pii: found 1 instance of credit_card in the user input; the run was stopped"
        " (strategy 'block')\n",
        needs=("plait_pii",),
    ),
    "postgres": Page(
        replace={
            "postgresql://app:secret@db.internal:5432/agents": "postgres_database_url",
            "postgresql://app@db/agents": "postgres_database_url",
        },
        setup=tool("book_train", "departure: str", "Book a train.", "f'booked the {departure}'"),
        turns=(call("book_train", departure="9:40"), say("Your 9:40 train is booked.")),
        after={
            0: "assert result.text == 'Your 9:40 train is booked.'",
            1: textwrap.dedent(
                """
                built = plait.create_agent(
                    plait.ScriptedChatModel(["Noted."]), checkpointer=checkpointer, store=store
                )
                built.invoke("Note this", thread_id="ticket-2")
                assert "ticket-2" in built.list_threads()
                assert "ticket-1841" not in built.list_threads()  # another schema
                """
            ),
        },
        needs=("plait_postgres", "psycopg"),
    ),
    "skills": Page(
        files={
            "skills/release-notes/SKILL.md": (
                "---\nname: release-notes\ndescription: Write release notes.\n---\n"
                "Group the changes under Added and Fixed.\n"
            ),
            "skills/release-notes/template.md": "## Added\n\n## Fixed\n",
        },
        turns=(
            Turn("", (("load_skill", {"name": "release-notes"}),)),
            say("Added: dark mode. Fixed: the login."),
        ),
        after={
            0: textwrap.dedent(
                """
                [loaded] = [m.text for m in result.messages if m.type == "tool"]
                assert loaded.startswith("Group the changes under Added and Fixed."), loaded
                assert "- template.md" in loaded, loaded
                """
            )
        },
        stdout="Added: dark mode. Fixed: the login.\n",
        needs=("plait_skills",),
    ),
    "subagents": Page(
        setup=tool("web_search", "query: str", "Search the web.", "'results'") + SEND_EMAIL,
        turns=(
            call("task", description="Email Ann the comparison", subagent_type="mailer"),
            call("send_email", to="ann@example.com", body="A beats B."),
            say("I sent it."),
            say("Ann has the comparison."),
        ),
        stdout="Ann has the comparison.\n",
        needs=("plait_subagents", "plait_human_in_the_loop"),
    ),
    "summarization": Page(setup=SEARCH, needs=("plait_summarization",)),
    "todo_list": Page(
        setup=SEARCH + tool("write_report", "text: str", "Write the report.", "'written'"),
        turns=(
            call("write_todos", todos=[{"content": "Research vendor A", "status": "completed"}]),
            say("Vendor A is the cheapest."),
            call(
                "write_todos",
                todos=[
                    {"content": "Research vendor A", "status": "completed"},
                    {"content": "Add pricing", "status": "in_progress"},
                ],
            ),
            say("Pricing added."),
        ),
        after={
            0: textwrap.dedent(
                """
                assert result.state["todos"] == [
                    {"content": "Research vendor A", "status": "completed"}
                ]
                assert [t["status"] for t in agent.get_state("t1")["todos"]] == [
                    "completed", "in_progress"
                ]
                """
            )
        },
        needs=("plait_todo_list",),
    ),
    "tool_call_limit": Page(
        setup=SEARCH + FETCH_PAGE,
        agent_tools=("search", "fetch_page"),
        needs=("plait_tool_call_limit",),
    ),
    "model_refusal": Page(setup=SEARCH, needs=("plait_model_refusal",)),
    "model_router": Page(setup=SEARCH, needs=("plait_model_router",)),
    "response_cache": Page(setup=SEARCH, needs=("plait_response_cache",)),
    "tool_errors": Page(
        setup=SEARCH + FETCH_PAGE,
        agent_tools=("search", "fetch_page"),
        needs=("plait_tool_errors",),
    ),
    "tool_search": Page(
        setup=SEARCH + FETCH_PAGE,
        agent_tools=("search", "fetch_page"),
        needs=("plait_tool_search",),
    ),
    "tool_retry": Page(
        setup=SEARCH + FETCH_PAGE,
        agent_tools=("search", "fetch_page"),
        needs=("plait_tool_retry",),
    ),
    "usage_limit": Page(
        setup=SEARCH,
        after={0: "assert result.usage.cost > 0 and result.usage.total_tokens == 8"},
        needs=("plait_usage_limit",),
    ),
}


def test_every_plugin_readme_with_python_or_toml_is_run() -> None:
    readmes = sorted(
        p.parent.name
        for p in PLUGINS.glob("*/README.md")
        if has_blocks(p, "python") or has_blocks(p, "toml")
    )
    assert sorted(READMES) == readmes
    check_pages({PLUGINS / name / "README.md": page for name, page in READMES.items()})


@pytest.mark.parametrize("name", sorted(READMES))
def test_plugin_readme_runs_as_written(
    name: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    run_page(PLUGINS / name / "README.md", READMES[name], tmp_path, request, toml=True)


# A middleware given by name in a README's prose, e.g. `("tool_retry", {"max_retries": 4})`.
BY_NAME = re.compile(r"""\("\w+",\s*\{.*\}\)""", re.DOTALL)


def _by_name(path: Path) -> list[str]:
    prose = re.sub(r"^```.*?^```", "", path.read_text(encoding="utf-8"), flags=re.M | re.S)
    spans = re.findall(r"`([^`]+)`", prose)
    return [m.group(0) for span in spans for m in [BY_NAME.search(span)] if m]


@pytest.mark.parametrize("name", sorted(p.parent.name for p in PLUGINS.glob("*/README.md")))
def test_middleware_a_plugin_readme_gives_by_name_builds(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each ``("name", {options})`` in the README's text builds an agent, except a shape
    whose values are ``...`` (to fill in)."""
    import plait

    monkeypatch.setenv("OPENAI_API_KEY", "sk-readme-test")
    tools = [
        plait.tool(fn.__name__.lstrip("_"))(fn)
        for fn in (_search, _fetch_page, _send_email, _book_flight, _web_search)
    ]
    for text in _by_name(PLUGINS / name / "README.md"):
        spec = ast.literal_eval(text)
        if "Ellipsis" in repr(spec):
            continue
        assert spec[0] == name, text
        agent = plait.create_agent(
            plait.ScriptedChatModel(["ok"]), tools=tools, checkpointer="memory", middleware=[spec]
        )
        agent.close()


def test_by_name_finds_the_readmes_examples() -> None:
    found = [s for p in sorted(PLUGINS.glob("*/README.md")) for s in _by_name(p)]
    assert len(found) >= 14, found
    assert '("tool_retry", {"tools": ["fetch_page"], "max_retries": 4})' in found


def test_files_a_plugin_readme_points_to_exist() -> None:
    """Its relative links, and the ``docs/``, ``examples/`` and ``benchmarks/`` paths (a
    glob such as ``docs/middleware/anthropic_*.md`` matching at least one file)."""
    missing = []
    for path in sorted(PLUGINS.glob("*/README.md")):
        text = path.read_text(encoding="utf-8")
        links = re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", text)
        named = re.findall(r"\b((?:docs|examples|benchmarks)/[\w./*-]*\w)", text)
        found = [(path.parent / link).resolve() for link in links]
        found += [REPO / name for name in named]
        missing += [f"{path}: {f}" for f in found if not any(f.parent.glob(f.name))]
    assert missing == []


def _search(query: str) -> str:
    """Search the web."""
    return query


def _fetch_page(url: str) -> str:
    """Fetch a web page."""
    return url


def _send_email(to: str, body: str) -> str:
    """Send an e-mail."""
    return to


def _book_flight(to: str) -> str:
    """Book a flight."""
    return to


def _web_search(query: str) -> str:
    """Search the web."""
    return query
