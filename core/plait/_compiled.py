"""The compiled agent: everything a run needs, checked and composed once at
``create_agent`` time, then frozen.

``compile_agent`` resolves the model, the middleware (into a hook ``Registry``), the
tools (the agent's own and those ``agent_tools`` hooks add), the state fields, the
checkpointer and store, and structured output; runs ``validate_agent``; and composes the
wrap hooks around the innermost calls. A ``Run`` depends on the result alone.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, TypeGuard

import attrs

from plait import _convert, _entrypoints
from plait._bridge import LoopThread
from plait._calls import Innermost
from plait._compose import Layers, chain_async, chain_sync
from plait._plugin_errors import PluginCode
from plait._registry import Registry
from plait._resolve import resolve_middleware
from plait._state import RUN_KEY
from plait._structured import Structured
from plait.errors import ConfigError
from plait.messages import AIMessage, ToolMessage
from plait.models import ChatModel, init_chat_model
from plait.types import (
    AgentConfig,
    Command,
    ModelRequest,
    ModelResponse,
    Runtime,
    StateField,
    ToolCallRequest,
)

if TYPE_CHECKING:
    from collections.abc import Awaitable

    from plait._state import ThreadState
    from plait.checkpoint import Checkpointer
    from plait.store import Store
    from plait.tools import Tool


class CompiledAgent(NamedTuple):
    """What ``create_agent`` built. Frozen: a run reads it, nothing changes it. A named
    tuple rather than an attrs class: nothing compares or shows one, and the tuple class
    costs half what the attrs class did to make at import (0.33 against 0.71 ms; it
    compiles each field's annotation, where attrs compiles methods). Made with keywords
    only."""

    name: str
    model: ChatModel
    system_prompt: str | None
    middleware: tuple[object, ...]
    registry: Registry
    fields: Mapping[str, StateField]
    tools: tuple[Tool, ...]
    tools_by_name: Mapping[str, Tool]
    checkpointer: Checkpointer | None
    store: Store | None
    tool_timeout: float | None
    structured: Structured
    config: AgentConfig
    loops: LoopThread
    """The agent's event-loop thread, where async hooks and tools run on the sync path."""
    model_handler: Callable[[ModelRequest], ModelResponse]
    amodel_handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    tool_handler: Callable[[ToolCallRequest], ToolMessage | Command]
    atool_handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command]]
    run_layers: Layers
    """The ``wrap_run`` hooks, composed per run around that run's driver."""

    def keeps(self, thread_id: str | None) -> TypeGuard[str]:
        """Whether a run on ``thread_id`` is checkpointed (saved as it goes)."""
        return self.checkpointer is not None and thread_id is not None

    def model_request(self, thread: ThreadState, runtime: Runtime) -> ModelRequest:
        """The request of the loop's model call, before ``wrap_model_call`` hooks."""
        tools = self.tools
        if self.structured.tool is not None:
            tools = (*tools, self.structured.tool)
        return ModelRequest(
            model=self.model,
            messages=tuple(thread.messages),
            system_prompt=self.system_prompt,
            tools=tools,
            tool_choice=self.structured.tool_choice(self.tools),
            response_format=self.structured.request_format,
            state=thread.view,
            runtime=runtime,
        )


