"""``llm_tool_selector``: before each model call, a (cheaper) model picks the relevant tools.

In ``wrap_model_call`` the selector model gets its own system prompt, the latest user
message and a ``response_format`` JSON schema whose ``tools`` array enumerates the
candidate tool names (an ``enum``), with every tool's description in the schema. Its JSON
answer ``{"tools": [...]}`` is checked; duplicates are dropped, names that are not
candidates are dropped with a warning on the ``custom`` stream, the rest is cut to
``max_tools``; the main call then receives ``always_include`` and the chosen tools only.

Only the agent's own tools are candidates: a tool the kernel adds to a request (the
structured-output answer tool) or another middleware adds per call is always kept.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Literal, TypeAlias

import attrs

from plait import schema
from plait.errors import ConfigError, PlaitError
from plait.lazy import frozen
from plait.messages import AIMessage, AnyMessage, HumanMessage
from plait.middleware import Middleware
from plait.models import ChatModel, init_chat_model
from plait.options import (
    FieldError,
    chat_model,
    check_tool_names,
    expected,
    integer,
    positive_or_none,
)
from plait.tools import Tool
from plait.types import AgentConfig, ModelRequest, ModelResponse

__all__ = ["LLMToolSelectorMiddleware", "ToolSelectionError"]

PLUGIN = "llm_tool_selector"

DEFAULT_SYSTEM_PROMPT = (
    "Your goal is to select the tools most relevant to answering the user's request. "
    "Choose only from the tools listed in the response schema, and leave out any tool the "
    'request does not need. Answer with JSON only: {"tools": ["name", ...]}.'
)

OnParsingFailure: TypeAlias = (
    Literal["error", "all", "none"] | tuple[str, ...] | Callable[[Exception], Sequence[str]]
)


class ToolSelectionError(PlaitError):
    """The selector model's answer was not a valid selection after every retry, and
    ``on_parsing_failure`` is ``"error"``."""


@frozen
class _Selection:
    """The selector's answer."""

    tools: list[str]


