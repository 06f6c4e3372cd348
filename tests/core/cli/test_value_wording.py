"""One vocabulary: the same wrong value gets the same sentence wherever it is given."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import pytest

import plait
from plait import schema
from plait.agentfile import AgentFileError, read_agent_file
from plait.errors import ConfigError
from plait.models import MODEL_FORMS
from plait.testing import scripted
from plait.tools import ToolArgumentError
from plait_anthropic import AnthropicBashMiddleware
from plait_model_retry import ModelRetryMiddleware
from plait_tool_call_limit import ToolCallLimitMiddleware

AGENT = '[agent]\nmodel = "scripted:x"\n'


def _file_error(write: Callable[[str, str], Path], body: str) -> str:
    path = write("agent.toml", body)
    with pytest.raises(AgentFileError) as info:
        read_agent_file(path)
    return f"{info.value.where}: {info.value.problem}"


def _config_error(call: Callable[[], Any]) -> str:
    with pytest.raises(ConfigError) as info:
        call()
    return str(info.value)


@attrs.frozen
class Answer:
    n: int


def count(n: int) -> str:
    """Count.

    Args:
        n: how many.
    """
    return str(n)


def test_a_string_for_an_int_reads_the_same_everywhere(write) -> None:
    sentence = "expected an int, got 'two'"
    agent = plait.create_agent(scripted("ok"))
    assert _file_error(write, AGENT + 'recursion_limit = "two"\n') == (
        f"[agent] recursion_limit: {sentence}"
    )
    assert _config_error(lambda: agent.invoke("hi", recursion_limit="two")) == (
        f"recursion_limit: {sentence}"
    )
    assert (
        _config_error(
            lambda: plait.create_agent(
                scripted("ok"), middleware=[("llm_tool_selector", {"max_retries": "two"})]
            )
        )
        == f"plugin 'llm_tool_selector': option 'max_retries': {sentence}"
    )
    assert _file_error(
        write, AGENT + '[[middleware]]\nuse = "llm_tool_selector"\nmax_retries = "two"\n'
    ) == (
        '[[middleware]] #1 (use = "llm_tool_selector"): '
        f"plugin 'llm_tool_selector': option 'max_retries': {sentence}"
    )
    with pytest.raises(ToolArgumentError) as info:
        plait.tool(count).prepare({"n": "two"}, None)
    assert str(info.value) == f"argument 'n': {sentence}"
    with pytest.raises(ValueError) as error:
        schema.structure({"n": "two"}, Answer)
    assert str(error.value) == f"$.n: {sentence}"


def test_a_value_out_of_bounds_reads_the_same_everywhere(write) -> None:
    agent = plait.create_agent(scripted("ok"))
    # an int of at least 1: the agent file, invoke() in Python
    assert _file_error(write, AGENT + "recursion_limit = 0\n") == (
        "[agent] recursion_limit: expected an int >= 1, got 0"
    )
    assert _config_error(lambda: agent.invoke("hi", recursion_limit=0)) == (
        "recursion_limit: expected an int >= 1, got 0"
    )
    # a plugin's limit: Python options, the agent file, and the class called directly
    sentence = "expected an int >= 0 or None, got -1"
    assert (
        _config_error(
            lambda: plait.create_agent(
                scripted("ok"), middleware=[("tool_call_limit", {"run_limit": -1})]
            )
        )
        == f"plugin 'tool_call_limit': option 'run_limit': {sentence}"
    )
    assert _file_error(
        write, AGENT + '[[middleware]]\nuse = "tool_call_limit"\nrun_limit = -1\n'
    ) == (
        '[[middleware]] #1 (use = "tool_call_limit"): '
        f"plugin 'tool_call_limit': option 'run_limit': {sentence}"
    )
    with pytest.raises(ValueError) as info:
        ToolCallLimitMiddleware(run_limit=-1)
    assert str(info.value) == f"run_limit: {sentence}"
    # and a string there reads as the converter puts it
    assert _config_error(
        lambda: plait.create_agent(
            scripted("ok"), middleware=[("tool_call_limit", {"run_limit": "two"})]
        )
    ).endswith("option 'run_limit': expected an int or None, got 'two'")
    with pytest.raises(ValueError, match=r"^run_limit: expected an int or None, got 'two'$"):
        ToolCallLimitMiddleware(run_limit="two")  # type: ignore[arg-type]


def test_an_empty_agent_name_reads_the_same_everywhere(write) -> None:
    sentence = "expected a non-empty string, got ' '"
    assert _file_error(write, AGENT + 'name = " "\n') == f"[agent] name: {sentence}"
    assert _config_error(lambda: plait.create_agent(scripted("ok"), name=" ")) == (
        f"name: {sentence}"
    )
    assert _config_error(lambda: plait.create_agent(scripted("ok"), name=3)) == (  # type: ignore[arg-type]
        "name: expected a non-empty string, got 3"
    )


def test_a_retry_on_that_is_not_an_exception_reads_the_same_everywhere(write) -> None:
    sentence = (
        "expected a subclass of Exception, a list of them or a callable (exception -> bool), "
        "got <class 'KeyboardInterrupt'> (KeyboardInterrupt is not an Exception: interrupts, "
        "cancellation and KeyboardInterrupt are never retried)"
    )
    for plugin in ("model_retry", "tool_retry"):
        assert _config_error(
            lambda plugin=plugin: plait.create_agent(
                scripted("ok"), middleware=[(plugin, {"retry_on": "builtins:KeyboardInterrupt"})]
            )
        ) == (f"plugin {plugin!r}: option 'retry_on': {sentence}")
        assert _file_error(
            write,
            AGENT + f'[[middleware]]\nuse = "{plugin}"\nretry_on = "builtins:KeyboardInterrupt"\n',
        ) == (
            f'[[middleware]] #1 (use = "{plugin}"): '
            f"plugin {plugin!r}: option 'retry_on': {sentence}"
        )
    with pytest.raises(ValueError) as info:
        ModelRetryMiddleware(retry_on=KeyboardInterrupt)  # type: ignore[arg-type]
    assert str(info.value) == f"retry_on: {sentence}"


@pytest.mark.parametrize("key", ["checkpointer", "store"])
def test_a_path_after_memory_reads_the_same_everywhere(write, key: str) -> None:
    sentence = f"expected 'memory', got 'memory:agent.db' (the memory {key} takes no path)"
    assert _config_error(
        lambda: plait.create_agent(scripted("ok"), **{key: "memory:agent.db"})
    ) == (f"{key}: {sentence}")
    # the file is read, then built (where its URLs are opened)
    spec = read_agent_file(write("agent.toml", AGENT + f'{key} = "memory:agent.db"\n'))
    with pytest.raises(AgentFileError) as info:
        spec.build()
    assert f"{info.value.where}: {info.value.problem}" == f"[agent] {key}: {sentence}"
    # the URLs it always took still work
    for url in ("memory", "memory:"):
        assert plait.create_agent(scripted("ok"), **{key: url}) is not None


def test_a_command_name_with_a_path_reads_the_same_everywhere(write) -> None:
    sentence = (
        "expected a list of command names or None, got ['/bin/rm'] "
        "('/bin/rm' is not a bare command name: give 'rm', not '/bin/rm')"
    )
    where = "plugin 'anthropic_bash': option 'denied_commands'"
    assert _config_error(
        lambda: plait.create_agent(
            scripted("ok"), middleware=[("anthropic_bash", {"denied_commands": ["/bin/rm"]})]
        )
    ) == (f"{where}: {sentence}")
    assert _file_error(
        write, AGENT + '[[middleware]]\nuse = "anthropic_bash"\ndenied_commands = ["/bin/rm"]\n'
    ) == (f'[[middleware]] #1 (use = "anthropic_bash"): {where}: {sentence}')
    with pytest.raises(ValueError) as info:
        AnthropicBashMiddleware(denied_commands=["/bin/rm"])
    assert str(info.value) == f"denied_commands: {sentence}"


def test_a_model_id_without_its_provider_reads_the_same_everywhere(write) -> None:
    sentence = f"expected {MODEL_FORMS}, got 'llama3'"
    assert _config_error(lambda: plait.create_agent("llama3")) == f"model: {sentence}"
    assert _file_error(write, '[agent]\nmodel = "llama3"\n') == f"[agent] model: {sentence}"


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            lambda: plait.create_agent(scripted("ok"), middleware="model_retry"),
            "middleware: expected a list of names, (name, options) pairs or instances, "
            "got 'model_retry'",
        ),
        (
            lambda: plait.create_agent(scripted("ok"), response_format=int),
            "response_format: expected an attrs class, a dataclass, a TypedDict, a pydantic"
            " model or a JSON schema dict, got <class 'int'>",
        ),
        (
            lambda: plait.models.init_chat_model("openai:gpt-4.1", api_key="k", compat=3),
            "openai: compat: expected a preset name, a mapping or an OpenAICompat, got 3",
        ),
        (
            lambda: plait.models.init_chat_model("openai:gpt-4.1", api_key="k", profile=3),
            "openai: profile: expected a ModelProfile or a mapping, got 3",
        ),
        (
            lambda: plait.models.init_chat_model("openai:", api_key="k"),
            "openai: model: expected a non-empty name, got ''",
        ),
    ],
)
def test_the_kernels_own_arguments_word_a_wrong_value_alike(
    call: Callable[[], Any], message: str
) -> None:
    assert _config_error(call) == message


def test_wrong_input_and_backends_read_alike() -> None:
    from plait.backends import CompositeBackend, StateBackend

    agent = plait.create_agent(scripted("ok"))
    with pytest.raises(TypeError) as info:
        agent.invoke(3)  # type: ignore[arg-type]
    assert str(info.value) == (
        "input: expected a string, a message, a list of messages, a dict update, a Command or "
        "None, got 3"
    )
    with pytest.raises(TypeError) as info:
        CompositeBackend(StateBackend(), {"/notes": "state"})  # type: ignore[dict-item]
    assert str(info.value) == (
        "routes['/notes']: expected a Backend (an object with bind(runtime)), got 'state'"
    )


def test_state_updates_and_paging_read_alike() -> None:
    from plait.backends import BackendError, format_lines

    agent = plait.create_agent(scripted("ok"))
    with pytest.raises(TypeError) as info:
        agent.invoke({"messages": 3})
    assert str(info.value) == "input: 'messages': expected a message or a list of messages, got 3"
    with pytest.raises(TypeError) as info:
        agent.invoke({"messages": [3]})
    assert str(info.value) == "input: 'messages' item: expected a message, got 3"
    with pytest.raises(BackendError) as error:
        format_lines("a\nb", offset=-1)
    assert str(error.value) == "Error: offset: expected an int >= 0, got -1"
    with pytest.raises(BackendError) as error:
        format_lines("a\nb", limit=0)
    assert str(error.value) == "Error: limit: expected an int >= 1, got 0"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"trigger": {}},
            "option 'trigger': expected at least one of fraction, tokens, messages, got {}",
        ),
        (
            {"keep": {"messages": 3, "tokens": 10}},
            "option 'keep': expected exactly one of fraction, tokens, messages, got "
            "{'messages': 3, 'tokens': 10}",
        ),
    ],
)
def test_summarization_conditions_read_like_every_option(
    options: dict[str, Any], message: str
) -> None:
    summarization = ("summarization", {"model": "scripted:x", **options})
    assert _config_error(
        lambda: plait.create_agent(scripted("ok"), middleware=[summarization])
    ) == (f"plugin 'summarization': {message}")
