"""``ModelRouterMiddleware``: each model call goes to the model of a route, chosen by the
first matching rule, else by a small classifier model, else ``fallback_route`` (or the
agent's own model).

The classifier reads the last user message and the routes' criteria and answers a route
name; it is asked once per user turn of a run (its answer is remembered for the turn's
later calls, the ones after tool results). The route taken is written in the answer's
``response_metadata["model_router"]``: route, model and why.
"""

from __future__ import annotations

import collections
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

import attrs

from plait.errors import ConfigError
from plait.lazy import frozen
from plait.messages import AIMessage, HumanMessage
from plait.middleware import Middleware
from plait.models import ChatModel, init_chat_model
from plait.options import ChatModelOption, FieldError, expected
from plait.types import AgentConfig, ModelRequest, ModelResponse
from plait_model_router.rules import Rule, last_user_text

__all__ = ["DEFAULT_SYSTEM_PROMPT", "ModelRouterMiddleware", "ModelRoutingMiddleware"]

KEY = "model_router"
DEFAULT_SYSTEM_PROMPT = "Choose the least expensive model likely to complete the user's task."
"""What the classifier model is told to choose by, unless ``system_prompt`` is given."""
_MODEL = ChatModelOption()
_OPTIONAL_MODEL = ChatModelOption(optional=True)
_ROUTES = "a non-empty mapping of route names to model ids, ChatModels or {model, criteria}"
_MEMO_SIZE = 256


def _check_models(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, Mapping) or not value:
        raise FieldError(attribute.name, expected(_ROUTES, value))
    for name, config in value.items():
        if not isinstance(name, str) or not name:
            raise FieldError(attribute.name, expected(_ROUTES, value, "a route name is empty"))
        model = config.get("model") if isinstance(config, Mapping) else config
        problem = _MODEL.problem(model)
        if problem is not None:
            raise FieldError(attribute.name, f"route {name!r}: {problem}")
        if isinstance(config, Mapping) and not isinstance(config.get("criteria", ""), str):
            raise FieldError(
                attribute.name, f"route {name!r}: " + expected("a string", config["criteria"])
            )


def _as_rules(value: Any) -> Any:
    if isinstance(value, list | tuple):
        return tuple(Rule(**item) if isinstance(item, Mapping) else item for item in value)
    return value


def _check_rules(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, tuple) or not all(isinstance(r, Rule) for r in value):
        raise FieldError(attribute.name, expected("a list of Rules (or their mappings)", value))


