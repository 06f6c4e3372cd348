"""Message types: what the model reads and writes, and what the thread stores.

Every message is a frozen attrs class with a stable ``id`` and a free-form ``metadata``
dict that is persisted with it. ``to_json``/``from_json`` round-trip any list exactly.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypeAlias, TypeGuard

import attrs
import cattrs
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override

from plait._convert import expected
from plait._ids import new_id
from plait.lazy import frozen, lazy_exports

__all__ = [
    "REMOVE_ALL",
    "AIMessage",
    "AIMessageChunk",
    "AnyMessage",
    "Content",
    "HumanMessage",
    "Message",
    "RemoveMessage",
    "SystemMessage",
    "ToolCall",
    "ToolCallChunk",
    "ToolMessage",
    "Usage",
    "assemble_chunks",
    "from_json",
    "message_from_dict",
    "message_text",
    "parse_tool_call",
    "pending_tool_calls",
    "to_json",
]

Content: TypeAlias = str | list[dict[str, Any]]
"""A message's ``content``: text, or a list of content blocks (dicts with a ``type``)."""
REMOVE_ALL = "__remove_all__"


def _new_id() -> str:
    return new_id()  # looked up at call time: an id_source may be installed


def message_text(content: Content) -> str:
    """The text of ``content``: the string itself, or its text blocks joined."""
    if isinstance(content, str):
        return content
    return "".join(str(block.get("text", "")) for block in content if block.get("type") == "text")


def _counts(value: Mapping[str, int] | None) -> dict[str, int]:
    return dict(value or {})


