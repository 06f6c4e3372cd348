"""``human_in_the_loop``: pause before chosen tool calls for a human to review them.

Decided in ``after_model``: the calls of the model's answer that need review are listed in
one ``plait.interrupt`` (so the run pauses once per model turn, whatever the number of
calls), and the human's decisions come back as the resume value, one per call, in order.
Approved calls run as they are; rejected and answered ones get their ``ToolMessage`` right
there (the kernel runs only calls that have no answer yet); edited ones are recorded in a
run-scoped state key and swapped in ``wrap_tool_call``, so the AI message in state keeps
the model's original call and only the executed call changes.

A resume value that does not fit (wrong count, a decision the tool does not allow, edited
arguments the tool would refuse) raises ``HumanInTheLoopError`` before anything runs; the
run stays paused at the same interrupt, so the caller can answer again.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Literal, TypeAlias

import attrs

from plait import interrupt, schema
from plait.errors import CheckpointerRequiredError, PlaitError
from plait.lazy import frozen
from plait.messages import ToolCall, ToolMessage, pending_tool_calls
from plait.middleware import Middleware, can_jump_to
from plait.options import ConversionError, FieldError, check_tool_names, expected
from plait.tools import Tool, ToolArgumentError
from plait.types import AgentConfig, Command, Runtime, StateField, ToolCallRequest

__all__ = [
    "ApproveDecision",
    "EditDecision",
    "EditedAction",
    "HumanInTheLoopError",
    "HumanInTheLoopMiddleware",
    "InterruptOnConfig",
    "RejectDecision",
    "RespondDecision",
]

DecisionType: TypeAlias = Literal["approve", "edit", "reject", "respond"]
ALL_DECISIONS: tuple[DecisionType, ...] = ("approve", "edit", "reject", "respond")
State: TypeAlias = Mapping[str, Any]
Describer: TypeAlias = Callable[[ToolCall, State, Runtime], str]
Predicate: TypeAlias = (
    Callable[[ToolCall, State, Runtime], bool] | Callable[[ToolCallRequest], bool]
)

EDITS_KEY = "human_in_the_loop_edits"
"""Run-scoped: ``{tool_call_id: {"name": ..., "args": ...}}`` for every call a human
edited, read by ``wrap_tool_call`` to run the edited call instead of the model's."""

DEFAULT_PREFIX = "Tool execution requires approval"
DEFAULT_EDIT_NOTICE = "Note: a human reviewer replaced your call before it ran."
"""The start of the note on an edited call's result; both calls follow it."""


