"""Summarization for plait: when a conversation nears its limit, older history is replaced
by one summary message written by a (usually smaller) model; recent messages stay verbatim.

The summarized messages are removed from state, so the thread and its checkpoint shrink.
System messages are never removed, an AI message is never separated from the tool
messages answering it, and a failing summary call leaves the history as it was.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

import attrs

from plait.errors import ConfigError, ContextOverflowError, PlaitError
from plait.lazy import frozen
from plait.messages import (
    AIMessage,
    AnyMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)
from plait.middleware import Middleware
from plait.models import ChatModel, init_chat_model
from plait.options import FieldError, expected, integer, number, positive_or_none
from plait.tokens import count_tokens
from plait.types import AgentConfig, Runtime

__all__ = [
    "DEFAULT_SUMMARY_PREFIX",
    "DEFAULT_SUMMARY_PROMPT",
    "Keep",
    "SummarizationMiddleware",
    "TriggerCondition",
    "safe_cut",
]

PLUGIN = "summarization"
TokenCounter = Callable[[Sequence[AnyMessage]], int]
Pair = tuple[str, int | float]
"""LangChain's ``ContextSize`` form of a condition, ``("tokens", 4000)``: named in the option
types so options given by name (and agent files, ``["tokens", 4000]``) take it too."""

DEFAULT_SUMMARY_PREFIX = "Here is a summary of the conversation to date:"
"""The words before the summary in the message that replaces the summarized history."""
DEFAULT_SUMMARY_PROMPT = """\
You are condensing the earlier part of a conversation between a user and an AI assistant \
so the assistant can continue the work without the full history.

Write a summary that keeps everything needed to carry on: the user's goals and \
constraints, decisions made, facts learned (names, numbers, file paths, URLs, identifiers), \
what tools were called and what they returned that still matters, and what remains to be \
done. Leave out pleasantries and anything superseded. Write plain prose or short bullet \
points; do not address the user.

The conversation so far:

{messages}

