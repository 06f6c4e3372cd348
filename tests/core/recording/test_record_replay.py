"""``create_agent(record=...)`` writes a run's model calls and tool runs, made against a
real OpenAI-compatible server on loopback; ``replay=`` answers the same run with the
server gone, producing the same messages; a changed request fails with a diff."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from replay_server import ReplayServer, openai_completion

import plait
from plait.errors import ConfigError
from plait.messages import unstructure_message
from plait.models.openai import OpenAIChatModel
from plait.recording import ReplayError

calls: list[str] = []


@plait.tool
def weather(city: str) -> str:
    """The weather in a city."""
    calls.append(city)
    return f"sunny in {city}"


def _model(url: str) -> OpenAIChatModel:
    return OpenAIChatModel("gpt-4.1", base_url=url + "/v1", api_key="sk-test")


def _plain(messages: list[Any]) -> list[dict[str, Any]]:
    """Messages as data, without the ids a run makes up for the user's input."""
    out = []
    for m in messages:
        data = unstructure_message(m)
        if m.type == "human":
            data.pop("id")
        out.append(data)
    return out


def _record(tmp_path: Path) -> tuple[Path, Any]:
    path = tmp_path / "runs.jsonl"
    server = ReplayServer()
    try:
        server.json(openai_completion(None, ("c1", "weather", {"city": "Oslo"})))
        server.json(openai_completion("It is sunny in Oslo."))
        agent = plait.create_agent(_model(server.url), [weather], record=path)
        result = agent.invoke("Weather in Oslo?")
        assert len(server.requests) == 2
    finally:
        server.close()
    return path, result


def test_a_recorded_run_replays_offline_with_the_same_messages(tmp_path: Path) -> None:
    calls.clear()
    path, recorded = _record(tmp_path)
    assert calls == ["Oslo"]
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert lines[0]["plait_recording"] == 1 and lines[0]["model"] == "openai:gpt-4.1"
    assert [(e["kind"], len(e["key"])) for e in lines[1:]] == [
        ("model", 32),
        ("tool", 32),
        ("model", 32),
    ]
    # the server is closed: nothing listens at its address any more
    agent = plait.create_agent(_model("http://127.0.0.1:9"), [weather], replay=path)
    replayed = agent.invoke("Weather in Oslo?")
    assert _plain(replayed.messages) == _plain(recorded.messages)
    assert calls == ["Oslo"]  # the tool was answered from the recording, not run


def test_a_changed_request_fails_with_a_diff(tmp_path: Path) -> None:
    path, _ = _record(tmp_path)
    agent = plait.create_agent(_model("http://127.0.0.1:9"), [weather], replay=path)
    with pytest.raises(ReplayError) as caught:
        agent.invoke("Weather in Bergen?")
    text = str(caught.value)
    assert text.startswith("replay: this run's model call differs from the one recorded in")
    assert '\n-   "content": "Weather in Oslo?",\n+   "content": "Weather in Bergen?",' in text


def test_lenient_mode_answers_by_position(tmp_path: Path) -> None:
    path, _ = _record(tmp_path)
    agent = plait.create_agent(
        _model("http://127.0.0.1:9"), [weather], replay=path, replay_mode="lenient"
    )
    result = agent.invoke("Weather in Bergen?")
    assert result.messages[-1].text == "It is sunny in Oslo."


def test_a_recording_of_another_agent_is_refused_in_one_line(tmp_path: Path) -> None:
    path, _ = _record(tmp_path)
    with pytest.raises(ConfigError) as caught:
        plait.create_agent(
            OpenAIChatModel("gpt-4o", base_url="http://127.0.0.1:9/v1", api_key="k"),
            [],
            replay=path,
        )
    assert str(caught.value) == (
        f"replay: {str(path)!r} was recorded by another agent (agent 'agent' on "
        "openai:gpt-4.1 with tools weather), not this one (agent 'agent' on openai:gpt-4o "
        "with tools none)"
    )


def test_a_recording_made_with_another_system_prompt_says_so(tmp_path: Path) -> None:
    # Model, name and tools alike: both descriptions read the same, so the error names
    # the prompt (it read "(agent 'agent' on openai:gpt-4.1 with tools weather), not this
    # one (agent 'agent' on openai:gpt-4.1 with tools weather)", giving no reason).
    path, _ = _record(tmp_path)
    with pytest.raises(ConfigError) as caught:
        plait.create_agent(
            _model("http://127.0.0.1:9"), [weather], replay=path, system_prompt="Be terse."
        )
    assert str(caught.value) == (
        f"replay: {str(path)!r} was recorded by another agent (agent 'agent' on "
        "openai:gpt-4.1 with tools weather), not this one (agent 'agent' on openai:gpt-4.1 "
        "with tools weather); its system prompt differs"
    )


