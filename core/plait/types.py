"""The objects hooks receive and return: requests, responses, runtime, commands, config."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, TypedDict

import attrs

from plait import messages as _messages  # ``RemoveMessage``, made on first use, through it
from plait import usage as _usage
from plait._performers import Effect
from plait.lazy import frozen, lazy_exports
from plait.messages import AIMessage, AnyMessage, Message, ToolCall, Usage
from plait.tools import Runtime, Tool, ToolRuntime

if TYPE_CHECKING:
    from plait._interrupt import Interrupt as Interrupt
    from plait._stream_event import StreamEvent as StreamEvent
    from plait.checkpoint import Checkpointer
    from plait.models.base import ChatModel
    from plait.store import Store
    from plait.usage import RunUsage

__all__ = [
    "AgentConfig",
    "AgentResult",
    "AgentState",
    "Command",
    "Interrupt",
    "JumpTarget",
    "ModelRequest",
    "ModelResponse",
    "RunRequest",
    "Runtime",
    "StateField",
    "StateUpdate",
    "StreamEvent",
    "ToolCallRequest",
    "ToolRun",
    "ToolRuntime",
]

JumpTarget: TypeAlias = Literal["model", "tools", "end"]
"""Where a node hook may send the loop next (``{"jump_to": ...}``, declared with
``plait.can_jump_to``)."""
State: TypeAlias = Mapping[str, Any]

# Made by streamed runs and paused ones alone: imported on first use.
__getattr__ = lazy_exports(
    __name__, {"Interrupt": "plait._interrupt", "StreamEvent": "plait._stream_event"}
)


@frozen
class Command:
    """A state update that may also move the loop (``jump_to``) or answer interrupts.

    ``resume`` is only meaningful as ``invoke``'s input: a value for the one pending
    interrupt, or ``{interrupt_id: value}``.
    """

    update: Mapping[str, Any] | None = None
    jump_to: JumpTarget | None = None
    resume: Any = None


StateUpdate: TypeAlias = "dict[str, Any] | Command | None"
"""What a node hook returns: state keys to write (``messages`` through its reducer, and
``jump_to``), a ``Command``, or ``None`` for nothing."""


@frozen
class StateField:
    """A state key a middleware owns, declared through the ``state_fields`` hook.

    :param default: the value before anyone wrote the key (copied for each thread/run).
    :param reducer: ``(old, new) -> merged``; without one an update replaces the value.
    :param scope: ``"thread"`` persists across runs; ``"run"`` is reset when a run starts.
    :param shared: two middleware classes may declare the same key only if both set this
        and their declarations are equal.
    :param private: the value is checkpointed and hooks read it as usual, but the state's
        ``repr`` (what ``PLAIT_TRACE`` logs) shows ``<private>`` in its place, and a run
        log (what a server streams) and a served state leave it out: for secrets such as
        pii's pseudonym table.
    :param internal: the middleware's own bookkeeping (a limit's counts, a review's edits,
        which agent a handoff made active): a server's clients cannot write it
        (``plait serve`` refuses it in a state update, as it refuses a private key), so a
        client cannot reset the thread's budget. ``agent.update_state`` in your own code
        still can.
    """

    default: Any = None
    reducer: Callable[[Any, Any], Any] | None = None
    scope: Literal["thread", "run"] = attrs.field(
        default="thread", validator=attrs.validators.in_(("thread", "run"))
    )
    shared: bool = False
    private: bool = False
    internal: bool = False


@frozen
class RunRequest:
    """One run as ``wrap_run`` sees it, before it starts."""

    input: Any
    """What the caller passed to ``invoke``/``stream`` (``None`` to continue a run)."""
    runtime: Runtime
    resumed: bool
    """True when this call continues a paused or unfinished run (same ``run_id``)."""
    streaming: bool
    """True for ``stream``/``astream``."""
    usage: RunUsage = attrs.field(factory=lambda: _usage.RunUsage(), eq=False, repr=False)
    """The run's usage ledger (``plait.usage``): a limiter registers its check on it."""
    state: Mapping[str, Any] = attrs.field(factory=dict, eq=False, repr=False)
    """The thread's state, read-only and live: what node hooks would read at this moment
    (a ledger check reads the thread's counts from it)."""

    @property
    def agent_name(self) -> str:
        return self.runtime.agent_name


