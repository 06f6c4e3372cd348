"""Every Python block in docs/ runs.

Each page's blocks run top to bottom, as written, in one fresh Python process (under
pytest when the page shows a test), in an empty directory holding a copy of
``examples/``. Code that names a real model reaches a loopback server speaking the
OpenAI or Anthropic wire format (``OPENAI_BASE_URL``/``ANTHROPIC_BASE_URL`` point at it;
``tests/docs_provider.py``), which answers with the turns scripted here for the page.
What a page assumes its reader already has (a tool named in passing, an agent built on
an earlier page) is defined by the page's ``setup``; what a block defines is exercised
by the ``after`` code that follows it. A server address a page names is replaced by a
local server's, each replacement checked to occur.

The one kind of block that does not run is a signature, marked in the page with
``<!-- docs-test: signature of module:Qualified.name -->``: the test checks it against
the named object's real signature.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import os
import re
import shutil
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import attrs
import pytest
from docs_provider import DocsProvider, Turn, call, say

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)
MARK = re.compile(r"<!-- docs-test: signature of ([\w.]+:[\w.]+) -->\s*$")


@attrs.frozen
class Page:
    setup: str = ""
    before: dict[int, str] = attrs.Factory(dict)
    after: dict[int, str] = attrs.Factory(dict)
    turns: tuple[Turn, ...] = ()
    replace: dict[str, str] = attrs.Factory(dict)  # text in the page -> fixture name
    stdout: str | None = None
    needs: tuple[str, ...] = ()  # importable modules (plugins) the page uses
    env: dict[str, str] = attrs.Factory(dict)  # environment variables the page reads
    # Two comments that split a block into a server process and a client process:
    # (first line of the server part, first line of the client part).
    split: tuple[str, str] | None = None


TOOLS = '''
import plait

@plait.tool
def {name}({args}) -> str:
    """{doc}"""
    return {result}
'''


def tool(name: str, args: str, doc: str, result: str) -> str:
    return TOOLS.format(name=name, args=args, doc=doc, result=result)


SEARCH = tool("search", "query: str", "Search the web.", "f'3 results for {query}'")

PAGES: dict[str, Page] = {
    "agent-files.md": Page(
        after={0: "assert type(agent).__name__ == 'Agent' and spec.recursion_limit == 25"},
        needs=("plait_human_in_the_loop", "plait_pii", "plait_tool_call_limit"),
    ),
    "backends.md": Page(
        before={
            1: textwrap.dedent(
                """
                import plait
                from plait.types import Runtime, ToolRuntime
                tool_runtime = ToolRuntime(plait.ToolCall("write_file"), {"files": {}},
                                           Runtime(thread_id="t", run_id="r"))
                """
            )
        },
        after={
            1: "assert list(result.files_update) == ['/notes.md']",
            2: textwrap.dedent(
                """
                [count] = WordCount().agent_tools(None)
                assert count.name == "count_words" and "path" in count.parameters["properties"]
                """
            ),
        },
    ),
    "google.md": Page(
        setup=tool("get_weather", "city: str", "Get the weather.", "f'{city}: sunny'"),
        turns=(call("get_weather", city="Paris"), say("Sunny in Paris."), say("Once upon a time.")),
        after={0: "assert agent.model.provider == llm.provider == 'google'"},
        needs=("plait_google",),
        stdout="Sunny in Paris.\nOnce upon a time.\n",
    ),
    "index.md": Page(
        turns=(call("get_weather", city="Paris"), say("It is sunny in Paris, 21 °C.")),
        stdout="It is sunny in Paris, 21 °C.\n",
        needs=("plait_model_retry", "plait_tool_call_limit"),
    ),
    "internals.md": Page(
        setup="import plait\nagent = plait.create_agent(plait.ScriptedChatModel(['hi']))\n",
        after={0: "import sys; sys.stdout.flush()"},
    ),
    "middleware/anthropic_bash.md": Page(
        setup="import os\nos.mkdir('project')\n",
        turns=(call("bash", command="echo $((6 * 7))"), say("It printed 42.")),
        after={0: "assert 'project' in str(bash)"},
        needs=("plait_anthropic",),
    ),
    "middleware/anthropic_file_search.md": Page(
        setup="import os\nos.mkdir('workspace')\n", needs=("plait_anthropic",)
    ),
    "middleware/anthropic_memory.md": Page(
        setup="import os\nos.mkdir('agent-data')\n", needs=("plait_anthropic",)
    ),
    "middleware/anthropic_prompt_caching.md": Page(
        setup=tool("search_docs", "query: str", "Search the docs.", "'2.0 renamed run()'")
        + "LONG_RULES = 'Answer from the docs only. ' * 200\n",
        turns=(call("search_docs", query="2.0"), say("2.0 renamed run().")),
        after={0: "assert result.text == '2.0 renamed run().'"},
        needs=("plait_anthropic",),
    ),
    "middleware/anthropic_text_editor.md": Page(
        setup="import os\nos.mkdir('workspace')\n", needs=("plait_anthropic",)
    ),
    "middleware/context_editing.md": Page(needs=("plait_context_editing",)),
    "middleware/dbos.md": Page(
        setup=tool("refund", "order_id: str", "Refund an order.", "f'refunded {order_id}'"),
        replace={"postgresql://app@db/plait": "dbos_database_url"},
        split=("# in a worker process", "# anywhere else"),
        turns=(say("Your order ships tomorrow."),),
        stdout="Your order ships tomorrow.\n",
        needs=("plait_dbos", "psycopg"),
    ),
    "middleware/filesystem.md": Page(
        setup="import os\nos.mkdir('workspace')\n", needs=("plait_filesystem",)
    ),
    "middleware/human_in_the_loop.md": Page(
        before={
            1: tool("send_email", "to: str, body: str", "Send an e-mail.", "f'sent to {to}'")
            + textwrap.dedent(
                """
                from plait.testing import ai, call
                agent = plait.create_agent(
                    plait.ScriptedChatModel([ai("", call("send_email", to="ann@example.com",
                                                         body="hi")), "Sent."]),
                    tools=[send_email], checkpointer="memory",
                    middleware=[HumanInTheLoopMiddleware(interrupt_on={"send_email": True})],
                )
                assert agent.invoke("Mail Ann", thread_id="t1").interrupts
                """
            )
        },
        needs=("plait_human_in_the_loop",),
    ),
    "middleware/llm_tool_emulator.md": Page(
        setup=tool("charge_card", "amount: float", "Charge the card.", "'charged'"),
        needs=("plait_llm_tool_emulator",),
    ),
    "middleware/llm_tool_selector.md": Page(needs=("plait_llm_tool_selector",)),
    "middleware/mcp.md": Page(
        replace={"http://127.0.0.1:8000/mcp": "mcp_http_url"},
        env={"DOCS_TOKEN": "docs-token"},
        turns=(
            call("time_get_current_time", timezone="Asia/Tokyo"),
            say("It is morning in Tokyo."),
        ),
        stdout="It is morning in Tokyo.\n",
        needs=("plait_mcp", "mcp_server_time"),
    ),
    "middleware/model_call_limit.md": Page(needs=("plait_model_call_limit",)),
    "middleware/model_fallback.md": Page(
        setup="import plait\nmy_local_model = plait.ScriptedChatModel(['local answer'])\n",
        needs=("plait_model_fallback",),
    ),
    "middleware/model_retry.md": Page(
        before={1: "class MyFlakyServiceError(Exception):\n    pass\n"},
        after={
            1: textwrap.dedent(
                """
                assert retry_on(MyFlakyServiceError()) and retry_on(TimeoutError())
                assert not retry_on(ValueError())
                ModelRetryMiddleware(retry_on=retry_on)
                """
            )
        },
        needs=("plait_model_retry",),
    ),
    "middleware/otel.md": Page(setup=SEARCH, needs=("plait_otel", "opentelemetry.exporter")),
    "middleware/pii.md": Page(needs=("plait_pii",)),
    "middleware/subagents.md": Page(
        setup=tool("web_search", "query: str", "Search the web.", "'results'")
        + tool("write_report", "text: str", "Write the report.", "'written'"),
        before={
            1: tool("send_email", "to: str, body: str", "Send an e-mail.", "f'sent to {to}'")
            + textwrap.dedent(
                """
                from plait.testing import ai, call
                model = plait.ScriptedChatModel([
                    ai("", call("task", description="Email Ann the report",
                                subagent_type="mailer")),
                    ai("", call("send_email", to="ann@example.com", body="The report.")),
                    "I sent it.",
                    "Ann has the report.",
                ])
                """
            )
        },
        after={
            1: textwrap.dedent(
                """
                assert result.text == "Ann has the report.", result.messages
                assert any(m.text == "sent to ann@example.com" for m in model.requests[2].messages)
                """
            )
        },
        needs=("plait_subagents", "plait_tool_call_limit", "plait_human_in_the_loop"),
    ),
    "middleware/summarization.md": Page(needs=("plait_summarization",)),
    "middleware/todo_list.md": Page(needs=("plait_todo_list",)),
    "middleware/tool_call_limit.md": Page(needs=("plait_tool_call_limit",)),
    "middleware/tool_retry.md": Page(
        before={1: "class MyFlakyServiceError(Exception):\n    pass\n"},
        after={1: "assert retry_on(MyFlakyServiceError()) and not retry_on(ValueError())"},
        needs=("plait_tool_retry",),
    ),
    "middleware/usage_limit.md": Page(needs=("plait_usage_limit",)),
    "persistence.md": Page(
        setup=textwrap.dedent(
            '''
            import plait

            @plait.tool
            def book_train(departure: str) -> str:
                """Book a train, once a human says yes."""
                answer = plait.interrupt({"question": f"Book the {departure}?"})
                return f"booked the {departure}" if answer == "yes" else "not booked"
            '''
        ),
        turns=(call("book_train", departure="9:40"), say("Your 9:40 train is booked.")),
        after={
            0: textwrap.dedent(
                """
                assert paused.interrupts[0].value == {"question": "Book the 9:40?"}
                assert done.text == "Your 9:40 train is booked."
                assert "trip-7" not in agent.list_threads()
                """
            )
        },
    ),
    "providers.md": Page(
        setup=tool("get_weather", "city: str", "Get the weather.", "f'{city}: sunny'"),
        turns=(say("Hello."), say("Once upon a time.")),
        stdout="Once upon a time.",
    ),
    "writing-middleware.md": Page(setup=SEARCH),
    "writing-plugins.md": Page(
        after={
            0: textwrap.dedent(
                """
                import argparse, io
                parser = argparse.ArgumentParser(prog="plait")
                hello_command(parser.add_subparsers())
                args = parser.parse_args(["hello"])
                out = io.StringIO()
                args.func(args, out, io.StringIO())
                assert out.getvalue() == "hello\\n"
                """
            )
        },
    ),
}


def _pages() -> list[str]:
    names = sorted(str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md"))
    return [name for name in names if BLOCK.search((DOCS / name).read_text(encoding="utf-8"))]


def _blocks(name: str) -> list[tuple[str, str | None]]:
    """The page's Python blocks, each with the object its signature mark names (if any)."""
    text = (DOCS / name).read_text(encoding="utf-8")
    blocks = []
    for match in BLOCK.finditer(text):
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        mark = MARK.search(before)
        blocks.append((match.group(1), mark.group(1) if mark else None))
    return blocks


