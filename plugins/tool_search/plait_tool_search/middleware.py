"""``ToolSearchMiddleware``: deferred tools are left out of the model's requests until it
finds them.

With a provider that searches tools itself (Anthropic's tool search tool, OpenAI
Responses' ``tool_search``), every tool is sent with the deferred ones marked
``defer_loading`` and the provider's search tool added: the provider keeps them out of
the prompt and loads those its search finds. With any other provider, a local
``search_tools`` tool (BM25 over names and descriptions) answers the model with the
tools that match, and from then on those are sent with every request of the thread.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Literal

import attrs

import plait
from plait.lazy import frozen
from plait.messages import ToolMessage
from plait.middleware import Middleware
from plait.options import FieldError, check_tool_names, expected, integer, tool_names_field
from plait.tools import Tool, ToolRuntime
from plait.types import AgentConfig, Command, ModelRequest, ModelResponse, StateField
from plait_tool_search.bm25 import BM25

__all__ = [
    "FOUND_KEY",
    "NATIVE",
    "SEARCH_TOOL",
    "ProviderToolSearchMiddleware",
    "ToolSearchMiddleware",
]

SEARCH_TOOL = "search_tools"
"""The name of the search tool the local search adds."""
FOUND_KEY = "tool_search_found"
"""Thread-scoped state: the names of the deferred tools the local search has found."""


@frozen
class Native:
    """A provider's own tool search: the tool that searches and the betas it needs."""

    tool: Tool
    betas: tuple[str, ...] = ()


NATIVE: Mapping[str, Native] = {
    "anthropic": Native(
        Tool(
            "tool_search_tool_bm25",
            provider_options={"anthropic": {"type": "tool_search_tool_bm25_20251119"}},
        ),
        betas=("advanced-tool-use-2025-11-20",),
    ),
    "openai-responses": Native(
        Tool("tool_search", provider_options={"openai-responses": {"type": "tool_search"}})
    ),
}
"""The providers (plait provider names) with a tool search of their own."""


def _check_mode(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value not in ("auto", "local"):
        raise FieldError(attribute.name, expected("one of 'auto', 'local'", value))


@frozen
class ToolSearchMiddleware(Middleware):
    """Hides ``deferred`` tools until the model finds them: through the provider's own
    tool search where it has one (``mode="auto"``), else a local ``search_tools`` tool."""

    deferred: Sequence[str | Tool] | None = tool_names_field(kw_only=True)
    """The tools to hide until found (names or ``Tool`` objects); ``None``: every tool the
    agent was given."""
    mode: Literal["auto", "local"] = attrs.field(
        default="auto", kw_only=True, validator=_check_mode
    )
    """``"auto"``: the provider's tool search where it has one, else the local one;
    ``"local"``: always the local ``search_tools``."""
    max_results: int = attrs.field(default=5, kw_only=True, validator=integer(minimum=1))
    """The most tools one local search returns."""
    _catalog: list[Tool] = attrs.field(init=False, factory=list, eq=False, repr=False)

    # -- build time -------------------------------------------------------------------------

    def state_fields(self) -> dict[str, StateField]:
        return {FOUND_KEY: StateField(default=[], scope="thread")}

    def agent_tools(self, agent_config: AgentConfig) -> list[Tool]:
        names = self.deferred
        self._catalog[:] = [
            t
            for t in agent_config.tools
            if t.func is not None and (names is None or t.name in names)
        ]
        # Nothing to hide (``deferred=[]``): no search tool, and requests go out unchanged.
        return [self._search_tool()] if self._catalog else []

    def validate_agent(self, agent_config: AgentConfig) -> None:
        if self.deferred is not None:
            check_tool_names(self.deferred, agent_config, option="deferred")

    def _search_tool(self) -> Tool:
        catalog = self._catalog
        limit = self.max_results
        index: list[BM25] = []

        def search_tools(query: str, runtime: ToolRuntime) -> Command:
            """Search the tools you cannot see yet by what they do; the ones found can be
            called from then on.

            Args:
                query: words describing the tool you need, e.g. "currency exchange rate".
            """
            if not index:
                index.append(BM25([f"{t.name} {t.description}" for t in catalog]))
            found = [catalog[i] for i in index[0].top(query, limit)]
            known = list(runtime.state.get(FOUND_KEY) or [])
            names = sorted({*known, *(t.name for t in found)})
            if found:
                lines = [f"Found {len(found)} tool(s); you can call them now:"]
                lines += [f"- {t.name}: {t.description}" for t in found]
                text = "\n".join(lines)
            else:
                text = f"No tool matches {query!r}. Try other words."
            answer = ToolMessage(text, tool_call_id=runtime.tool_call_id, name=SEARCH_TOOL)
            return Command(update={FOUND_KEY: names, "messages": [answer]})

        return plait.tool(search_tools)

    # -- each model call ----------------------------------------------------------------------

    def _hidden(self, name: str) -> bool:
        return name != SEARCH_TOOL and any(t.name == name for t in self._catalog)

    def rewrite(self, request: ModelRequest) -> ModelRequest:
        if not self._catalog:
            return request
        native = NATIVE.get(request.model.provider) if self.mode == "auto" else None
        if native is not None:
            return self._native(request, native)
        found = set(request.state.get(FOUND_KEY) or ())
        return request.override(
            tools=[t for t in request.tools if not self._hidden(t.name) or t.name in found]
        )

    def _native(self, request: ModelRequest, native: Native) -> ModelRequest:
        provider = request.model.provider
        tools = []
        for t in request.tools:
            if t.name == SEARCH_TOOL:
                continue
            if self._hidden(t.name):
                mine = {**t.provider_options.get(provider, {}), "defer_loading": True}
                t = attrs.evolve(t, provider_options={**t.provider_options, provider: mine})
            tools.append(t)
        options = dict(request.provider_options)
        if native.betas:
            mine = dict(options.get(provider, {}))
            mine["betas"] = list(dict.fromkeys([*mine.get("betas", ()), *native.betas]))
            options[provider] = mine
        return request.override(tools=[*tools, native.tool], provider_options=options)

    def wrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
    ) -> ModelResponse:
        return handler(self.rewrite(request))

    async def awrap_model_call(
        self,
        request: ModelRequest,
        handler: Callable[[ModelRequest], Awaitable[ModelResponse]],
    ) -> ModelResponse:
        return await handler(self.rewrite(request))


def ProviderToolSearchMiddleware(
    *, searchable_tools: Sequence[str | Tool] | None = None
) -> ToolSearchMiddleware:
    """LangChain's ``ProviderToolSearchMiddleware(searchable_tools=...)``: the same
    middleware, with the local search where the provider has none. As there, no
    ``searchable_tools`` defers no tool (``ToolSearchMiddleware``'s ``deferred=None``
    defers every tool)."""
    return ToolSearchMiddleware(deferred=() if searchable_tools is None else searchable_tools)
