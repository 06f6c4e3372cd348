"""The ``ChatModel`` base class every provider implements, what it reads of a tool
(``ToolDefinition``), the effect each of its calls is (``ModelCall``), and model
profiles."""

from __future__ import annotations

import abc
import contextvars
import functools
import types
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from typing import Any, ClassVar, Protocol, TypeVar

from plait import usage as _usage
from plait._performers import Effect, aperform, perform
from plait._performers import active as _performing
from plait.lazy import frozen, lazy_exports
from plait.messages import AIMessage, AIMessageChunk, AnyMessage, ToolCallChunk, assemble_chunks

__all__ = ["ChatModel", "ModelCall", "ModelProfile", "ToolDefinition"]

__getattr__ = lazy_exports(
    __name__,
    {},
    deprecated={
        "merge_text_blocks": (
            "plait.models._http:merge_text_blocks",
            "import merge_text_blocks from plait.models.http",
        )
    },
)

T = TypeVar("T")


class ToolDefinition(Protocol):
    """What a provider reads of each tool it offers the model. ``plait.Tool`` is one; a
    provider never runs a tool, so it needs nothing else."""

    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str: ...

    @property
    def parameters(self) -> Mapping[str, Any]:
        """The JSON schema of the arguments (an object schema)."""

    @property
    def provider_options(self) -> Mapping[str, Any]:
        """Provider-native extras; a tool run by the provider (a server tool) is described
        here alone."""


@frozen
class ModelProfile:
    """What is known of a model's limits; fraction-based options read ``max_input_tokens``."""

    max_input_tokens: int | None = None
    max_output_tokens: int | None = None
    tool_calling: bool = True
    structured_output: bool = True


class ChatModel(abc.ABC):
    """A chat model. Providers override ``invoke`` (and, for real streaming and non-
    blocking async, ``stream``/``ainvoke``/``astream``).

    ``tools`` are ``ToolDefinition``s (``plait.Tool`` objects: name, description,
    JSON-schema ``parameters``, ``provider_options``); ``response_format`` is a JSON
    schema the answer must match; ``provider_options`` carries provider-native extras,
    and a provider ignores keys meant for others. ``ainvoke``, ``stream`` and
    ``astream`` take the same options as ``invoke``.

    A subclass's own ``invoke``/``ainvoke``/``stream``/``astream`` are wrapped when the
    class is defined (``__init_subclass__``): inside a run, each call is checked against
    and recorded in the run's usage ledger, and with a performer installed it is handed
    over as a ``plait.effects.ModelCall``. Outside both it goes straight to the provider.
    docs/internals.md draws the whole path of one model call.
    """

    provider: ClassVar[str] = "base"
    model_name: str = ""
    profile: ModelProfile | None = None
    settings: Mapping[str, Any] = types.MappingProxyType({})
    """Settings the model was made with (``temperature=0``, ``max_tokens``...), sent with
    every call unless the call gives its own; tracing records them with the call's."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # Every provider's calls are effects (``ModelCall``), whoever makes
        # them, so a performer (tracing, durable execution) sees each one.
        super().__init_subclass__(**kwargs)
        for name, performed in _PERFORMED.items():
            method = cls.__dict__.get(name)
            if method is not None:
                setattr(cls, name, performed(method))

    @abc.abstractmethod
    def invoke(
        self,
        messages: Sequence[AnyMessage],
        *,
        system_prompt: str | None = None,
        tools: Sequence[ToolDefinition] = (),
        tool_choice: str | None = None,
        response_format: Mapping[str, Any] | None = None,
        provider_options: Mapping[str, Any] | None = None,
        **settings: Any,
    ) -> AIMessage:
        """Answer ``messages`` with one ``AIMessage``; failures raise ``ProviderError``."""

    async def ainvoke(self, messages: Sequence[AnyMessage], **options: Any) -> AIMessage:
        """Default: ``invoke`` in a worker thread, so the event loop never blocks."""
        import asyncio

        return await asyncio.to_thread(lambda: self.invoke(messages, **options))

    def stream(self, messages: Sequence[AnyMessage], **options: Any) -> Iterator[AIMessageChunk]:
        """Default: the whole ``invoke`` answer as one chunk."""
        message = self.invoke(messages, **options)
        yield message_to_chunk(message)

    async def astream(
        self, messages: Sequence[AnyMessage], **options: Any
    ) -> AsyncIterator[AIMessageChunk]:
        """Default: the whole ``ainvoke`` answer as one chunk."""
        message = await self.ainvoke(messages, **options)
        yield message_to_chunk(message)

    def count_tokens(self, messages: Sequence[AnyMessage]) -> int:
        """Tokens ``messages`` take; the default is plait's approximate counter."""
        from plait.tokens import count_tokens

        return count_tokens(messages)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.provider}:{self.model_name}>"


