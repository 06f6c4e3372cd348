"""Every Python block in docs/ runs (tests/page_runner.py says how): each page's blocks
in one fresh process, against loopback model, MCP and PostgreSQL servers, with what the
page assumes defined by its ``setup`` and what it defines exercised by its ``after``.
Each TOML agent file a page shows is then loaded into an agent.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import textwrap
from pathlib import Path

import pytest
from docs_provider import call, say
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

DOCS = REPO / "docs"
FIXTURES = (mcp_http_url, postgres_database_url)  # the pages' ``replace`` use them
SERVE_KEY = "alice-key-0123456789abcdef"  # the key docs/serving.md's clients present


@pytest.fixture
def serve_port() -> str:
    """A free loopback port for a page's server (docs/serving.md shows 8000)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return str(sock.getsockname()[1])


@pytest.fixture
def client_waits_for_server(serve_port: str) -> str:
    """The client-process mark of docs/serving.md, then a wait until its server answers."""
    return textwrap.dedent(
        f"""
        # in the client process
        import time as _time, httpx as _httpx
        for _ in range(300):
            try:
                _httpx.get("http://127.0.0.1:{serve_port}/healthz", timeout=1)
                break
            except _httpx.TransportError:
                _time.sleep(0.1)
        """
    )


RESEARCH_TOOLS = tool("web_search", "query: str", "Search the web.", "'results'") + tool(
    "write_report", "text: str", "Write the report.", "'written'"
)
# The detector distribution docs/middleware/pii.md shows the pyproject.toml of, installed.
ACME_PII = {
    "acme_pii.py": textwrap.dedent(
        """
        import re
        from plait_pii import PIIMatch

        def find_employee_ids(text):
            found = re.finditer(r"EMP\\d{5}", text)
            return [PIIMatch(m.group(), m.start(), m.end()) for m in found]
        """
    ),
    "acme_pii-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: acme-pii\nVersion: 1.0\n",
    "acme_pii-1.0.dist-info/entry_points.txt": (
        "[plait.pii_detectors]\nemployee_id = acme_pii:find_employee_ids\n"
    ),
}

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
    "from-langchain.md": Page(
        turns=(
            call("get_user_location"),
            call("get_weather_for_location", city="Florida"),
            say(
                '{"punny_response": "Florida is having a sun-derful day!", '
                '"weather_conditions": "It is always sunny in Florida!"}'
            ),
            say('{"punny_response": "You are welcome, any time!", "weather_conditions": null}'),
            call("execute_sql", query="DELETE FROM records WHERE created < '2024-01-01'"),
            say("Deleted 3 old records."),
            say("Machine learning fits models to data."),
            say("Noted: technical."),
            say("Noted: short."),
            say("Hi Bob!"),
            say("Your name is Bob."),
            call("get_weather", city="SF"),
            say("It's always sunny in SF!"),
        ),
        after={
            0: textwrap.dedent(
                """
                assert response["structured_response"] == ResponseFormat(
                    "You are welcome, any time!", None
                )
                thread = agent.get_state("1")["messages"]
                assert [m.type for m in thread].count("human") == 2
                assert [m.text for m in thread if m.type == "tool"] == [
                    "Florida", "It's always sunny in Florida!"
                ]
                """
            ),
            1: textwrap.dedent(
                """
                assert "__interrupt__" not in result
                assert result["messages"][-2].text == "3 rows deleted"
                assert result.text == "Deleted 3 old records."
                """
            ),
            2: "assert result.text == 'Machine learning fits models to data.'",
            3: textwrap.dedent(
                """
                assert result["user_preferences"] == {"style": "technical", "verbosity": "detailed"}
                assert result["topics"] == ["style", "length"]
                """
            ),
            4: "assert final_response.text == 'Your name is Bob.'",
        },
        stdout=(
            "Florida is having a sun-derful day!\n"
            "You are welcome, any time!\n"
            "execute_sql {'query': \"DELETE FROM records WHERE created < '2024-01-01'\"}\n"
            "Deleted 3 old records.\n"
            "Machine learning fits models to data.\n"
            "{'style': 'technical', 'verbosity': 'detailed'} ['style', 'length']\n"
            "Your name is Bob.\n"
            "tools: It's always sunny in SF!\n"
            "model: It's \nmodel: always \nmodel: sunny \nmodel: in \nmodel: SF!\n"
        ),
        needs=("plait_human_in_the_loop", "plait_summarization", "plait_langchain"),
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
    "deep-agents.md": Page(
        stdout=(
            "The researcher is on it in the background. Ask me again in a moment and I will "
            "write the report.\n"
            "# Solar batteries\n"
            "support - Support here. A double charge is a pending authorisation; it drops off "
            "within 3 working days.\n"
        ),
        after={
            0: textwrap.dedent(
                """
                notes = open("examples/deep/project/AGENTS.md").read()
                assert notes.endswith("The user follows home energy storage.\\n"), notes
                [task] = second.state["background_tasks"].values()
                assert task["status"] == "completed", task
                assert "## Sources" in second.text, second.text
                assert third.state["handoff"]["agent"] == "support"
                """
            )
        },
        env={"BILLING_KEY": "billing-key-0123456789"},  # the remote sub-agent's key
        needs=(
            "plait_skills",
            "plait_agents_md",
            "plait_subagents",
            "plait_handoff",
            "langgraph_sdk",
        ),
    ),
    "middleware/agents_md.md": Page(
        files={"project/AGENTS.md": "Use uv.\n", "project/packages/api/AGENTS.md": "Async.\n"},
        needs=("plait_agents_md",),
    ),
    "middleware/anthropic_bash.md": Page(
        # a root agent's sandboxed shell runs as the workspace's owner, and root's is refused
        setup=(
            "import os\nos.mkdir('project')\n"
            "if os.geteuid() == 0:\n    os.chown('project', 1000, 1000)\n"
        ),
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
        replace={"postgresql://app@db/plait": "postgres_database_url"},
        split=("# in a worker process", "# anywhere else"),
        turns=(say("Your order ships tomorrow."),),
        stdout="Your order ships tomorrow.\n",
        needs=("plait_dbos", "psycopg"),
    ),
    "middleware/filesystem.md": Page(
        setup="import os\nos.mkdir('workspace')\n", needs=("plait_filesystem",)
    ),
    "middleware/guardrails.md": Page(
        setup=tool("send_email", "to: str, body: str", "Send an e-mail.", "f'sent to {to}'")
        + tool("lookup_customer", "name: str", "Find a customer.", "'Ann'"),
        files={
            "myapp/__init__.py": "",
            "myapp/checks.py": "def no_homework(data):\n    return 'homework' not in data.text\n",
        },
        agent_tools=("send_email", "lookup_customer"),
        needs=("plait_guardrails",),
    ),
    "middleware/handoff.md": Page(needs=("plait_handoff",)),
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
    "middleware/pii.md": Page(files=ACME_PII, needs=("plait_pii",)),
    "middleware/skills.md": Page(
        # the sandboxed shell's workspace: as for anthropic_bash.md, not root's
        setup=tool("fill_form", "form: str", "Fill a PDF form.", "f'filled {form}'")
        + "import os\nos.mkdir('work')\n"
        + "if os.geteuid() == 0:\n    os.chown('work', 1000, 1000)\n",
        files={
            "skills/pdf-forms/SKILL.md": (
                "---\nname: pdf-forms\ndescription: Fill in PDF forms.\n---\nRead the fields.\n"
            )
        },
        needs=("plait_skills", "plait_anthropic"),
    ),
    "middleware/subagents.md": Page(
        setup=RESEARCH_TOOLS,
        files={"research_tools.py": RESEARCH_TOOLS},
        before={
            2: tool("send_email", "to: str, body: str", "Send an e-mail.", "f'sent to {to}'")
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
            1: "assert 'start_task' in [t.name for t in agent.tools]\nagent.close()\n",
            2: textwrap.dedent(
                """
                assert result.text == "Ann has the report.", result.messages
                assert any(m.text == "sent to ann@example.com" for m in model.requests[2].messages)
                """
            ),
            4: textwrap.dedent(
                """
                [answer] = [m for m in result.messages if m.type == "tool"]
                assert answer.text == "Ann owes 12 EUR, due on 1 March.", answer
                assert answer.metadata["subagents"]["url"] == billing.url
                assert result.text == "Ann owes 12 EUR; it is due on 1 March.", result.text
                agent.close()
                """
            ),
        },
        # the remote sub-agents' section: a plait serve in one process, the main agent in
        # another (the client mark first: what replaces it names the port that replaces 8000)
        replace={
            "# in the client process": "client_waits_for_server",
            "8000": "serve_port",
        },
        split=("# in the server process", "# in the client process"),
        env={"PLAIT_SERVE_KEYS": SERVE_KEY, "BILLING_KEY": SERVE_KEY},
        turns=(
            call("task", description="What does Ann owe?", subagent_type="billing"),
            say("Ann owes 12 EUR; it is due on 1 March."),
        ),
        needs=(
            "plait_subagents",
            "plait_tool_call_limit",
            "plait_human_in_the_loop",
            "plait_serve",
            "langgraph_sdk",
        ),
    ),
    "middleware/summarization.md": Page(needs=("plait_summarization",)),
    "middleware/todo_list.md": Page(needs=("plait_todo_list",)),
    "middleware/tool_call_limit.md": Page(needs=("plait_tool_call_limit",)),
    "middleware/model_refusal.md": Page(needs=("plait_model_refusal",)),
    "middleware/model_router.md": Page(needs=("plait_model_router",)),
    "middleware/response_cache.md": Page(needs=("plait_response_cache",)),
    "middleware/tool_errors.md": Page(needs=("plait_tool_errors",)),
    "middleware/tool_search.md": Page(needs=("plait_tool_search",)),
    "middleware/tool_retry.md": Page(
        before={1: "class MyFlakyServiceError(Exception):\n    pass\n"},
        after={1: "assert retry_on(MyFlakyServiceError()) and not retry_on(ValueError())"},
        needs=("plait_tool_retry",),
    ),
    "middleware/usage_limit.md": Page(needs=("plait_usage_limit",)),
    "evals.md": Page(stdout="100% of 10 cases passed\n", needs=("plait_evals",)),
    "history.md": Page(
        setup=textwrap.dedent(
            '''
            import plait

            @plait.tool
            def refund(order: int) -> str:
                """Refund an order, once a human says yes."""
                answer = plait.interrupt({"question": f"Refund order {order}?"})
                return "refunded" if answer == "yes" else "not refunded"
            '''
        ),
        turns=(
            call("refund", order=42),
            say("Refunded."),
            say("Not refunded."),
            say("30 days."),
        ),
        after={
            0: textwrap.dedent(
                """
                assert paused.interrupts[0].value == {"question": "Refund order 42?"}
                assert paused_at.node == "tools"
                assert done.text == "Refunded."
                assert [m.type for m in then["messages"]] == ["human", "ai"]
                assert redone.messages[-2].text == "not refunded"
                assert redone.text == "Not refunded."
                assert agent.get_state("order-42")["messages"][-1].text == "Refunded."
                """
            ),
            2: "assert saver.keep_steps == 200",
            3: textwrap.dedent(
                """
                import json
                lines = open("runs.jsonl").read().splitlines()
                assert json.loads(lines[0])["plait_recording"] == 1
                assert replayed.text == "30 days."
                """
            ),
        },
    ),
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
    "serving.md": Page(
        # the client mark first: what replaces it names the port that replaces 8000
        replace={
            "# in the client process": "client_waits_for_server",
            "8000": "serve_port",
        },
        split=("# in the server process", "# in the client process"),
        env={"PLAIT_SERVE_KEYS": SERVE_KEY},
        stdout=(
            "issue_refund ['approve', 'edit', 'reject']\n"
            "Refunded 25.00 EUR for order 1042.\n"
            "Let me look that order up.\n\n"
            "Sorry, I could not find that order. Error: tool 'lookup_order' raised ValueError: "
            "there is no order 9999. Call it again only if something you can change caused "
            "it, or take another approach.\n"
            "Sorry, I could not find that order. Error: tool 'lookup_order' raised ValueError: "
            "there is no order 9998. Call it again only if something you can change caused "
            "it, or take another approach.\n"
            "waits for approval: issue_refund\n"
            "Refunded 25.00 EUR for order 1042.\n"
            "idle success\n"
            "TASK_STATE_INPUT_REQUIRED\n"
            "Refunded 25.00 EUR for order 1042.\n"
            # the run log from Python
            "['refund']\n"
            "run_finished interrupted\n"
            "{'question': 'Refund order 7?'}\n"
            "['tool_result', 'step', 'run_finished']\n"
            "None\n"
            # scoped thread ids
            "Hello, Alice.\n"
            "True\n"
        ),
        after={
            4: textwrap.dedent(
                """
                assert events[0]["type"] == "state_snapshot"
                assert ended[0]["status"] == "error" and "cancelled" in ended[0]["content"]
                assert agent.get_interrupts("t7") == []
                """
            ),
            5: "assert stored != 't' and stored.endswith('/t')",
        },
        needs=("plait_serve", "openai", "langgraph_sdk", "a2a", "starlette"),
    ),
    "tools.md": Page(
        turns=(call("count_notes"), say("You have no notes yet.")),
        after={0: "assert result.messages[2].text == '0', result.messages[2].text"},
        stdout="You have no notes yet.\n",
    ),
    "writing-middleware.md": Page(
        setup=SEARCH,
        after={
            4: textwrap.dedent(
                """
                told = result.messages[2]
                assert told.status == "error" and "ann@example.com" not in told.text
                assert told.text.startswith(
                    "Error: tool 'find_orders' raised LookupError: customer 42 ([email 1]) "
                    "has no orders."
                ), told.text
                assert agent.get_state("t")["emails"] == {"[email 1]": "ann@example.com"}
                """
            ),
            5: textwrap.dedent(
                """
                kept = agent.get_state("s")["messages"][2]
                assert "([email 1])" in kept.text and "ann@example.com" not in kept.text
                assert shown == kept.text.replace("[email 1]", "ann@example.com"), shown
                """
            ),
            6: textwrap.dedent(
                """
                assert guarded_keys(agent) == {"calls_made", "api_token"}
                assert private_keys(agent) == {"api_token"}
                """
            ),
        },
    ),
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


def test_every_page_with_python_or_toml_is_run() -> None:
    pages = sorted(
        str(p.relative_to(DOCS))
        for p in DOCS.rglob("*.md")
        if has_blocks(p, "python") or has_blocks(p, "toml")
    )
    assert sorted(PAGES) == pages
    check_pages({DOCS / name: page for name, page in PAGES.items()})


@pytest.mark.parametrize("name", sorted(PAGES))
def test_page_runs_as_written(name: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    if os.geteuid() != 0:
        run_page(DOCS / name, PAGES[name], tmp_path, request, toml=True)
        return
    # As root, a page runs in a directory every user can reach: a root agent's bash
    # sandbox runs as an unprivileged user, who must reach its workspace (pytest's
    # directories are under a 0700 /tmp/pytest-of-root).
    folder = Path(tempfile.mkdtemp(prefix="plait-docs-page-"))
    try:
        folder.chmod(0o755)
        run_page(DOCS / name, PAGES[name], folder, request, toml=True)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
