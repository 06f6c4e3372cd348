"""``plait run``: the conversation as it happens, ``--json``, threads, one-line errors."""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable
from pathlib import Path


def test_hello_example_shows_the_tool_call_and_the_answer(plait_cli, examples) -> None:
    done = plait_cli("run", str(examples / "hello.toml"), "What's the weather in Paris?")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines == [
        '  -> get_weather(city="Paris")',
        "  <- Paris: sunny, 21 °C",
        "In Paris today it is sunny, 21 °C. Enjoy your day!",
    ]
    assert done.stderr == ""  # no spinner when stderr is not a terminal


def test_json_output_holds_the_result(plait_cli, examples) -> None:
    done = plait_cli("run", str(examples / "hello.toml"), "Weather?", "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["text"] == "In Paris today it is sunny, 21 °C. Enjoy your day!"
    assert [m["type"] for m in data["messages"]] == ["human", "ai", "tool", "ai"]
    assert data["messages"][0]["content"] == "Weather?"
    assert data["messages"][1]["tool_calls"][0]["args"] == {"city": "Paris"}
    assert data["messages"][2]["content"] == "Paris: sunny, 21 °C"
    assert data["interrupts"] == []
    assert data["structured_response"] is None
    assert set(data["usage"]) >= {"input_tokens", "output_tokens"}


def test_prompt_can_come_from_stdin(plait_cli, examples) -> None:
    done = plait_cli("run", str(examples / "hello.toml"), "--json", input="From stdin\n")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["messages"][0]["content"] == "From stdin"


def test_missing_prompt_is_a_one_line_error(plait_cli, examples) -> None:
    done = plait_cli("run", str(examples / "hello.toml"))
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1
    assert "give a PROMPT" in done.stderr


def test_bad_agent_file_is_a_one_line_error_naming_file_table_and_key(
    plait_cli, write: Callable[[str, str], Path]
) -> None:
    write("bad.toml", '[agent]\nmodel = "scripted:x"\nrecursion_limit = "ten"\n')
    done = plait_cli("run", "bad.toml", "hi")
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert done.stderr == (
        "plait: error: bad.toml: [agent] recursion_limit: expected an int, got 'ten'\n"
    )


def test_model_failure_is_a_one_line_error(
    plait_cli, examples, write: Callable[[str, str], Path]
) -> None:
    # Two model calls are needed (tool call, then answer) but only one is scripted.
    write(
        "short.toml",
        '[agent]\nmodel = "scripted:short"\ntools = ["hello_tools:get_weather"]\n'
        "[[agent.model_settings.responses]]\n"
        'tool_calls = [{ name = "get_weather", args = { city = "Oslo" } }]\n',
    )
    write("hello_tools.py", (examples / "hello_tools.py").read_text(encoding="utf-8"))
    done = plait_cli("run", "short.toml", "hi")
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert done.stderr.startswith("plait: error: ScriptedChatModel 'short' has 1 response(s)")
    assert done.stderr.count("\n") == 1
    assert '-> get_weather(city="Oslo")' in done.stdout  # what happened before is shown


def test_an_agent_file_that_fails_to_build_leaves_no_database_file(
    plait_cli, examples, write: Callable[[str, str], Path], tmp_path: Path
) -> None:
    write(
        "twice.toml",
        '[agent]\nmodel = "scripted:x"\ncheckpointer = "sqlite:///agent.db"\n'
        'store = "sqlite:///store.db"\n'
        'tools = ["hello_tools:get_weather", "hello_tools:get_weather"]\n',
    )
    write("hello_tools.py", (examples / "hello_tools.py").read_text(encoding="utf-8"))
    done = plait_cli("run", "twice.toml", "hi", "--thread", "t")
    assert done.returncode == 1
    assert "two tools are named 'get_weather'" in done.stderr
    files = sorted(p.name for p in tmp_path.iterdir() if p.name != "__pycache__")
    assert files == ["hello_tools.py", "twice.toml"]


def test_thread_without_prompt_on_a_finished_run_is_refused_without_a_model_call(
    plait_cli, write: Callable[[str, str], Path]
) -> None:
    """`--thread ID` without a PROMPT continues the thread's unfinished run; when its run
    has finished there is none, and the model is not asked again."""
    write(
        "memo.toml",
        '[agent]\nmodel = "scripted:memo"\ncheckpointer = "sqlite:///memo.db"\n'
        'model_settings = { responses = ["Noted."] }\n',
    )
    first = plait_cli("run", "memo.toml", "My name is Ada.", "--thread", "ada")
    assert first.returncode == 0, first.stderr
    again = plait_cli("run", "memo.toml", "--thread", "ada")
    assert again.returncode == 1
    assert again.stdout == ""
    assert again.stderr == (
        "plait: error: thread 'ada' has no unfinished run (its last run ended with the "
        "model's answer), so input None has nothing to continue: pass a prompt or messages "
        "to start a new run\n"
    )


def test_a_pydantic_response_format_is_printed_as_json(
    plait_cli, write: Callable[[str, str], Path]
) -> None:
    """agent-files.md: `response_format` may name a pydantic model; `plait run` prints the
    validated answer as JSON (a date as ISO text), plain and with `--json`."""
    write(
        "weather_format.py",
        "import datetime\n\nimport pydantic\n\n\nclass Weather(pydantic.BaseModel):\n"
        "    city: str\n    celsius: float\n    day: datetime.date\n",
    )
    answer = '{"city": "Paris", "celsius": 21, "day": "2026-12-05"}'
    write(
        "weather.toml",
        f'[agent]\nmodel = "scripted:w"\nresponse_format = "weather_format:Weather"\n'
        f"model_settings = {{ responses = ['{answer}'] }}\n",
    )
    plain = plait_cli("run", "weather.toml", "Weather in Paris?")
    assert plain.returncode == 0, plain.stderr
    assert plain.stdout.splitlines()[-1] == (
        '{"city": "Paris", "celsius": 21.0, "day": "2026-12-05"}'
    )
    as_json = plait_cli("run", "weather.toml", "Weather in Paris?", "--json")
    assert as_json.returncode == 0, as_json.stderr
    assert json.loads(as_json.stdout)["structured_response"] == {
        "city": "Paris",
        "celsius": 21.0,
        "day": "2026-12-05",
    }


def test_thread_needs_a_checkpointer(plait_cli, examples) -> None:
    done = plait_cli("run", str(examples / "hello.toml"), "hi", "--thread", "t1")
    assert done.returncode == 1
    assert "--thread needs a checkpointer" in done.stderr


def test_thread_continues_across_processes(plait_cli, write: Callable[[str, str], Path]) -> None:
    write(
        "memo.toml",
        '[agent]\nmodel = "scripted:memo"\ncheckpointer = "sqlite:///memo.db"\n'
        'model_settings = { responses = ["Noted."] }\n',
    )
    first = plait_cli("run", "memo.toml", "My name is Ada.", "--thread", "ada", "--json")
    assert first.returncode == 0, first.stderr
    second = plait_cli("run", "memo.toml", "What is my name?", "--thread", "ada", "--json")
    assert second.returncode == 0, second.stderr
    data = json.loads(second.stdout)
    assert data["thread_id"] == "ada"
    assert [(m["type"], m.get("content")) for m in data["messages"]] == [
        ("human", "My name is Ada."),
        ("ai", "Noted."),
        ("human", "What is my name?"),
        ("ai", "Noted."),
    ]
    other = plait_cli("run", "memo.toml", "Hi", "--thread", "other", "--json")
    assert len(json.loads(other.stdout)["messages"]) == 2


def test_paused_run_is_resumed_with_resume_json(
    plait_cli, mail_agent: Callable[[str], Path]
) -> None:
    mail_agent('checkpointer = "sqlite:///mail.db"')
    paused = plait_cli("run", "mail.toml", "Mail Bob", "--thread", "m1")
    assert paused.returncode == 0, paused.stderr
    assert 'Waiting for approval: send_email({"to": "bob@example.com"' in paused.stdout
    hint = paused.stdout.splitlines()
    command = hint[hint.index("The run is paused on thread 'm1'. Answer with") + 1]
    assert command == (
        """  plait run mail.toml --thread m1 --resume '{"decisions": [{"type": "approve"}]}'"""
    )
    approved = plait_cli(*shlex.split(command)[1:], "--json")  # as printed, after "plait"
    assert approved.returncode == 0, approved.stderr
    assert json.loads(approved.stdout)["text"].startswith("Done: sent to bob@example.com")

    paused = plait_cli("run", "mail.toml", "Mail Bob", "--thread", "m2")

    decisions = json.dumps(
        {
            "decisions": [
                {
                    "type": "edit",
                    "edited_action": {
                        "name": "send_email",
                        "args": {"to": "eve@example.com", "subject": "Hi"},
                    },
                }
            ]
        }
    )
    done = plait_cli("run", "mail.toml", "--thread", "m2", "--resume", decisions, "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["interrupts"] == []
    assert data["text"] == "Done: sent to eve@example.com: Hi"


def test_paused_run_without_checkpointer_says_what_to_add(
    plait_cli, mail_agent: Callable[[str], Path]
) -> None:
    mail_agent("")
    done = plait_cli("run", "mail.toml", "Mail Bob")
    assert done.returncode == 1
    assert 'add checkpointer = "sqlite:///agent.db" to the [agent] table of mail.toml' in (
        done.stderr
    )


def test_resume_needs_a_thread(plait_cli, examples) -> None:
    done = plait_cli("run", str(examples / "hello.toml"), "--resume", "{}")
    assert done.returncode == 1
    assert "--resume needs --thread" in done.stderr


def test_unknown_command_is_a_usage_error(plait_cli) -> None:
    done = plait_cli("frobnicate")
    assert done.returncode == 2
    assert "invalid choice" in done.stderr


def test_model_override_replaces_the_files_model(plait_cli, examples) -> None:
    done = plait_cli("run", str(examples / "hello.toml"), "hi", "--model", "scripted:other")
    assert done.returncode == 1
    assert "ScriptedChatModel 'other' has 0 response(s)" in done.stderr


def test_options_may_come_between_the_file_and_the_prompt(plait_cli, examples) -> None:
    # As examples/hello.toml's header shows it: plait run FILE --model ID "prompt".
    done = plait_cli("run", str(examples / "hello.toml"), "--model", "scripted:other", "hi")
    assert done.returncode == 1
    assert "ScriptedChatModel 'other' has 0 response(s)" in done.stderr
    done = plait_cli("run", str(examples / "hello.toml"), "--json", "Paris?", "--frob")
    assert done.returncode == 2
    assert "unrecognized arguments: --frob" in done.stderr


def test_model_override_does_not_build_the_files_model(plait_cli, write) -> None:
    # The file's provider needs a key this machine does not have; --model never builds it.
    agent = write("agent.toml", '[agent]\nmodel = "anthropic:claude-sonnet-4-5"\n')
    done = plait_cli(
        "run", str(agent), "--model", "scripted:other", "hi", env={"ANTHROPIC_API_KEY": ""}
    )
    assert "no API key" not in done.stderr
    assert "ScriptedChatModel 'other' has 0 response(s)" in done.stderr