def compile_agent(
    *,
    model: str | ChatModel,
    tools: Sequence[Any],
    system_prompt: str | None,
    middleware: Sequence[Any],
    checkpointer: str | Checkpointer | None,
    store: str | Store | None,
    response_format: Any,
    name: str,
    tool_timeout: float | None,
    output_retries: int = 1,
) -> CompiledAgent:
    """Check and build everything; every mistake is a ``ConfigError`` raised here."""
    _convert.non_empty_string().require("name", name)
    _convert.number(above=0, optional=True).require("tool_timeout", tool_timeout)
    _convert.integer(minimum=0).require("output_retries", output_retries)
    chat_model = init_chat_model(model)
    # Middleware and tools first: a mistake there must not leave a database file behind
    # (the checkpointer and store below may create one).
    resolved = resolve_middleware(middleware)
    objects = tuple(obj for _, obj in resolved)
    try:
        registry = Registry(resolved)
        fields = _collect_fields(registry)
        own_tools = tuple(_own_tool(t, index) for index, t in enumerate(tools))
        saver: Checkpointer | None = by_url(checkpointer, "plait.checkpointers", "checkpointer")
        if saver is not None and not _is_checkpointer(saver):
            raise ConfigError(f"checkpointer {checkpointer!r} is not a plait Checkpointer")
        shared: Store | None = by_url(store, "plait.stores", "store")
        if shared is not None and not _is_store(shared):
            raise ConfigError(
                f"store {store!r} is not a plait Store (put, get, delete and search); "
                "pass a store URL such as 'memory' or an instance"
            )
        config = AgentConfig(
            chat_model, own_tools, system_prompt, objects, saver, shared, response_format, name
        )
        added: list[Tool] = []
        for impl in registry.impls("agent_tools"):
            with PluginCode(impl.middleware, impl.owner):
                added.extend(as_tool(item) for item in impl.call(config) or ())
        all_tools = own_tools + tuple(added)
        by_name: dict[str, Tool] = {}
        for item in all_tools:
            if item.name in by_name:
                raise ConfigError(f"two tools are named {item.name!r}; tool names must be unique")
            by_name[item.name] = item
        if tool_timeout is not None:
            _check_inline_tools(all_tools, tool_timeout)
        config = attrs.evolve(config, tools=all_tools)
        native = chat_model.profile is None or chat_model.profile.structured_output
        structured = Structured(response_format, native, output_retries)
        _check_tool_choice(chat_model, all_tools, structured)
        for impl in registry.impls("validate_agent"):
            with PluginCode(impl.middleware, impl.owner):
                impl.call(config)
        loops = LoopThread()
        innermost = Innermost(
            tools_by_name=by_name,
            tool_timeout=tool_timeout,
            stream_layers=registry.pairs("transform_model_stream", "atransform_model_stream"),
            loops=loops,
        )
        model_layers = registry.pairs("wrap_model_call", "awrap_model_call")
        tool_layers = registry.pairs("wrap_tool_call", "awrap_tool_call")
        return CompiledAgent(
            name=name,
            model=chat_model,
            system_prompt=system_prompt,
            middleware=objects,
            registry=registry,
            fields=fields,
            tools=all_tools,
            tools_by_name=by_name,
            checkpointer=saver,
            store=shared,
            tool_timeout=tool_timeout,
            structured=structured,
            config=config,
            loops=loops,
            model_handler=chain_sync(model_layers, innermost.call_model, _model_result, loops),
            amodel_handler=chain_async(model_layers, innermost.acall_model, _model_result),
            tool_handler=chain_sync(tool_layers, innermost.call_tool, _tool_result, loops),
            atool_handler=chain_async(tool_layers, innermost.acall_tool, _tool_result),
            run_layers=registry.pairs("wrap_run", "awrap_run"),
        )

    except BaseException:
        # Middleware may have started things already (an MCP server's process): a failed
        # build leaves nothing running.
        close_middleware(objects, quiet=True)
        raise


def close_middleware(objects: Sequence[object], *, quiet: bool = False) -> None:
    """Call ``close()`` on each middleware object that has one, last first (``quiet``:
    ignore their failures, when another error is on its way to the caller)."""
    for obj in reversed(objects):
        close = getattr(obj, "close", None)
        if callable(close):
            try:
                close()
            except Exception:
                if not quiet:
                    raise


def _check_tool_choice(model: ChatModel, tools: Sequence[Tool], structured: Structured) -> None:
    """The model's own ``tool_choice`` setting, which its every call is made with, against
    the agent's tools (its own and its middleware's): refused here, in the words its first
    call would refuse it in (a name no tool has; one that needs a tool when the agent has
    none), not left to fail on the first call or be dropped unsent."""
    choice = model.settings.get("tool_choice")
    if not isinstance(choice, str):
        return
    # imported here: only a model made with a tool_choice setting needs it, and such a
    # model is one of plait's HTTP providers, which imported the module already
    from plait.models._http import HTTPChatModel, resolve_tool_choice

    if isinstance(model, HTTPChatModel):
        extra = () if structured.tool is None else (structured.tool.name,)
        resolve_tool_choice(model.provider, choice, tools, extra=extra)


def _check_inline_tools(tools: Sequence[Tool], tool_timeout: float) -> None:
    """A sync tool run inline cannot be abandoned, so the agent's timeout cannot cover it."""
    inline = [
        repr(t.name) for t in tools if not t.run_in_thread and t.func is not None and not t.is_async
    ]
    if inline:
        which = f"tool {inline[0]} is" if len(inline) == 1 else f"tools {', '.join(inline)} are"
        wanted = _convert.expected(
            "None when a sync tool has run_in_thread=False",
            tool_timeout,
            f"{which} called in the agent loop's thread, where a call cannot be abandoned",
        )
        raise ConfigError(f"tool_timeout: {wanted}")


def by_url(value: Any, group: str, what: str) -> Any:
    """A checkpointer or store given as a URL, made by the factory its scheme names."""
    if value is None or not isinstance(value, str):
        return value
    scheme = value.split(":", 1)[0] if ":" in value else value
    try:
        factory = _entrypoints.load(group, scheme, what=what)
    except ConfigError as exc:
        raise ConfigError(f"{what} URL {value!r}: {exc}") from None
    return factory(value)


# The protocols are imported when an agent is given a checkpointer or store: one without
# neither imports plait.checkpoint nor plait.store.
def _is_checkpointer(value: object) -> TypeGuard[Checkpointer]:
    from plait.checkpoint import Checkpointer

    return isinstance(value, Checkpointer)


def _is_store(value: object) -> TypeGuard[Store]:
    from plait.store import Store

    return isinstance(value, Store)


