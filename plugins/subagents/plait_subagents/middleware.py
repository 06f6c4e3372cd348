"""``subagents``: a ``task`` tool that hands work to a sub-agent with a fresh context.

The sub-agents are built once, in ``agent_tools`` (so a bad spec fails at ``create_agent``):
each is a plain ``plait.Agent`` sharing the main agent's checkpointer and store. A ``task``
call runs the chosen one on its own thread, ``"<parent thread>/task/<tool call id>"``, whose
only input is the ``description``, and answers the call with the sub-agent's last AI text
(its usage reported in the answer's metadata). ``task`` is async, so several calls in one
AI message run concurrently on the async path.

The sub-agent's run is nested in the main run by the kernel, because it starts inside a
tool call: its model calls count in the main run's usage ledger (``plait.usage``), so the
main agent's ``usage_limit`` and ``model_call_limit`` count and refuse them, and its events
reach the main run's stream with ``StreamEvent.path == (tool call id,)``. The main
agent's ``pii`` and ``otel`` instances are added to each built sub-agent, and its
``human_in_the_loop`` as a copy reviewing the reviewed tools the sub-agent is given.
``inherit`` opts out of any of the five.

An interrupt inside a sub-agent pauses its thread; ``task`` then calls ``plait.interrupt``
with the same value, so the main agent's caller sees it. On resume the kernel runs ``task``
again: it finds the sub-agent's thread paused and resumes it with the caller's answer. The
k-th ``plait.interrupt`` of one ``task`` call always stands for the sub-agent's k-th pause;
the number of answers already delivered is kept in the sub-agent's thread, so answers of
earlier pauses are skipped, never delivered twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import importlib.metadata
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from plait import interrupt, usage
from plait.agent import Agent, AgentResult, create_agent
from plait.errors import CheckpointerRequiredError, ConfigError, StopRun
from plait.lazy import frozen
from plait.messages import AIMessage, ToolMessage
from plait.middleware import RequestMiddleware
from plait.models import ChatModel, init_chat_model
from plait.options import (
    FieldError,
    chat_model,
    check_tool_names,
    expected,
    non_empty_string,
    number,
    structure_options,
)
from plait.runlog import event_log, submits_runs
from plait.tools import Tool
from plait.types import (
    AgentConfig,
    Command,
    Interrupt,
    ModelRequest,
    Runtime,
    StateField,
    ToolRuntime,
)
from plait_subagents._text import sentence
from plait_subagents.background import (
    BACKGROUND_KEY,
    BackgroundTasks,
    TaskRecord,
    ended,
    merge_records,
    outcome,
)
from plait_subagents.remote import (
    RemoteError,
    RemoteSubAgent,
    _check_env_name,
    _check_headers,
    _check_url,
)

__all__ = [
    "BACKGROUND_KEY",
    "BACKGROUND_TOOLS",
    "GENERAL_PURPOSE",
    "TOOL_NAME",
    "BackgroundSubAgentMiddleware",
    "SubAgent",
    "SubAgentInterruptError",
    "SubAgentMiddleware",
]

PLUGIN = "subagents"
log = logging.getLogger("plait_subagents")
TOOL_NAME = "task"
"""The name of the tool the model hands a task to a sub-agent with."""
BACKGROUND_TOOLS = ("start_task", "check_task", "update_task", "cancel_task", "list_tasks")
"""The tools added for sub-agents run in the background, in the order they are added."""
GENERAL_PURPOSE = "general-purpose"
"""The name of the sub-agent made of the default model and tools, offered unless a given
sub-agent takes that name."""
INHERITED = ("usage_limit", "model_call_limit", "pii", "otel", "human_in_the_loop")
"""Middleware of the main agent that apply to its sub-agents unless one opts out: the
limits through the run's usage ledger (a sub-agent's calls count, and are refused, as the
main run's), ``pii`` and ``otel`` as the same instances added to each built sub-agent,
``human_in_the_loop`` as a copy reviewing the sub-agent's calls of the tools it reviews
(else the model skips a review by asking ``general-purpose`` to make the call)."""
REVIEWS = "human_in_the_loop"
LIMITS = ("usage_limit", "model_call_limit")
REMOTE_AGAIN = ("interrupted", "completed", "failed")
"""The ends of a remote background task ``update_task`` starts a new run after (on the
remote thread, which keeps the conversation); a local task's are final."""
RESUMES_KEY = "subagents_resumes"
"""Kept in a sub-agent's thread: how many answers ``task`` has delivered to it."""

ToolLike = str | Tool | Callable[..., Any]

GENERAL_PURPOSE_DESCRIPTION = (
    "A general-purpose agent with the same instructions and tools as you. Use it for "
    "complex tasks of many steps, or for research whose intermediate results would crowd "
    "this conversation."
)

DEFAULT_SYSTEM_PROMPT = """## Delegating with `task`

You can hand work to sub-agents with the `task` tool. A sub-agent starts fresh, with only
the brief you write, works alone, and returns one final answer. Use it to keep this
conversation focused:

- Delegate self-contained work that takes many steps or a lot of reading; only the result
  comes back to you.
- Start independent tasks together: call `task` several times in one message and they run
  at the same time.
- Write each brief so it can be done without this conversation, and say what the answer
  must contain.
- Check what comes back before relying on it. The user sees only what you tell them.
- Do simple things of one or two steps yourself."""

