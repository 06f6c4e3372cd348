"""The ``ChatModel`` base class every provider implements, and model profiles."""

from __future__ import annotations

import abc
import asyncio
import functools
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import attrs

from plait import effects
from plait.messages import AIMessage, AIMessageChunk, AnyMessage, ToolCallChunk

if TYPE_CHECKING:
    from plait.tools import Tool

__all__ = ["ChatModel", "ModelProfile", "merge_text_blocks"]


@attrs.frozen
class ModelProfile:
    """What is known of a model's limits; fraction-based options read ``max_input_tokens``."""

    max_input_tokens: int | None = None
    max_output_tokens: int | None = None
    tool_calling: bool = True
    structured_output: bool = True


class ChatModel(abc.ABC):
    """A chat model. Providers override ``invoke`` (and, for real streaming and non-
    blocking async, ``stream``/``ainvoke``/``astream``).

    ``tools`` are ``plait.Tool`` objects (name, description, JSON-schema ``parameters``,
    ``provider_options``); ``response_format`` is a JSON schema the answer must match;
    ``provider_options`` carries provider-native extras, and a provider ignores keys
    meant for others. ``ainvoke``, ``stream`` and ``astream`` take the same options as
    ``invoke``.
    """

    provider: ClassVar[str] = "base"
    model_name: str = ""
    profile: ModelProfile | None = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # Every provider's calls are effects (``plait.effects.ModelCall``), whoever makes
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
        tools: Sequence[Tool] = (),
        tool_choice: str | None = None,
        response_format: Mapping[str, Any] | None = None,
        provider_options: Mapping[str, Any] | None = None,
        **settings: Any,
    ) -> AIMessage:
        """Answer ``messages`` with one ``AIMessage``; failures raise ``ProviderError``."""

    async def ainvoke(self, messages: Sequence[AnyMessage], **options: Any) -> AIMessage:
        """Default: ``invoke`` in a worker thread, so the event loop never blocks."""
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


def _invoke(method: Callable[..., AIMessage]) -> Callable[..., AIMessage]:
    @functools.wraps(method)
    def invoke(self: ChatModel, messages: Sequence[AnyMessage], **options: Any) -> AIMessage:
        if not effects.active():
            return method(self, messages, **options)
        call = effects.ModelCall(self, messages, options)
        return effects.call_model(call, lambda: method(self, messages, **options))

    return invoke


def _ainvoke(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    async def ainvoke(self: ChatModel, messages: Sequence[AnyMessage], **options: Any) -> Any:
        if not effects.active():
            return await method(self, messages, **options)
        call = effects.ModelCall(self, messages, options)
        return await effects.acall_model(call, lambda: method(self, messages, **options))

    return ainvoke


def _stream(method: Callable[..., Iterator[AIMessageChunk]]) -> Callable[..., Any]:
    @functools.wraps(method)
    def stream(
        self: ChatModel, messages: Sequence[AnyMessage], **options: Any
    ) -> Iterator[AIMessageChunk]:
        if not effects.active():
            return method(self, messages, **options)
        call = effects.ModelCall(self, messages, options, streaming=True)
        return effects.stream_model(call, lambda: method(self, messages, **options))

    return stream


def _astream(method: Callable[..., AsyncIterator[AIMessageChunk]]) -> Callable[..., Any]:
    @functools.wraps(method)
    def astream(
        self: ChatModel, messages: Sequence[AnyMessage], **options: Any
    ) -> AsyncIterator[AIMessageChunk]:
        if not effects.active():
            return method(self, messages, **options)
        call = effects.ModelCall(self, messages, options, streaming=True)
        return effects.astream_model(call, lambda: method(self, messages, **options))

    return astream


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


def merge_text_blocks(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Adjacent plain text blocks as one, empty ones dropped: the block list
    ``assemble_chunks`` builds from a stream, so ``invoke`` can return the same."""
    out: list[dict[str, Any]] = []
    for block in blocks:
        plain = set(block) == {"type", "text"} and block["type"] == "text"
        if plain and out and set(out[-1]) == {"type", "text"} and out[-1]["type"] == "text":
            out[-1] = {"type": "text", "text": str(out[-1]["text"]) + str(block["text"])}
        elif not (plain and not block["text"]):
            out.append(block)
    return out
