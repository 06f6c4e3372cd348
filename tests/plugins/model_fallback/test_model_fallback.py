"""``model_fallback``: ordered fallbacks, the last error, provider options, retry nesting."""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar

import pytest

import plait
from plait.errors import ConfigError, ModelCallLimitExceededError, ProviderError
from plait.models import ScriptedChatModel
from plait.testing import FakeSleeper, ai, call, scripted, transcript
from plait_model_fallback import ModelFallbackMiddleware
from plait_model_retry import ModelRetryMiddleware


class AnthropicLike(ScriptedChatModel):
    """A scripted model that says it is another provider's."""

    provider: ClassVar[str] = "anthropic"


def down(status: int = 500, message: str = "down") -> ProviderError:
    return ProviderError(message, status_code=status)


@plait.tool
def ping() -> str:
    """Answer pong."""
    return "pong"


def test_falls_back_in_order_until_a_model_answers(make_agent: Any) -> None:
    first, second = scripted(down(503)), scripted("from the second fallback")
    agent = make_agent([down()], middleware=[ModelFallbackMiddleware(first, second)])
    result = agent.invoke("hi")
    assert transcript(result.messages) == [("human", "hi"), ("ai", "from the second fallback")]
    assert (agent.model.calls, first.calls, second.calls) == (1, 1, 1)
    assert [m.text for m in second.requests[0].messages] == ["hi"]


def test_no_fallback_when_the_primary_answers(make_agent: Any) -> None:
    backup = scripted("unused")
    agent = make_agent(["primary"], middleware=[ModelFallbackMiddleware(backup)])
    assert agent.invoke("hi").text == "primary"
    assert backup.calls == 0


def test_the_last_error_is_raised_when_every_model_fails(make_agent: Any) -> None:
    last = down(502, "bad gateway")
    agent = make_agent(
        [down(500)], middleware=[ModelFallbackMiddleware(scripted(down(429)), scripted(last))]
    )
    with pytest.raises(ProviderError) as raised:
        agent.invoke("hi")
    assert raised.value is last
    (note,) = raised.value.__notes__
    assert note.startswith(
        "model_fallback: all 3 models failed (scripted:scripted raised ProviderError: down;"
    )
    assert note.endswith("ProviderError: bad gateway)")


def test_non_retryable_errors_still_fall_back(make_agent: Any) -> None:
    backup = scripted("ok")
    agent = make_agent([down(401, "bad key")], middleware=[ModelFallbackMiddleware(backup)])
    assert agent.invoke("hi").text == "ok"


def test_every_call_starts_again_from_the_primary(make_agent: Any) -> None:
    backup = scripted(ai("", call("ping")))
    agent = make_agent(
        [down(), "primary again"], tools=[ping], middleware=[ModelFallbackMiddleware(backup)]
    )
    result = agent.invoke("hi")
    assert transcript(result.messages) == [
        ("human", "hi"),
        ("ai", ""),
        ("tool", "pong"),
        ("ai", "primary again"),
    ]
    assert (agent.model.calls, backup.calls) == (2, 1)


def test_stop_run_errors_are_not_failures(make_agent: Any) -> None:
    def stop(messages: Any, tools: Any) -> Any:
        raise ModelCallLimitExceededError("stop")

    backup = scripted("unused")
    agent = make_agent([stop], middleware=[ModelFallbackMiddleware(backup)])
    with pytest.raises(ModelCallLimitExceededError):
        agent.invoke("hi")
    assert backup.calls == 0


def test_an_interrupt_is_never_a_failure(make_agent: Any) -> None:
    def ask(messages: Any, tools: Any) -> Any:
        plait.interrupt("may I?")
        return "asked"

    backup = scripted("unused")
    agent = make_agent([ask], middleware=[ModelFallbackMiddleware(backup)])
    result = agent.invoke("hi", thread_id="t")
    assert [i.value for i in result.interrupts] == ["may I?"]
    assert backup.calls == 0


# -- provider options ---------------------------------------------------------------------

CACHE = {"cache_control": {"type": "ephemeral"}}


@plait.tool(provider_options={"anthropic": CACHE, "strict": True})
def lookup(q: str) -> str:
    """Look something up.

    Args:
        q: the query.
    """
    return q


@plait.wrap_model_call
def mark_for_anthropic(request: plait.ModelRequest, handler: Any) -> Any:
    options = {"anthropic": CACHE, "scripted": {"seed": 1}, "trace": "on"}
    return handler(request.override(provider_options=options))