@frozen
class Usage:
    """Token counts of one model call (or, summed with ``+``, of a run). ``cost`` is its
    price in US dollars when a plugin or the provider knows it, else ``None``.

    ``input_tokens`` is the whole prompt, cached parts included; ``cache_read_tokens`` and
    ``cache_write_tokens`` are its cached parts, and ``cache_write_5m_tokens`` /
    ``cache_write_1h_tokens`` split the writes by lifetime where the provider says
    (Anthropic). ``reasoning_tokens`` is the part of ``output_tokens`` spent thinking.
    ``server_tool_requests`` counts the provider's own tools run for the call, by name
    (``{"web_search": 2}``). ``estimated`` is true when some of the counts are plait's
    estimate (``plait.tokens``) because a provider reported none for a call.
    ``cache_hits`` counts the calls a response cache answered, which spent no tokens.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost: float | None = None
    reasoning_tokens: int = 0
    cache_write_5m_tokens: int = 0
    cache_write_1h_tokens: int = 0
    server_tool_requests: dict[str, int] = attrs.field(factory=dict, converter=_counts, hash=False)
    estimated: bool = False
    cache_hits: int = 0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def __add__(self, other: Usage | None) -> Usage:
        if other is None:
            return self
        requests = dict(self.server_tool_requests)
        for name, count in other.server_tool_requests.items():
            requests[name] = requests.get(name, 0) + count
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
            None
            if self.cost is None and other.cost is None
            else (self.cost or 0.0) + (other.cost or 0.0),
            self.reasoning_tokens + other.reasoning_tokens,
            self.cache_write_5m_tokens + other.cache_write_5m_tokens,
            self.cache_write_1h_tokens + other.cache_write_1h_tokens,
            requests,
            self.estimated or other.estimated,
            self.cache_hits + other.cache_hits,
        )

    __radd__ = __add__


@frozen
class ToolCall:
    """A call the model asks for. ``error`` is set when the model's arguments were not
    valid JSON (truncated or malformed); the kernel answers such a call with an error
    ``ToolMessage`` instead of running it."""

    name: str
    args: dict[str, Any] = attrs.field(factory=dict)
    id: str = attrs.field(factory=lambda: "call_" + _new_id()[:24])
    error: str | None = None

    # LangChain's tool calls are dicts ({"name", "args", "id", "type": "tool_call"}), and
    # its middleware reads them so (``request.tool_call["name"]``, ``{**call, "args": ...}``):
    # a ToolCall reads the same, and such a dict is taken back wherever a ToolCall is.

    def __getitem__(self, key: str) -> Any:
        if key == "type":
            return "tool_call"
        if key in ("name", "args", "id"):
            return getattr(self, key)
        raise KeyError(key)

    def keys(self) -> tuple[str, ...]:
        return ("name", "args", "id", "type")

    def __contains__(self, key: object) -> bool:
        return key in self.keys()

    def get(self, key: str, default: Any = None) -> Any:
        try:
            return self[key]
        except KeyError:
            return default


@frozen
class ToolCallChunk:
    """A fragment of a streamed tool call; fragments with the same ``index`` concatenate."""

    index: int
    id: str | None = None
    name: str | None = None
    args: str = ""


_CALL_KEYS = frozenset({"name", "args", "id", "type"})


def to_tool_call(item: Any, where: str) -> ToolCall:
    """A ``ToolCall``; a LangChain-style ``{"name", "args", "id"}`` dict is converted
    (``TypeError`` naming ``where`` for anything else)."""
    if isinstance(item, ToolCall):
        return item
    if isinstance(item, Mapping):
        unknown = sorted(set(map(str, item)) - _CALL_KEYS)
        name, args = item.get("name"), item.get("args", {})
        call_id = item.get("id")
        if (
            not unknown
            and isinstance(name, str)
            and name
            and isinstance(args, Mapping)
            and (call_id is None or isinstance(call_id, str))
        ):
            if call_id is None:
                return ToolCall(name, dict(args))
            return ToolCall(name, dict(args), call_id)
    wanted = "a plait.ToolCall or a dict {'name': str, 'args': dict, 'id': str (optional)}"
    raise TypeError(f"{where}: {expected(wanted, item)}")


def _calls(value: Iterable[ToolCall | Mapping[str, Any]]) -> tuple[ToolCall, ...]:
    if isinstance(value, str | bytes | Mapping) or not isinstance(value, Iterable):
        raise TypeError(f"tool_calls: {expected('a list of tool calls', value)}")
    return tuple(to_tool_call(item, f"tool_calls[{index}]") for index, item in enumerate(value))


def _call_chunks(value: Iterable[ToolCallChunk]) -> tuple[ToolCallChunk, ...]:
    return tuple(value)


@frozen(kw_only=True)
class Message:
    """Fields shared by every message. ``content`` is the only positional argument."""

    type: ClassVar[str] = "message"
    content: Content = attrs.field(default="", kw_only=False)
    id: str = attrs.field(factory=_new_id)
    metadata: dict[str, Any] = attrs.field(factory=dict)

    @property
    def text(self) -> str:
        return message_text(self.content)

    # LangChain's readings of a message (``pretty_print``, ``content_blocks``,
    # ``usage_metadata``), derived when asked, for code ported from its docs.

    def pretty_repr(self, html: bool = False) -> str:
        """The message as LangChain's ``pretty_repr`` writes it: a title line
        (``=== Human Message ===``, bold when ``html``), ``Name:`` when it has a name, the
        content, and an AI message's tool calls."""
        from plait._lc_view import pretty_text

        calls = self.tool_calls if isinstance(self, AIMessage) else None
        name = self.name if isinstance(self, ToolMessage) else None
        return pretty_text(self.type, self.content, name=name, calls=calls, bold=html)

    def pretty_print(self) -> None:
        """Print ``pretty_repr()`` (its title bold in an interactive interpreter)."""
        from plait._lc_view import is_interactive

        print(self.pretty_repr(html=is_interactive()))

    @property
    def content_blocks(self) -> list[dict[str, Any]]:
        """The content as LangChain 1.x's standard blocks (``text``, ``reasoning``,
        ``image``, ``file``, ``tool_call``, ``server_tool_call``...; a block of no standard
        type as ``{"type": "non_standard", "value": block}``), made anew on each read. An
        AI message's tool calls are among them; a vendor's own blocks are read by its
        plugin (``plait.content_blocks``)."""
        from plait._lc_view import standard_blocks

        if isinstance(self, AIMessage):
            return standard_blocks(self.content, self.tool_calls, self.response_metadata)
        return standard_blocks(self.content)


# The two messages that add no field to ``Message`` keep its generated methods rather than
# having attrs make a class and compile an __init__ for each (~0.2 ms apiece at import): they
# name their own class (``repr`` reads it, ``==`` requires the same one), are frozen, hash
# and round-trip as before, and ``attrs.fields`` finds ``Message``'s fields on them.


class SystemMessage(Message):
    """Instructions for the model, as a system prompt is sent."""

    __slots__ = ()
    type: ClassVar[str] = "system"


class HumanMessage(Message):
    """The user's turn: a prompt given to ``invoke`` becomes one."""

    __slots__ = ()
    type: ClassVar[str] = "human"


