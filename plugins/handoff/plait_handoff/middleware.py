"""``handoff``: the model hands the conversation to another agent, which answers from then on.

Each agent of ``agents`` gets a ``transfer_to_<name>`` tool (OpenAI Agents' naming). The
call records the handoff in the thread-scoped state key ``handoff``; from the next model
call on, for the rest of the thread, this middleware answers each model call of the main
agent by running the receiving agent instead, on the conversation as the main agent's
model would have seen it (after the middleware around this one: pii, context editing),
passed through the input filter:

- ``"all"``: every human message and the text of every AI message (tool calls and tool
  answers are left out: they belong to tools the receiving agent does not have);
- an int N: the last N of those;
- ``"summary"``: a summary written at the handoff by the main agent's model, then the
  messages since the handoff.

The receiving agent runs with its own model, tools, instructions and middleware, on no
thread of its own (the main thread is the conversation). Its answer is added to the main
thread as an AI message whose ``metadata["agent"]`` names it, with the run's usage in
``metadata["handoff"]``. Its run is nested in the main run (``plait.nesting.nest``) under
the id of the ``transfer_to_<name>`` call: its model calls count in the main run's usage
ledger and against the main agent's limits (unless ``inherit`` leaves them out), and its
events reach the main run's stream with ``StreamEvent.path == (transfer call id,)``.
``agent.update_state(thread, {"handoff": None})`` gives the thread back to the main agent.

A separate plugin rather than part of ``subagents``: a sub-agent works for the main agent
and reports back through a tool answer, while a handoff gives the conversation away;
their options, prompts and state are different.
"""

from __future__ import annotations

import importlib.metadata
import os
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Literal

import attrs

from plait import usage
from plait.agent import Agent, AgentResult
from plait.errors import ConfigError
from plait.lazy import frozen
from plait.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from plait.middleware import Middleware
from plait.nesting import nest
from plait.options import FieldError, expected, non_empty_string, structure_options
from plait.tools import Tool
from plait.types import AgentConfig, Command, ModelRequest, ModelResponse, StateField, ToolRuntime

__all__ = ["STATE_KEY", "TOOL_PREFIX", "HandoffAgent", "HandoffMiddleware"]

PLUGIN = "handoff"
STATE_KEY = "handoff"
"""The state key recording which agent the conversation was handed to."""
TOOL_PREFIX = "transfer_to_"
"""The start of each handoff tool's name: ``transfer_to_<agent>``."""
_NAME = re.compile(r"[A-Za-z0-9_-]{1,48}")

InputFilter = Literal["all", "summary"] | int

INHERITED = ("usage_limit", "model_call_limit", "pii")
"""What a receiving agent inherits of the main agent by default: the limits, through the
run's usage ledger, and ``pii``, which must wrap ``handoff`` (be listed before it) so the
receiving agent sees the conversation as the main model would, pseudonymized."""
LIMITS = ("usage_limit", "model_call_limit")

SUMMARY_PROMPT = """Another agent, {name}, is taking over this conversation from you. Write a
summary of it for {name}: who the user is, what they asked, what was found or done so far,
and what is still open. Write only the summary.

The conversation:
{conversation}"""