Reply with the summary only."""
"""The prompt the summarizing model is given, unless ``summary_prompt`` is given."""

_ELIDED = "\n\n[... the middle of the conversation was omitted to fit the summarizer ...]\n\n"

_FRACTION = number(above=0, maximum=1, optional=True)
_COUNT = integer(minimum=0, optional=True)


@frozen
class TriggerCondition:
    """When to summarize: every key given must hold (AND). Thresholds trigger at >=.

    ``fraction`` is of the agent model's ``profile.max_input_tokens``.
    """

    fraction: float | None = attrs.field(default=None, validator=_FRACTION)
    tokens: int | None = attrs.field(default=None, validator=positive_or_none)
    messages: int | None = attrs.field(default=None, validator=positive_or_none)

    def __attrs_post_init__(self) -> None:
        if self.fraction is None and self.tokens is None and self.messages is None:
            raise ValueError(expected("at least one of fraction, tokens, messages", {}))

    def holds(self, tokens: int, messages: int, max_input: int | None) -> bool:
        if self.tokens is not None and tokens < self.tokens:
            return False
        if self.messages is not None and messages < self.messages:
            return False
        if self.fraction is not None:
            assert max_input is not None
            if tokens < self.fraction * max_input:
                return False
        return True


@frozen
class Keep:
    """How much recent history stays verbatim: exactly one of ``fraction`` (of the model's
    ``max_input_tokens``), ``tokens`` or ``messages``."""

    fraction: float | None = attrs.field(default=None, validator=_FRACTION)
    tokens: int | None = attrs.field(default=None, validator=_COUNT)
    messages: int | None = attrs.field(default=None, validator=_COUNT)

    def __attrs_post_init__(self) -> None:
        given = {
            name: getattr(self, name)
            for name in ("fraction", "tokens", "messages")
            if getattr(self, name) is not None
        }
        if len(given) != 1:
            raise ValueError(expected("exactly one of fraction, tokens, messages", given))

    def cut(
        self, messages: Sequence[AnyMessage], counter: TokenCounter, max_input: int | None
    ) -> int:
        """The index of the first kept message (before the tool-pair adjustment)."""
        if self.messages is not None:
            return max(0, len(messages) - self.messages)
        if self.tokens is not None:
            budget = self.tokens
        else:
            assert self.fraction is not None and max_input is not None
            budget = int(self.fraction * max_input)
        return _newest_within(messages, budget, counter)


def _newest_within(messages: Sequence[AnyMessage], budget: int, counter: TokenCounter) -> int:
    """The index of the first of the newest ``messages`` that fit in ``budget`` tokens
    together (``len(messages)`` when not even the newest does)."""
    used = 0
    index = len(messages)
    while index > 0:
        cost = counter([messages[index - 1]])
        if used + cost > budget:
            break
        used += cost
        index -= 1
    return index


def safe_cut(messages: Sequence[AnyMessage], cut: int) -> int:
    """Move ``cut`` so no AI message is separated from the tool messages answering it.

    A kept tool message whose AI message would be summarized pulls the cut back to that AI
    message; tool messages no AI message owns are summarized rather than kept orphaned.
    Linear: one pass for the owners, one for the suffix minimum.
    """
    owners: dict[str, int] = {}
    for index, message in enumerate(messages):
        if isinstance(message, AIMessage):
            for call in message.tool_calls:
                owners.setdefault(call.id, index)
    size = len(messages)
    # lowest[j]: the smallest owner index of any tool message at position >= j
    lowest = [size] * (size + 1)
    for index in range(size - 1, -1, -1):
        message = messages[index]
        owner = size
        if isinstance(message, ToolMessage):
            owner = owners.get(message.tool_call_id, size)
        lowest[index] = min(lowest[index + 1], owner)
    cut = max(0, min(cut, size))
    while lowest[cut] < cut:
        cut = lowest[cut]
    while (
        cut < size
        and isinstance(messages[cut], ToolMessage)
        and messages[cut].tool_call_id not in owners  # type: ignore[union-attr]
    ):
        cut += 1
    return cut


def _is_summary(message: AnyMessage) -> bool:
    """Whether ``message`` is a summary this middleware wrote earlier."""
    return isinstance(message, HumanMessage) and bool(message.metadata.get("summary"))


def _render(messages: Sequence[AnyMessage]) -> str:
    """The messages as plain text for the summary prompt."""
    lines: list[str] = []
    for message in messages:
        text = message.text
        if isinstance(message, HumanMessage):
            label = "Earlier summary" if _is_summary(message) else "User"
            lines.append(f"{label}: {text}")
        elif isinstance(message, AIMessage):
            if text:
                lines.append(f"Assistant: {text}")
            for call in message.tool_calls:
                args = json.dumps(call.args, ensure_ascii=False)
                lines.append(f"Assistant called tool {call.name} with {args}")
        elif isinstance(message, ToolMessage):
            status = " (error)" if message.status == "error" else ""
            lines.append(f"Tool {message.name or message.tool_call_id}{status} returned: {text}")
        else:
            lines.append(f"{message.type}: {text}")
    return "\n".join(lines)


_KINDS = ("fraction", "tokens", "messages")
_CONDITION = (
    "a condition: a (kind, value) pair such as ('tokens', 4000), a mapping such as "
    "{'tokens': 4000} or a TriggerCondition, with kinds fraction, tokens, messages"
)


def _is_pair(value: Any) -> bool:
    """LangChain's ``ContextSize`` form: ``("tokens", 4000)``."""
    return isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], str)


def _condition_fields(option: str, value: Any) -> dict[str, Any]:
    """The keyword arguments of a condition given as a pair or a mapping."""
    if _is_pair(value) and value[0] in _KINDS:
        return {value[0]: value[1]}
    if isinstance(value, Mapping) and all(k in _KINDS for k in value):
        return dict(value)
    raise FieldError(option, expected(_CONDITION, value))


def _nested(option: str, build: Callable[..., Any], fields: dict[str, Any]) -> Any:
    """``build(**fields)``, a refused field named under ``option`` (``trigger.tokens``)."""
    try:
        return build(**fields)
    except FieldError as exc:
        raise FieldError(f"{option}.{exc.field}", exc.message) from None


def _as_condition(value: Any) -> TriggerCondition:
    if isinstance(value, TriggerCondition):
        return value
    condition: TriggerCondition = _nested(
        "trigger", TriggerCondition, _condition_fields("trigger", value)
    )
    return condition


def _as_trigger(value: Any) -> TriggerCondition | tuple[TriggerCondition, ...] | None:
    """Direct construction takes what options by name take, and LangChain's forms: a
    condition, a mapping of its keys, a ``(kind, value)`` pair, or a list of any of them
    (any one holding triggers)."""
    if value is None or isinstance(value, TriggerCondition | Mapping) or _is_pair(value):
        return None if value is None else _as_condition(value)
    if not isinstance(value, Sequence) or isinstance(value, str):
        raise FieldError("trigger", expected(_CONDITION + " (or a list of them)", value))
    return tuple(_as_condition(item) for item in value)


def _as_keep(value: Any) -> Keep:
    """A ``Keep``, a mapping of one of its keys, or LangChain's ``("messages", 20)``."""
    if isinstance(value, Keep):
        return value
    keep: Keep = _nested("keep", Keep, _condition_fields("keep", value))
    return keep