@frozen(kw_only=True)
class AIMessage(Message):
    """The model's turn: its text (``content``), the ``tool_calls`` it asks for, the
    ``usage`` the call spent and the provider's ``response_metadata``."""

    type: ClassVar[str] = "ai"
    tool_calls: tuple[ToolCall, ...] = attrs.field(default=(), converter=_calls)
    usage: Usage | None = None
    response_metadata: dict[str, Any] = attrs.field(factory=dict)

    @property
    def usage_metadata(self) -> dict[str, Any] | None:
        """``usage`` as LangChain's ``usage_metadata`` dict (``input_tokens``,
        ``output_tokens``, ``total_tokens``, and ``input_token_details``/
        ``output_token_details`` with the counts that are not zero); ``None`` without."""
        from plait._lc_view import usage_metadata

        return usage_metadata(self.usage)


@frozen(kw_only=True)
class ToolMessage(Message):
    """A tool's answer. ``usage`` is model usage spent producing it that plait did not see
    (a model called outside plait); the loop adds it to the run's ``result.usage``. Calls
    of a plait ``ChatModel`` the tool made (a sub-agent's) are counted already
    (``plait.usage``): do not repeat them here."""

    type: ClassVar[str] = "tool"
    tool_call_id: str
    name: str | None = None
    status: Literal["success", "error"] = "success"
    usage: Usage | None = None

    @classmethod
    def error(
        cls, call: ToolCall, text: str, *, name: str | None = None, **fields: Any
    ) -> ToolMessage:
        """The error answer to ``call`` the model reads: ``text`` as given (``"Error: ..."``,
        ``"Not run: ..."``), ``status="error"``, the call's id and name (``name`` overrides
        it); ``fields`` (``metadata``, ``id``) as for the class. Every error answer plait
        and its plugins write is built here."""
        return cls(
            text,
            tool_call_id=call.id,
            name=call.name if name is None else name,
            status="error",
            **fields,
        )


AnyMessage: TypeAlias = SystemMessage | HumanMessage | AIMessage | ToolMessage
"""Any message a thread holds."""


def pending_tool_calls(messages: Sequence[Any]) -> list[ToolCall]:
    """The calls of the last ``AIMessage`` that no later ``ToolMessage`` answers yet.

    What the tools step is about to run (read it in ``after_model``), or what was left
    unanswered when a run paused. Empty when there is no AI message.
    """
    return _last_calls(messages)[1]


def _last_calls(messages: Sequence[Any]) -> tuple[AIMessage | None, list[ToolCall]]:
    """The last AI message and its pending calls (the kernel also needs the message)."""
    answered: set[str] = set()
    for position in range(len(messages) - 1, -1, -1):
        message = messages[position]
        if isinstance(message, ToolMessage):
            answered.add(message.tool_call_id)
        elif isinstance(message, AIMessage):
            return message, [call for call in message.tool_calls if call.id not in answered]
    return None, []


_ROLES: dict[str, type[Message]] = {
    "user": HumanMessage,
    "human": HumanMessage,
    "assistant": AIMessage,
    "ai": AIMessage,
    "system": SystemMessage,
    "tool": ToolMessage,
}


def message_from_dict(data: Mapping[str, Any]) -> AnyMessage:
    """A message from a role/content dict as LangChain and OpenAI users write them:
    ``{"role": "user", "content": "hi"}`` (roles user/human, assistant/ai, system, tool;
    ``tool_calls`` and ``tool_call_id`` where they belong)."""
    role = data.get("role", data.get("type"))
    cls = _ROLES.get(role) if isinstance(role, str) else None
    if cls is None:
        raise TypeError(f"a message dict needs a 'role' of {', '.join(_ROLES)}; got {dict(data)!r}")
    fields = {k: v for k, v in data.items() if k not in ("role", "type")}
    content = fields.pop("content", "")
    try:
        message: AnyMessage = cls(content, **fields)  # type: ignore[assignment]
    except TypeError as exc:
        raise TypeError(f"message dict {dict(data)!r}: {exc}") from None
    return message


def is_role_pair(item: Any) -> bool:
    """Whether ``item`` is a ``(role, content)`` tuple as LangChain users write messages:
    ``("user", "hi")``, ``("system", "Be brief.")`` (the roles ``message_from_dict`` knows)."""
    return (
        isinstance(item, tuple)
        and len(item) == 2
        and isinstance(item[0], str)
        and item[0] in _ROLES
        and item[0] != "tool"
    )


def _blocks(value: Iterable[dict[str, Any]]) -> tuple[dict[str, Any], ...]:
    return tuple(value)