@frozen
class ModelRequest:
    """One model call as ``wrap_model_call`` sees it. Frozen: use ``override``."""

    model: ChatModel
    messages: tuple[AnyMessage, ...]
    system_prompt: str | None = None
    tools: tuple[Tool, ...] = ()
    tool_choice: str | None = None
    response_format: Mapping[str, Any] | None = None
    model_settings: Mapping[str, Any] = attrs.field(factory=dict)
    provider_options: Mapping[str, Any] = attrs.field(factory=dict)
    state: State = attrs.field(factory=dict, repr=False)
    runtime: Runtime | None = attrs.field(default=None, repr=False)

    def override(self, **changes: Any) -> ModelRequest:
        """A copy with ``changes`` applied (sequences are converted to tuples)."""
        for key in ("messages", "tools"):
            if key in changes:
                changes[key] = tuple(changes[key])
        return attrs.evolve(self, **changes)

    def for_model(self, model: ChatModel) -> ModelRequest:
        """A copy aimed at ``model`` (a fallback, a routed or a retried call) without the
        provider-native options of other providers.

        Those options (``provider_options`` and each tool's) are keyed by provider name,
        e.g. ``{"anthropic": {...}}``: keys naming another installed provider than
        ``model``'s are dropped, so an Anthropic cache-control mark never reaches an
        OpenAI-compatible server. Other keys are kept.
        """
        if model.provider == self.model.provider:
            return self.override(model=model)
        from plait import _entrypoints

        providers = set(_entrypoints.installed("plait.models"))
        providers.add(self.model.provider)

        def strip(options: Mapping[str, Any]) -> dict[str, Any]:
            return {k: v for k, v in options.items() if k == model.provider or k not in providers}

        tools = [
            attrs.evolve(tool, provider_options=strip(tool.provider_options))
            if tool.provider_options
            else tool
            for tool in self.tools
        ]
        return self.override(
            model=model, provider_options=strip(self.provider_options), tools=tools
        )

    def with_prompt_section(
        self, section: str | None, *, when_tools: Collection[str] | None = None
    ) -> ModelRequest:
        """A copy whose system prompt ends with ``section`` (after a blank line); the request
        itself when ``section`` is empty.

        With ``when_tools``, only if this call offers one of those tools: a call whose tools
        were narrowed (by ``llm_tool_selector``, say) is not taught a tool it does not have.
        """
        if not section or (
            when_tools is not None and not any(t.name in when_tools for t in self.tools)
        ):
            return self
        base = self.system_prompt
        return self.override(system_prompt=f"{base}\n\n{section}" if base else section)


@frozen
class ModelResponse:
    """What a model call produced: the messages to append (normally one ``AIMessage``)
    and, with a ``response_format``, the validated structured answer."""

    messages: Sequence[Message | _messages.RemoveMessage]
    structured_response: Any = None

    @property
    def result(self) -> list[Message | _messages.RemoveMessage]:
        """``messages`` under LangChain's name for them (its ``ModelResponse.result``)."""
        return list(self.messages)

    @property
    def message(self) -> AIMessage | None:
        """The last AI message of the response, if any."""
        for message in reversed(self.messages):
            if isinstance(message, AIMessage):
                return message
        return None


@frozen
class ToolCallRequest:
    """One tool call as ``wrap_tool_call`` sees it; ``tool`` is ``None`` for a name the
    agent does not have. Frozen: use ``override``."""

    tool_call: ToolCall
    tool: Tool | None
    state: State = attrs.field(repr=False)
    runtime: Runtime = attrs.field(repr=False)

    def override(self, **changes: Any) -> ToolCallRequest:
        """A copy with ``changes`` applied; ``tool_call`` may be LangChain's dict form
        (``{**request.tool_call, "args": {...}}``)."""
        if "tool_call" in changes:
            changes["tool_call"] = _messages.to_tool_call(changes["tool_call"], "tool_call")
        return attrs.evolve(self, **changes)


@frozen
class ToolRun(Effect):
    """One run of a tool function, inside every ``wrap_tool_call`` hook, as performers
    see it (``plait.effects``); ``proceed()`` returns the ``ToolMessage`` or ``Command``
    answering the call."""

    request: ToolCallRequest


@frozen
class AgentConfig:
    """The agent as ``agent_tools`` and ``validate_agent`` see it at build time."""

    model: ChatModel
    tools: tuple[Tool, ...]
    system_prompt: str | None
    middleware: tuple[object, ...]
    checkpointer: Checkpointer | None
    store: Store | None
    response_format: Any = None
    name: str = "agent"


class AgentState(TypedDict, total=False):
    """The base of a ``create_agent(state_schema=...)``, as LangChain's ``AgentState``:
    subclass it and add keys (``class MyState(plait.AgentState): user_name: str``)."""

    messages: list[AnyMessage]


@frozen
class AgentResult:
    """What a run returns. ``messages`` is the thread's whole list after the run."""

    messages: list[AnyMessage]
    state: dict[str, Any]
    interrupts: list[Interrupt]
    structured_response: Any
    usage: Usage
    thread_id: str | None
    run_id: str
    model_calls: int = 0
    """The model calls ``usage`` counts: the agent's, middleware's and nested runs'
    (``plait.usage``), earlier parts of a resumed run included."""

    @property
    def text(self) -> str:
        """The last AI message's text ("" if there is none)."""
        for message in reversed(self.messages):
            if isinstance(message, AIMessage):
                return message.text
        return ""

    # LangChain's agents return a state dict; these read a result the same way:
    # result["messages"], result["structured_response"], result["__interrupt__"] (only
    # when the run paused, as in LangGraph) and any state key.

    def __getitem__(self, key: str) -> Any:
        if key == "messages":
            return self.messages
        if key == "structured_response":
            return self.structured_response
        if key == "__interrupt__" and self.interrupts:
            return self.interrupts
        if key in self.state:
            return self.state[key]
        keys = ", ".join(self.keys())
        raise KeyError(f"{key!r}: this result has no such key (it has: {keys})")

    def __contains__(self, key: object) -> bool:
        return key in self.keys()

    def get(self, key: str, default: Any = None) -> Any:
        """``result[key]``, or ``default`` for a key the result does not have."""
        return self[key] if key in self else default

    def keys(self) -> list[str]:
        """The keys ``result[key]`` reads: ``messages``, ``structured_response``,
        ``__interrupt__`` when the run paused, then the state's keys."""
        own = ["messages", "structured_response"] + (["__interrupt__"] if self.interrupts else [])
        return own + [k for k in self.state if k not in own]