def _check_edit_notice(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is not None and not isinstance(value, str):
        raise FieldError(attribute.name, expected("a string or None", value))


class HumanInTheLoopError(PlaitError):
    """The resume value does not answer the pending review: wrong shape or count, a decision
    the tool does not allow, or edited arguments that do not fit the tool. Nothing ran."""


# -- options -------------------------------------------------------------------------------


_DECISIONS = f"a non-empty list of decisions ({', '.join(map(repr, ALL_DECISIONS))})"
_ENTRY = "a bool or a mapping of InterruptOnConfig's fields"  # as the options' converter says
_MAP = f"a mapping of tool names to {_ENTRY}"


def _decisions(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, tuple) or not value:
        detail = "to never ask about a tool, map it to False"
        raise FieldError(attribute.name, expected(_DECISIONS, value, detail))
    for item in value:
        if item not in ALL_DECISIONS:
            detail = f"{item!r} is not a decision"
            raise FieldError(attribute.name, expected(_DECISIONS, value, detail))


def _entry_error(where: str, exc: ValueError) -> FieldError:
    """The problems of the entry at ``where`` (``interrupt_on['x']``) as one ``FieldError``,
    each at its path as the option given by name shows it: the first as the field, any
    others after its message, as an agent file reports several
    (``interrupt_on['x'].when: expected ... (also interrupt_on['x']: unknown key ...)``)."""
    found = [("", str(exc))]
    if isinstance(exc, ConversionError):
        found = [(p.path, p.message) for p in exc.problems]
    problems = [
        (where + (path if not path or path.startswith("[") else "." + path), message)
        for path, message in found
    ]
    (field, message), others = problems[0], problems[1:]
    if others:
        message += " (also " + "; ".join(f"{path}: {text}" for path, text in others) + ")"
    return FieldError(field, message)


def _as_tuple(value: Any) -> Any:
    return tuple(dict.fromkeys(value)) if isinstance(value, list | tuple) else value


@frozen
class InterruptOnConfig:
    """How to review one tool's calls.

    ``description`` is the text shown to the reviewer (a string, or a function
    ``(tool_call, state, runtime) -> str``); without one it is the middleware's
    ``description_prefix`` followed by the tool's name and arguments. ``when`` is a
    predicate ``(tool_call, state, runtime) -> bool`` (or LangChain's ``(request) -> bool``,
    given a ``ToolCallRequest``): a call it refuses runs unreviewed.
    """

    allowed_decisions: tuple[DecisionType, ...] = attrs.field(
        default=ALL_DECISIONS, converter=_as_tuple, validator=_decisions
    )
    """The decisions the reviewer may give: approve, edit, reject, respond."""
    description: str | Describer | None = None
    """The reviewer's text, or a function of ``(tool_call, state, runtime)`` making it."""
    when: Predicate | None = None
    """Review only the calls this predicate accepts: ``(tool_call, state, runtime)``, or
    LangChain's one-argument ``(request)`` form, given a ``ToolCallRequest``."""


_REVIEW_ALL = InterruptOnConfig()


def _interrupt_on(
    value: Mapping[str, bool | InterruptOnConfig | Mapping[str, Any]],
) -> dict[str, bool | InterruptOnConfig]:
    """Normalise ``interrupt_on``: mappings (Python users write dicts, as in LangChain)
    become ``InterruptOnConfig`` with the same strict checks as options given by name."""
    if not isinstance(value, Mapping):
        raise FieldError("interrupt_on", expected(_MAP, value))
    result: dict[str, bool | InterruptOnConfig] = {}
    for name, entry in value.items():
        if not isinstance(name, str) or not name:
            detail = f"{name!r} is not a tool name"
            raise FieldError("interrupt_on", expected(_MAP, value, detail))
        where = f"interrupt_on[{name!r}]"
        if isinstance(entry, bool | InterruptOnConfig):
            result[name] = entry
        elif isinstance(entry, Mapping):
            try:
                result[name] = schema.structure(dict(entry), InterruptOnConfig)
            except ValueError as exc:
                raise _entry_error(where, exc) from None
        else:
            raise FieldError(where, expected(_ENTRY, entry))
    return result


# -- decisions (the resume value) ------------------------------------------------------------


@frozen
class ApproveDecision:
    """Run the call as the model wrote it."""

    type: Literal["approve"] = "approve"


@frozen
class EditedAction:
    """The call to run instead: new ``args`` (and, optionally, another tool's ``name``)."""

    args: dict[str, Any]
    name: str | None = None


@frozen
class EditDecision:
    """Run ``edited_action`` instead of the model's call."""

    edited_action: EditedAction
    type: Literal["edit"] = "edit"


@frozen
class RejectDecision:
    """Do not run the call; the model is told so, with the reviewer's ``message``."""

    message: str | None = None
    type: Literal["reject"] = "reject"


@frozen
class RespondDecision:
    """Do not run the call; ``message`` is the tool's result the model reads."""

    message: str
    type: Literal["respond"] = "respond"


Decision: TypeAlias = ApproveDecision | EditDecision | RejectDecision | RespondDecision
_DECISION_CLASSES: dict[str, type[Decision]] = {
    "approve": ApproveDecision,
    "edit": EditDecision,
    "reject": RejectDecision,
    "respond": RespondDecision,
}


@frozen
class _Envelope:
    decisions: list[dict[str, Any]]


@frozen
class _Tagged:
    """Only the ``type`` of a decision, to pick its class (the tagged-union dispatch)."""

    type: DecisionType


@frozen
class _Review:
    """One call under review, with the configuration that applies to it."""

    call: ToolCall
    config: InterruptOnConfig
    description: str

    @property
    def allowed(self) -> tuple[DecisionType, ...]:
        return self.config.allowed_decisions


# -- the middleware --------------------------------------------------------------------------


@frozen(kw_only=True)
class HumanInTheLoopMiddleware(Middleware):
    """Pauses the run before the calls of the tools in ``interrupt_on`` for a human to
    approve, edit, reject or answer each of them.

    ``HumanInTheLoopMiddleware(interrupt_on={"send_email": True, "delete_file":
    {"allowed_decisions": ["approve", "reject"]}, "search": False})``. Needs a
    checkpointer: the paused run is saved, and resumed with ``agent.invoke(
    plait.Command(resume={"decisions": [...]}), thread_id=...)``, in any process.
    """

    interrupt_on: Mapping[str, bool | InterruptOnConfig] = attrs.field(converter=_interrupt_on)
    """Tool name → ``True`` (any decision), ``False`` (never ask) or an
    ``InterruptOnConfig`` (``{allowed_decisions, description, when}``)."""
    description_prefix: str = attrs.field(
        default=DEFAULT_PREFIX, validator=attrs.validators.instance_of(str)
    )
    """The start of the reviewer's text for tools without their own ``description``."""
    edit_notice: str | None = attrs.field(default=DEFAULT_EDIT_NOTICE, validator=_check_edit_notice)
    """The start of the note put before an edited call's result (the call that ran and the
    model's follow it); ``None`` or ``""``: no note (LangChain's ``edit_notice``)."""

    # -- build time -------------------------------------------------------------------------

    def state_fields(self) -> dict[str, StateField]:
        return {EDITS_KEY: StateField(default={}, scope="run", internal=True)}

    def validate_agent(self, agent_config: AgentConfig) -> None:
        if agent_config.checkpointer is None:
            raise CheckpointerRequiredError(
                "reviewing tool calls pauses the run, which needs "
                "a checkpointer to save it until the human answers; pass checkpointer='memory' "
                "(or 'sqlite:///agent.db' to resume in another process) to create_agent"
            )
        check_tool_names(self.interrupt_on, agent_config, option="interrupt_on")

    # -- after the model: ask ---------------------------------------------------------------

    @can_jump_to("model")
    def after_model(self, state: State, runtime: Runtime) -> Command | None:
        pending = pending_tool_calls(state["messages"])
        tools = {tool.name: tool for tool in runtime.tools}
        reviews = self._reviews(pending, tools, state, runtime)
        if not reviews:
            return None
        answer = interrupt(
            {
                "action_requests": [
                    {"name": r.call.name, "args": r.call.args, "description": r.description}
                    for r in reviews
                ],
                "review_configs": [
                    {
                        "action_name": r.call.name,
                        "allowed_decisions": list(r.config.allowed_decisions),
                    }
                    for r in reviews
                ],
            }
        )
        decisions = _parse_decisions(answer, reviews)
        answers: list[ToolMessage] = []
        edits: dict[str, Any] = {}
        for review, decision in zip(reviews, decisions, strict=True):
            call = review.call
            if isinstance(decision, RejectDecision):
                answers.append(_rejected(call, decision.message))
            elif isinstance(decision, RespondDecision):
                answers.append(
                    ToolMessage(
                        decision.message,
                        tool_call_id=call.id,
                        name=call.name,
                        metadata={"human_in_the_loop": {"decision": "respond"}},
                    )
                )
            elif isinstance(decision, EditDecision):
                edited = _check_edit(decision.edited_action, review, tools)
                if (edited.name, edited.args) != (call.name, call.args):
                    edits[call.id] = {"name": edited.name, "args": edited.args}
        update: dict[str, Any] = {}
        if answers:
            update["messages"] = answers
        if edits:
            update[EDITS_KEY] = {**state[EDITS_KEY], **edits}
        answered = {message.tool_call_id for message in answers}
        everything_answered = all(call.id in answered for call in pending)
        if not update:
            return None
        return Command(update=update, jump_to="model" if everything_answered else None)

    def _reviews(
        self,
        pending: Sequence[ToolCall],
        tools: Mapping[str, Tool],
        state: State,
        runtime: Runtime,
    ) -> list[_Review]:
        reviews: list[_Review] = []
        for call in pending:
            # An unknown name or malformed arguments never run: the kernel answers them
            # with an error, so a misspelt name cannot slip past review into a real tool.
            if call.error is not None or call.name not in tools:
                continue
            entry = self.interrupt_on.get(call.name, False)
            if entry is False:
                continue
            config = _REVIEW_ALL if entry is True else entry
            assert isinstance(config, InterruptOnConfig)
            if config.when is not None and not _asks(config.when, call, tools, state, runtime):
                continue
            reviews.append(_Review(call, config, self._describe(call, config, state, runtime)))
        return reviews

    def _describe(
        self, call: ToolCall, config: InterruptOnConfig, state: State, runtime: Runtime
    ) -> str:
        description = config.description
        if description is None:
            args = json.dumps(call.args, ensure_ascii=False)
            return f"{self.description_prefix}\n\nTool: {call.name}\nArgs: {args}"
        if isinstance(description, str):
            return description
        text = description(call, state, runtime)
        if not isinstance(text, str):
            raise HumanInTheLoopError(
                f"human_in_the_loop: the description function for {call.name!r} returned "
                f"{type(text).__name__}, expected a str"
            )
        return text

    # -- around the tool: run the edited call -----------------------------------------------

    def wrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], ToolMessage | Command],
    ) -> ToolMessage | Command:
        edited = _edited_request(request)
        if edited is None:
            return handler(request)
        return _noted(handler(edited), request.tool_call, edited.tool_call, self.edit_notice)

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command]],
    ) -> ToolMessage | Command:
        edited = _edited_request(request)
        if edited is None:
            return await handler(request)
        return _noted(await handler(edited), request.tool_call, edited.tool_call, self.edit_notice)