def test_other_providers_options_are_stripped_for_another_provider(make_agent: Any) -> None:
    primary = AnthropicLike([down()])
    backup = scripted("ok")
    agent = make_agent(
        primary, tools=[lookup], middleware=[mark_for_anthropic, ModelFallbackMiddleware(backup)]
    )
    assert agent.invoke("hi").text == "ok"
    assert primary.requests[0].provider_options == {
        "anthropic": CACHE,
        "scripted": {"seed": 1},
        "trace": "on",
    }
    sent = backup.requests[0]
    assert sent.provider_options == {"scripted": {"seed": 1}, "trace": "on"}
    (tool,) = sent.tools
    assert tool.name == "lookup"
    assert tool.provider_options == {"strict": True}
    assert lookup.provider_options == {"anthropic": CACHE, "strict": True}  # untouched


def test_same_provider_fallback_keeps_every_option(make_agent: Any) -> None:
    primary, backup = AnthropicLike([down()]), AnthropicLike(["ok"])
    agent = make_agent(
        primary, tools=[lookup], middleware=[mark_for_anthropic, ModelFallbackMiddleware(backup)]
    )
    agent.invoke("hi")
    assert backup.requests[0].provider_options == primary.requests[0].provider_options
    assert backup.requests[0].tools[0].provider_options == {"anthropic": CACHE, "strict": True}


# -- composing with model_retry -----------------------------------------------------------


def test_retry_each_model_then_fall_back(make_agent: Any) -> None:
    """Fallback outside, retry inside: the primary gets all its retries first."""
    sleeper = FakeSleeper()
    backup = scripted(down(503), "backup answer")
    agent = make_agent(
        [down(503), down(503), down(503)],
        middleware=[
            ModelFallbackMiddleware(backup),
            # inside a fallback, a retry must let the error out for the fallback to see it
            ModelRetryMiddleware(
                max_retries=2,
                jitter=False,
                on_failure="error",
                sleep=sleeper,
                asleep=sleeper.asleep,
            ),
        ],
    )
    assert agent.invoke("hi").text == "backup answer"
    assert (agent.model.calls, backup.calls) == (3, 2)
    assert sleeper.delays == [1.0, 2.0, 1.0]  # primary's two retries, then one for the backup


def test_fall_back_then_retry_the_chain(make_agent: Any) -> None:
    """Retry outside, fallback inside: each attempt tries the primary, then the backup."""
    sleeper = FakeSleeper()
    backup = scripted(down(503), "backup answer")
    agent = make_agent(
        [down(503), down(503)],
        middleware=[
            ModelRetryMiddleware(max_retries=2, jitter=False, sleep=sleeper, asleep=sleeper.asleep),
            ModelFallbackMiddleware(backup),
        ],
    )
    assert agent.invoke("hi").text == "backup answer"
    assert (agent.model.calls, backup.calls) == (2, 2)
    assert sleeper.delays == [1.0]


def test_retry_then_fallback_gives_up_with_the_last_models_error(make_agent: Any) -> None:
    sleeper = FakeSleeper()
    final = down(503, "backup down too")
    agent = make_agent(
        [down(503), down(503)],
        middleware=[
            ModelFallbackMiddleware(scripted(down(503), final)),
            ModelRetryMiddleware(
                max_retries=1,
                jitter=False,
                on_failure="error",
                sleep=sleeper,
                asleep=sleeper.asleep,
            ),
        ],
    )
    with pytest.raises(ProviderError) as raised:
        agent.invoke("hi")
    assert raised.value is final
    assert sleeper.delays == [1.0, 1.0]


def test_composition_on_the_async_path(make_agent: Any) -> None:
    sleeper = FakeSleeper()
    backup = scripted(down(503), "async backup")
    agent = make_agent(
        [down(503), down(503), down(503)],
        middleware=[
            ModelFallbackMiddleware(backup),
            # inside a fallback, a retry must let the error out for the fallback to see it
            ModelRetryMiddleware(
                max_retries=2,
                jitter=False,
                on_failure="error",
                sleep=sleeper,
                asleep=sleeper.asleep,
            ),
        ],
    )
    assert asyncio.run(agent.ainvoke("hi")).text == "async backup"
    assert sleeper.delays == [1.0, 2.0, 1.0]