_TOOL_FORMS = (
    "a plait.Tool, a function, or a tool a plait.tool_adapters entry point takes "
    "(LangChain tools, with plait-langchain installed)"
)


def as_tool(value: Any) -> Tool:
    """``value`` as a ``Tool``: a ``Tool`` as it is, a function through ``@tool``, any other
    object through the first ``plait.tool_adapters`` entry point that takes it (how
    plait-langchain lets a LangChain ``BaseTool`` in, without the kernel knowing it)."""
    from plait.tools import Tool, tool

    if isinstance(value, Tool):
        return value
    if not inspect.isroutine(value):
        adapted = _adapt(value)
        if adapted is not None:
            return adapted
    if callable(value) and not isinstance(value, type):
        made: Tool = tool(value)
        return made
    raise ConfigError(f"tools: {_convert.expected(_TOOL_FORMS, value)}")


def _adapt(value: Any) -> Tool | None:
    from plait.tools import Tool

    for name, point in sorted(_entrypoints.available("plait.tool_adapters").items()):
        adapter = point.load()
        made = adapter(value)
        if made is None:
            continue
        if not isinstance(made, Tool):
            raise ConfigError(
                f"tool adapter {name!r} returned {type(made).__name__} for {value!r}; "
                "expected a plait.Tool or None"
            )
        return made
    return None


_NAMED_FUNCTION = "a function with a name, a docstring and typed parameters"


def _own_tool(value: Any, index: int) -> Tool:
    """A tool of ``create_agent(tools=...)``, refused if the model could not tell what it
    does or what to pass: a lambda, no description, a parameter without a type."""
    from plait.tools import Tool

    where = f"tools[{index}]"
    if callable(value) and getattr(value, "__name__", None) == "<lambda>":
        raise ConfigError(
            f"{where}: expected {_NAMED_FUNCTION}, got a lambda, which the model would see "
            "as a tool named '<lambda>' with no description; define it with def, or wrap "
            "it: plait.tool(func, name=..., description=...)"
        )
    made = as_tool(value)
    if not made.description.strip():
        raise ConfigError(
            f"{where}: tool {made.name!r}: expected a description of what it does, got none, "
            "so the model would know it only by its name; give the function a docstring, "
            "or pass plait.tool(func, description=...)"
        )
    if not isinstance(value, Tool):
        untyped = _untyped_parameters(value, made)
        if untyped:
            raise ConfigError(
                f"{where}: tool {made.name!r}: parameter {untyped[0]!r}: expected a type hint "
                f"({untyped[0]}: str, int, an attrs class ...), got none, so the model would "
                "be sent no schema for it"
            )
    return made


def _untyped_parameters(func: Any, made: Tool) -> list[str]:
    """The parameters the model fills in (those in the tool's schema) that ``func``
    declares without a type hint."""
    try:
        signature = inspect.signature(func)
    except (TypeError, ValueError):
        return []
    properties = made.parameters.get("properties", {})
    return [
        name
        for name, parameter in signature.parameters.items()
        if name in properties and parameter.annotation is inspect.Parameter.empty
    ]


def _collect_fields(registry: Registry) -> dict[str, StateField]:
    fields: dict[str, StateField] = {}
    owners: dict[str, type] = {}
    for impl in registry.impls("state_fields"):
        owner = type(impl.owner)
        with PluginCode(impl.middleware, impl.owner):
            declared = impl.call() or {}
        for key, spec in declared.items():
            if key in ("messages", RUN_KEY):
                raise ConfigError(f"middleware {impl.middleware!r}: state key {key!r} is reserved")
            if not isinstance(spec, StateField):
                raise ConfigError(
                    f"middleware {impl.middleware!r}: state_fields()[{key!r}] must be a "
                    f"plait.StateField, got {type(spec).__name__}"
                )
            if key in fields and owners[key] is not owner:
                if not (spec.shared and fields[key].shared and spec == fields[key]):
                    raise ConfigError(
                        f"state key {key!r} is declared by both {owners[key].__name__} and "
                        f"{owner.__name__} (middleware {impl.middleware!r}); a key belongs to "
                        "one middleware class unless both declare it shared=True, equally"
                    )
            fields[key] = spec
            owners.setdefault(key, owner)
    return fields


def _model_result(result: Any, request: Any, source: str) -> ModelResponse:
    if isinstance(result, ModelResponse):
        return result
    if isinstance(result, AIMessage):
        return ModelResponse([result])
    raise TypeError(
        f"middleware {source!r}: wrap_model_call returned {type(result).__name__}; "
        "expected a ModelResponse or an AIMessage"
    )


def _tool_result(result: Any, request: ToolCallRequest, source: str) -> ToolMessage | Command:
    if isinstance(result, (ToolMessage, Command)):
        return result
    raise TypeError(
        f"middleware {source!r}: wrap_tool_call returned {type(result).__name__}; "
        "expected a ToolMessage or a plait.Command"
    )