def _names(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not all(isinstance(name, str) and name for name in value):
        raise FieldError(attribute.name, expected("a list of tool names", value))


def _on_failure(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value in ("error", "all", "none") or callable(value):
        return
    if isinstance(value, tuple) and all(isinstance(name, str) and name for name in value):
        return
    raise FieldError(
        attribute.name,
        expected(
            "one of 'error', 'all', 'none', a list of tool names or a callable "
            "(exception -> names)",
            value,
        ),
    )


def _tuple(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


@frozen(kw_only=True)
class LLMToolSelectorMiddleware(Middleware):
    """Asks ``model`` which tools matter for the latest user message before each model
    call, and offers the main model only those (plus ``always_include``)."""

    model: str | ChatModel | None = attrs.field(default=None, validator=chat_model(optional=True))
    """The selector: a ``"provider:model"`` id or a ``ChatModel``; ``None`` is the agent's."""
    system_prompt: str = attrs.field(
        default=DEFAULT_SYSTEM_PROMPT, validator=attrs.validators.instance_of(str)
    )
    """The selector's instructions."""
    max_tools: int | None = attrs.field(default=None, validator=positive_or_none)
    """At most this many selected tools are kept (the first ones); ``None``: no limit."""
    always_include: tuple[str, ...] = attrs.field(default=(), converter=_tuple, validator=_names)
    """Tools always offered, not counted in ``max_tools``, never shown to the selector."""
    max_retries: int = attrs.field(default=1, validator=integer(minimum=0))
    """How many times a malformed selection is asked for again."""
    on_parsing_failure: OnParsingFailure = attrs.field(
        default="error", converter=_tuple, validator=_on_failure
    )
    """After the retries: ``"error"`` raises ``ToolSelectionError``; ``"all"`` offers
    every tool, ``"none"`` only ``always_include``; a list of names offers those; a
    function ``(exception) -> names`` decides."""
    _resolved: list[ChatModel] = attrs.field(init=False, factory=list, eq=False, repr=False)

    # -- build time -------------------------------------------------------------------------

    def validate_agent(self, agent_config: AgentConfig) -> None:
        for option, listed in (
            ("always_include", self.always_include),
            (
                "on_parsing_failure",
                self.on_parsing_failure if isinstance(self.on_parsing_failure, tuple) else (),
            ),
        ):
            check_tool_names(listed, agent_config, option=option)
        if isinstance(self.model, str) and not self._resolved:
            try:
                self._resolved.append(init_chat_model(self.model))
            except ConfigError as exc:
                raise ConfigError(str(exc), option="model") from exc

    def _selector(self, request: ModelRequest) -> ChatModel:
        if isinstance(self.model, ChatModel):
            return self.model
        if isinstance(self.model, str):
            if not self._resolved:
                self._resolved.append(init_chat_model(self.model))
            return self._resolved[0]
        runtime = request.runtime
        if runtime is not None and runtime.model is not None:
            return runtime.model
        return request.model

    # -- running ----------------------------------------------------------------------------

    def wrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
    ) -> ModelResponse:
        plan = self._plan(request)
        if plan is None:
            return handler(request)
        model = self._selector(request)
        messages = list(plan.messages)
        failure: Exception | None = None
        for _attempt in range(self.max_retries + 1):
            answer = model.invoke(
                messages, system_prompt=plan.system_prompt, response_format=plan.schema
            )
            try:
                names = _parse(answer)
            except ValueError as exc:
                failure = exc
                messages = [*messages, answer, _correction(exc)]
                continue
            return handler(self._narrowed(request, plan, names, from_model=True))
        assert failure is not None
        return handler(self._narrowed(request, plan, self._fallback(failure), from_model=False))

    async def awrap_model_call(
        self,
        request: ModelRequest,
        handler: Callable[[ModelRequest], Awaitable[ModelResponse]],
    ) -> ModelResponse:
        plan = self._plan(request)
        if plan is None:
            return await handler(request)
        model = self._selector(request)
        messages = list(plan.messages)
        failure: Exception | None = None
        for _attempt in range(self.max_retries + 1):
            answer = await model.ainvoke(
                messages, system_prompt=plan.system_prompt, response_format=plan.schema
            )
            try:
                names = _parse(answer)
            except ValueError as exc:
                failure = exc
                messages = [*messages, answer, _correction(exc)]
                continue
            return await handler(self._narrowed(request, plan, names, from_model=True))
        assert failure is not None
        return await handler(
            self._narrowed(request, plan, self._fallback(failure), from_model=False)
        )

    def _plan(self, request: ModelRequest) -> _Plan | None:
        """What to ask the selector, or ``None`` when there is nothing to choose."""
        agent_tools = (
            {tool.name for tool in request.runtime.tools}
            if request.runtime is not None and request.runtime.tools
            else {tool.name for tool in request.tools}
        )
        candidates = [
            tool
            for tool in request.tools
            if tool.name in agent_tools and tool.name not in self.always_include
        ]
        user = next((m for m in reversed(request.messages) if isinstance(m, HumanMessage)), None)
        if not candidates or user is None:
            return None
        prompt = self.system_prompt
        if self.max_tools is not None:
            prompt += (
                f"\n\nList the tools most relevant first; only the first {self.max_tools} "
                "will be used."
            )
        return _Plan(
            candidates=tuple(candidates),
            messages=(user,),
            system_prompt=prompt,
            schema=_schema(candidates),
        )

    def _fallback(self, failure: Exception) -> list[str] | None:
        """Names per ``on_parsing_failure`` (``None``: every tool)."""
        policy = self.on_parsing_failure
        if policy == "error":
            raise ToolSelectionError(
                f"{PLUGIN}: the selector model gave no valid tool selection after "
                f"{self.max_retries + 1} attempt(s): {failure}"
            ) from failure
        if policy == "all":
            return None
        if policy == "none":
            return []
        if isinstance(policy, tuple):
            return list(policy)
        assert callable(policy)
        return list(policy(failure))

    def _narrowed(
        self, request: ModelRequest, plan: _Plan, names: list[str] | None, *, from_model: bool
    ) -> ModelRequest:
        """``request`` offering the chosen candidates (``None``: all of them)."""
        by_name = {tool.name: tool for tool in plan.candidates}
        if names is None:
            chosen = set(by_name)
        else:
            kept: list[str] = []
            unknown: list[str] = []
            for name in dict.fromkeys(names):
                if name in by_name:
                    kept.append(name)
                elif name not in self.always_include:
                    unknown.append(name)
            if unknown:
                self._warn(request, unknown, from_model)
            if from_model and self.max_tools is not None:
                kept = kept[: self.max_tools]
            chosen = set(kept)
        dropped = {name for name in by_name if name not in chosen}
        return request.override(tools=[t for t in request.tools if t.name not in dropped])

    @staticmethod
    def _warn(request: ModelRequest, unknown: list[str], from_model: bool) -> None:
        if request.runtime is None:
            return
        source = "the selector model" if from_model else "on_parsing_failure"
        request.runtime.stream_writer(
            {
                "type": "warning",
                "middleware": PLUGIN,
                "message": (
                    f"{PLUGIN}: {source} chose tools that are not available and were "
                    f"ignored: {', '.join(map(repr, unknown))}"
                ),
                "ignored_tools": unknown,
            }
        )


@frozen
class _Plan:
    candidates: tuple[Tool, ...]
    messages: tuple[AnyMessage, ...]
    system_prompt: str
    schema: dict[str, Any]


def _schema(candidates: Sequence[Tool]) -> dict[str, Any]:
    listing = "\n".join(
        f"- {tool.name}: {tool.description or '(no description)'}" for tool in candidates
    )
    return {
        "title": "tool_selection",
        "type": "object",
        "properties": {
            "tools": {
                "type": "array",
                "description": (
                    "The names of the tools relevant to the user's request, most relevant "
                    f"first. The available tools:\n{listing}"
                ),
                "items": {"type": "string", "enum": [tool.name for tool in candidates]},
            }
        },
        "required": ["tools"],
        "additionalProperties": False,
    }


def _parse(answer: AIMessage) -> list[str]:
    """The tool names of the selector's answer; ``ValueError`` saying what is wrong.

    Native structured output answers with JSON text; a provider without it may answer with
    a forced tool call, whose arguments are the same object.
    """
    data: Any
    if answer.text.strip():
        try:
            data = json.loads(answer.text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"the answer is not valid JSON ({exc.msg}): {answer.text!r}") from None
    elif answer.tool_calls:
        data = answer.tool_calls[0].args
    else:
        raise ValueError("the answer is empty")
    selection: _Selection = schema.structure(data, _Selection)
    return selection.tools


def _correction(error: Exception) -> HumanMessage:
    return HumanMessage(
        f"That selection could not be used: {error}. Answer again with only a JSON object "
        'of the form {"tools": ["tool_name", ...]}, naming tools from the schema.'
    )