def test_async_fallback_and_last_error(make_agent: Any) -> None:
    backup = scripted("async ok")
    agent = make_agent([down()], middleware=[ModelFallbackMiddleware(backup)])
    assert asyncio.run(agent.ainvoke("hi")).text == "async ok"
    last = down(504, "timeout")
    failing = make_agent([down()], middleware=[ModelFallbackMiddleware(scripted(last))])
    with pytest.raises(ProviderError) as raised:
        asyncio.run(failing.ainvoke("hi"))
    assert raised.value is last


# -- construction and options -------------------------------------------------------------


def test_positional_and_keyword_construction_agree() -> None:
    backup = scripted()
    assert ModelFallbackMiddleware("scripted:a", backup).models == ("scripted:a", backup)
    assert ModelFallbackMiddleware(models=["scripted:a", backup]).models == ("scripted:a", backup)
    with pytest.raises(TypeError, match=r"positionally or as models=\[\.\.\.\], not both"):
        ModelFallbackMiddleware("scripted:a", models=["scripted:b"])


def test_ids_are_resolved_when_the_agent_is_built(make_agent: Any) -> None:
    agent = make_agent([down()], middleware=[("model_fallback", {"models": ["scripted:backup"]})])
    (middleware,) = agent.middleware
    assert middleware.models == ("scripted:backup",)
    # the id named a real scripted model (with no script): it was called, and its error is last
    with pytest.raises(plait.PlaitError, match="ScriptedChatModel 'backup' has 0 response"):
        agent.invoke("hi")


def test_an_unknown_provider_fails_at_create_agent(make_agent: Any) -> None:
    middleware = ModelFallbackMiddleware("nowhere:model-x")  # building it does not resolve it
    with pytest.raises(ConfigError) as raised:
        make_agent([], middleware=[middleware])
    assert str(raised.value).startswith(
        "plugin 'model_fallback': option 'models[0]': unknown model provider 'nowhere'"
    )


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({}, "missing required option 'models'"),
        (
            {"models": []},
            "option 'models': expected a non-empty list of 'provider:model' ids (or bare ids "
            "such as 'gpt-4o' whose provider is inferred), ChatModels or mappings of 'model' (an "
            "id) and the provider's settings, got ()",
        ),
        (
            {"models": ["scripted:a", "llama3"]},
            "option 'models': expected a non-empty list of 'provider:model' ids (or bare ids "
            "such as 'gpt-4o' whose provider is inferred), ChatModels or mappings of 'model' (an "
            "id) and the provider's settings, got ('scripted:a', 'llama3') (models[1] is none "
            "of these)",
        ),
        ({"models": "scripted:a"}, "option 'models'"),
        ({"models": [42]}, "option 'models[0]'"),
        ({"models": ["scripted:a"], "order": 1}, "unknown option 'order'"),
    ],
)
def test_bad_options_fail_at_create_agent(
    make_agent: Any, options: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError) as raised:
        make_agent([], middleware=[("model_fallback", options)])
    assert str(raised.value).startswith("plugin 'model_fallback': ")
    assert message in str(raised.value)


def test_no_models_positionally_is_refused() -> None:
    with pytest.raises(ValueError) as info:
        ModelFallbackMiddleware()
    assert str(info.value) == (
        "models: expected a non-empty list of 'provider:model' ids (or bare ids such as "
        "'gpt-4o' whose provider is inferred), ChatModels or mappings of 'model' (an id) and "
        "the provider's settings, got ()"
    )


def test_streaming_falls_back_too(make_agent: Any) -> None:
    backup = scripted("from the backup")
    agent = make_agent([down()], middleware=[ModelFallbackMiddleware(backup)])

    async def collect() -> str:
        parts = [
            e.data.content
            async for e in agent.astream("hi", mode="messages")
            if e.source == "model"
        ]
        return "".join(parts)

    assert asyncio.run(collect()) == "from the backup"
    assert backup.calls == 1


def test_a_fallback_given_as_an_id_with_settings_carries_them() -> None:
    from plait.models.openai import COMPAT_PRESETS

    fallback = ModelFallbackMiddleware(
        {"model": "openai:qwen", "compat": "llama.cpp", "base_url": "http://127.0.0.1:9/v1"}
    )
    (model,) = fallback._fallbacks()
    assert model.compat == COMPAT_PRESETS["llama.cpp"]
    assert model.base_url == "http://127.0.0.1:9/v1"
    with pytest.raises(ConfigError, match=r"option 'models\[0\]'.*no_such_setting"):
        ModelFallbackMiddleware({"model": "scripted:c", "no_such_setting": 1})._fallbacks()