# -- helpers ---------------------------------------------------------------------------------


def _parse_decisions(answer: Any, reviews: Sequence[_Review]) -> list[Decision]:
    """The resume value as one checked decision per review, or ``HumanInTheLoopError``."""
    names = ", ".join(repr(r.call.name) for r in reviews)
    try:
        envelope: _Envelope = schema.structure(answer, _Envelope)
    except ValueError as exc:
        wanted = "{'decisions': [...]} with one decision per reviewed call (" + names + ")"
        detail = str(exc) if isinstance(answer, Mapping) else None
        raise HumanInTheLoopError(
            f"human_in_the_loop: the resume value: {expected(wanted, answer, detail)}. "
            "Nothing was run."
        ) from None
    if len(envelope.decisions) != len(reviews):
        wanted = f"a list of {len(reviews)} decision(s), one per call awaiting review ({names})"
        raise HumanInTheLoopError(
            "human_in_the_loop: $.decisions: "
            f"{expected(wanted, envelope.decisions, f'it has {len(envelope.decisions)}')}; "
            "give exactly one per call, in order. Nothing was run."
        )
    decisions: list[Decision] = []
    for index, (raw, review) in enumerate(zip(envelope.decisions, reviews, strict=True)):
        where = f"human_in_the_loop: decision {index + 1} (for {review.call.name!r})"
        try:
            tagged: _Tagged = schema.structure({"type": raw.get("type")}, _Tagged)
            kind = tagged.type
            decision: Decision = schema.structure(raw, _DECISION_CLASSES[kind])
        except ValueError as exc:
            raise HumanInTheLoopError(f"{where}: {exc}. Nothing was run.") from None
        allowed = review.allowed
        if decision.type not in allowed:
            choices = f"one of {', '.join(map(repr, allowed))} (the decisions this tool allows)"
            raise HumanInTheLoopError(
                f"{where}: $.type: {expected(choices, decision.type)}. Nothing was run."
            )
        decisions.append(decision)
    return decisions