def _has_placeholder(instance: Any, attribute: attrs.Attribute[Any], value: str) -> None:
    if "{messages}" not in value:
        what = "a prompt with {messages} where the conversation to summarize goes"
        raise FieldError(attribute.name, expected(what, value))


@frozen
class SummarizationMiddleware(Middleware):
    """Summarize older history in ``before_model`` once ``trigger`` holds, keeping ``keep``.

    ``model`` writes the summary (an id such as ``"openai:gpt-4.1-mini"``, resolved when
    the middleware is built, or a ``ChatModel``). Without ``trigger`` it never summarizes.
    """

    model: str | ChatModel
    """Writes the summary: an id such as ``"openai:gpt-4.1-mini"`` (resolved with
    ``plait.models.init_chat_model`` when the middleware is built) or a ``ChatModel``."""
    trigger: TriggerCondition | Pair | Sequence[TriggerCondition | Pair] | None = attrs.field(
        default=None, converter=_as_trigger
    )
    """When to summarize: one ``TriggerCondition`` or a list of them (any one holding
    triggers); a mapping such as ``{"tokens": 100000}`` or LangChain's pair
    ``("tokens", 100000)`` works too. ``None``: never."""
    keep: Keep | Pair = attrs.field(factory=lambda: Keep(messages=20), converter=_as_keep)
    """How much recent history stays verbatim: a ``Keep``, ``{"messages": 20}`` or
    ``("messages", 20)``."""
    token_counter: TokenCounter | None = attrs.field(default=None, eq=False)
    """``token_counter(messages) -> int``; ``None``: the agent model's ``count_tokens`` (plait's
    approximate counter unless the provider has an exact one)."""
    summary_prompt: str = attrs.field(default=DEFAULT_SUMMARY_PROMPT, validator=_has_placeholder)
    """The prompt sent to the summary model; must contain ``{messages}`` (other braces are left
    alone)."""
    trim_tokens_to_summarize: int | None = attrs.field(default=4000, validator=positive_or_none)
    """The summarizer gets at most this many tokens of history, the most recent part; ``None``:
    no limit (>= 1)."""
    summary_prefix: str = DEFAULT_SUMMARY_PREFIX
    """The text the summary message starts with."""
    max_tokens_before_summary: int | None = attrs.field(default=None, validator=positive_or_none)
    """Deprecated alias of ``trigger={"tokens": N}`` (a ``DeprecationWarning``)."""
    messages_to_keep: int | None = attrs.field(default=None, validator=_COUNT)
    """Deprecated alias of ``keep={"messages": N}`` (a ``DeprecationWarning``)."""

    summarizer: ChatModel = attrs.field(init=False, repr=False, eq=False)
    conditions: tuple[TriggerCondition, ...] = attrs.field(init=False, repr=False)
    keeping: Keep = attrs.field(init=False, repr=False)

    @summarizer.default
    def _resolve_model(self) -> ChatModel:
        try:
            return init_chat_model(self.model)
        except ConfigError as exc:
            raise ConfigError(f"cannot resolve the summary model {self.model!r}: {exc}") from None

    @conditions.default
    def _conditions(self) -> tuple[TriggerCondition, ...]:
        if self.max_tokens_before_summary is not None:
            if self.trigger is not None:
                raise ValueError(
                    "max_tokens_before_summary is a deprecated alias of trigger={'tokens': N}; "
                    "give trigger alone"
                )
            warnings.warn(
                f"{PLUGIN}: max_tokens_before_summary is deprecated; use "
                f"trigger={{'tokens': {self.max_tokens_before_summary}}}",
                DeprecationWarning,
                stacklevel=4,
            )
            return (TriggerCondition(tokens=self.max_tokens_before_summary),)
        if self.trigger is None:
            return ()
        if isinstance(self.trigger, TriggerCondition):
            return (self.trigger,)
        # the converter has turned every pair into a TriggerCondition
        return cast(tuple[TriggerCondition, ...], self.trigger)

    @keeping.default
    def _keeping(self) -> Keep:
        if self.messages_to_keep is None:
            return cast(Keep, self.keep)  # the converter has turned a pair into a Keep
        if self.keep != Keep(messages=20):
            raise ValueError(
                "messages_to_keep is a deprecated alias of keep={'messages': N}; give keep alone"
            )
        warnings.warn(
            f"{PLUGIN}: messages_to_keep is deprecated; use "
            f"keep={{'messages': {self.messages_to_keep}}}",
            DeprecationWarning,
            stacklevel=4,
        )
        return Keep(messages=self.messages_to_keep)

    @property
    def uses_fraction(self) -> bool:
        return self.keeping.fraction is not None or any(
            c.fraction is not None for c in self.conditions
        )

    # -- build time ------------------------------------------------------------------------

    def validate_agent(self, agent_config: AgentConfig) -> None:
        if self.uses_fraction and _max_input(agent_config.model) is None:
            raise ConfigError(
                "a fraction in trigger or keep is a fraction of the model's "
                f"max_input_tokens, but the agent's model {agent_config.model!r} has no profile "
                "with max_input_tokens; give tokens or messages instead, or a model with a "
                "profile (e.g. ScriptedChatModel(..., profile={'max_input_tokens': 128000}))"
            )

    # -- run time --------------------------------------------------------------------------

    def _counter(self, runtime: Runtime | None) -> TokenCounter:
        if self.token_counter is not None:
            return self.token_counter
        if runtime is not None and runtime.model is not None:
            return runtime.model.count_tokens
        return count_tokens

    def plan(
        self, messages: Sequence[AnyMessage], counter: TokenCounter, max_input: int | None
    ) -> list[AnyMessage] | None:
        """The messages to summarize now, or ``None`` when no trigger holds or nothing
        before the kept part can be summarized (system messages never are)."""
        if not self.conditions or not messages:
            return None
        size = len(messages)
        # Counting tokens is the costly part: skip it when no condition's message count holds.
        possible = [c for c in self.conditions if c.messages is None or size >= c.messages]
        if not possible:
            return None
        tokens = counter(messages) if any(c.tokens or c.fraction for c in possible) else 0
        if not any(c.holds(tokens, size, max_input) for c in possible):
            return None
        cut = safe_cut(messages, self.keeping.cut(messages, counter, max_input))
        chosen: list[AnyMessage] = [m for m in messages[:cut] if not isinstance(m, SystemMessage)]
        return chosen or None

    def conversation(self, messages: Sequence[AnyMessage], counter: TokenCounter) -> str:
        """``messages`` as text for the summary prompt, trimmed to the most recent
        ``trim_tokens_to_summarize`` tokens.

        An earlier summary stands for everything before it, so it is never trimmed away:
        it goes first and its tokens come out of the budget for the newest messages.
        """
        limit = self.trim_tokens_to_summarize
        if limit is None:
            return _render(messages)
        earlier = [m for m in messages if _is_summary(m)]
        rest = [m for m in messages if not _is_summary(m)]
        budget = max(0, limit - (counter(earlier) if earlier else 0))
        start = _newest_within(rest, budget, counter)
        if rest and start == len(rest):
            # Even the newest message is over the budget: keep its end.
            tail = _render(rest[-1:])[-budget * 4 :] if budget else ""
            return "\n".join(part for part in (_render(earlier), tail) if part)
        return _render([*earlier, *rest[start:]])

    def prompt(self, conversation: str) -> str:
        return self.summary_prompt.replace("{messages}", conversation)

    @staticmethod
    def elide(conversation: str) -> str:
        """The beginning and the end of ``conversation``, the middle half left out."""
        quarter = max(1, len(conversation) // 4)
        return conversation[:quarter] + _ELIDED + conversation[-quarter:]

    def replacement(self, summarized: Sequence[AnyMessage], summary: str) -> list[Any]:
        """The state update: the summary takes the place (and id) of the first summarized
        message, the others are removed."""
        text = summary.strip()
        if not text:
            raise PlaitError(
                f"{PLUGIN}: the summary model {self.summarizer!r} returned an empty summary; "
                "the history was left unchanged"
            )
        message = HumanMessage(
            f"{self.summary_prefix}\n\n{text}",
            id=summarized[0].id,
            metadata={"summary": True},
        )
        return [message, *(RemoveMessage(m.id) for m in summarized[1:])]

    async def before_model(
        self, state: Mapping[str, Any], runtime: Runtime
    ) -> dict[str, Any] | None:
        counter = self._counter(runtime)
        max_input = _max_input(runtime.model) if self.uses_fraction else None
        if self.uses_fraction and max_input is None:
            raise ConfigError(
                "a fraction needs the model's profile.max_input_tokens, "
                f"and {runtime.model!r} has none"
            )
        summarized = self.plan(state["messages"], counter, max_input)
        if summarized is None:
            return None
        conversation = self.conversation(summarized, counter)
        try:
            answer = await self.summarizer.ainvoke([HumanMessage(self.prompt(conversation))])
        except ContextOverflowError:
            # Once, with the middle left out; a second overflow surfaces to the caller.
            elided = self.prompt(self.elide(conversation))
            answer = await self.summarizer.ainvoke([HumanMessage(elided)])
        return {"messages": self.replacement(summarized, answer.text)}


def _max_input(model: ChatModel | None) -> int | None:
    if model is None or model.profile is None:
        return None
    return model.profile.max_input_tokens
