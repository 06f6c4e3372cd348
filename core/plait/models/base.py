"""The ``ChatModel`` base class every provider implements, and model profiles."""

from __future__ import annotations

import abc
import asyncio
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import attrs

from plait.messages import AIMessage, AIMessageChunk, AnyMessage, ToolCallChunk

if TYPE_CHECKING:
    from plait.tools import Tool

__all__ = ["ChatModel", "ModelProfile"]


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


def message_to_chunk(message: AIMessage) -> AIMessageChunk:
    """One chunk carrying all of ``message`` (for models that cannot stream)."""
    import json

    return AIMessageChunk(
        message.text,
        tool_call_chunks=[
            ToolCallChunk(i, call.id, call.name, json.dumps(call.args))
            for i, call in enumerate(message.tool_calls)
        ],
        usage=message.usage,
        response_metadata=message.response_metadata,
        id=message.id,
    )