def _check_routing_model(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    _OPTIONAL_MODEL.check(attribute.name, value)


def _check_prompt(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, str) or not value.strip():
        raise FieldError(attribute.name, expected("a non-empty string", value))


def _check_route_name(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is not None and (not isinstance(value, str) or not value):
        raise FieldError(attribute.name, expected("a route name or None", value))


@frozen
class ModelRouterMiddleware(Middleware):
    """Sends each model call to the model of a route: the first of ``rules`` that matches,
    else what ``routing_model`` (a small classifier) answers, else ``fallback_route``, else
    the agent's own model. LangChain 1.5's ``choices``, ``instructions`` and ``classifier``
    are ``models`` (with ``criteria``), ``system_prompt`` and ``routing_model`` here."""

    models: Mapping[str, str | ChatModel | Mapping[str, Any]] = attrs.field(validator=_check_models)
    """Route name -> model id, ``ChatModel``, or ``{"model": ..., "criteria": "..."}`` (the
    criteria the classifier reads)."""
    rules: Sequence[Rule] = attrs.field(
        default=(), kw_only=True, converter=_as_rules, validator=_check_rules
    )
    """Tried in order on every call; the first whose conditions all hold decides."""
    routing_model: str | ChatModel | None = attrs.field(
        default=None, kw_only=True, validator=_check_routing_model
    )
    """The classifier asked when no rule matches (once per user turn); ``None``: none."""
    system_prompt: str = attrs.field(
        default=DEFAULT_SYSTEM_PROMPT, kw_only=True, validator=_check_prompt
    )
    """The classifier's instructions; the routes and their criteria are appended."""
    fallback_route: str | None = attrs.field(
        default=None, kw_only=True, validator=_check_route_name
    )
    """The route when nothing else decides (or the classifier answers no route);
    ``None``: the agent's own model."""
    _resolved: dict[str, ChatModel] = attrs.field(init=False, factory=dict, eq=False, repr=False)
    _classifier: list[ChatModel] = attrs.field(init=False, factory=list, eq=False, repr=False)
    _memo: collections.OrderedDict[tuple[str, int], tuple[str | None, str]] = attrs.field(
        init=False, factory=collections.OrderedDict, eq=False, repr=False
    )

    def __attrs_post_init__(self) -> None:
        routes = {f"rules[{index}].route": rule.route for index, rule in enumerate(self.rules)}
        if self.fallback_route is not None:
            routes["fallback_route"] = self.fallback_route
        for option, route in routes.items():
            if route not in self.models:
                wanted = f"a route named in models ({', '.join(map(repr, self.models))})"
                raise ConfigError(expected(wanted, route), option=option)

    # -- build time -------------------------------------------------------------------------

    def validate_agent(self, agent_config: AgentConfig) -> None:
        self._routes()
        self._router()

    def _routes(self) -> dict[str, ChatModel]:
        if not self._resolved:
            for name, config in self.models.items():
                model = config["model"] if isinstance(config, Mapping) else config
                self._resolved[name] = _model(model, f"models[{name!r}]")
        return self._resolved

    def _router(self) -> ChatModel | None:
        if self.routing_model is None:
            return None
        if not self._classifier:
            self._classifier.append(_model(self.routing_model, "routing_model"))
        return self._classifier[0]

    # -- choosing ---------------------------------------------------------------------------

    def _by_rules(self, request: ModelRequest) -> tuple[str | None, str] | None:
        for index, rule in enumerate(self.rules):
            if rule.matches(request):
                return rule.route, f"rules[{index}]"
        return None

    def _turn(self, request: ModelRequest) -> tuple[str, int] | None:
        """The memo key of the request's user turn: run id and last user message index."""
        run = request.runtime.run_id if request.runtime is not None else ""
        for index in range(len(request.messages) - 1, -1, -1):
            if isinstance(request.messages[index], HumanMessage):
                return run, index
        return None

    def _prompt(self) -> str:
        lines = [self.system_prompt, "", "Routes (name: when to choose it):"]
        for name, config in self.models.items():
            criteria = config.get("criteria", "") if isinstance(config, Mapping) else ""
            lines.append(f"- {name}: {criteria}" if criteria else f"- {name}")
        lines.append("")
        lines.append("Answer with the route name only.")
        return "\n".join(lines)

    def _parse(self, answer: AIMessage) -> tuple[str | None, str]:
        said = answer.text.strip().strip("`'\".").strip()
        by_lower = {name.lower(): name for name in self.models}
        if said.lower() in by_lower:
            return by_lower[said.lower()], "classifier"
        return self.fallback_route, f"fallback (the classifier answered {said[:80]!r})"

    def _remember(self, key: tuple[str, int], choice: tuple[str | None, str]) -> None:
        self._memo[key] = choice
        while len(self._memo) > _MEMO_SIZE:
            self._memo.popitem(last=False)

    def _choose(self, request: ModelRequest) -> tuple[str | None, str]:
        chosen = self._by_rules(request)
        if chosen is not None:
            return chosen
        router, key = self._router(), self._turn(request)
        if router is None or key is None:
            return self.fallback_route, "fallback"
        if key not in self._memo:
            question = [HumanMessage(last_user_text(request))]
            self._remember(key, self._parse(router.invoke(question, system_prompt=self._prompt())))
        return self._memo[key]

    async def _achoose(self, request: ModelRequest) -> tuple[str | None, str]:
        chosen = self._by_rules(request)
        if chosen is not None:
            return chosen
        router, key = self._router(), self._turn(request)
        if router is None or key is None:
            return self.fallback_route, "fallback"
        if key not in self._memo:
            question = [HumanMessage(last_user_text(request))]
            answer = await router.ainvoke(question, system_prompt=self._prompt())
            self._remember(key, self._parse(answer))
        return self._memo[key]

    # -- running ----------------------------------------------------------------------------

    def wrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
    ) -> ModelResponse:
        route, reason = self._choose(request)
        routed = self._routed(request, route)
        return _recorded(handler(routed), route, routed.model, reason)

    async def awrap_model_call(
        self,
        request: ModelRequest,
        handler: Callable[[ModelRequest], Awaitable[ModelResponse]],
    ) -> ModelResponse:
        route, reason = await self._achoose(request)
        routed = self._routed(request, route)
        return _recorded(await handler(routed), route, routed.model, reason)

    def _routed(self, request: ModelRequest, route: str | None) -> ModelRequest:
        if route is None:
            return request
        return request.for_model(self._routes()[route])


ModelRoutingMiddleware = ModelRouterMiddleware
"""Another name for the same middleware (LangChain 1.5 calls it ``ModelRouterMiddleware``)."""


def _model(value: str | ChatModel, option: str) -> ChatModel:
    if isinstance(value, ChatModel):
        return value
    try:
        return init_chat_model(value)
    except (ConfigError, TypeError) as exc:
        raise ConfigError(str(exc), option=option) from exc


def _recorded(
    response: ModelResponse, route: str | None, model: ChatModel, reason: str
) -> ModelResponse:
    """``response`` with the route taken in its answer's metadata."""
    answer = response.message
    if answer is None:
        return response
    record = {"route": route, "model": f"{model.provider}:{model.model_name}", "reason": reason}
    metadata = {**answer.response_metadata, KEY: record}
    messages = [
        attrs.evolve(m, response_metadata=metadata) if m is answer else m for m in response.messages
    ]
    return attrs.evolve(response, messages=messages)