@frozen
class ModelCall(Effect):
    """One call of a chat model, as performers see it (``plait.effects``).

    ``proceed()`` returns the ``AIMessage``; when ``streaming``, an iterator (async
    iterator for ``aperform``) of ``AIMessageChunk`` — and the performer returns an
    iterable (async iterable) of chunks.
    """

    model: ChatModel
    messages: Sequence[AnyMessage]
    options: Mapping[str, Any]
    streaming: bool = False


# A model call made while performing another (a provider's ``stream`` built on its own
# ``invoke``) is part of that one, not an effect of its own: it goes straight to the
# provider, as every call does when no performer is installed.
_in_model_call: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "plait_in_model_call", default=False
)


def _invoke(method: Callable[..., AIMessage]) -> Callable[..., AIMessage]:
    @functools.wraps(method)
    def invoke(self: ChatModel, messages: Sequence[AnyMessage], **options: Any) -> AIMessage:
        ledger = _usage.current()
        if _in_model_call.get() or (ledger is None and not _performing()):
            return method(self, messages, **options)  # straight to the provider

        def proceed() -> AIMessage:
            token = _in_model_call.set(True)
            try:
                return method(self, messages, **options)
            finally:
                _in_model_call.reset(token)

        if ledger is not None:
            ledger.check()
        if not _performing():
            answer = proceed()
        else:
            answer = perform(ModelCall(self, messages, options), proceed)
        if ledger is not None:
            ledger.record_call(self, messages, options, answer)
        return answer

    return invoke


def _ainvoke(method: Callable[..., Awaitable[AIMessage]]) -> Callable[..., Any]:
    @functools.wraps(method)
    async def ainvoke(self: ChatModel, messages: Sequence[AnyMessage], **options: Any) -> AIMessage:
        ledger = _usage.current()
        if _in_model_call.get() or (ledger is None and not _performing()):
            return await method(self, messages, **options)  # straight to the provider

        async def proceed() -> AIMessage:
            token = _in_model_call.set(True)
            try:
                return await method(self, messages, **options)
            finally:
                _in_model_call.reset(token)

        if ledger is not None:
            ledger.check()
        if not _performing():
            answer = await proceed()
        else:
            answer = await aperform(ModelCall(self, messages, options), proceed)
        if ledger is not None:
            ledger.record_call(self, messages, options, answer)
        return answer

    return ainvoke


def _stream(method: Callable[..., Iterator[AIMessageChunk]]) -> Callable[..., Any]:
    @functools.wraps(method)
    def stream(
        self: ChatModel, messages: Sequence[AnyMessage], **options: Any
    ) -> Iterator[AIMessageChunk]:
        ledger = _usage.current()
        if _in_model_call.get() or (ledger is None and not _performing()):
            return method(self, messages, **options)  # straight to the provider
        call = ModelCall(self, messages, options, streaming=True)
        return _performed_stream(call, lambda: method(self, messages, **options), ledger)

    return stream


