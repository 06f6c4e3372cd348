"""``ModelRefusalMiddleware``: a refused model call becomes another model's answer, a
closing message, or ``ModelRefusedError``.

Around each model call: an answer that is a refusal (``refusal_in``) or an error that
stands for one (``refusal_of_error``, Gemini's withheld answers) is set aside and the
call is made again on the next of ``fallback_models``; when none is left, ``on_refusal``
decides. Every refusal met is written in the final answer's
``response_metadata["model_refusal"]``, so the thread records what happened.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from typing import Any, Literal

import attrs

from plait.errors import ConfigError, StopRun
from plait.lazy import frozen
from plait.messages import AIMessage
from plait.middleware import Middleware
from plait.models import ChatModel, init_chat_model
from plait.options import ChatModelOption, FieldError, expected
from plait.types import AgentConfig, ModelRequest, ModelResponse
from plait_model_refusal.refusal import ModelRefusedError, Refusal, refusal_in, refusal_of_error

__all__ = ["ModelRefusalMiddleware"]

KEY = "model_refusal"
_MODES = ("end", "error")
_MODEL = ChatModelOption()


def _as_tuple(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


def _check_models(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, tuple):
        raise FieldError(attribute.name, expected("a list of model ids or ChatModels", value))
    for model in value:
        _MODEL.check(attribute.name, model)


def _check_mode(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value not in _MODES:
        raise FieldError(attribute.name, expected("one of 'end' or 'error'", value))


def _check_message(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is not None and (not isinstance(value, str) or not value):
        raise FieldError(
            attribute.name, expected("a non-empty string, or None for the model's own words", value)
        )


@frozen
class ModelRefusalMiddleware(Middleware):
    """Handles a model's refusal: tries ``fallback_models`` in order, then ends the run
    with an answer (``on_refusal="end"``: ``message``, or the model's own refusal text)
    or raises ``ModelRefusedError`` (``"error"``). Each refusal is recorded in the final
    answer's ``response_metadata["model_refusal"]``."""

    fallback_models: Sequence[str | ChatModel] = attrs.field(
        default=(), converter=_as_tuple, validator=_check_models, kw_only=True
    )
    """Models to ask, in order, when the one before refused (ids or ``ChatModel``s)."""
    on_refusal: Literal["end", "error"] = attrs.field(
        default="end", validator=_check_mode, kw_only=True
    )
    """When every model refused: ``"end"`` answers and ends the run; ``"error"`` raises
    ``ModelRefusedError``."""
    message: str | None = attrs.field(default=None, validator=_check_message, kw_only=True)
    """The answer ``"end"`` gives; ``None``: the last model's own refusal text."""
    _chain: list[ChatModel] = attrs.field(init=False, factory=list, eq=False, repr=False)

    def validate_agent(self, agent_config: AgentConfig) -> None:
        self._fallbacks()

    def _fallbacks(self) -> list[ChatModel]:
        """The fallback models, ids resolved once (when the agent is built)."""
        if len(self._chain) != len(self.fallback_models):
            resolved = []
            for index, model in enumerate(self.fallback_models):
                try:
                    resolved.append(
                        model if isinstance(model, ChatModel) else init_chat_model(model)
                    )
                except (ConfigError, TypeError) as exc:
                    raise ConfigError(str(exc), option=f"fallback_models[{index}]") from exc
            self._chain[:] = resolved
        return self._chain

    def _attempts(self, request: ModelRequest) -> Iterator[ModelRequest]:
        yield request
        for model in self._fallbacks():
            yield request.for_model(model)

    # -- running ----------------------------------------------------------------------------

    def wrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
    ) -> ModelResponse:
        refusals: list[Refusal] = []
        last: ModelResponse | None = None
        for attempt in self._attempts(request):
            try:
                response = handler(attempt)
            except StopRun:
                raise
            except Exception as exc:
                refusal = refusal_of_error(exc, attempt.model)
                if refusal is None:
                    raise
                refusals.append(refusal)
                continue
            refusal = refusal_in(response.message, attempt.model)
            if refusal is None:
                return _recorded(response, refusals, "fallback")
            refusals.append(refusal)
            last = response
        return self._give_up(refusals, last)

    async def awrap_model_call(
        self,
        request: ModelRequest,
        handler: Callable[[ModelRequest], Awaitable[ModelResponse]],
    ) -> ModelResponse:
        refusals: list[Refusal] = []
        last: ModelResponse | None = None
        for attempt in self._attempts(request):
            try:
                response = await handler(attempt)
            except StopRun:
                raise
            except Exception as exc:
                refusal = refusal_of_error(exc, attempt.model)
                if refusal is None:
                    raise
                refusals.append(refusal)
                continue
            refusal = refusal_in(response.message, attempt.model)
            if refusal is None:
                return _recorded(response, refusals, "fallback")
            refusals.append(refusal)
            last = response
        return self._give_up(refusals, last)

    def _give_up(self, refusals: list[Refusal], last: ModelResponse | None) -> ModelResponse:
        final = refusals[-1]
        if self.on_refusal == "error":
            who = ", ".join(f"{r.provider}:{r.model} ({r.reason})" for r in refusals)
            raise ModelRefusedError(
                f"the model refused: {who}" + (f": {final.text}" if final.text else ""),
                tuple(refusals),
            )
        text = self.message or final.text or f"The model declined to answer ({final.reason})."
        answer = last.message if last is not None else None
        message = (
            attrs.evolve(answer, content=text, tool_calls=())
            if answer is not None
            else AIMessage(text)
        )
        return _recorded(ModelResponse([message]), refusals, "end")


def _recorded(
    response: ModelResponse, refusals: list[Refusal], outcome: Literal["fallback", "end"]
) -> ModelResponse:
    """``response`` with the refusals met on the way in its answer's metadata."""
    answer = response.message
    if not refusals or answer is None:
        return response
    record: Mapping[str, Any] = {
        "outcome": outcome,
        "refusals": [r.as_dict() for r in refusals],
    }
    metadata = {**answer.response_metadata, KEY: record}
    messages = [
        attrs.evolve(m, response_metadata=metadata) if m is answer else m for m in response.messages
    ]
    return attrs.evolve(response, messages=messages)