@frozen(kw_only=True)
class AIMessageChunk:
    """A piece of a streamed AI message. Chunks add up (``+``) to the whole message.

    ``blocks`` carries finished provider-native content blocks (e.g. Anthropic thinking or
    server-tool blocks) in stream order; with any, the assembled message's content is a
    block list with the text between them as text blocks, as the provider returned it. A
    finished ``text`` block (one with citations) stands in for the streamed text it repeats.
    """

    content: str = attrs.field(default="", kw_only=False)
    tool_call_chunks: tuple[ToolCallChunk, ...] = attrs.field(default=(), converter=_call_chunks)
    usage: Usage | None = None
    response_metadata: dict[str, Any] = attrs.field(factory=dict)
    id: str | None = None
    blocks: tuple[dict[str, Any], ...] = attrs.field(default=(), converter=_blocks)

    def __add__(self, other: AIMessageChunk) -> AIMessageChunk:
        """The two chunks as one (where text falls between ``blocks`` is kept only by
        ``assemble_chunks`` over the chunk list)."""
        return AIMessageChunk(
            self.content + other.content,
            tool_call_chunks=self.tool_call_chunks + other.tool_call_chunks,
            usage=(self.usage + other.usage) if self.usage else other.usage,
            response_metadata={**self.response_metadata, **other.response_metadata},
            id=self.id or other.id,
            blocks=self.blocks + other.blocks,
        )

    @property
    def usage_metadata(self) -> dict[str, Any] | None:
        """``usage`` as LangChain's ``usage_metadata`` dict, as on ``AIMessage``."""
        from plait._lc_view import usage_metadata

        return usage_metadata(self.usage)

    @property
    def content_blocks(self) -> list[dict[str, Any]]:
        """The chunk as LangChain 1.x's standard blocks: its text, its finished native
        blocks (read as ``AIMessage.content_blocks`` reads them) and each tool-call
        fragment as a ``tool_call_chunk`` block."""
        from plait._lc_view import standard_blocks

        found = standard_blocks(self.content)
        found.extend(standard_blocks(list(self.blocks)))
        found.extend(
            {
                "type": "tool_call_chunk",
                "id": p.id,
                "name": p.name,
                "args": p.args,
                "index": p.index,
            }
            for p in self.tool_call_chunks
        )
        return found

    def to_message(self) -> AIMessage:
        """Assemble the finished ``AIMessage``; unparsable tool arguments set ``error``."""
        return assemble_chunks([self])


def assemble_chunks(chunks: Iterable[AIMessageChunk], *, id: str | None = None) -> AIMessage:
    """Join streamed chunks into one ``AIMessage``, concatenating tool-call fragments by
    index and parsing each call's JSON arguments once, at the end."""
    text: list[str] = []
    parts: list[dict[str, Any]] = []  # text runs and native blocks, in stream order
    run: list[str] = []
    calls: dict[int, list[Any]] = {}
    usage: Usage | None = None
    metadata: dict[str, Any] = {}
    for chunk in chunks:
        text.append(chunk.content)
        run.append(chunk.content)
        if chunk.blocks:
            joined, run = "".join(run), []
            for block in chunk.blocks:
                # A finished text block (with citations) stands in for the text it repeats.
                done = str(block.get("text", "")) if block.get("type") == "text" else ""
                if done and joined.endswith(done):
                    joined = joined[: len(joined) - len(done)]
                if joined:
                    parts.append({"type": "text", "text": joined})
                    joined = ""
                parts.append(dict(block))
        for part in chunk.tool_call_chunks:
            slot = calls.setdefault(part.index, [None, None, []])
            slot[0] = slot[0] or part.id
            slot[1] = slot[1] or part.name
            slot[2].append(part.args)
        if chunk.usage is not None:
            usage = chunk.usage if usage is None else usage + chunk.usage
        metadata.update(chunk.response_metadata)
        id = id or chunk.id
    tool_calls = []
    for index in sorted(calls):
        call_id, name, pieces = calls[index]
        raw = "".join(pieces)
        tool_calls.append(parse_tool_call(name or "", raw, call_id))
    kwargs: dict[str, Any] = {} if id is None else {"id": id}
    content: Content = "".join(text)
    if parts:
        if joined := "".join(run):
            parts.append({"type": "text", "text": joined})
        content = parts
    return AIMessage(
        content, tool_calls=tool_calls, usage=usage, response_metadata=metadata, **kwargs
    )


def parse_tool_call(name: str, raw_args: str, call_id: str | None) -> ToolCall:
    """A ``ToolCall`` from the model's JSON argument text; bad JSON sets ``error``."""
    error = None
    args: dict[str, Any] = {}
    try:
        parsed = json.loads(raw_args) if raw_args.strip() else {}
    except json.JSONDecodeError as exc:
        error = f"the arguments are not valid JSON ({exc.msg} at position {exc.pos}): {raw_args!r}"
    except RecursionError:
        error = f"the arguments are nested too deeply to read: {raw_args[:200]!r}"
    else:
        if isinstance(parsed, dict):
            args = parsed
        else:
            error = f"the arguments must be a JSON object, got {raw_args!r}"
    if call_id:
        return ToolCall(name, args, call_id, error)
    return ToolCall(name, args, error=error)


