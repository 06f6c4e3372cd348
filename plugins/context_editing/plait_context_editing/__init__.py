"""Context editing for plait: clear old tool results once the conversation grows too long.

By default only the request sent to the model is edited (the thread keeps every tool
result); with ``persist=True`` the clearing is written to state, so the checkpoint shrinks.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

import attrs

from plait.lazy import frozen
from plait.messages import AIMessage, AnyMessage, SystemMessage, ToolMessage
from plait.middleware import RequestMiddleware
from plait.models import ChatModel
from plait.options import FieldError, check_arguments, expected, integer
from plait.tokens import count_tokens
from plait.types import ModelRequest, Runtime

__all__ = ["ClearToolUsesEdit", "ContextEditingMiddleware"]

MARK = "context_editing"
TokenCounter = Callable[[Sequence[AnyMessage]], int]


def is_cleared(message: AnyMessage) -> bool:
    """Whether an earlier edit already cleared ``message`` (it is never cleared twice)."""
    mark = message.metadata.get(MARK)
    return isinstance(mark, Mapping) and bool(mark.get("cleared"))


def _names(value: Sequence[str] | None) -> tuple[str, ...] | None:
    return None if value is None else tuple(value)


@check_arguments
@frozen(init=False)
class ClearToolUsesEdit:
    """Replace the content of older tool results by ``placeholder``, oldest first, once the
    conversation is over ``trigger_tokens`` (``trigger=`` in LangChain's spelling); the
    newest ``keep`` results stay.

    ``clear_at_least`` stops once that many tokens are reclaimed (0: clear every candidate).
    ``include_tools`` (when given) limits clearing to those tools; ``exclude_tools`` protects
    tools. ``clear_tool_inputs`` also empties the arguments of the matching tool call.
    """

    trigger_tokens: int = attrs.field(default=100_000, validator=integer(minimum=0))
    """Clear only when the conversation has more tokens than this (>= 0); in Python,
    ``trigger=`` (LangChain's name) means the same."""
    clear_at_least: int = attrs.field(default=0, validator=integer(minimum=0))
    """Stop once this many tokens are reclaimed; ``0`` clears every candidate (>= 0)."""
    keep: int = attrs.field(default=3, validator=integer(minimum=0))
    """The newest results that are never cleared (>= 0)."""
    clear_tool_inputs: bool = False
    """Also empty the arguments (``{}``) of the tool call a cleared result answers."""
    exclude_tools: Sequence[str] = attrs.field(default=(), converter=tuple)
    """Tools whose results are never cleared."""
    include_tools: Sequence[str] | None = attrs.field(default=None, converter=_names)
    """When given, only these tools' results may be cleared."""
    placeholder: str = "[cleared]"
    """The text a cleared result is replaced by."""

    def __init__(
        self,
        trigger_tokens: int | None = None,
        clear_at_least: int = 0,
        keep: int = 3,
        clear_tool_inputs: bool = False,
        exclude_tools: Sequence[str] = (),
        include_tools: Sequence[str] | None = None,
        placeholder: str = "[cleared]",
        *,
        trigger: int | None = None,
    ) -> None:
        if trigger is not None and trigger_tokens is not None:
            raise ValueError("give trigger_tokens or trigger (LangChain's name for it), not both")
        threshold = trigger if trigger is not None else trigger_tokens
        self.__attrs_init__(
            trigger_tokens=100_000 if threshold is None else threshold,
            clear_at_least=clear_at_least,
            keep=keep,
            clear_tool_inputs=clear_tool_inputs,
            exclude_tools=exclude_tools,  # type: ignore[arg-type]
            include_tools=include_tools,
            placeholder=placeholder,
        )

    def __attrs_post_init__(self) -> None:
        both = sorted(set(self.exclude_tools) & set(self.include_tools or ()))
        if both:
            raise ValueError(
                f"include_tools and exclude_tools both name {', '.join(map(repr, both))}; "
                "a tool is either clearable or protected"
            )

    def _clearable(self, message: ToolMessage) -> bool:
        if is_cleared(message):
            return False
        name = message.name or ""
        if name in self.exclude_tools:
            return False
        return self.include_tools is None or name in self.include_tools

    def apply(
        self, messages: Sequence[AnyMessage], counter: TokenCounter, extra_tokens: int = 0
    ) -> tuple[list[AnyMessage], set[str]]:
        """The edited messages and the ids of the messages that changed.

        ``extra_tokens`` is what the request carries besides ``messages`` (system prompt).
        Linear in the number of messages: one count for the trigger, then one per cleared
        message for the tokens it gives back.
        """
        edited = list(messages)
        if counter(edited) + extra_tokens <= self.trigger_tokens:
            return edited, set()
        tool_positions = [i for i, m in enumerate(edited) if isinstance(m, ToolMessage)]
        if self.keep:
            tool_positions = tool_positions[: -self.keep]
        if not tool_positions:
            return edited, set()
        owners: dict[str, int] = {}
        if self.clear_tool_inputs:
            for index, message in enumerate(edited):
                if isinstance(message, AIMessage):
                    for call in message.tool_calls:
                        owners[call.id] = index
        changed: set[str] = set()
        reclaimed = 0
        for index in tool_positions:
            if self.clear_at_least and reclaimed >= self.clear_at_least:
                break
            message = edited[index]
            assert isinstance(message, ToolMessage)
            if not self._clearable(message):
                continue
            cleared = attrs.evolve(
                message,
                content=self.placeholder,
                metadata={**message.metadata, MARK: {"cleared": True}},
            )
            reclaimed += counter([message]) - counter([cleared])
            edited[index] = cleared
            changed.add(message.id)
            owner = owners.get(message.tool_call_id)
            if owner is not None:
                ai = edited[owner]
                assert isinstance(ai, AIMessage)
                emptied = attrs.evolve(
                    ai,
                    tool_calls=[
                        attrs.evolve(c, args={}) if c.id == message.tool_call_id else c
                        for c in ai.tool_calls
                    ],
                )
                reclaimed += counter([ai]) - counter([emptied])
                edited[owner] = emptied
                changed.add(ai.id)
        return edited, changed


def _count_method(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value not in ("model", "approximate"):
        raise FieldError(attribute.name, expected("'model' or 'approximate'", value))


def _edits(value: Sequence[ClearToolUsesEdit]) -> tuple[ClearToolUsesEdit, ...]:
    return tuple(value)


@frozen
class ContextEditingMiddleware(RequestMiddleware):
    """Apply ``edits`` before every model call.

    ``persist=False`` (the default) edits only the request the model receives; ``True``
    writes the edits to state in ``before_model``, so the thread and its checkpoint shrink.
    """

    edits: Sequence[ClearToolUsesEdit] = attrs.field(
        factory=lambda: (ClearToolUsesEdit(),), converter=_edits
    )
    """The edits to apply, in order, before every model call."""
    persist: bool = False
    """``False``: only the request sent to the model is edited, the thread keeps every result.
    ``True``: the edits are written to state in ``before_model``, so the checkpoint shrinks
    too."""
    token_count_method: Literal["model", "approximate"] = attrs.field(
        default="model", validator=_count_method
    )
    """How tokens are counted: ``"model"`` (the model's own ``count_tokens``) or
    ``"approximate"`` (``plait.tokens.count_tokens``, 4 characters a token)."""

    def _apply(
        self, messages: Sequence[AnyMessage], model: ChatModel | None, extra: int
    ) -> tuple[list[AnyMessage], set[str]]:
        use_model = model is not None and self.token_count_method == "model"
        counter: TokenCounter = model.count_tokens if use_model else count_tokens  # type: ignore[union-attr]
        changed: set[str] = set()
        edited = list(messages)
        for edit in self.edits:
            edited, ids = edit.apply(edited, counter, extra)
            changed |= ids
        return edited, changed

    @staticmethod
    def _extra(request: ModelRequest) -> int:
        if not request.system_prompt:
            return 0
        return request.model.count_tokens([SystemMessage(request.system_prompt)])

    def before_model(self, state: Mapping[str, Any], runtime: Runtime) -> dict[str, Any] | None:
        if not self.persist:
            return None
        edited, changed = self._apply(state["messages"], runtime.model, 0)
        if not changed:
            return None
        return {"messages": [m for m in edited if m.id in changed]}

    def rewrite_request(self, request: ModelRequest) -> ModelRequest:
        if self.persist:
            return request
        edited, changed = self._apply(request.messages, request.model, self._extra(request))
        return request.override(messages=edited) if changed else request