def _check_filter(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value in ("all", "summary") or (
        isinstance(value, int) and not isinstance(value, bool) and value >= 1
    ):
        return
    raise FieldError(attribute.name, expected("'all', 'summary' or an int >= 1", value))


def _tuple(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


def _check_inherit(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is None:
        return
    if not isinstance(value, tuple) or not all(item in INHERITED for item in value):
        raise FieldError(
            attribute.name, expected(f"a list of names among {', '.join(INHERITED)}", value)
        )


def _check_agent(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if isinstance(value, Agent) or (isinstance(value, str) and value.endswith(".toml")):
        return
    raise FieldError(
        attribute.name, expected("a plait.Agent or the path of an agent file (.toml)", value)
    )


@frozen(kw_only=True)
class HandoffAgent:
    """An agent the conversation can be handed to."""

    agent: Agent | str = attrs.field(validator=_check_agent)
    """A ``plait.Agent``, or the path of an agent file, loaded at ``create_agent``."""
    name: str | None = None
    """The name in ``transfer_to_<name>`` (1-48 letters, digits, ``_`` or ``-``, unique);
    ``None``: the agent's own name."""
    description: str | None = attrs.field(default=None, validator=non_empty_string(optional=True))
    """When to hand over to it, shown in the tool's description; ``None``: "the <name> agent"."""
    input_filter: InputFilter | None = attrs.field(default=None)
    """What of the conversation it sees; ``None``: the middleware's ``input_filter``."""
    inherit: tuple[str, ...] | None = attrs.field(
        default=None, converter=_tuple, validator=_check_inherit
    )
    """Which of the main agent's ``usage_limit``, ``model_call_limit``, ``pii`` apply to
    it; ``None``: the middleware's ``inherit``; ``[]`` opts out of all. A limit left out
    still counts its calls but never refuses them; ``pii`` left out allows a ``pii``
    listed after ``handoff``, which then hides values from the main model only."""

    @input_filter.validator
    def _filter(self, attribute: attrs.Attribute[Any], value: Any) -> None:
        if value is not None:
            _check_filter(self, attribute, value)


def _agents(value: Any) -> Any:
    if not isinstance(value, list | tuple):
        return value
    return tuple(
        structure_options(HandoffAgent, item, plugin=PLUGIN, at=f"agents[{index}]")
        if isinstance(item, Mapping)
        else HandoffAgent(agent=item)
        if isinstance(item, Agent | str)
        else item
        for index, item in enumerate(value)
    )


def _check_agents(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if (
        not isinstance(value, tuple)
        or not value
        or not all(isinstance(item, HandoffAgent) for item in value)
    ):
        raise FieldError(
            attribute.name,
            expected(
                "a non-empty list of agents: plait.Agent objects, agent file paths or "
                "{agent, name, description, input_filter} tables",
                value,
            ),
        )


@frozen(kw_only=True)
class _Target:
    name: str
    description: str
    agent: Agent
    input_filter: InputFilter
    inherit: tuple[str, ...]


@frozen(kw_only=True)
class HandoffMiddleware(Middleware):
    """Gives the model a ``transfer_to_<name>`` tool per agent of ``agents``; once one is
    called, that agent answers the thread's model calls."""

    # Any for the structurer: items are agents, paths or tables, turned into HandoffAgent
    # by the converter.
    agents: tuple[Any, ...] = attrs.field(converter=_agents, validator=_check_agents)
    """The agents the conversation can go to: ``plait.Agent`` objects, agent file paths,
    or ``{agent, name, description, input_filter}`` tables."""
    input_filter: InputFilter = attrs.field(default="all", validator=_check_filter)
    """What a receiving agent sees: ``"all"``, the last N messages, or ``"summary"``."""
    inherit: tuple[str, ...] = attrs.field(
        default=INHERITED, converter=_tuple, validator=_check_inherit
    )
    """Which of the main agent's ``usage_limit``, ``model_call_limit`` and ``pii`` apply to
    receiving agents that do not say (``HandoffAgent.inherit``); ``[]``: none. ``pii``
    applies by wrapping ``handoff``: with it inherited, a ``pii`` listed after ``handoff``
    is refused at ``create_agent``."""

    _targets: dict[str, _Target] = attrs.field(init=False, factory=dict, eq=False, repr=False)
    _model: list[Any] = attrs.field(init=False, factory=list, eq=False, repr=False)

    def state_fields(self) -> dict[str, StateField]:
        return {STATE_KEY: StateField(default=None, scope="thread", internal=True)}

    # -- build time -------------------------------------------------------------------------

    def agent_tools(self, agent_config: AgentConfig) -> list[Tool]:
        self._model[:] = [agent_config.model]
        seen: dict[str, int] = {}
        for index, spec in enumerate(self.agents):
            where = f"agents[{index}]"
            agent = _load(spec.agent, where)
            name = spec.name or agent.name
            if not _NAME.fullmatch(name):
                raise ConfigError(
                    expected("1-48 letters, digits, _ or -", name), option=f"{where}.name"
                )
            if name in seen:
                raise ConfigError(
                    f"agents[{seen[name]}] and {where} are both named {name!r}; give one a name",
                    option="agents",
                )
            seen[name] = index
            self._targets[name] = _Target(
                name=name,
                description=spec.description or f"the {name} agent",
                agent=agent,
                input_filter=spec.input_filter or self.input_filter,
                inherit=self.inherit if spec.inherit is None else spec.inherit,
            )
        return [self._transfer_tool(target) for target in self._targets.values()]

    def validate_agent(self, agent_config: AgentConfig) -> None:
        """A ``pii`` inside ``handoff`` would pseudonymize only what the main model sees:
        the receiving agents, answering in its place, would get the real values."""
        inheriting = [t.name for t in self._targets.values() if "pii" in t.inherit]
        pii = _middleware_class("pii")
        if not inheriting or pii is None:
            return
        middleware = agent_config.middleware
        mine = [index for index, item in enumerate(middleware) if item is self]
        if mine and any(isinstance(item, pii) for item in middleware[mine[0] + 1 :]):
            raise ConfigError(
                f"pii is listed after handoff, so {', '.join(inheriting)} would see the real "
                "values pii hides from the main model; list pii before handoff, or leave "
                "'pii' out of inherit",
                option="inherit",
            )

    def _transfer_tool(self, target: _Target) -> Tool:
        summarize = self._summary

        def transfer(runtime: ToolRuntime) -> ToolMessage | Command:
            """Hand the conversation over to another agent."""
            calls = _last_ai_calls(runtime.state.get("messages") or ())
            if sum(name.startswith(TOOL_PREFIX) for name in calls) > 1:
                return ToolMessage.error(
                    runtime.tool_call,
                    "Error: hand the conversation to one agent at a time; call only one "
                    "transfer tool.",
                )
            record: dict[str, Any] = {
                "agent": target.name,
                "after": _transfer_id(runtime),
                "call": runtime.tool_call_id,
            }
            if target.input_filter == "summary":
                record["summary"] = summarize(target.name, runtime.state.get("messages") or ())
            text = f"Transferred to {target.name}, who answers from now on."
            return Command(
                update={
                    STATE_KEY: record,
                    "messages": [
                        ToolMessage(
                            text, tool_call_id=runtime.tool_call_id, name=runtime.tool_call.name
                        )
                    ],
                }
            )

        description = (
            f"Hand this conversation over to {target.name}: {target.description}. It will "
            "answer the user from now on, instead of you."
        )
        return Tool.from_function(transfer, name=TOOL_PREFIX + target.name, description=description)

    def _summary(self, name: str, messages: Sequence[AnyMessage]) -> str:
        conversation = "\n".join(
            f"{m.type}: {m.text}" for m in _conversation(messages) if m.text.strip()
        )
        prompt = SUMMARY_PROMPT.format(name=name, conversation=conversation)
        answer = self._model[0].invoke([HumanMessage(prompt)])
        return str(answer.text)

    # -- answering as the receiving agent ---------------------------------------------------

    def _active(self, request: ModelRequest) -> tuple[_Target, list[AnyMessage], str] | None:
        """The receiving agent answering this model call, what it sees, and the name its
        run nests under (the transfer call's id)."""
        record = request.state.get(STATE_KEY)
        if not isinstance(record, Mapping) or record.get("agent") not in self._targets:
            return None
        target = self._targets[record["agent"]]
        where = str(record.get("call") or TOOL_PREFIX + target.name)
        messages = list(request.messages)
        chosen = _conversation(messages)
        if target.input_filter == "summary":
            after = _after(messages, record.get("after"))
            summary = HumanMessage(
                f"Summary of the conversation so far:\n{record.get('summary', '')}"
            )
            chosen = [summary, *_conversation(after)]
        elif isinstance(target.input_filter, int):
            chosen = chosen[-target.input_filter :]
        return target, chosen, where

    def wrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
    ) -> ModelResponse:
        active = self._active(request)
        if active is None:
            return handler(request)
        target, messages, where = active
        context = request.runtime.context if request.runtime is not None else None
        with nest(where), usage.exempt(*_exempt(target.inherit)):
            result = target.agent.invoke(messages, context=context)
        return _response(target, result)

    async def awrap_model_call(
        self,
        request: ModelRequest,
        handler: Callable[[ModelRequest], Awaitable[ModelResponse]],
    ) -> ModelResponse:
        active = self._active(request)
        if active is None:
            return await handler(request)
        target, messages, where = active
        context = request.runtime.context if request.runtime is not None else None
        with nest(where), usage.exempt(*_exempt(target.inherit)):
            result = await target.agent.ainvoke(messages, context=context)
        return _response(target, result)


def _exempt(inherit: Sequence[str]) -> tuple[str, ...]:
    return tuple(name for name in LIMITS if name not in inherit)


def _middleware_class(name: str) -> type | None:
    for entry_point in importlib.metadata.entry_points(group="plait.middleware", name=name):
        loaded = entry_point.load()
        return loaded if isinstance(loaded, type) else None
    return None


def _load(value: Agent | str, where: str) -> Agent:
    if isinstance(value, Agent):
        return value
    from plait.agentfile import load_agent

    if not os.path.isfile(value):
        raise ConfigError(
            expected("the path of an existing agent file", value), option=f"{where}.agent"
        )
    try:
        return load_agent(value)
    except ConfigError as exc:
        raise ConfigError(str(exc), option=f"{where}.agent") from exc


def _conversation(messages: Sequence[AnyMessage]) -> list[AnyMessage]:
    """Human messages, and AI messages' text without their tool calls."""
    kept: list[AnyMessage] = []
    for message in messages:
        if isinstance(message, HumanMessage):
            kept.append(message)
        elif isinstance(message, AIMessage) and message.text.strip():
            kept.append(AIMessage(message.text, id=message.id, metadata=dict(message.metadata)))
    return kept


def _last_ai_calls(messages: Sequence[AnyMessage]) -> list[str]:
    for message in reversed(messages):
        if isinstance(message, AIMessage):
            return [call.name for call in message.tool_calls]
    return []


def _transfer_id(runtime: ToolRuntime) -> str | None:
    for message in reversed(runtime.state.get("messages") or ()):
        if isinstance(message, AIMessage):
            return message.id
    return None


def _after(messages: Sequence[AnyMessage], message_id: str | None) -> list[AnyMessage]:
    """The messages after the one carrying the transfer call (all of them if it is gone)."""
    for index, message in enumerate(messages):
        if message.id == message_id:
            return list(messages[index + 1 :])
    return list(messages)


def _response(target: _Target, result: AgentResult) -> ModelResponse:
    text = result.text or f"({target.name} finished without a text answer)"
    # Its usage is counted in the main run's ledger already (the run is nested in the
    # main run); reported here, not as the message's usage, which would count it twice.
    report: dict[str, Any] = {"usage": attrs.asdict(result.usage)}
    if result.interrupts:
        report["interrupts"] = [attrs.asdict(item) for item in result.interrupts]
    message = AIMessage(text, metadata={"agent": target.name, "handoff": report})
    return ModelResponse(messages=[message])
