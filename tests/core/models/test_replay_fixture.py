"""``plait.testing``'s ``replay_server`` fixture is what a third-party provider's tests use:
a real loopback server the kernel's own provider answers through, recording each request."""

from __future__ import annotations

import pytest

from plait.errors import ProviderError
from plait.messages import HumanMessage
from plait.models.openai import OpenAIChatModel
from plait.testing import ReplayServer


def _completion(text: str) -> dict[str, object]:
    return {
        "id": "c1",
        "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}}],
    }


def test_a_provider_answers_through_the_fixture(replay_server: ReplayServer) -> None:
    replay_server.json(_completion("hi there"))
    model = OpenAIChatModel("m", api_key="sk-test-000000", base_url=replay_server.url)
    assert model.invoke([HumanMessage("hello")]).content == "hi there"
    assert replay_server.last.path == "/chat/completions"
    assert replay_server.last.body["messages"] == [{"role": "user", "content": "hello"}]
    assert replay_server.last.headers["authorization"] == "Bearer sk-test-000000"


def test_a_stream_cut_short_is_a_provider_error(replay_server: ReplayServer) -> None:
    chunk = {"id": "c1", "choices": [{"index": 0, "delta": {"content": "par"}}]}
    replay_server.openai_stream([chunk], done=False, split=5, cut=True)
    model = OpenAIChatModel("m", api_key="k", base_url=replay_server.url)
    with pytest.raises(ProviderError):
        list(model.stream([HumanMessage("hello")]))


def test_an_unscripted_request_gets_a_500(replay_server: ReplayServer) -> None:
    model = OpenAIChatModel("m", api_key="k", base_url=replay_server.url)
    with pytest.raises(ProviderError, match="500"):
        model.invoke([HumanMessage("hello")])