def _astream(method: Callable[..., AsyncIterator[AIMessageChunk]]) -> Callable[..., Any]:
    @functools.wraps(method)
    def astream(
        self: ChatModel, messages: Sequence[AnyMessage], **options: Any
    ) -> AsyncIterator[AIMessageChunk]:
        ledger = _usage.current()
        if _in_model_call.get() or (ledger is None and not _performing()):
            return method(self, messages, **options)  # straight to the provider
        call = ModelCall(self, messages, options, streaming=True)
        return _aperformed_stream(call, lambda: method(self, messages, **options), ledger)

    return astream


def _performed_stream(
    effect: ModelCall, start: Callable[[], Iterator[T]], ledger: _usage.RunUsage | None
) -> Iterator[T]:
    """The chunks of a streamed model call, performed when the first one is asked for
    (and refused then if a limit is reached), recorded in ``ledger`` when they end."""
    if ledger is not None:
        ledger.check()
    chunks: list[Any] = []
    try:
        if _performing():
            source: Iterator[T] = iter(perform(effect, lambda: _guarded(start())))
        else:
            source = _guarded(start())
        for chunk in source:
            chunks.append(chunk)
            yield chunk
    finally:
        if ledger is not None:
            _record_stream(ledger, effect, chunks)


async def _aperformed_stream(
    effect: ModelCall, start: Callable[[], AsyncIterator[T]], ledger: _usage.RunUsage | None
) -> AsyncIterator[T]:
    if ledger is not None:
        ledger.check()

    async def proceed() -> AsyncIterator[T]:
        return _aguarded(start())

    chunks: list[Any] = []
    try:
        source = await aperform(effect, proceed) if _performing() else await proceed()
        async for chunk in _aiter(source):
            chunks.append(chunk)
            yield chunk
    finally:
        if ledger is not None:
            _record_stream(ledger, effect, chunks)


def _record_stream(ledger: _usage.RunUsage, effect: ModelCall, chunks: list[Any]) -> None:
    """Record a streamed call: the usage its chunks carry, else an estimate of what was
    streamed (of the prompt alone, if the stream failed before its first chunk)."""
    answer = assemble_chunks(chunks) if chunks else None
    ledger.record_call(effect.model, effect.messages, effect.options, answer)


def _guarded(chunks: Iterator[T]) -> Iterator[T]:
    while True:
        token = _in_model_call.set(True)
        try:
            chunk = next(chunks)
        except StopIteration:
            return
        finally:
            _in_model_call.reset(token)
        yield chunk


async def _aguarded(chunks: AsyncIterator[T]) -> AsyncIterator[T]:
    while True:
        token = _in_model_call.set(True)
        try:
            chunk = await anext(chunks)
        except StopAsyncIteration:
            return
        finally:
            _in_model_call.reset(token)
        yield chunk


async def _aiter(chunks: Any) -> AsyncIterator[Any]:
    """What a performer returned for an async stream: an async iterable, or a plain one
    (chunks recorded earlier)."""
    if hasattr(chunks, "__aiter__"):
        async for chunk in chunks:
            yield chunk
    else:
        for chunk in chunks:
            yield chunk


_PERFORMED: dict[str, Callable[[Any], Any]] = {
    "invoke": _invoke,
    "ainvoke": _ainvoke,
    "stream": _stream,
    "astream": _astream,
}
for _name, _performed in _PERFORMED.items():
    _method = ChatModel.__dict__[_name]
    if not getattr(_method, "__isabstractmethod__", False):
        setattr(ChatModel, _name, _performed(_method))


def message_to_chunk(message: AIMessage) -> AIMessageChunk:
    """One chunk carrying all of ``message`` (for models that cannot stream). Block-list
    content goes whole into the chunk's ``blocks``, so ``assemble_chunks`` gives the same
    content back (thinking and other native blocks included)."""
    import json

    blocks = [dict(block) for block in message.content] if isinstance(message.content, list) else []
    return AIMessageChunk(
        "" if blocks else message.text,
        blocks=blocks,
        tool_call_chunks=[
            ToolCallChunk(i, call.id, call.name, json.dumps(call.args))
            for i, call in enumerate(message.tool_calls)
        ],
        usage=message.usage,
        response_metadata=message.response_metadata,
        id=message.id,
    )