def _asks(
    when: Callable[..., bool],
    call: ToolCall,
    tools: Mapping[str, Tool],
    state: State,
    runtime: Runtime,
) -> bool:
    """``when``'s verdict on ``call``: a predicate of one argument is LangChain's and gets a
    ``ToolCallRequest`` (``request.tool_call["args"]``); any other gets ``(tool_call,
    state, runtime)``."""
    if _takes_one(when):
        return bool(when(ToolCallRequest(call, tools.get(call.name), state, runtime)))
    return bool(when(call, state, runtime))


def _takes_one(func: Callable[..., Any]) -> bool:
    try:
        params = inspect.signature(func).parameters.values()
    except (TypeError, ValueError):  # a builtin without a signature: plait's form
        return False
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    varargs = any(p.kind is p.VAR_POSITIONAL for p in params)
    return len(positional) == 1 and not varargs


def _check_edit(action: EditedAction, review: _Review, tools: Mapping[str, Tool]) -> ToolCall:
    """The edited call, checked against its tool's schema as the kernel would check it."""
    call = review.call
    name = action.name if action.name is not None else call.name
    where = f"human_in_the_loop: the edit of the call to {call.name!r}"
    tool = tools.get(name)
    if tool is None:
        raise HumanInTheLoopError(
            f"{where} names tool {name!r}, which the agent does not have; its tools are: "
            f"{', '.join(sorted(tools))}. Nothing was run."
        )
    problems = schema.validate_json(action.args, tool.parameters)
    if problems:
        details = "; ".join(str(problem) for problem in problems)
        raise HumanInTheLoopError(
            f"{where}: the new arguments do not fit {name!r}: {details}. Nothing was run."
        )
    try:
        tool.prepare(action.args, None)
    except ToolArgumentError as exc:
        raise HumanInTheLoopError(
            f"{where}: the new arguments do not fit {name!r}: {exc}. Nothing was run."
        ) from None
    return ToolCall(name, dict(action.args), call.id)