DEFAULT_TASK_DESCRIPTION = """Delegate a task to a sub-agent, which works on it alone and reports.

The sub-agent does not see this conversation: it starts with only your `description`, so
make that a complete brief (the goal, every fact it needs, and exactly what its answer
must contain). It works with its own tools and returns a single final message. Only that
message comes back to you, and the user does not see it, so pass on what matters.

Available sub-agents (give the name as `subagent_type`):
{available_agents}

Use it for independent tasks that need many steps, or whose details would crowd this
conversation. To run several tasks at once, call `task` several times in one message.
Do not use it for something you can do in a step or two, or when you need to watch the
work as it happens."""


BACKGROUND_SYSTEM_PROMPT = """## Background tasks

`start_task` starts a sub-agent in the background and returns at once with a task id,
so you can go on working or answer the user while it runs. Its result is added to this
conversation when it finishes (you will see it at your next turn); `check_task` gives its
status or result now, `update_task` sends it more instructions, `cancel_task` stops it
and `list_tasks` shows every task of this conversation. Tell the user what you started;
do not wait for a task by calling `check_task` over and over."""

BACKGROUND_DESCRIPTIONS = {
    "start_task": (
        "Start a sub-agent on a task in the background and return at once with its task "
        "id. Like `task`, the sub-agent sees only your `description`, so make it a complete "
        "brief. Its result is added to the conversation when it finishes.\n\nAvailable "
        "sub-agents (give the name as `subagent_type`):\n{available_agents}"
    ),
    "check_task": "The status of a background task, and its result once it has finished.",
    "update_task": (
        "Send more instructions to a background task: the sub-agent reads them once its "
        "current work is done, and goes on with them."
    ),
    "cancel_task": "Stop a background task that is still running.",
    "list_tasks": "List the background tasks of this conversation with their status.",
}


class SubAgentInterruptError(StopRun):
    """A sub-agent paused at an interrupt but its run cannot be saved (no checkpointer), so
    it could never be resumed. Ends the main run: the model cannot fix a setup."""


# -- options ---------------------------------------------------------------------------------


