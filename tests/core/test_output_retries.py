"""``output_retries``: an answer not in the ``response_format`` is sent back to the model
with what was wrong, as many times as configured, then ``StructuredOutputError``."""

from __future__ import annotations

import attrs
import pytest

import plait
from plait.errors import ConfigError, StructuredOutputError
from plait.messages import AIMessage, HumanMessage, ToolCall
from plait.testing import ScriptedChatModel, transcript


@attrs.frozen
class Weather:
    city: str
    celsius: int


def _ask(*answers: object, native: bool = True, **options: object) -> plait.Agent:
    model = ScriptedChatModel(list(answers), native_structured_output=native)
    return plait.create_agent(model, response_format=Weather, **options)  # type: ignore[arg-type]


def test_text_that_does_not_parse_is_sent_back_once_by_default() -> None:
    agent = _ask("It is warm in Paris.", '{"city": "Paris", "celsius": 21}')
    result = agent.invoke("weather?")

    assert result.structured_response == Weather("Paris", 21)
    redo = result.messages[2]
    assert isinstance(redo, HumanMessage)
    assert redo.text.startswith("Your answer is not in the required format: the model's final")
    assert redo.text.endswith("Give the final answer again in that format (reply with JSON only).")
    assert redo.metadata == {"plait": {"format_retry": 1}}
    assert [m.type for m in result.messages] == ["human", "ai", "human", "ai"]


def test_when_the_retries_are_spent_the_error_is_raised() -> None:
    agent = _ask('{"city": "Paris"}', '{"town": "Paris"}', output_retries=1)
    with pytest.raises(StructuredOutputError, match="celsius"):
        agent.invoke("weather?")
    none = _ask("warm", output_retries=0)
    with pytest.raises(StructuredOutputError, match="not JSON"):
        none.invoke("weather?")


def test_more_retries_are_counted_across_a_run() -> None:
    answers = ["warm", "hot", "mild", '{"city": "Oslo", "celsius": 3}']
    result = _ask(*answers, output_retries=3).invoke("weather?")
    assert result.structured_response == Weather("Oslo", 3)
    retries = [
        m.metadata["plait"]["format_retry"] for m in result.messages[1:] if m.type == "human"
    ]
    assert retries == [1, 2, 3]


def test_the_tool_strategy_asks_for_the_answer_tool_after_a_text_answer() -> None:
    answer = AIMessage("", tool_calls=[ToolCall("Weather", {"city": "Rome", "celsius": 30}, "a")])
    result = _ask("Rome is hot.", answer, native=False).invoke("weather?")

    assert result.structured_response == Weather("Rome", 30)
    assert transcript(result.messages)[2][0] == "human"
    assert "Give the final answer again in that format (call 'Weather' with it)." in (
        result.messages[2].text
    )


def test_the_tool_strategy_bounds_answers_whose_arguments_do_not_fit() -> None:
    bad = [
        AIMessage("", tool_calls=[ToolCall("Weather", {"city": "Rome", "celsius": "hot"}, c)])
        for c in ("a", "b")
    ]
    agent = _ask(*bad, native=False, output_retries=1)
    with pytest.raises(StructuredOutputError, match="celsius"):
        agent.invoke("weather?")
    assert len(agent.model.requests) == 2  # type: ignore[attr-defined]


def test_a_bad_value_is_refused_when_the_agent_is_built(tmp_path: object) -> None:
    with pytest.raises(ConfigError, match=r"output_retries.*expected an int >= 0, got -1"):
        _ask("x", output_retries=-1)


def test_an_agent_file_sets_output_retries(tmp_path: pytest.TempPathFactory) -> None:
    from pathlib import Path

    from plait.agentfile import AgentFileError, load_agent

    folder = Path(str(tmp_path))
    (folder / "shapes.py").write_text(
        "import attrs\n\n@attrs.frozen\nclass Weather:\n    city: str\n    celsius: int\n"
    )
    (folder / "a.toml").write_text(
        '[agent]\nmodel = "scripted:w"\nresponse_format = "shapes:Weather"\noutput_retries = 0\n'
        '[agent.model_settings]\nresponses = ["warm"]\n'
    )
    with pytest.raises(StructuredOutputError, match="not JSON"):
        load_agent(folder / "a.toml").invoke("weather?")
    (folder / "b.toml").write_text('[agent]\nmodel = "scripted:w"\noutput_retries = "two"\n')
    with pytest.raises(AgentFileError, match=r"output_retries: expected an int, got 'two'"):
        load_agent(folder / "b.toml")
