"""``guardrails``: every bad option fails ``create_agent`` with one sentence naming the
plugin, the entry's path and what was expected."""

from __future__ import annotations

from typing import Any

import pytest

import plait
from plait.errors import ConfigError
from plait.testing import scripted
from plait_guardrails import GuardrailsMiddleware, output_guardrail


@plait.tool
def lookup(name: str) -> str:
    """Look a name up."""
    return name


@output_guardrail
def polite(data: Any) -> None:
    """Never trips."""


P = "plugin 'guardrails': "
CASES: list[tuple[dict[str, Any], str]] = [
    ({}, P + "input, output and tools are all empty; give at least one guardrail"),
    ({"input": "x"}, P + "option 'input': expected a list, got 'x'"),
    (
        {"input": [3]},
        P + "option 'input[0]': expected a guardrail (from input_guardrail, output_guardrail "
        "or tool_guardrail), a function, a 'module:function' string or a table with one of "
        "function, regex, keywords, judge, got 3",
    ),
    (
        {"input": [{"regex": "("}]},
        P + "option 'input[0].regex': expected a regular expression, got '(' (invalid: "
        "missing ), unterminated subpattern at position 0)",
    ),
    (
        {"input": [{"regex": "a", "keywords": ["b"]}]},
        P + "option 'input[0]': expected a table with exactly one of function, regex, "
        "keywords, judge, got {'keywords': ['b'], 'regex': 'a'}",
    ),
    (
        {"output": [{"regex": "a", "action": "reject"}]},
        P + "option 'output[0]': expected a guardrail table with keys among function, "
        "judge, keywords, name, prompt, reason, regex, got {'action': 'reject', 'regex': 'a'}",
    ),
    (
        {"input": [{"judge": "nope", "prompt": "x"}]},
        P + "option 'input[0].judge': expected a 'provider:model' id",
    ),
    (
        {"input": [{"judge": "scripted:j"}]},
        P + "option 'input[0].prompt': expected the rule the judge checks (a non-empty "
        "string), got None",
    ),
    (
        {"input": ["no_such_module_xyz:fn"]},
        P + "option 'input[0]': expected a 'module:function' string naming a function, got "
        "'no_such_module_xyz:fn' (No module named 'no_such_module_xyz')",
    ),
    (
        {"input": [{"keywords": "a"}]},
        P + "option 'input[0].keywords': expected a non-empty list of non-empty strings, got 'a'",
    ),
    (
        {"input": [{"regex": "a"}, {"regex": "b"}]},
        P + "option 'input[1]': expected guardrails with distinct names, got 'regex' (give "
        "one of them name = '...')",
    ),
    (
        {"input": [f"{__name__}:polite"]},
        P + "option 'input[0]': expected a guardrail for input, got 'polite' (it is made as "
        "a output guardrail)",
    ),
    (
        {"tools": {"serch": {"before": [{"regex": "a"}]}}},
        P + "option 'tools' names a tool the agent does not have: 'serch'; the agent's "
        "tools are: lookup",
    ),
    ({"tools": "x"}, P + "option 'tools': expected a mapping or a list, got 'x'"),
    (
        {"tools": {"lookup": {"befor": []}}},
        P + "option \"tools['lookup']\": expected a table with before and/or after, got "
        "{'befor': []} (nothing else)",
    ),
    (
        {"tools": {"lookup": {"before": [{"regex": "a", "action": "replace"}]}}},
        P + "option \"tools['lookup'].before[0].action\": expected 'trip' or 'reject', got "
        "'replace'",
    ),
    (
        {"tools": [polite]},
        P + "option 'tools[0]': expected a guardrail made by tool_guardrail (or a table of "
        "tools), got Guardrail(name='polite'",
    ),
    (
        {"input": [{"regex": "a"}], "exit_behavior": "stop"},
        P + "option 'exit_behavior': expected one of 'error', 'end', got 'stop'",
    ),
    (
        {"output": [{"regex": "a"}], "release": "word"},
        P + "option 'release': expected one of 'sentence', 'end', got 'word'",
    ),
    ({"input": [{"regex": "a"}], "parallel": "yes"}, P + "option 'parallel': expected a bool"),
    (
        {"input": [{"regex": "a"}], "message": ""},
        P + "option 'message': expected a non-empty string, got ''",
    ),
]


@pytest.mark.parametrize(("options", "message"), CASES)
def test_bad_option_is_one_sentence_at_create_agent(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        plait.create_agent(scripted("x"), [lookup], middleware=[("guardrails", options)])
    assert str(caught.value).startswith(message), str(caught.value)


def test_end_exit_refused_with_a_structured_answer() -> None:
    with pytest.raises(
        ConfigError,
        match=(
            r"^plugin 'guardrails': option 'exit_behavior': expected 'error' for an agent with "
            r"a response_format and output or parallel input guardrails, got 'end'"
        ),
    ):
        plait.create_agent(
            scripted("x"),
            middleware=[GuardrailsMiddleware(output=[polite], exit_behavior="end")],
            response_format={"type": "object", "properties": {"a": {"type": "string"}}},
        )


def test_direct_construction_names_the_entry() -> None:
    with pytest.raises(ValueError, match=r"^input\[0\]\.regex: expected a regular expression"):
        GuardrailsMiddleware(input=[{"regex": "("}])