def test_every_page_with_python_is_run() -> None:
    assert sorted(PAGES) == _pages()
    for name, page in PAGES.items():
        count = len(_blocks(name))
        assert all(index < count for index in [*page.before, *page.after]), name


@pytest.fixture(scope="module")
def mcp_http_url() -> object:
    sys.path.insert(0, str(REPO / "tests" / "plugins" / "mcp"))
    try:
        from mcp_servers import HTTPServer
    finally:
        sys.path.pop(0)
    server = HTTPServer()
    yield server.url
    server.stop()


@pytest.fixture
def dbos_database_url() -> object:
    """A new PostgreSQL database for DBOS and the threads, dropped afterwards."""
    import psycopg
    from postgres_server import postgres_url_or_skip
    from psycopg import sql

    base = postgres_url_or_skip()
    name = f"plait_docs_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    head, _, tail = base.rpartition("/")
    query = tail.partition("?")[2]
    yield f"{head}/{name}" + (f"?{query}" if query else "")
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )


@pytest.mark.parametrize("name", sorted(PAGES))
def test_page_runs_as_written(name: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    page = PAGES[name]
    for module in page.needs:
        pytest.importorskip(module)
    parts = [page.setup]
    for index, (code, signature) in enumerate(_blocks(name)):
        if signature is not None:
            _check_signature(code, signature)
            continue
        parts += [page.before.get(index, ""), code, page.after.get(index, "")]
    script = "\n".join(parts)
    for text, fixture in page.replace.items():
        assert text in script, f"{name} no longer shows {text!r}"
        script = script.replace(text, str(request.getfixturevalue(fixture)))
    shutil.copytree(REPO / "examples", tmp_path / "examples")
    server = DocsProvider(page.turns)
    background = None
    try:
        if page.split is not None:
            script, background = _split(script, *page.split, tmp_path, server, page.env)
        tests = bool(re.search(r"^def test_", script, re.MULTILINE))
        done = _run(script, tmp_path, server, page.env, pytest_mode=tests)
    finally:
        if background is not None:
            background.kill()
            background.wait()
        server.close()
    assert done.returncode == 0, done.stdout + done.stderr
    if page.stdout is not None:
        assert done.stdout.endswith(page.stdout) or done.stdout == page.stdout, done.stdout
    assert server.unused == [], f"the page never asked for {server.unused}"


def _split(
    script: str,
    server_mark: str,
    client_mark: str,
    folder: Path,
    server: DocsProvider,
    extra: dict[str, str],
) -> tuple[str, subprocess.Popen[str]]:
    """Start the part of the script from ``server_mark`` to ``client_mark`` (after what
    comes before it) in a background process; the client script is the rest."""
    head, found, rest = script.partition(server_mark)
    assert found, f"the page no longer has {server_mark!r}"
    serving, found, client = rest.partition(client_mark)
    assert found, f"the page no longer has {client_mark!r}"
    path = folder / "serve.py"
    path.write_text(head + serving, encoding="utf-8")
    process = subprocess.Popen(
        [sys.executable, str(path)],
        cwd=folder,
        env=_env(server, extra),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    return head + client, process


def _run(
    script: str, folder: Path, server: DocsProvider, extra: dict[str, str], *, pytest_mode: bool
) -> subprocess.CompletedProcess[str]:
    path = folder / ("test_page.py" if pytest_mode else "page.py")
    path.write_text(script, encoding="utf-8")
    command = [sys.executable, str(path)]
    if pytest_mode:
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(path)]
    return subprocess.run(
        command,
        cwd=folder,
        env=_env(server, extra),
        capture_output=True,
        text=True,
        timeout=180,
    )


def _env(server: DocsProvider, extra: dict[str, str]) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PLAIT_", "OPENAI_", "ANTHROPIC_", "OTEL_", "GOOGLE_", "GEMINI_"))
        and "PROXY" not in k.upper()
    }
    env.update(
        OPENAI_BASE_URL=server.url + "/v1",
        OPENAI_API_KEY="sk-docs-test",
        ANTHROPIC_BASE_URL=server.url,
        ANTHROPIC_API_KEY="sk-ant-docs-test",
        GOOGLE_GEMINI_BASE_URL=server.url,
        GOOGLE_API_KEY="google-docs-test",
        OTEL_EXPORTER_OTLP_ENDPOINT=server.url + "/otlp",
        PYTHONDONTWRITEBYTECODE="1",
        **extra,
    )
    return env


def _check_signature(code: str, target: str) -> None:
    module_name, _, qualname = target.partition(":")
    obj: object = importlib.import_module(module_name)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    [shown] = ast.parse(code).body
    assert isinstance(shown, ast.FunctionDef) and shown.name == qualname.rsplit(".", 1)[-1]
    real = inspect.signature(obj)  # type: ignore[arg-type]
    assert [a.arg for a in shown.args.args] == list(real.parameters)