def test_bad_options_are_one_line(tmp_path: Path) -> None:
    model = _model("http://127.0.0.1:9")
    not_a_recording = tmp_path / "x.jsonl"
    not_a_recording.write_text("hello\n")
    with pytest.raises(ConfigError, match=r"^replay: '.*x.jsonl' line 1 is not a JSON object"):
        plait.create_agent(model, replay=not_a_recording)
    with pytest.raises(ConfigError, match=r"^replay: cannot read '.*nope.jsonl': No such file"):
        plait.create_agent(model, replay=tmp_path / "nope.jsonl")
    with pytest.raises(ConfigError, match=r"^replay_mode: expected 'strict' or 'lenient', got 'x'"):
        plait.create_agent(model, replay=not_a_recording, replay_mode="x")
    with pytest.raises(ConfigError, match=r"^record and replay: give one of them, not both$"):
        plait.create_agent(model, record=tmp_path / "a", replay=tmp_path / "b")
    with pytest.raises(ConfigError, match=r"^record: expected a file in an existing directory"):
        plait.create_agent(model, record=tmp_path / "no" / "runs.jsonl")


def test_an_approval_replays_it_pauses_again_and_the_answer_is_replayed(tmp_path: Path) -> None:
    asked: list[Any] = []

    @plait.tool
    def refund(order: int) -> str:
        """Refund an order once a human says yes."""
        answer = plait.interrupt({"refund": order})
        asked.append(answer)
        return "refunded" if answer == "yes" else "not refunded"

    path = tmp_path / "runs.jsonl"
    server = ReplayServer()
    try:
        server.json(openai_completion(None, ("c1", "refund", {"order": 42})))
        server.json(openai_completion("Refunded."))
        agent = plait.create_agent(_model(server.url), [refund], checkpointer="memory", record=path)
        agent.invoke("Refund 42", thread_id="t")
        recorded = agent.invoke(plait.Command(resume="yes"), thread_id="t")
    finally:
        server.close()
    offline = plait.create_agent(
        _model("http://127.0.0.1:9"), [refund], checkpointer="memory", replay=path
    )
    paused = offline.invoke("Refund 42", thread_id="t")
    assert paused.interrupts[0].value == {"refund": 42}  # the tool ran, and asked again
    done = offline.invoke(plait.Command(resume="yes"), thread_id="t")
    assert _plain(done.messages) == _plain(recorded.messages)
    assert asked == ["yes"]  # answered from the recording on resume, not run


def test_async_runs_record_and_replay(tmp_path: Path) -> None:
    import asyncio

    path = tmp_path / "runs.jsonl"
    server = ReplayServer()
    try:
        server.json(openai_completion("Hello."))
        agent = plait.create_agent(_model(server.url), record=path)
        recorded = asyncio.run(agent.ainvoke("Hi"))
    finally:
        server.close()
    offline = plait.create_agent(_model("http://127.0.0.1:9"), replay=path)
    replayed = asyncio.run(offline.ainvoke("Hi"))
    assert replayed.text == recorded.text == "Hello."
    streamed = "".join(chunk.content for chunk, _ in offline.stream("Hi", stream_mode="messages"))
    assert streamed == "Hello."


class StationDown(Exception):
    pass


@plait.tool
def forecast(city: str) -> str:
    """Tomorrow's weather in a city."""
    calls.append(city)
    if city == "Oslo":
        raise StationDown("the Oslo station is down")
    raise ValueError(f"no station in {city}")


def test_a_tool_that_raised_replays_its_error(tmp_path: Path) -> None:
    path = tmp_path / "runs.jsonl"
    server = ReplayServer()
    try:
        server.json(
            openai_completion(
                None, ("c1", "forecast", {"city": "Oslo"}), ("c2", "forecast", {"city": "Atlantis"})
            )
        )
        server.json(openai_completion("No forecast today."))
        agent = plait.create_agent(_model(server.url), [forecast], record=path)
        recorded = agent.invoke("Forecast for Oslo and Atlantis?")
    finally:
        server.close()
    errors = [m.text for m in recorded.messages if m.type == "tool"]
    assert errors[0].startswith("Error: tool 'forecast' raised StationDown: the Oslo station")
    assert errors[1].startswith("Error: tool 'forecast' raised ValueError: no station in Atlantis")
    calls.clear()
    agent = plait.create_agent(_model("http://127.0.0.1:9"), [forecast], replay=path)
    replayed = agent.invoke("Forecast for Oslo and Atlantis?")

    # the model was asked with the same error messages, so the strict replay matched (an
    # error message's id is the kernel's own, made after the tool raised)
    def texts(messages: list[Any]) -> list[tuple[str, str]]:
        return [(m.type, m.text) for m in messages]

    assert texts(replayed.messages) == texts(recorded.messages)
    assert replayed.text == "No forecast today."
    assert calls == []
