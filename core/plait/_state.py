"""A thread's live state: the message reducer, keyed values, and the delta of a step."""

from __future__ import annotations

import copy
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from plait._convert import expected
from plait.messages import (
    REMOVE_ALL,
    AIMessage,
    AnyMessage,
    HumanMessage,
    Message,
    ToolCall,
    _last_calls,
    is_removal,
    is_role_pair,
    message_from_dict,
)
from plait.types import StateField

if TYPE_CHECKING:
    from plait.checkpoint import Checkpoint, StepDelta


RUN_KEY = "__plait_run__"
"""The value key under which the kernel checkpoints the run in progress."""


class _Private:
    def __repr__(self) -> str:
        return "<private>"


_PRIVATE = _Private()


class StateView(Mapping[str, Any]):
    """The read-only mapping hooks receive: ``"messages"`` plus every value."""

    __slots__ = ("_state",)

    def __init__(self, state: ThreadState) -> None:
        self._state = state

    def __getitem__(self, key: str) -> Any:
        if key == "messages":
            return self._state.messages
        if key == RUN_KEY:
            raise KeyError(key)
        return self._state.values[key]

    def __iter__(self) -> Iterator[str]:
        yield "messages"
        yield from (key for key in self._state.values if key != RUN_KEY)

    def __len__(self) -> int:
        return 1 + sum(1 for key in self._state.values if key != RUN_KEY)

    def __repr__(self) -> str:
        fields = self._state.fields
        shown = {
            key: _PRIVATE if key in fields and fields[key].private else value
            for key, value in self.items()
        }
        return f"StateView({shown!r})"


class ThreadState:
    """Messages and values of one thread, and what changed since the last checkpoint."""

    def __init__(self, fields: Mapping[str, StateField], checkpoint: Checkpoint | None = None):
        self.fields = fields
        self.step = 0 if checkpoint is None else checkpoint.step
        self.messages: list[AnyMessage] = [] if checkpoint is None else list(checkpoint.messages)
        self._index = {m.id: i for i, m in enumerate(self.messages)}
        self.values: dict[str, Any] = {} if checkpoint is None else dict(checkpoint.values)
        for key, spec in fields.items():
            if key not in self.values:
                self.values[key] = copy.deepcopy(spec.default)
        self.view = StateView(self)
        self.writer = ("", "")
        """The run id and node the next step is saved for (kept in the thread's history)."""
        self._clear_delta()

    def _clear_delta(self) -> None:
        self._reset = False
        self._removed: set[str] = set()
        self._upserts: dict[str, AnyMessage] = {}
        self._changed: set[str] = set()

    @property
    def dirty(self) -> bool:
        return bool(self._reset or self._removed or self._upserts or self._changed)

    def reset_run_fields(self) -> None:
        """Give every ``scope="run"`` key its default again (a run is starting)."""
        for key, spec in self.fields.items():
            if spec.scope == "run":
                self.set(key, copy.deepcopy(spec.default))

    def set(self, key: str, value: Any) -> None:
        self.values[key] = value
        self._changed.add(key)

    def update(self, update: Mapping[str, Any], source: str) -> None:
        """Merge a hook's update: messages through the reducer, other keys replaced or
        merged by their declared reducer."""
        for key, value in update.items():
            if key == "messages":
                self.add_messages(value, source)
                continue
            spec = self.fields.get(key)
            if spec is not None and spec.reducer is not None:
                value = spec.reducer(self.values.get(key, copy.deepcopy(spec.default)), value)
            self.set(key, value)

    def add_messages(self, new: Any, source: str) -> None:
        if isinstance(new, Message):
            new = (new,)
        elif isinstance(new, str):  # {"messages": "hi"}, as LangGraph's add_messages takes
            new = (HumanMessage(new),)
        elif not isinstance(new, Iterable) or isinstance(new, (bytes, Mapping)):
            if not is_removal(new):
                wanted = "a message or a list of messages"
                raise TypeError(f"{source}: 'messages': {expected(wanted, new)}")
            new = (new,)
        for message in new:
            if isinstance(message, Message):
                self._put(message)  # type: ignore[arg-type]
            elif isinstance(message, Mapping) and ("role" in message or "type" in message):
                self._put(message_from_dict(message))
            elif is_role_pair(message):
                self._put(message_from_dict({"role": message[0], "content": message[1]}))
            elif is_removal(message):
                self._remove(message.id, source)
            else:
                raise TypeError(f"{source}: 'messages' item: {expected('a message', message)}")

    def last_calls(self) -> tuple[AIMessage | None, list[ToolCall]]:
        """The last AI message and those of its calls no ToolMessage answers yet."""
        return _last_calls(self.messages)

    def _put(self, message: AnyMessage) -> None:
        position = self._index.get(message.id)
        if position is None:
            self._index[message.id] = len(self.messages)
            self.messages.append(message)
        else:
            self.messages[position] = message
        self._upserts[message.id] = message

    def _remove(self, message_id: str, source: str) -> None:
        if message_id == REMOVE_ALL:
            self.messages.clear()
            self._index.clear()
            self._reset = True
            self._removed.clear()
            self._upserts.clear()
            return
        position = self._index.pop(message_id, None)
        if position is None:
            raise ValueError(f"{source}: RemoveMessage({message_id!r}): no message has that id")
        del self.messages[position]
        for i in range(position, len(self.messages)):
            self._index[self.messages[i].id] = i
        self._upserts.pop(message_id, None)
        self._removed.add(message_id)

    def take_delta(self) -> StepDelta:
        """The changes since the last call, as the next step's ``StepDelta``."""
        # imported here: only an agent with a checkpointer saves steps (plait.checkpoint
        # and its classes cost a plain agent's import ~2 ms)
        from plait.checkpoint import StepDelta

        delta = StepDelta(
            step=self.step + 1,
            reset=self._reset,
            removed=tuple(self._removed),
            upserts=tuple(self._upserts.values()),
            values={key: self.values[key] for key in self._changed},
            run_id=self.writer[0],
            node=self.writer[1],
        )
        self._clear_delta()
        return delta

    def public(self) -> dict[str, Any]:
        """A plain snapshot for ``result.state`` / ``agent.get_state``."""
        snapshot: dict[str, Any] = {"messages": list(self.messages)}
        snapshot.update((k, v) for k, v in self.values.items() if k != RUN_KEY)
        return snapshot
