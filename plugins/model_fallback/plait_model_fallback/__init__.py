"""``model_fallback``: when the model call fails, try other models in order.

Every call starts again from the agent's own model; the fallbacks are tried one after
another until one answers, and if all fail the last error is raised (each earlier failure
is recorded in a note on it). Errors meant to end the run (``plait.errors.StopRun``) and
interrupts are never treated as failures.

Each fallback gets the request through ``ModelRequest.for_model``, which drops the
provider-native options of other providers.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from typing import Any

import attrs

from plait.errors import ConfigError, StopRun
from plait.lazy import frozen
from plait.middleware import Middleware
from plait.models import ChatModel, infer_provider, init_chat_model
from plait.options import FieldError, expected
from plait.types import AgentConfig, ModelRequest, ModelResponse

__all__ = ["ModelFallbackMiddleware"]


_MODELS = (
    "a non-empty list of 'provider:model' ids (or bare ids such as 'gpt-4o' whose provider "
    "is inferred), ChatModels or mappings of 'model' (an id) and the provider's settings"
)


def _check_models(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, tuple) or not value:
        raise FieldError(attribute.name, expected(_MODELS, value))
    for index, model in enumerate(value):
        if isinstance(model, ChatModel):
            continue
        model_id = model.get("model") if isinstance(model, Mapping) else model
        if not isinstance(model_id, str) or (
            ":" not in model_id and infer_provider(model_id) is None
        ):
            detail = f"{attribute.name}[{index}] is none of these"
            raise FieldError(attribute.name, expected(_MODELS, value, detail))


def _as_tuple(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


@frozen(init=False)
class ModelFallbackMiddleware(Middleware):
    """Tries ``models`` in order when the agent's model call fails.

    ``ModelFallbackMiddleware("openai:gpt-4.1-mini", backup_model)`` — ids are resolved with
    ``plait.models.init_chat_model`` when the agent is built (an unknown id is a
    ``ConfigError`` from ``create_agent``). By name: ``("model_fallback", {"models":
    [...]})``.
    """

    models: tuple[str | ChatModel | Mapping[str, Any], ...] = attrs.field(
        converter=_as_tuple, validator=_check_models, hash=False
    )
    """The fallback models, in the order they are tried: ids, mappings of an id and its
    settings (``{"model": "openai:qwen", "compat": "llama.cpp", "base_url": ...}``), or
    ``ChatModel`` instances."""
    _chain: list[ChatModel] = attrs.field(init=False, factory=list, eq=False, repr=False)

    def __init__(
        self,
        *fallbacks: str | ChatModel | Mapping[str, Any],
        models: Sequence[str | ChatModel | Mapping[str, Any]] | None = None,
    ) -> None:
        """Positional models (``ModelFallbackMiddleware(m1, m2)``), or ``models=[m1, m2]``
        (the form options given by name take)."""
        if fallbacks and models is not None:
            raise TypeError(
                "ModelFallbackMiddleware: give the fallback models positionally or as "
                "models=[...], not both"
            )
        self.__attrs_init__(models=tuple(models) if models is not None else fallbacks)

    # -- build time -------------------------------------------------------------------------

    def validate_agent(self, agent_config: AgentConfig) -> None:
        self._fallbacks()

    def _fallbacks(self) -> list[ChatModel]:
        """The models, ids resolved once (the resolved list is cached on the instance)."""
        if not self._chain:
            resolved = []
            for index, model in enumerate(self.models):
                try:
                    if isinstance(model, Mapping):
                        settings = {k: v for k, v in model.items() if k != "model"}
                        resolved.append(init_chat_model(model["model"], **settings))
                    else:
                        resolved.append(init_chat_model(model))
                except (ConfigError, TypeError) as exc:
                    raise ConfigError(str(exc), option=f"models[{index}]") from exc
            self._chain.extend(resolved)
        return self._chain

    # -- running ----------------------------------------------------------------------------

    def wrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
    ) -> ModelResponse:
        failures: list[tuple[ChatModel, Exception]] = []
        for attempt in self._attempts(request):
            try:
                return handler(attempt)
            except StopRun:
                raise
            except Exception as exc:
                failures.append((attempt.model, exc))
        raise _last_error(failures)

    async def awrap_model_call(
        self,
        request: ModelRequest,
        handler: Callable[[ModelRequest], Awaitable[ModelResponse]],
    ) -> ModelResponse:
        failures: list[tuple[ChatModel, Exception]] = []
        for attempt in self._attempts(request):
            try:
                return await handler(attempt)
            except StopRun:
                raise
            except Exception as exc:
                failures.append((attempt.model, exc))
        raise _last_error(failures)

    def _attempts(self, request: ModelRequest) -> Iterator[ModelRequest]:
        """The request as is, then one per fallback model."""
        yield request
        for model in self._fallbacks():
            yield request.for_model(model)


def _last_error(failures: Sequence[tuple[ChatModel, Exception]]) -> Exception:
    """The last failure, noting what every model raised."""
    last = failures[-1][1]
    tried = "; ".join(
        f"{model.provider}:{model.model_name} raised {type(exc).__name__}: {exc}"
        for model, exc in failures
    )
    last.add_note(f"model_fallback: all {len(failures)} models failed ({tried})")
    return last