def _rejected(call: ToolCall, reason: str | None) -> ToolMessage:
    text = f"A human reviewer rejected this call to {call.name!r}, so it was not run."
    if reason:
        reason = reason.strip()
        text += f" Their reason: {reason}" + ("" if reason.endswith((".", "!", "?")) else ".")
    text += (
        " Do not call it again unless the user asks you to; carry on without it, or ask the "
        "user how to proceed."
    )
    return ToolMessage.error(call, text, metadata={"human_in_the_loop": {"decision": "reject"}})


def _edited_request(request: ToolCallRequest) -> ToolCallRequest | None:
    """``request`` with the human's edit swapped in, or ``None`` when there is none (or an
    outer instance of this middleware has swapped it already)."""
    edits: Mapping[str, Any] = request.state.get(EDITS_KEY) or {}
    call = request.tool_call
    record = edits.get(call.id)
    if record is None:
        return None
    edited = ToolCall(record["name"], dict(record["args"]), call.id)
    if (edited.name, edited.args) == (call.name, call.args):
        return None
    tool = next((t for t in request.runtime.tools if t.name == edited.name), None)
    return request.override(tool_call=edited, tool=tool)


def _noted(
    result: ToolMessage | Command, original: ToolCall, edited: ToolCall, notice: str | None
) -> ToolMessage | Command:
    """The tool's result, telling the model a human replaced its call (so it does not
    issue the original again), after ``notice``; with no notice, only the metadata says
    so."""
    note = (
        f"{notice} It ran as "
        f"{edited.name}({json.dumps(edited.args, ensure_ascii=False)}) instead of "
        f"{original.name}({json.dumps(original.args, ensure_ascii=False)}); do not issue the "
        "original call again. The result of the call that ran:"
    )
    marker = {
        "edited": True,
        "original": {"name": original.name, "args": original.args},
        "executed": {"name": edited.name, "args": edited.args},
    }

    def annotate(message: ToolMessage) -> ToolMessage:
        content: Any
        if not notice:
            content = message.content
        elif isinstance(message.content, str):
            content = f"{note}\n\n{message.content}"
        else:
            content = [{"type": "text", "text": note}, *message.content]
        return attrs.evolve(
            message,
            content=content,
            metadata={**message.metadata, "human_in_the_loop": marker},
        )

    if isinstance(result, ToolMessage):
        return annotate(result)
    update = dict(result.update or {})
    messages = update.get("messages")
    if isinstance(messages, ToolMessage):
        messages = [messages]
    if isinstance(messages, list | tuple):
        update["messages"] = [
            annotate(m) if isinstance(m, ToolMessage) and m.tool_call_id == original.id else m
            for m in messages
        ]
        return attrs.evolve(result, update=update)
    return result