def _tuple(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


def _middleware_items(value: Any) -> Any:
    """A list (TOML gives ``[name, {options}]`` pairs as lists) as ``create_agent`` takes it."""
    if not isinstance(value, list | tuple):
        return value
    return tuple(
        tuple(item)
        if isinstance(item, list) and len(item) == 2 and isinstance(item[0], str)
        else item
        for item in value
    )


def _tools(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is None:
        return
    if not isinstance(value, tuple) or not all(
        isinstance(item, Tool) or (isinstance(item, str) and item) or callable(item)
        for item in value
    ):
        raise FieldError(
            attribute.name,
            expected("a list of tool names, plait.Tool objects or functions, or None", value),
        )


def _inherit(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is None:
        return
    if not isinstance(value, tuple) or not all(item in INHERITED for item in value):
        raise FieldError(
            attribute.name, expected(f"a list of names among {', '.join(INHERITED)}", value)
        )


def _middleware(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, tuple):
        raise FieldError(
            attribute.name,
            expected("a list of middleware: names, (name, options) pairs or instances", value),
        )


@frozen(kw_only=True)
class SubAgent:
    """One sub-agent the ``task`` tool can run, either built from this spec or prebuilt.

    Built: ``SubAgent(name="researcher", description="...", system_prompt="...",
    tools=["search"], model="openai:gpt-4.1-mini", middleware=["model_retry"])``.
    Prebuilt: ``SubAgent(name="coder", description="...", agent=plait.create_agent(...))``,
    used as it is (its own model, tools, middleware, checkpointer and store).
    Remote: ``SubAgent(name="billing", description="...", url="http://127.0.0.1:8000",
    assistant_id="billing", api_key_env="BILLING_KEY")``, an assistant of an Agent Protocol
    server (``plait serve``, a LangGraph server; see ``plait_subagents.remote``).
    """

    name: str = attrs.field(validator=non_empty_string())
    """What the model passes as ``subagent_type``; unique among the sub-agents."""
    description: str = attrs.field(validator=non_empty_string())
    """Shown in the ``task`` description, so the model knows when to pick this one."""
    system_prompt: str | None = None
    """The sub-agent's instructions (required unless ``agent`` is given)."""
    tools: tuple[ToolLike, ...] | None = attrs.field(
        default=None, converter=_tuple, validator=_tools
    )
    """Names of the main agent's tools, ``plait.Tool`` objects or functions; ``None``: the
    middleware's ``default_tools``."""
    model: str | ChatModel | None = attrs.field(default=None, validator=chat_model(optional=True))
    """A ``"provider:model"`` id or a ``ChatModel``; ``None``: ``default_model``."""
    middleware: tuple[Any, ...] = attrs.field(
        default=(), converter=_middleware_items, validator=_middleware
    )
    """Added after the middleware's ``default_middleware``, in the same forms as
    ``create_agent``'s ``middleware``."""
    agent: Agent | None = None
    """A prebuilt agent to run instead of building one from the fields above."""
    inherit: tuple[str, ...] | None = attrs.field(
        default=None, converter=_tuple, validator=_inherit
    )
    """Which of the main agent's ``usage_limit``, ``model_call_limit``, ``pii``, ``otel``
    apply to this sub-agent; ``None``: the middleware's ``inherit``; ``[]`` opts out of all.
    A prebuilt agent inherits only the limits (its middleware is its own)."""
    url: str | None = attrs.field(default=None)
    """The base URL of an Agent Protocol server running this sub-agent (``plait serve``, a
    LangGraph server) instead of a local agent; needs ``assistant_id``."""
    assistant_id: str | None = attrs.field(default=None, validator=non_empty_string(optional=True))
    """The remote's assistant id or graph name (``plait serve``: the agent's name)."""
    api_key_env: str | None = None
    """The environment variable holding the remote's API key (sent as ``Authorization:
    Bearer`` and ``X-Api-Key``); ``None``: send no key."""
    headers: dict[str, str] = attrs.field(factory=dict)
    """More headers for every request to the remote."""
    timeout: float = attrs.field(default=300.0, validator=number(above=0))
    """Seconds one request to the remote may take, a ``task`` waiting for its run
    included."""

    def __attrs_post_init__(self) -> None:
        if self.url is not None:
            self._check_remote()
        elif self.assistant_id is not None or self.api_key_env is not None or self.headers:
            raise FieldError(
                "url",
                expected(
                    "the URL of an Agent Protocol server",
                    None,
                    f"sub-agent {self.name!r} gives assistant_id, api_key_env or headers, "
                    "which only a remote sub-agent takes",
                ),
            )
        elif self.agent is not None:
            given = [
                name
                for name, value in (
                    ("system_prompt", self.system_prompt),
                    ("tools", self.tools),
                    ("model", self.model),
                )
                if value is not None
            ]
            if self.middleware:
                given.append("middleware")
            if given:
                raise ValueError(
                    f"sub-agent {self.name!r} is a prebuilt agent, which brings its own "
                    f"{', '.join(given)}; give either agent or {', '.join(given)}, not both"
                )
        elif self.system_prompt is None or not self.system_prompt.strip():
            detail = f"sub-agent {self.name!r} needs instructions, unless it is a prebuilt agent"
            raise FieldError(
                "system_prompt", expected("a non-empty string", self.system_prompt, detail)
            )

    def _check_remote(self) -> None:
        _check_url(self.url)
        _check_env_name(self.api_key_env)
        _check_headers(self.headers)
        if self.assistant_id is None:
            detail = f"sub-agent {self.name!r} is remote: name the assistant or graph to run"
            raise FieldError("assistant_id", expected("a non-empty string", None, detail))
        given = [
            name
            for name, value in (
                ("system_prompt", self.system_prompt),
                ("tools", self.tools),
                ("model", self.model),
                ("agent", self.agent),
                ("inherit", self.inherit),
            )
            if value is not None
        ]
        if self.middleware:
            given.append("middleware")
        if given:
            raise ValueError(
                f"sub-agent {self.name!r} is remote: its server brings its own "
                f"{', '.join(given)} (and the main agent's limits, pii and otel do not reach "
                f"it); give either url or {', '.join(given)}, not both"
            )


def _subagents(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, tuple) or not all(isinstance(item, SubAgent) for item in value):
        raise FieldError(attribute.name, expected("a list of sub-agents", value))


def _subagent_items(value: Any) -> Any:
    """Sub-agents as ``SubAgent`` objects or, as LangChain's deep agents write them, dicts
    of the same keys (``{"name": ..., "description": ..., "system_prompt": ...}``)."""
    items = _tuple(value)
    if not isinstance(items, tuple):
        return items
    return tuple(
        structure_options(SubAgent, item, plugin=PLUGIN) if isinstance(item, Mapping) else item
        for item in items
    )


@frozen(kw_only=True)
class _Entry:
    """A sub-agent ready to run."""

    name: str
    description: str
    agent: Agent
    exempt: tuple[str, ...] = ()
    """The main agent's limits this sub-agent's calls skip (``inherit`` leaves them out)."""


@frozen(kw_only=True)
class _RemoteEntry:
    """A remote sub-agent ready to run (``plait_subagents.remote``)."""

    name: str
    description: str
    remote: RemoteSubAgent


# -- the middleware --------------------------------------------------------------------------


@frozen(kw_only=True)
class SubAgentMiddleware(RequestMiddleware):
    """Gives the agent a ``task(description, subagent_type)`` tool that runs a sub-agent on
    a fresh context and answers with its final message; a ``general-purpose`` sub-agent
    (the main agent's model, instructions and tools) is always available."""

    default_model: str | ChatModel | None = attrs.field(
        default=None, validator=chat_model(optional=True)
    )
    """The model of sub-agents without their own; ``None``: the main agent's."""
    default_tools: tuple[ToolLike, ...] | None = attrs.field(
        default=None, converter=_tuple, validator=_tools
    )
    """The tools of sub-agents without their own (``general-purpose`` included); ``None``:
    the tools the main agent was given."""
    default_middleware: tuple[Any, ...] = attrs.field(
        default=(), converter=_middleware_items, validator=_middleware
    )
    """Middleware every built sub-agent gets, before its own."""
    subagents: tuple[SubAgent, ...] = attrs.field(
        default=(), converter=_subagent_items, validator=_subagents
    )
    """The sub-agents beside ``general-purpose`` (one named so replaces it)."""
    inherit: tuple[str, ...] = attrs.field(default=INHERITED, converter=_tuple, validator=_inherit)
    """Which of the main agent's ``usage_limit``, ``model_call_limit``, ``pii``, ``otel``
    apply to sub-agents that do not say (``SubAgent.inherit``); ``[]``: none."""
    system_prompt: str | None = attrs.field(
        default=DEFAULT_SYSTEM_PROMPT, validator=non_empty_string(optional=True)
    )
    """The section teaching ``task``, appended to the main agent's system prompt; ``None``:
    add none."""
    task_description: str | None = attrs.field(
        default=None, validator=non_empty_string(optional=True)
    )
    """The ``task`` description the model reads; ``None``: the built-in one. Its
    ``{available_agents}`` is replaced with the list of sub-agents."""
    background: bool = False
    """Also give ``start_task``, ``check_task``, ``update_task``, ``cancel_task`` and
    ``list_tasks``: sub-agents that run while the main agent goes on (needs a
    checkpointer)."""

    def __new__(cls, *args: Any, **kwargs: Any) -> SubAgentMiddleware:
        if cls is SubAgentMiddleware and kwargs.get("background") is True:
            cls = BackgroundSubAgentMiddleware
        return super().__new__(cls)

    _tasks: BackgroundTasks = attrs.field(init=False, factory=BackgroundTasks, eq=False, repr=False)
    _entries: dict[str, _Entry | _RemoteEntry] = attrs.field(
        init=False, factory=dict, eq=False, repr=False
    )
    """The sub-agents as ``agent_tools`` built them (durable tasks' run logs are theirs)."""
    _built: list[Agent] = attrs.field(init=False, factory=list, eq=False, repr=False)
    """Every sub-agent this middleware built (not a prebuilt ``agent=``), for ``close``:
    their own middleware holds processes (an MCP server) and threads."""

    def state_fields(self) -> dict[str, StateField]:
        if not self.background:
            return {}
        return {
            BACKGROUND_KEY: StateField(
                default={}, reducer=merge_records, scope="thread", internal=True
            )
        }

    # -- build time -------------------------------------------------------------------------

    def agent_tools(self, agent_config: AgentConfig) -> list[Tool]:
        if self.background and agent_config.checkpointer is None:
            raise ConfigError(
                "background tasks deliver their results to the thread at its next run, so "
                "the agent needs a checkpointer (create_agent(..., checkpointer=...))",
                option="background",
            )
        entries = self._build(agent_config)
        self._entries.clear()
        self._entries.update(entries)
        tools = [self._task_tool(entries, agent_config.checkpointer is not None)]
        if self.background:
            tools += _background_tools(self._tasks, entries)
        return tools

    def wait_for_tasks(self, thread_id: str, timeout: float | None = None) -> bool:
        """Block until no background task of ``thread_id`` is running (``False`` if
        ``timeout`` seconds passed first): for a script that must not exit before them."""
        return self._tasks.wait(thread_id, timeout)

    def close(self) -> None:
        """Close the sub-agents this middleware built, last first (``agent.close()`` of
        the main agent, or its failed build, calls this)."""
        built, self._built[:] = list(self._built), []
        for agent in reversed(built):
            agent.close()

    async def aclose(self) -> None:
        built, self._built[:] = list(self._built), []
        for agent in reversed(built):
            await agent.aclose()

    def _build(self, config: AgentConfig) -> dict[str, _Entry | _RemoteEntry]:
        start = len(self._built)
        try:
            return self._build_all(config)
        except BaseException:
            # The sub-agents built before the one that failed: closed now, as the main
            # agent's failed build closes its own middleware.
            built, self._built[start:] = self._built[start:], []
            for agent in reversed(built):
                with contextlib.suppress(Exception):
                    agent.close()
            raise

    def _build_all(self, config: AgentConfig) -> dict[str, _Entry | _RemoteEntry]:
        seen: dict[str, int] = {}
        for index, spec in enumerate(self.subagents):
            if spec.name in seen:
                raise ConfigError(
                    f"subagents[{seen[spec.name]}] and subagents[{index}] are both named "
                    f"{spec.name!r}; sub-agent names must be unique",
                    option="subagents",
                )
            seen[spec.name] = index
        default_model = self._model(self.default_model, config, "default_model")
        if self.default_tools is None:
            default_tools: tuple[Tool, ...] = config.tools
        else:
            default_tools = _resolve_tools(self.default_tools, config, "default_tools")
        entries: dict[str, _Entry | _RemoteEntry] = {}
        if GENERAL_PURPOSE not in seen:
            middleware = self.default_middleware
            agent = self._agent(
                config,
                where="the general-purpose sub-agent",
                name=GENERAL_PURPOSE,
                model=default_model,
                tools=default_tools,
                system_prompt=config.system_prompt,
                middleware=(
                    *_inherited(config, self.inherit, middleware, default_tools),
                    *middleware,
                ),
            )
            entries[GENERAL_PURPOSE] = _Entry(
                name=GENERAL_PURPOSE,
                description=GENERAL_PURPOSE_DESCRIPTION,
                agent=agent,
                exempt=_exempt(self.inherit),
            )
        for index, spec in enumerate(self.subagents):
            where = f"subagents[{index}]"
            inherit = self.inherit if spec.inherit is None else spec.inherit
            if spec.url is not None:
                entries[spec.name] = _remote_entry(spec, where)
                continue
            if spec.agent is not None:
                agent = spec.agent
            else:
                middleware = (*self.default_middleware, *spec.middleware)
                tools = (
                    default_tools
                    if spec.tools is None
                    else _resolve_tools(spec.tools, config, f"{where}.tools")
                )
                agent = self._agent(
                    config,
                    where=f"sub-agent {spec.name!r} (option {where!r})",
                    name=spec.name,
                    model=self._model(spec.model, config, f"{where}.model", default_model),
                    tools=tools,
                    system_prompt=spec.system_prompt,
                    middleware=(*_inherited(config, inherit, middleware, tools), *middleware),
                )
            entries[spec.name] = _Entry(
                name=spec.name,
                description=spec.description,
                agent=agent,
                exempt=_exempt(inherit),
            )
        return entries

    @staticmethod
    def _model(
        value: str | ChatModel | None,
        config: AgentConfig,
        option: str,
        fallback: ChatModel | None = None,
    ) -> ChatModel:
        if value is None:
            return fallback or config.model
        try:
            return init_chat_model(value)
        except ConfigError as exc:
            raise ConfigError(str(exc), option=option) from exc

    def _agent(
        self,
        config: AgentConfig,
        *,
        where: str,
        name: str,
        model: ChatModel,
        tools: Sequence[Tool],
        system_prompt: str | None,
        middleware: Sequence[Any],
    ) -> Agent:
        try:
            agent = create_agent(
                model,
                tools,
                name=name,
                system_prompt=system_prompt,
                middleware=middleware,
                checkpointer=config.checkpointer,
                store=config.store,
            )
            self._built.append(agent)
            return agent
        except ConfigError as exc:
            # Keep the class (CheckpointerRequiredError stays one) and say which sub-agent.
            raise type(exc)(f"{where} cannot be built: {exc}") from exc

    def _task_tool(self, entries: Mapping[str, _Entry | _RemoteEntry], persistent: bool) -> Tool:
        listing = "\n".join(f"- {e.name}: {e.description}" for e in entries.values())
        template = self.task_description or DEFAULT_TASK_DESCRIPTION
        description = template.replace("{available_agents}", listing)

        async def task(description: str, subagent_type: str, runtime: ToolRuntime) -> ToolMessage:
            """Run a sub-agent on a task.

            Args:
                description: The complete brief for the sub-agent: the task, all the
                    context it needs (it does not see this conversation) and what its
                    final answer must contain.
                subagent_type: The name of the sub-agent to run, one of those listed in
                    this tool's description.
            """
            entry = entries.get(subagent_type)
            if entry is None:
                names = ", ".join(entries)
                return _error(
                    runtime,
                    f"there is no sub-agent named {subagent_type!r}. The available "
                    f"sub-agents are: {names}. Call task again with one of them as "
                    "subagent_type.",
                )
            if isinstance(entry, _RemoteEntry):
                parent = runtime.runtime.thread_id
                key = _thread_id(parent, runtime) if parent is not None and persistent else None
                return await entry.remote.task(description, runtime, key)
            return await _delegate(entry, description, runtime, persistent)

        tool = Tool.from_function(task, name=TOOL_NAME, description=description)
        # An enum, so the model picks a name instead of inventing one (a small model would).
        parameters = copy.deepcopy(tool.parameters)
        parameters["properties"]["subagent_type"]["enum"] = list(entries)
        return attrs.evolve(tool, parameters=parameters)

    # -- the prompt ---------------------------------------------------------------------------

    def rewrite_request(self, request: ModelRequest) -> ModelRequest:
        request = request.with_prompt_section(self.system_prompt, when_tools={TOOL_NAME})
        if not self.background:
            return request
        return request.with_prompt_section(BACKGROUND_SYSTEM_PROMPT, when_tools={"start_task"})


@frozen(kw_only=True)
class BackgroundSubAgentMiddleware(SubAgentMiddleware):
    """``SubAgentMiddleware(background=True)`` is one of these: the hooks delivering
    background results exist only here, so an agent without background tasks runs no
    extra hook (and its stream shows no extra node)."""

    # -- background results ------------------------------------------------------------------

    def before_model(self, state: Mapping[str, Any], runtime: Runtime) -> dict[str, Any] | None:
        if runtime.thread_id is None:
            return None
        self._adopt_finished(state, runtime.thread_id)
        done = self._tasks.undelivered(runtime.thread_id)
        if not done:
            return None
        return {
            "messages": [record.message() for record in done],
            BACKGROUND_KEY: {record.id: record.state() for record in done},
        }

    def _adopt_finished(self, state: Mapping[str, Any], thread_id: str) -> None:
        """Take the outcome of the thread's durable tasks whose run has ended from their
        run log: those another process started (a worker that has ended), and this
        process's own whose waiter has not seen the end yet."""
        for task_id, known in (state.get(BACKGROUND_KEY) or {}).items():
            if not isinstance(known, Mapping) or known.get("status") != "running":
                continue
            entry = self._entries.get(str(known.get("subagent_type")))
            if not known.get("durable") or not isinstance(entry, _Entry):
                continue
            record = self._tasks.get(task_id, thread_id)
            if record is None:
                if ended(event_log(entry.agent), known["durable"]) is not None:
                    self._tasks.adopt_durable(entry.agent, task_id, thread_id, known)
            elif record.status == "running" and record.durable is not None:
                end = ended(event_log(entry.agent), record.durable)
                if end is not None:
                    self._tasks.finish(record, *outcome(end))

    def after_agent(self, state: Mapping[str, Any], runtime: Runtime) -> dict[str, Any] | None:
        if runtime.thread_id is None:
            return None
        running = [r for r in self._tasks.of_thread(runtime.thread_id) if r.status == "running"]
        if not running:
            return None
        ids = [record.id for record in running]
        log.warning(
            "the run of thread %r ended with %d background task(s) still running: %s",
            runtime.thread_id,
            len(ids),
            ", ".join(ids),
        )
        update: dict[str, Any] = {BACKGROUND_KEY: {r.id: r.state() for r in running}}
        messages = state.get("messages") or []
        if messages and isinstance(messages[-1], AIMessage):
            last = messages[-1]
            metadata = {**last.metadata, "background_tasks_running": ids}
            update["messages"] = [attrs.evolve(last, metadata=metadata)]
        return update


# -- what sub-agents inherit -----------------------------------------------------------------


def _exempt(inherit: Sequence[str]) -> tuple[str, ...]:
    return tuple(name for name in LIMITS if name not in inherit)


def _inherited(
    config: AgentConfig, inherit: Sequence[str], own: Sequence[Any], tools: Sequence[Tool]
) -> tuple[object, ...]:
    """The main agent's ``pii``, ``otel`` and ``human_in_the_loop`` instances ``inherit``
    names, for a built sub-agent whose own middleware has none of that kind."""
    found: list[object] = []
    for name in inherit:
        if name in LIMITS:
            continue  # the limits apply through the usage ledger
        cls = _middleware_class(name)
        if cls is None or any(_is(item, name, cls) for item in own):
            continue
        for middleware in config.middleware:
            if not isinstance(middleware, cls):
                continue
            if name == REVIEWS:
                reviews = _reviews_of(middleware, tools)
                if reviews is not None:
                    found.append(reviews)
            else:
                found.append(middleware)
    return tuple(found)


def _reviews_of(middleware: Any, tools: Sequence[Tool]) -> object | None:
    """``human_in_the_loop`` for a sub-agent given ``tools``: a copy reviewing the calls
    of those of them the main agent's reviews (``None``: none), since it refuses to name
    a tool its agent lacks (the main agent's ``task``, a tool left out)."""
    names = {tool.name for tool in tools}
    kept = {k: v for k, v in middleware.interrupt_on.items() if k in names and v is not False}
    return attrs.evolve(middleware, interrupt_on=kept) if kept else None


def _middleware_class(name: str) -> type | None:
    for entry_point in importlib.metadata.entry_points(group="plait.middleware", name=name):
        loaded = entry_point.load()
        return loaded if isinstance(loaded, type) else None
    return None


def _is(item: Any, name: str, cls: type) -> bool:
    """Whether a middleware item (a name, a ``(name, options)`` pair or an instance) is
    of the kind ``name``."""
    if isinstance(item, tuple) and item:
        item = item[0]
    return item == name or isinstance(item, cls)


# -- running a task --------------------------------------------------------------------------


def _resolve_tools(items: Sequence[ToolLike], config: AgentConfig, option: str) -> tuple[Tool, ...]:
    """Names looked up among the tools the main agent was given; objects as they are."""
    names = [item for item in items if isinstance(item, str)]
    try:
        check_tool_names(names, config, option=option)
    except ConfigError as exc:
        raise ConfigError(
            f"{exc}. Tools added by middleware (such as write_todos or read_file) are not "
            "given to sub-agents by name: add that middleware to the sub-agent's middleware"
        ) from None
    by_name = {tool.name: tool for tool in config.tools}
    resolved: list[Tool] = []
    for item in items:
        if isinstance(item, str):
            resolved.append(by_name[item])
        elif isinstance(item, Tool):
            resolved.append(item)
        else:
            try:
                resolved.append(Tool.from_function(item))
            except TypeError as exc:
                raise ConfigError(str(exc), option=option) from exc
    return tuple(resolved)


def _remote_entry(spec: SubAgent, where: str) -> _RemoteEntry:
    assert spec.url is not None and spec.assistant_id is not None  # checked by SubAgent
    remote = RemoteSubAgent(
        name=spec.name,
        where=where,
        url=spec.url,
        assistant_id=spec.assistant_id,
        api_key_env=spec.api_key_env,
        headers=spec.headers,
        timeout=spec.timeout,
    )
    return _RemoteEntry(name=spec.name, description=spec.description, remote=remote)


async def _delegate(
    entry: _Entry, description: str, runtime: ToolRuntime, persistent: bool
) -> ToolMessage:
    parent = runtime.runtime.thread_id
    thread = None
    if parent is not None and persistent and entry.agent.checkpointer is not None:
        thread = _thread_id(parent, runtime)
    try:
        result = await _run(entry, thread, description, runtime)
    except CheckpointerRequiredError as exc:
        raise SubAgentInterruptError(
            f"sub-agent {entry.name!r} paused at an interrupt, but its run cannot be saved "
            "to be resumed: give create_agent a checkpointer (sub-agents built by the "
            "subagents middleware share the main agent's; a prebuilt sub-agent needs its "
            f"own). {exc}"
        ) from exc
    except Exception as exc:  # StopRun included: it ends the sub-agent's run, not this one
        return _error(runtime, _failure(entry, exc))
    if isinstance(result, str):  # finished on an earlier pass
        return _answer(runtime, entry, result, None, thread)
    return _answer(runtime, entry, result.text, result, thread)


def _thread_id(parent: str, runtime: ToolRuntime) -> str:
    """The sub-agent's thread for this call: the same on every pass of the call (resume,
    continuing after a crash), different for every call, even when a provider numbers its
    tool-call ids afresh each turn (the AI message's id tells the turns apart)."""
    message = _last_ai(runtime.state["messages"])
    turn = f"{message.id}/" if message is not None else ""
    return f"{parent}/task/{turn}{runtime.tool_call_id}"


async def _run(entry: _Entry, thread: str | None, description: str, runtime: ToolRuntime) -> Any:
    """The sub-agent's finished result (or its earlier final text), pausing the main run at
    each of its interrupts."""
    agent = entry.agent
    resumes = 0
    result: AgentResult | None = None
    pending: list[Interrupt] = []
    start: Any = description
    if thread is not None:
        state = await asyncio.to_thread(agent.get_state, thread)
        messages = state["messages"]
        if messages:
            # Run before: paused at an interrupt, finished (the main run stopped before
            # it recorded the answer) or stopped half-way by a crash (carry it on).
            pending = await asyncio.to_thread(agent.get_interrupts, thread)
            last = messages[-1]
            if not pending and isinstance(last, AIMessage) and not last.tool_calls:
                return last.text
            start = None
            resumes = state.get(RESUMES_KEY, 0)
    if not pending:
        result = await _stream(entry, start, thread, runtime.context, runtime)
    # The k-th interrupt() of this call stands for the sub-agent's k-th pause: those
    # answered and delivered already return their old answers, which are skipped.
    for _ in range(resumes):
        interrupt(None)
    while True:
        if result is not None:
            if not result.interrupts:
                return result
            if thread is None:
                # A prebuilt agent with its own checkpointer, under a main agent without one.
                raise CheckpointerRequiredError(
                    "the main agent has no checkpointer to save its own paused run"
                )
            pending = result.interrupts
        answer = interrupt(_interrupt_value(pending))
        resumes += 1
        command = Command(resume=answer, update={RESUMES_KEY: resumes})
        result = await _stream(entry, command, thread, runtime.context, runtime)


async def _stream(
    entry: _Entry, input: Any, thread: str | None, context: Any, runtime: ToolRuntime
) -> AgentResult:
    """Run the sub-agent. The kernel nests its run in this ``task`` call's: its events
    reach the main run's stream (``StreamEvent.path`` is ``(tool call id,)``), its model
    calls count in the main run's usage and limits. A run of its own task, so the
    interrupt scope it sets never replaces this ``task`` call's."""
    with usage.exempt(*entry.exempt):
        return await entry.agent.ainvoke(input, thread_id=thread, context=context)


def _interrupt_value(pending: Sequence[Interrupt]) -> Any:
    """What the main agent's caller sees: the sub-agent's own value for one interrupt (so a
    client answers it as it would the main agent's), ``[{"id", "value"}, ...]`` for
    several, answered with ``{id: answer}``."""
    if len(pending) == 1:
        return pending[0].value
    return [{"id": item.id, "value": item.value} for item in pending]


def _last_ai(messages: Sequence[Any]) -> AIMessage | None:
    for message in reversed(messages):
        if isinstance(message, AIMessage):
            return message
    return None


def _failure(entry: _Entry, exc: BaseException) -> str:
    return (
        f"sub-agent {entry.name!r} failed: {sentence(f'{type(exc).__name__}: {exc}')} The "
        "task was not completed; retry it, brief the sub-agent differently, or do it "
        "another way."
    )


def _error(runtime: ToolRuntime, text: str) -> ToolMessage:
    return ToolMessage.error(runtime.tool_call, f"Error: {text}", name=TOOL_NAME)


def _answer(
    runtime: ToolRuntime,
    entry: _Entry,
    text: str,
    result: AgentResult | None,
    thread: str | None,
) -> ToolMessage:
    content = text or f"(sub-agent {entry.name!r} finished without a text answer)"
    report: dict[str, Any] = {"subagent_type": entry.name, "thread_id": thread}
    if result is not None:
        # Counted in the main run's usage already (the kernel's ledger): reported here,
        # per sub-agent, not as the message's usage, which the kernel would add again.
        report["usage"] = attrs.asdict(result.usage)
    return ToolMessage(
        content, tool_call_id=runtime.tool_call_id, name=TOOL_NAME, metadata={"subagents": report}
    )


# -- background tasks ------------------------------------------------------------------------


def _background_tools(
    tasks: BackgroundTasks, entries: Mapping[str, _Entry | _RemoteEntry]
) -> list[Tool]:
    """The five tools over ``tasks``; every one works within the main thread's tasks."""

    def refuse(runtime: ToolRuntime, text: str) -> ToolMessage:
        return ToolMessage.error(runtime.tool_call, f"Error: {text}")

    def thread_of(runtime: ToolRuntime) -> str | None:
        return runtime.runtime.thread_id

    no_thread = (
        "background tasks belong to a conversation thread, and this run has none (invoke "
        "the agent with thread_id=...)"
    )

    async def find(task_id: str, runtime: ToolRuntime) -> TaskRecord | ToolMessage:
        thread = thread_of(runtime)
        if thread is None:
            return refuse(runtime, no_thread)
        record = tasks.get(task_id, thread)
        if record is not None:
            return record
        known = (runtime.state.get(BACKGROUND_KEY) or {}).get(task_id)
        entry = entries.get(str((known or {}).get("subagent_type")))
        if known is not None and known.get("remote") and isinstance(entry, _RemoteEntry):
            # a task of a process that ended: its run went on on its server
            return await entry.remote.adopt(tasks, task_id, thread, known)
        if known is not None and known.get("durable") and isinstance(entry, _Entry):
            # a task a middleware ran (a dbos workflow): its outcome is in its run log
            return tasks.adopt_durable(entry.agent, task_id, thread, known)
        if known is not None and known.get("status") == "running":
            return refuse(
                runtime,
                f"task {task_id} was lost: the process that ran it ended before it finished. "
                "Start it again if it is still needed.",
            )
        ids = ", ".join(r.id for r in tasks.of_thread(thread)) or "none"
        return refuse(runtime, f"there is no background task {task_id!r}; the tasks are: {ids}")

    def answer(runtime: ToolRuntime, text: str, *records: TaskRecord) -> Command:
        message = ToolMessage(text, tool_call_id=runtime.tool_call_id, name=runtime.tool_call.name)
        update = {r.id: r.state() for r in records}
        return Command(update={"messages": [message], BACKGROUND_KEY: update})

    async def start_task(
        description: str, subagent_type: str, runtime: ToolRuntime
    ) -> ToolMessage | Command:
        """Start a sub-agent on a task in the background.

        Args:
            description: The complete brief for the sub-agent (it does not see this
                conversation) and what its final answer must contain.
            subagent_type: The name of the sub-agent to run.
        """
        thread = thread_of(runtime)
        if thread is None:
            return refuse(runtime, no_thread)
        entry = entries.get(subagent_type)
        if entry is None:
            names = ", ".join(entries)
            return refuse(
                runtime,
                f"there is no sub-agent named {subagent_type!r}; the sub-agents are: {names}",
            )
        if isinstance(entry, _RemoteEntry):
            try:
                record = await entry.remote.start(tasks, description, thread)
            except RemoteError as exc:
                return refuse(runtime, f"remote sub-agent {entry.name!r} was not started: {exc}")
        elif submits_runs(entry.agent) and entry.agent.checkpointer is not None:
            record = await tasks.submit(entry.agent, entry.name, description, thread)
        else:
            persistent = entry.agent.checkpointer is not None
            record = tasks.start(
                entry.agent, entry.name, description, thread, persistent, entry.exempt
            )
        text = (
            f"Started background task {record.id} ({entry.name}). Its result will be added "
            "to this conversation when it finishes."
        )
        return answer(runtime, text, record)

    async def check_task(task_id: str, runtime: ToolRuntime) -> ToolMessage | Command:
        """The status of a background task, with its result if it has finished.

        Args:
            task_id: the id start_task gave.
        """
        record = await find(task_id, runtime)
        if isinstance(record, ToolMessage):
            return record
        if record.status == "running":
            return answer(runtime, f"Task {record.id} ({record.subagent_type}) is still running.")
        record.delivered = True
        text = f"Task {record.id} ({record.subagent_type}) {record.status}."
        if record.result is not None:
            text += f" Result:\n{record.result}"
        return answer(runtime, text, record)

    async def update_task(
        task_id: str, message: str, runtime: ToolRuntime
    ) -> ToolMessage | Command:
        """Send more instructions to a running background task.

        Args:
            task_id: the id start_task gave.
            message: what the sub-agent should do next, or what changed.
        """
        record = await find(task_id, runtime)
        if isinstance(record, ToolMessage):
            return record
        entry = entries[record.subagent_type]
        if isinstance(entry, _RemoteEntry) and record.status in REMOTE_AGAIN:
            was = record.status
            try:
                await entry.remote.send(tasks, record, message)
            except RemoteError as exc:
                return refuse(runtime, f"task {record.id} was not sent your message: {exc}")
            if was == "interrupted":
                return answer(runtime, f"Task {record.id} goes on with your answer.", record)
            text = f"Task {record.id} runs again on its remote thread with your message."
            return answer(runtime, text, record)
        if record.status != "running":
            return refuse(
                runtime,
                f"task {record.id} has {record.status}; start a new task with start_task instead",
            )
        if isinstance(entry, _Entry) and entry.agent.checkpointer is None:
            return refuse(
                runtime,
                f"sub-agent {record.subagent_type!r} keeps no thread (it has no checkpointer), "
                "so it cannot take more instructions; cancel the task and start another",
            )
        tasks.follow_up(record, message)
        return answer(
            runtime, f"Task {record.id} will read your instructions once its current work is done."
        )

    async def cancel_task(task_id: str, runtime: ToolRuntime) -> ToolMessage | Command:
        """Stop a running background task.

        Args:
            task_id: the id start_task gave.
        """
        record = await find(task_id, runtime)
        if isinstance(record, ToolMessage):
            return record
        if record.status != "running":
            return refuse(runtime, f"task {record.id} has already {record.status}")
        tasks.cancel(record)
        return answer(runtime, f"Cancelled task {record.id}.", record)

    def list_tasks(runtime: ToolRuntime) -> ToolMessage | Command:
        """List the background tasks of this conversation."""
        thread = thread_of(runtime)
        if thread is None:
            return refuse(runtime, no_thread)
        records = tasks.of_thread(thread)
        if not records:
            return answer(runtime, "No background tasks.")
        lines = [f"- {r.id} ({r.subagent_type}): {r.status}: {r.description}" for r in records]
        return answer(runtime, "\n".join(lines), *records)

    listing = "\n".join(f"- {e.name}: {e.description}" for e in entries.values())
    functions: list[Callable[..., Any]] = [
        start_task,
        check_task,
        update_task,
        cancel_task,
        list_tasks,
    ]
    tools = []
    for function in functions:
        description = BACKGROUND_DESCRIPTIONS[function.__name__]
        tool = Tool.from_function(
            function,
            name=function.__name__,
            description=description.replace("{available_agents}", listing),
        )
        if function is start_task:
            parameters = copy.deepcopy(tool.parameters)
            parameters["properties"]["subagent_type"]["enum"] = list(entries)
            tool = attrs.evolve(tool, parameters=parameters)
        tools.append(tool)
    return tools
