"""``todo_list``: a ``write_todos`` tool the model plans with, and the plan in state.

Each ``write_todos`` call replaces the whole list, kept in the thread-scoped state key
``todos`` (a list of ``{"content", "status"}`` objects, ``[]`` before the first write), so it
survives across turns and shows in ``stream(mode="updates")``. A system-prompt section,
added to every model call that offers the tool, teaches when to plan. Several
``write_todos`` calls in one AI message would race to replace the list: ``after_model``
answers all of them with an error asking for one call.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

import attrs

from plait.lazy import frozen
from plait.messages import ToolMessage, pending_tool_calls
from plait.middleware import RequestMiddleware, can_jump_to
from plait.options import non_empty_string
from plait.tools import Tool
from plait.types import (
    AgentConfig,
    Command,
    ModelRequest,
    StateField,
    ToolRuntime,
)

__all__ = ["TOOL_NAME", "Todo", "TodoListMiddleware"]

TOOL_NAME = "write_todos"
"""The name of the tool the model writes its todo list with."""
STATE_KEY = "todos"

DEFAULT_SYSTEM_PROMPT = """## Planning with `write_todos`

You have a `write_todos` tool to plan and track multi-step work. Use it when a task needs
three or more distinct steps, or when the user gives you several things to do; skip it for
simple requests you can answer in one or two steps, since planning those only adds noise.

- Each call replaces the whole list: always send every item, with its current status.
- Mark an item `in_progress` before you start it, and keep only one item `in_progress` at
  a time.
- Mark an item `completed` as soon as it is done, in the same turn; do not batch updates.
- Add, remove or reword items when you learn something that changes the plan.
- Call `write_todos` at most once per message."""

DEFAULT_TOOL_DESCRIPTION = """Create or update your todo list for the current task.

Use it for work with several steps, to plan them and show your progress. The list you send
replaces the previous one entirely, so include every item each time. Each item has a
`content` (what to do, as a short imperative sentence) and a `status`: `pending` (not
started), `in_progress` (being worked on now; only one at a time) or `completed` (done).
Update it as soon as an item's status changes. Do not use it for trivial one-step tasks,
and call it at most once per message."""


@frozen
class Todo:
    """One item of the todo list."""

    content: str = attrs.field(validator=non_empty_string())
    """What to do, as a short imperative sentence."""
    status: Literal["pending", "in_progress", "completed"]
    """pending (not started), in_progress (being worked on now) or completed (done)."""


def write_todos(todos: list[Todo], runtime: ToolRuntime) -> Command:
    """Replace the todo list.

    Args:
        todos: the complete, updated list of items, in order.
    """
    items = [attrs.asdict(todo) for todo in todos]
    return Command(
        update={
            STATE_KEY: items,
            "messages": [
                ToolMessage(_summary(todos), tool_call_id=runtime.tool_call_id, name=TOOL_NAME)
            ],
        }
    )


def _summary(todos: Sequence[Todo]) -> str:
    if not todos:
        return "Cleared the todo list: it has no items now."
    count = f"{len(todos)} item" + ("" if len(todos) == 1 else "s")
    lines = [f"Updated the todo list ({count}):"]
    lines += [f"{n}. [{todo.status}] {todo.content}" for n, todo in enumerate(todos, 1)]
    return "\n".join(lines)


@frozen(kw_only=True)
class TodoListMiddleware(RequestMiddleware):
    """Gives the agent a ``write_todos`` tool and a system-prompt section on planning;
    the list lives in the thread's ``todos`` state key."""

    system_prompt: str = attrs.field(default=DEFAULT_SYSTEM_PROMPT, validator=non_empty_string())
    """The section appended to the system prompt of every model call offering the tool."""
    tool_description: str = attrs.field(
        default=DEFAULT_TOOL_DESCRIPTION, validator=non_empty_string()
    )
    """The ``write_todos`` description the model reads."""

    def state_fields(self) -> dict[str, StateField]:
        return {STATE_KEY: StateField(default=[], scope="thread")}

    def agent_tools(self, agent_config: AgentConfig) -> list[Tool]:
        return [Tool.from_function(write_todos, name=TOOL_NAME, description=self.tool_description)]

    # -- the prompt ---------------------------------------------------------------------------

    def rewrite_request(self, request: ModelRequest) -> ModelRequest:
        return request.with_prompt_section(self.system_prompt, when_tools={TOOL_NAME})

    # -- one write per message --------------------------------------------------------------

    @can_jump_to("model")
    def after_model(self, state: Mapping[str, Any]) -> Command | None:
        pending = pending_tool_calls(state["messages"])
        writes = [call for call in pending if call.name == TOOL_NAME]
        if len(writes) < 2:
            return None
        text = (
            f"Error: write_todos was called {len(writes)} times in one message. Each call "
            "replaces the whole list, so none of them was applied. Call write_todos once, "
            "with the complete list."
        )
        answers = [ToolMessage.error(call, text, name=TOOL_NAME) for call in writes]
        # With nothing else left to run, go straight back to the model so it can retry.
        if len(writes) == len(pending):
            return Command(update={"messages": answers}, jump_to="model")
        return Command(update={"messages": answers})
