"""Every built-in middleware that LangChain v1 also has takes LangChain's constructor
arguments, as its documentation (Prebuilt middleware, LangChain 1.5) writes them, and builds
an agent; a wrong call is a one-line ``ConfigError`` in plait's wording, never Python's bare
``TypeError`` about ``__init__``."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

import plait
from plait.errors import ConfigError
from plait.testing import scripted
from plait_context_editing import ClearToolUsesEdit, ContextEditingMiddleware
from plait_filesystem import CompositeBackend, FilesystemMiddleware, StateBackend, StoreBackend
from plait_human_in_the_loop import HumanInTheLoopMiddleware
from plait_llm_tool_emulator import LLMToolEmulator
from plait_llm_tool_selector import LLMToolSelectorMiddleware
from plait_model_call_limit import ModelCallLimitMiddleware
from plait_model_fallback import ModelFallbackMiddleware
from plait_model_retry import ModelRetryMiddleware
from plait_pii import PIIMiddleware
from plait_subagents import SubAgent, SubAgentMiddleware
from plait_summarization import Keep, SummarizationMiddleware, TriggerCondition
from plait_todo_list import TodoListMiddleware
from plait_tool_call_limit import ToolCallLimitMiddleware
from plait_tool_retry import ToolRetryMiddleware


@pytest.fixture(autouse=True)
def _keys(monkeypatch: pytest.MonkeyPatch) -> None:
    # LangChain's examples name hosted models; building one needs a key, never a call.
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")


def detect_ssn(content: str) -> list[dict[str, str | int]]:
    return [
        {"text": m.group(0), "start": m.start(), "end": m.end()}
        for m in re.finditer(r"\d{3}-\d{2}-\d{4}", content)
    ]


def should_retry(error: Exception) -> bool:
    return isinstance(error, TimeoutError)


def format_error(error: Exception) -> str:
    return f"Model call failed: {error}. Please try again later."


@plait.tool
def search(query: str) -> str:
    """Search."""
    return query


@plait.tool
def get_weather(city: str) -> str:
    """Get the weather in a city."""
    return f"The weather in {city} is sunny."


LANGCHAIN_FORMS: dict[str, Callable[[], Any]] = {
    "summarization tuples": lambda: SummarizationMiddleware(
        model="gpt-5.4-mini", trigger=("tokens", 4000), keep=("messages", 20)
    ),
    "summarization list": lambda: SummarizationMiddleware(
        model="gpt-5.4-mini", trigger=[("tokens", 3000), ("messages", 6)], keep=("messages", 20)
    ),
    "summarization fractions": lambda: SummarizationMiddleware(
        model="gpt-5.4-mini", trigger=("fraction", 0.8), keep=("fraction", 0.3)
    ),
    "summarization dicts": lambda: SummarizationMiddleware(
        model="gpt-4o-mini", trigger={"tokens": 4000}, keep={"messages": 20}
    ),
    "human in the loop": lambda: HumanInTheLoopMiddleware(
        interrupt_on={
            "get_weather": {"allowed_decisions": ["approve", "edit", "reject"]},
            "search": False,
        }
    ),
    "human in the loop, True": lambda: HumanInTheLoopMiddleware(interrupt_on={"search": True}),
    "model call limit": lambda: ModelCallLimitMiddleware(
        thread_limit=10, run_limit=5, exit_behavior="end"
    ),
    "tool call limit": lambda: ToolCallLimitMiddleware(thread_limit=20, run_limit=10),
    "tool call limit, one tool": lambda: ToolCallLimitMiddleware(
        tool_name="search", thread_limit=5, run_limit=3
    ),
    "tool call limit, error": lambda: ToolCallLimitMiddleware(
        tool_name="search", run_limit=2, exit_behavior="error"
    ),
    "model fallback": lambda: ModelFallbackMiddleware("gpt-5.4-mini", "claude-3-5-sonnet-20241022"),
    "pii redact": lambda: PIIMiddleware("email", strategy="redact", apply_to_input=True),
    "pii mask": lambda: PIIMiddleware("credit_card", strategy="mask", apply_to_input=True),
    "pii regex string": lambda: PIIMiddleware(
        "api_key", detector=r"sk-[a-zA-Z0-9]{32}", strategy="block"
    ),
    "pii compiled regex": lambda: PIIMiddleware(
        "phone_number",
        detector=re.compile(r"\+?\d{1,3}[\s.-]?\d{3,4}[\s.-]?\d{4}"),
        strategy="mask",
    ),
    "pii function": lambda: PIIMiddleware("ssn", detector=detect_ssn, strategy="hash"),
    "todo list": lambda: TodoListMiddleware(),
    "tool selector": lambda: LLMToolSelectorMiddleware(
        model="gpt-5.4-mini", max_tools=3, always_include=["search"]
    ),
    "tool retry": lambda: ToolRetryMiddleware(max_retries=3, backoff_factor=2.0, initial_delay=1.0),
    "tool retry, all": lambda: ToolRetryMiddleware(
        max_retries=3,
        backoff_factor=2.0,
        initial_delay=1.0,
        max_delay=60.0,
        jitter=True,
        tools=["search"],
        retry_on=(ConnectionError, TimeoutError),
        on_failure="continue",
    ),
    "model retry": lambda: ModelRetryMiddleware(),
    "model retry, exceptions": lambda: ModelRetryMiddleware(
        max_retries=4, retry_on=(TimeoutError, ConnectionError), backoff_factor=1.5
    ),
    "model retry, predicate": lambda: ModelRetryMiddleware(max_retries=3, retry_on=should_retry),
    "model retry, continue": lambda: ModelRetryMiddleware(max_retries=4, on_failure="continue"),
    "model retry, formatter": lambda: ModelRetryMiddleware(max_retries=4, on_failure=format_error),
    "model retry, constant": lambda: ModelRetryMiddleware(
        max_retries=5, backoff_factor=0.0, initial_delay=2.0
    ),
    "model retry, error": lambda: ModelRetryMiddleware(max_retries=2, on_failure="error"),
    "tool emulator": lambda: LLMToolEmulator(),
    "tool emulator, some": lambda: LLMToolEmulator(tools=["get_weather"]),
    "tool emulator, model": lambda: LLMToolEmulator(model="claude-sonnet-4-6"),
    "context editing": lambda: ContextEditingMiddleware(
        edits=[ClearToolUsesEdit(trigger=100000, keep=3)]
    ),
    "context editing, all": lambda: ContextEditingMiddleware(
        edits=[
            ClearToolUsesEdit(
                trigger=2000,
                keep=3,
                clear_tool_inputs=False,
                exclude_tools=[],
                placeholder="[cleared]",
            )
        ],
        token_count_method="approximate",
    ),
    "filesystem": lambda: FilesystemMiddleware(
        backend=None,
        system_prompt="Write to the filesystem when...",
        custom_tool_descriptions={"ls": "Use the ls tool when...", "read_file": "Use it to..."},
    ),
    "filesystem, composite": lambda: FilesystemMiddleware(
        backend=CompositeBackend(default=StateBackend(), routes={"/memories/": StoreBackend()})
    ),
    "subagents": lambda: SubAgentMiddleware(
        default_model="claude-sonnet-4-6",
        default_tools=[],
        subagents=[
            {
                "name": "weather",
                "description": "This subagent can get weather in cities.",
                "system_prompt": "Use the get_weather tool to get the weather in a city.",
                "tools": [get_weather],
                "model": "gpt-5.4",
                "middleware": [],
            }
        ],
    ),
}


@pytest.mark.parametrize("make", LANGCHAIN_FORMS.values(), ids=LANGCHAIN_FORMS.keys())
def test_langchains_documented_forms_build_an_agent(make: Callable[[], Any]) -> None:
    middleware = make()
    agent = plait.create_agent(
        scripted("ok", profile={"max_input_tokens": 128_000}),
        [search, get_weather],
        middleware=[middleware],
        checkpointer="memory",
        store="memory",
    )
    assert agent.middleware[-1] is middleware


def test_the_tuple_forms_mean_what_the_named_forms_mean() -> None:
    model = scripted()
    pair = SummarizationMiddleware(model=model, trigger=("tokens", 500), keep=("messages", 5))
    named = SummarizationMiddleware(
        model=model, trigger=TriggerCondition(tokens=500), keep=Keep(messages=5)
    )
    assert (pair.trigger, pair.keep) == (named.trigger, named.keep)
    either = SummarizationMiddleware(model=model, trigger=[("tokens", 3000), ("messages", 6)])
    assert either.trigger == (TriggerCondition(tokens=3000), TriggerCondition(messages=6))
    assert ClearToolUsesEdit(trigger=2000) == ClearToolUsesEdit(trigger_tokens=2000)
    sub = SubAgentMiddleware(subagents=[{"name": "a", "description": "d", "system_prompt": "s"}])
    assert sub.subagents == (SubAgent(name="a", description="d", system_prompt="s"),)


WRONG_CALLS: dict[str, tuple[Callable[[], Any], str]] = {
    "unknown option": (
        lambda: SummarizationMiddleware(model="gpt-4o", triger=("tokens", 5)),
        "SummarizationMiddleware: unknown option 'triger' (did you mean 'trigger'?); valid "
        "options: model, trigger, keep,",
    ),
    "positional options": (
        lambda: ModelCallLimitMiddleware(5),
        "ModelCallLimitMiddleware: arguments: expected options by name "
        "(ModelCallLimitMiddleware(option=value, ...)), got (5,)",
    ),
    "missing option": (
        lambda: SummarizationMiddleware(),
        "SummarizationMiddleware: missing required option 'model'",
    ),
    "bad pair": (
        lambda: SummarizationMiddleware(model="gpt-4o", trigger=("tokenz", 5)),
        "trigger: expected a condition: a (kind, value) pair such as ('tokens', 4000), a "
        "mapping such as {'tokens': 4000} or a TriggerCondition, with kinds fraction, tokens, "
        "messages, got ('tokenz', 5)",
    ),
    "bad keep": (
        lambda: SummarizationMiddleware(model="gpt-4o", keep=20),
        "keep: expected a condition",
    ),
    "edit option": (
        lambda: ClearToolUsesEdit(trigger_token=5),
        "ClearToolUsesEdit: unknown option 'trigger_token' (did you mean 'trigger_tokens'?)",
    ),
    "count method": (
        lambda: ContextEditingMiddleware(token_count_method="exact"),
        "token_count_method: expected 'model' or 'approximate', got 'exact'",
    ),
    "bare id": (
        lambda: ModelFallbackMiddleware("llama3"),
        "models: expected a non-empty list of 'provider:model' ids (or bare ids such as "
        "'gpt-4o' whose provider is inferred)",
    ),
    "subagent dict": (
        lambda: SubAgentMiddleware(subagents=[{"name": "a", "descripton": "d"}]),
        "plugin 'subagents': missing required option 'description'; unknown option "
        "'descripton' (did you mean 'description'?)",
    ),
}


@pytest.mark.parametrize(("make", "start"), WRONG_CALLS.values(), ids=WRONG_CALLS.keys())
def test_a_wrong_call_is_one_line_in_plaits_wording(make: Callable[[], Any], start: str) -> None:
    with pytest.raises((ConfigError, ValueError)) as info:
        make()
    assert not isinstance(info.value, TypeError)
    assert start in str(info.value)
    assert "\n" not in str(info.value)
    assert "__init__" not in str(info.value)


def test_every_public_middleware_class_refuses_unknown_options_in_plaits_wording() -> None:
    classes = [
        make().__class__
        for make in LANGCHAIN_FORMS.values()  # one instance of each class above
    ]
    for cls in set(classes):
        with pytest.raises(ConfigError) as info:
            cls(no_such_option=1)
        assert str(info.value).startswith(f"{cls.__name__}: unknown option 'no_such_option'")