# -- serialization -------------------------------------------------------------------------

_TYPES: dict[str, type[Message]] = {
    cls.type: cls for cls in (SystemMessage, HumanMessage, AIMessage, ToolMessage)
}

if TYPE_CHECKING:
    from plait._remove import RemoveMessage as RemoveMessage

    converter: cattrs.Converter
    """The one converter for plait's persisted types (messages and what they hold), made
    when first used (``__getattr__``): a run that saves no message never makes it."""


@functools.cache
def persisted_converter() -> cattrs.Converter:
    """``converter``, made (and its hooks registered) on the first call."""
    made = cattrs.Converter()
    _register(made)
    return made


_made_when_used = lazy_exports(__name__, {"RemoveMessage": "plait._remove"})
"""``RemoveMessage``, made on first use: a run that deletes no message never makes it."""


def is_removal(value: Any) -> TypeGuard[RemoveMessage]:
    """Whether ``value`` is a ``RemoveMessage``. The kernel asks it only of what is no
    ``Message``, so a run that deletes nothing never makes the class."""
    from plait._remove import RemoveMessage

    return isinstance(value, RemoveMessage)


def __getattr__(name: str) -> Any:
    if name == "converter":
        return persisted_converter()
    return _made_when_used(name)


def _structure_content(value: Any, _: Any) -> Content:
    if isinstance(value, str):
        return value
    return [dict(block) for block in value]


_OMIT_DEFAULTS: dict[type, dict[str, Any]] = {
    ToolCall: {"error": override(omit_if_default=True)},
    Usage: {"_cattrs_omit_if_default": True},
    **{
        cls: {"_cattrs_omit_if_default": True, "id": override(omit_if_default=False)}
        for cls in _TYPES.values()
    },
}
"""How each persisted class is unstructured: fields at their default left out — but a
message's ``id``, always written: its default is a fresh id, which cattrs would draw
(from an installed ``effects.id_source`` too) only to compare it with the message's."""


def _own(tp: Any, classes: Iterable[type]) -> type | None:
    """The class of ``classes`` whose hook serves ``tp``: the nearest in its MRO, as for a
    hook registered on a class (a subclass, e.g. ``AIMessageChunk``, gets its base's)."""
    known = set(classes)
    for base in getattr(tp, "__mro__", ()):
        if base in known:
            return base  # type: ignore[no-any-return]
    return None


def _register(conv: cattrs.Converter) -> None:
    """The hooks are made (their code generated and compiled) on first use, not on import:
    a run that never saves a message never pays for them."""

    def unstructure_fn(tp: Any) -> Any:
        cls = _own(tp, _OMIT_DEFAULTS)
        assert cls is not None
        return make_dict_unstructure_fn(cls, conv, **_OMIT_DEFAULTS[cls])

    def structure_fn(tp: Any) -> Any:
        cls = _own(tp, _TYPES.values())
        assert cls is not None
        return make_dict_structure_fn(cls, conv)

    conv.register_structure_hook(Content, _structure_content)
    conv.register_unstructure_hook_factory(
        lambda tp: _own(tp, _OMIT_DEFAULTS) is not None, unstructure_fn
    )
    conv.register_structure_hook_factory(
        lambda tp: _own(tp, _TYPES.values()) is not None, structure_fn
    )


def unstructure_message(message: Message) -> dict[str, Any]:
    """One message as a JSON-ready dict with its ``type`` tag."""
    data: dict[str, Any] = persisted_converter().unstructure(message, type(message))
    data["type"] = message.type
    return data


def structure_message(data: Mapping[str, Any]) -> AnyMessage:
    """The message a dict from ``unstructure_message`` describes."""
    fields = dict(data)
    kind = fields.pop("type", None)
    try:
        cls = _TYPES[kind]
    except KeyError:
        raise ValueError(
            f"unknown message type {kind!r}; expected one of {sorted(_TYPES)}"
        ) from None
    message: AnyMessage = persisted_converter().structure(fields, cls)  # type: ignore[assignment]
    return message


def to_json(messages: Sequence[Message]) -> str:
    """Serialize a message list to JSON text that ``from_json`` restores exactly."""
    return json.dumps([unstructure_message(m) for m in messages], ensure_ascii=False)


def from_json(text: str) -> list[AnyMessage]:
    """The message list ``to_json`` wrote."""
    return [structure_message(item) for item in json.loads(text)]
