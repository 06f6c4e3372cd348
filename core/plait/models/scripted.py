"""A deterministic chat model for tests and offline demos."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, TypeAlias

import attrs

from plait.errors import PlaitError
from plait.lazy import frozen
from plait.messages import AIMessage, AIMessageChunk, AnyMessage, ToolCallChunk
from plait.models.base import ChatModel, ModelProfile

if TYPE_CHECKING:
    from plait.models.base import ToolDefinition

__all__ = ["ScriptExhaustedError", "ScriptedChatModel", "ScriptedRequest"]

Response: TypeAlias = (
    "AIMessage | str | BaseException"
    " | Callable[[list[AnyMessage], list[ToolDefinition]], AIMessage | str]"
)


class ScriptExhaustedError(PlaitError):
    """The scripted model was called more times than it has responses."""


@frozen
class ScriptedRequest:
    """What one call to a ``ScriptedChatModel`` received."""

    messages: list[AnyMessage]
    system_prompt: str | None
    tools: list[ToolDefinition]
    tool_choice: str | None
    response_format: Mapping[str, Any] | None
    settings: dict[str, Any]
    provider_options: Mapping[str, Any] | None = None

    @property
    def tool_names(self) -> list[str]:
        return [tool.name for tool in self.tools]


class ScriptedChatModel(ChatModel):
    """Answers with ``responses`` in order: an ``AIMessage``, a string, an exception to
    raise, or a function ``(messages, tools) -> AIMessage | str`` (which may raise).

    Every call is recorded in ``requests``. Running past the script raises
    ``ScriptExhaustedError`` saying how many responses it had.
    """

    provider: ClassVar[str] = "scripted"

    def __init__(
        self,
        responses: Sequence[Response] = (),
        *,
        profile: ModelProfile | Mapping[str, Any] | None = None,
        name: str = "scripted",
        native_structured_output: bool = True,
    ) -> None:
        self.responses = list(responses)
        self.model_name = name
        if isinstance(profile, Mapping):
            profile = ModelProfile(**profile)
        self.profile = profile or ModelProfile(structured_output=native_structured_output)
        if not native_structured_output:
            self.profile = attrs.evolve(self.profile, structured_output=False)
        self.requests: list[ScriptedRequest] = []
        self._lock = threading.Lock()

    @classmethod
    def from_id(cls, name: str, **settings: Any) -> ScriptedChatModel:
        """The ``scripted:NAME`` factory: ``responses=[...]`` may come from settings."""
        return cls(settings.pop("responses", ()), name=name or "scripted", **settings)

    @property
    def calls(self) -> int:
        return len(self.requests)

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
        with self._lock:
            index = len(self.requests)
            self.requests.append(
                ScriptedRequest(
                    list(messages),
                    system_prompt,
                    list(tools),
                    tool_choice,
                    response_format,
                    dict(settings),
                    provider_options,
                )
            )
        if index >= len(self.responses):
            raise ScriptExhaustedError(
                f"ScriptedChatModel {self.model_name!r} has {len(self.responses)} "
                f"response(s) but was called {index + 1} times"
            )
        response = self.responses[index]
        if isinstance(response, BaseException):
            raise response
        if callable(response) and not isinstance(response, AIMessage):
            response = response(list(messages), list(tools))
        if isinstance(response, str):
            response = AIMessage(response)
        if not isinstance(response, AIMessage):
            raise TypeError(
                f"scripted response {index} is {type(response).__name__}, not an AIMessage"
            )
        return response

    async def ainvoke(self, messages: Sequence[AnyMessage], **options: Any) -> AIMessage:
        """Native async: a scripted answer needs no worker thread (a response function
        runs on the loop, so it must not block)."""
        return self.invoke(messages, **options)

    def stream(self, messages: Sequence[AnyMessage], **options: Any) -> Iterator[AIMessageChunk]:
        """Streams the scripted answer word by word, tool arguments in two halves."""
        message = self.invoke(messages, **options)
        yield from _chunks(message)

    async def astream(
        self, messages: Sequence[AnyMessage], **options: Any
    ) -> AsyncIterator[AIMessageChunk]:
        """The same chunks as ``stream``, on the event loop."""
        message = self.invoke(messages, **options)
        for chunk in _chunks(message):
            yield chunk


def _chunks(message: AIMessage) -> Iterator[AIMessageChunk]:
    """A scripted answer as a provider would stream it: word by word, each tool call's
    arguments in two halves, usage last."""
    for piece in re.findall(r"\S+\s*|\s+", message.text):
        yield AIMessageChunk(piece, id=message.id)
    for index, call in enumerate(message.tool_calls):
        raw = json.dumps(call.args)
        half = len(raw) // 2
        yield AIMessageChunk(
            tool_call_chunks=[ToolCallChunk(index, call.id, call.name, raw[:half])],
            id=message.id,
        )
        yield AIMessageChunk(
            tool_call_chunks=[ToolCallChunk(index, None, None, raw[half:])], id=message.id
        )
    yield AIMessageChunk(
        usage=message.usage, response_metadata=message.response_metadata, id=message.id
    )
