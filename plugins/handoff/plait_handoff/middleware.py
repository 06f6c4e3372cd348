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
``metadata["handoff"]``; its model calls count in the main run's usage ledger, so the main
agent's limits apply to them. ``agent.update_state(thread, {"handoff": None})`` gives the
thread back to the main agent.

A separate plugin rather than part of ``subagents``: a sub-agent works for the main agent
and reports back through a tool answer, while a handoff gives the conversation away;
their options, prompts and state are different.
"""

from __future__ import annotations

import os
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Literal

import attrs

from plait.agent import Agent, AgentResult
from plait.errors import ConfigError
from plait.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from plait.middleware import Middleware
from plait.options import FieldError, expected, non_empty_string, structure_options
from plait.tools import Tool
from plait.types import AgentConfig, Command, ModelRequest, ModelResponse, StateField, ToolRuntime

__all__ = ["STATE_KEY", "TOOL_PREFIX", "HandoffAgent", "HandoffMiddleware"]

PLUGIN = "handoff"
STATE_KEY = "handoff"
TOOL_PREFIX = "transfer_to_"
_NAME = re.compile(r"[A-Za-z0-9_-]{1,48}")

InputFilter = Literal["all", "summary"] | int

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


def _check_agent(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if isinstance(value, Agent) or (isinstance(value, str) and value.endswith(".toml")):
        return
    raise FieldError(
        attribute.name, expected("a plait.Agent or the path of an agent file (.toml)", value)
    )


@attrs.frozen(kw_only=True)
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

    @input_filter.validator
    def _filter(self, attribute: attrs.Attribute[Any], value: Any) -> None:
        if value is not None:
            _check_filter(self, attribute, value)


def _agents(value: Any) -> Any:
    if not isinstance(value, list | tuple):
        return value
    return tuple(
        structure_options(HandoffAgent, item, plugin=PLUGIN)
        if isinstance(item, Mapping)
        else HandoffAgent(agent=item)
        if isinstance(item, Agent | str)
        else item
        for item in value
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


@attrs.frozen(kw_only=True)
class _Target:
    name: str
    description: str
    agent: Agent
    input_filter: InputFilter


@attrs.frozen(kw_only=True)
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

    _targets: dict[str, _Target] = attrs.field(init=False, factory=dict, eq=False, repr=False)
    _model: list[Any] = attrs.field(init=False, factory=list, eq=False, repr=False)

    def state_fields(self) -> dict[str, StateField]:
        return {STATE_KEY: StateField(default=None, scope="thread")}

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
                    f"plugin {PLUGIN!r}: option {where + '.name'!r}: "
                    f"{expected('1-48 letters, digits, _ or -', name)}"
                )
            if name in seen:
                raise ConfigError(
                    f"plugin {PLUGIN!r}: option 'agents': agents[{seen[name]}] and {where} "
                    f"are both named {name!r}; give one a name"
                )
            seen[name] = index
            self._targets[name] = _Target(
                name=name,
                description=spec.description or f"the {name} agent",
                agent=agent,
                input_filter=spec.input_filter or self.input_filter,
            )
        return [self._transfer_tool(target) for target in self._targets.values()]

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
            record: dict[str, Any] = {"agent": target.name, "after": _transfer_id(runtime)}
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

    def _active(self, request: ModelRequest) -> tuple[_Target, list[AnyMessage]] | None:
        record = request.state.get(STATE_KEY)
        if not isinstance(record, Mapping) or record.get("agent") not in self._targets:
            return None
        target = self._targets[record["agent"]]
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
        return target, chosen

    def wrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
    ) -> ModelResponse:
        active = self._active(request)
        if active is None:
            return handler(request)
        target, messages = active
        context = request.runtime.context if request.runtime is not None else None
        return _response(target, target.agent.invoke(messages, context=context))

    async def awrap_model_call(
        self,
        request: ModelRequest,
        handler: Callable[[ModelRequest], Awaitable[ModelResponse]],
    ) -> ModelResponse:
        active = self._active(request)
        if active is None:
            return await handler(request)
        target, messages = active
        context = request.runtime.context if request.runtime is not None else None
        return _response(target, await target.agent.ainvoke(messages, context=context))


def _load(value: Agent | str, where: str) -> Agent:
    if isinstance(value, Agent):
        return value
    from plait.agentfile import load_agent

    if not os.path.isfile(value):
        raise ConfigError(
            f"plugin {PLUGIN!r}: option {where + '.agent'!r}: "
            f"{expected('the path of an existing agent file', value)}"
        )
    try:
        return load_agent(value)
    except ConfigError as exc:
        raise ConfigError(f"plugin {PLUGIN!r}: option {where + '.agent'!r}: {exc}") from exc


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
    # Its usage is counted in the main run's ledger already (the run is nested in this
    # model call); reported here, not as the message's usage, which would count it twice.
    report: dict[str, Any] = {"usage": attrs.asdict(result.usage)}
    if result.interrupts:
        report["interrupts"] = [attrs.asdict(item) for item in result.interrupts]
    message = AIMessage(text, metadata={"agent": target.name, "handoff": report})
    return ModelResponse(messages=[message])
