"""Record a run's model and tool calls to a JSONL file, and replay them offline.

``create_agent(record="runs.jsonl")`` installs a performer (``plait.effects``) that
writes every model call (request and answer) and every tool run (call and result) as it
happens, each keyed by a hash of its request. ``create_agent(replay="runs.jsonl")``
answers them from the file instead: no provider is reached, no tool runs (except a tool
that paused the recorded run at an interrupt, which runs again so it pauses again).

What is hashed is what the run asked: the model id, the messages without their random
ids, the options (tools by name, description and parameters); a tool run's name and
arguments. A request the recording does not hold fails with a diff of what changed
against the recorded one it should have been (``mode="strict"``, the default; a
request asked again once every recorded one was used gets its last answer again, so a
recording replays any number of times); ``mode="lenient"`` answers each call with the
next recorded one of its kind, whatever it asked.

The file's first line names the agent that recorded it (name, model, tools, system
prompt, as a fingerprint); replaying it with another agent is refused when the agent
is built.
"""

from __future__ import annotations

import builtins
import difflib
import hashlib
import json
import os
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import attrs

from plait import effects
from plait._convert import expected
from plait.errors import ConfigError, PlaitError
from plait.interrupts import InterruptSignal
from plait.lazy import define
from plait.messages import (
    AIMessage,
    AIMessageChunk,
    ToolCallChunk,
    ToolMessage,
    assemble_chunks,
    structure_message,
    unstructure_message,
)
from plait.messages import converter as _converter
from plait.middleware import Middleware
from plait.types import AgentConfig, AgentResult, Command, RunRequest

__all__ = [
    "FORMAT",
    "MODES",
    "Recorder",
    "ReplayError",
    "Replayer",
    "fingerprint",
    "request_key",
]

T = TypeVar("T")

FORMAT = 1
"""The recording format this module writes (the header's ``plait_recording``)."""

MODES = ("strict", "lenient")


class ReplayError(PlaitError):
    """A call the recording cannot answer: a request that differs from the recorded one,
    or more calls than were recorded."""


# -- what is hashed --------------------------------------------------------------------------


def _plain(value: Any) -> Any:
    """``value`` as JSON-ready data that is the same in every run (no object addresses)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if all(hasattr(value, a) for a in ("name", "description", "parameters")):  # a tool
        return {
            "name": value.name,
            "description": value.description,
            "parameters": _plain(value.parameters),
        }
    if attrs.has(type(value)):
        return _plain(_converter.unstructure(value))
    return type(value).__name__


def _message(data: Mapping[str, Any]) -> dict[str, Any]:
    """A message as hashed: its random id dropped (a tool call's id, which the model
    chose, stays)."""
    return {k: v for k, v in data.items() if k != "id"}


def model_request(effect: effects.ModelCall) -> dict[str, Any]:
    return {
        "model": f"{effect.model.provider}:{effect.model.model_name}",
        "messages": [_message(unstructure_message(m)) for m in effect.messages],
        "options": _plain(dict(effect.options)),
    }


def request_key(effect: effects.ModelCall) -> str:
    """The canonical hash of a model call: the same for the same model, messages (their
    random ids aside), tools and settings in any run — how a recording matches a call,
    and how ``response_cache`` keys an answer."""
    return _key(model_request(effect))


def tool_request(effect: effects.ToolRun) -> dict[str, Any]:
    call = effect.request.tool_call
    return {"name": call.name, "args": _plain(call.args), "id": call.id}


def _key(request: Mapping[str, Any]) -> str:
    text = json.dumps(request, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def fingerprint(config: AgentConfig) -> dict[str, Any]:
    """What identifies the agent that made a recording."""
    model = config.model
    return {
        "agent": config.name,
        "model": f"{model.provider}:{model.model_name}",
        "tools": sorted(tool.name for tool in config.tools),
        "system_prompt": hashlib.sha256((config.system_prompt or "").encode()).hexdigest()[:16],
    }


def _describe(print_: Mapping[str, Any]) -> str:
    tools = ", ".join(print_.get("tools", ())) or "none"
    return f"agent {print_.get('agent')!r} on {print_.get('model')} with tools {tools}"


# -- results as JSON -----------------------------------------------------------------------


def _dump_result(result: Any) -> dict[str, Any]:
    if isinstance(result, (AIMessage, ToolMessage)):
        return {"message": unstructure_message(result)}
    if isinstance(result, Command):
        from plait._loop import _dump_outcome

        dumped = _dump_outcome(None, result)  # type: ignore[arg-type]
        if dumped is not None:
            return {"command": dumped}
    raise ReplayError(f"record: a {type(result).__name__} result cannot be recorded")


def _dump_error(exc: Exception) -> dict[str, str]:
    return {"type": type(exc).__name__, "message": str(exc)}


def _load_error(data: Mapping[str, str]) -> Exception:
    """The exception a recorded tool raised, as the model was told of it (``tool 'x'
    raised ValueError: ...``): the built-in class of that name, or one named like it."""
    name = data["type"]
    builtin = getattr(builtins, name, None)
    kind: type[Exception] = (
        builtin
        if isinstance(builtin, type) and issubclass(builtin, Exception)
        else type(name, (Exception,), {"__module__": "plait.recording"})
    )
    return kind(data["message"])


def _load_result(data: Mapping[str, Any]) -> Any:
    if "message" in data:
        return structure_message(data["message"])
    from plait._loop import _load_outcome

    return _load_outcome(data["command"])


# -- recording -----------------------------------------------------------------------------


@define(eq=False)
class Recorder:
    """The performer that writes each call to ``path`` (created, or emptied, on the first
    call)."""

    path: Path
    header: dict[str, Any] = attrs.field(factory=dict)
    _lock: threading.Lock = attrs.field(factory=threading.Lock, init=False)
    _started: bool = attrs.field(default=False, init=False)

    def _write(self, entry: Mapping[str, Any]) -> None:
        line = json.dumps(entry, ensure_ascii=False, separators=(",", ":"))
        with self._lock:
            mode = "a" if self._started else "w"
            with self.path.open(mode, encoding="utf-8") as file:
                if not self._started:
                    file.write(json.dumps({"plait_recording": FORMAT, **self.header}) + "\n")
                    self._started = True
                file.write(line + "\n")

    def _entry(self, kind: str, request: dict[str, Any], **rest: Any) -> dict[str, Any]:
        return {"kind": kind, "key": _key(request), "request": request, **rest}

    def perform(self, effect: effects.Effect, proceed: Callable[[], T]) -> T:
        if isinstance(effect, effects.ToolRun):
            request = tool_request(effect)
            try:
                result = proceed()
            except InterruptSignal:
                self._write(self._entry("tool", request, interrupted=True))
                raise
            except Exception as exc:
                self._write(self._entry("tool", request, raised=_dump_error(exc)))
                raise
            self._write(self._entry("tool", request, result=_dump_result(result)))
            return result
        if not isinstance(effect, effects.ModelCall):
            return proceed()
        request = model_request(effect)
        if effect.streaming:
            return self._stream(request, proceed())  # type: ignore[arg-type,return-value]
        answer = proceed()
        self._write(self._entry("model", request, result=_dump_result(answer)))
        return answer

    def _stream(self, request: dict[str, Any], chunks: Iterator[Any]) -> Iterator[Any]:
        seen = []
        for chunk in chunks:
            seen.append(chunk)
            yield chunk
        self._write(self._entry("model", request, chunks=[_converter.unstructure(c) for c in seen]))

    async def aperform(self, effect: effects.Effect, proceed: Callable[[], Awaitable[T]]) -> T:
        if isinstance(effect, effects.ToolRun):
            request = tool_request(effect)
            try:
                result = await proceed()
            except InterruptSignal:
                self._write(self._entry("tool", request, interrupted=True))
                raise
            except Exception as exc:
                self._write(self._entry("tool", request, raised=_dump_error(exc)))
                raise
            self._write(self._entry("tool", request, result=_dump_result(result)))
            return result
        if not isinstance(effect, effects.ModelCall):
            return await proceed()
        request = model_request(effect)
        if effect.streaming:
            streamed: Any = self._astream(request, await proceed())  # type: ignore[arg-type]
            return streamed  # type: ignore[no-any-return]
        answer = await proceed()
        self._write(self._entry("model", request, result=_dump_result(answer)))
        return answer

    async def _astream(self, request: dict[str, Any], chunks: AsyncIterator[Any]) -> Any:
        seen = []
        async for chunk in chunks:
            seen.append(chunk)
            yield chunk
        self._write(self._entry("model", request, chunks=[_converter.unstructure(c) for c in seen]))


# -- replaying -----------------------------------------------------------------------------


def read_recording(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The header and entries of a recording, or a ``ConfigError`` in one line."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise ConfigError(f"replay: cannot read {str(path)!r}: {exc.strerror or exc}") from None
    rows: list[dict[str, Any]] = []
    for number, line in enumerate(lines, start=1):
        try:
            row = json.loads(line)
        except ValueError:
            row = None
        if not isinstance(row, dict):
            raise ConfigError(
                f"replay: {str(path)!r} line {number} is not a JSON object: it is not a "
                "plait recording (make one with record=...)"
            )
        rows.append(row)
    if not rows or rows[0].get("plait_recording") != FORMAT:
        raise ConfigError(
            f"replay: {str(path)!r} is not a plait recording (its first line has no "
            f'"plait_recording": {FORMAT}); make one with record=...'
        )
    return rows[0], rows[1:]


@define(eq=False)
class Replayer:
    """The performer that answers each call from a recording."""

    path: Path
    entries: list[dict[str, Any]]
    mode: str = "strict"
    _used: set[int] = attrs.field(factory=set, init=False)
    _lock: threading.Lock = attrs.field(factory=threading.Lock, init=False)

    def _take(self, kind: str, request: dict[str, Any]) -> dict[str, Any]:
        key = _key(request)
        with self._lock:
            unused = [
                i for i, e in enumerate(self.entries) if i not in self._used and e["kind"] == kind
            ]
            match = next((i for i in unused if self.entries[i]["key"] == key), None)
            if match is None and self.mode == "lenient" and unused:
                match = unused[0]
            if match is None:
                # the very request again (the recording replayed a second time): the
                # answer it was given last
                again = [
                    i
                    for i in sorted(self._used, reverse=True)
                    if self.entries[i]["kind"] == kind and self.entries[i]["key"] == key
                ]
                if again:
                    return self.entries[again[0]]
            if match is None:
                raise self._mismatch(kind, request, unused)
            self._used.add(match)
            return self.entries[match]

    def _mismatch(self, kind: str, request: dict[str, Any], unused: list[int]) -> ReplayError:
        what = "model call" if kind == "model" else f"call of tool {request.get('name')!r}"
        if not unused:
            return ReplayError(
                f"replay: this run makes a {what} that {str(self.path)!r} does not hold "
                f"(every recorded {kind} call was answered already)"
            )
        recorded = self.entries[unused[0]]["request"]
        diff = difflib.unified_diff(
            json.dumps(recorded, indent=1, sort_keys=True, ensure_ascii=False).splitlines(),
            json.dumps(request, indent=1, sort_keys=True, ensure_ascii=False).splitlines(),
            "recorded",
            "this run",
            lineterm="",
            n=2,
        )
        return ReplayError(
            f"replay: this run's {what} differs from the one recorded in "
            f"{str(self.path)!r} (entry {unused[0] + 1}); what changed:\n" + "\n".join(diff)
        )

    def perform(self, effect: effects.Effect, proceed: Callable[[], T]) -> T:
        if isinstance(effect, effects.ToolRun):
            entry = self._take("tool", tool_request(effect))
            if entry.get("interrupted"):
                return proceed()  # the tool asks its question again
            if "raised" in entry:
                raise _load_error(entry["raised"])
            return _load_result(entry["result"])  # type: ignore[no-any-return]
        if not isinstance(effect, effects.ModelCall):
            return proceed()
        answer = _answer(self._take("model", model_request(effect)), effect.streaming)
        return iter(answer) if effect.streaming else answer  # type: ignore[no-any-return]

    async def aperform(self, effect: effects.Effect, proceed: Callable[[], Awaitable[T]]) -> T:
        if isinstance(effect, effects.ToolRun):
            entry = self._take("tool", tool_request(effect))
            if entry.get("interrupted"):
                return await proceed()
            if "raised" in entry:
                raise _load_error(entry["raised"])
            return _load_result(entry["result"])  # type: ignore[no-any-return]
        if not isinstance(effect, effects.ModelCall):
            return await proceed()
        answer = _answer(self._take("model", model_request(effect)), effect.streaming)
        result: Any = _aiter(answer) if effect.streaming else answer
        return result  # type: ignore[no-any-return]


def _answer(entry: Mapping[str, Any], streaming: bool) -> Any:
    """A recorded model answer in the shape the call wants: chunks when it streams, the
    ``AIMessage`` when it does not, whichever way it was recorded."""
    if "chunks" in entry:
        chunks = [_converter.structure(c, AIMessageChunk) for c in entry["chunks"]]
        return chunks if streaming else assemble_chunks(chunks)
    message = _load_result(entry["result"])
    if not streaming:
        return message
    calls = tuple(
        ToolCallChunk(i, id=c.id, name=c.name, args=json.dumps(c.args))
        for i, c in enumerate(message.tool_calls)
    )
    return [
        AIMessageChunk(
            message.text,
            tool_call_chunks=calls,
            usage=message.usage,
            response_metadata=dict(message.response_metadata),
            id=message.id,
        )
    ]


async def _aiter(items: Sequence[Any]) -> AsyncIterator[Any]:
    for item in items:
        yield item


# -- the middleware create_agent adds --------------------------------------------------------


class RecordReplay(Middleware):
    """Installs the recorder or the replayer around each run. Built by ``create_agent``
    from ``record=``/``replay=``; checks a replayed file against the agent when it is
    built."""

    def __init__(self, *, record: Any = None, replay: Any = None, mode: Any = "strict") -> None:
        if record is not None and replay is not None:
            raise ConfigError("record and replay: give one of them, not both")
        if mode not in MODES:
            raise ConfigError(
                f"replay_mode: {expected(repr(MODES[0]) + ' or ' + repr(MODES[1]), mode)}"
            )
        for option, value in (("record", record), ("replay", replay)):
            if value is not None and not isinstance(value, (str, os.PathLike)):
                raise ConfigError(f"{option}: {expected('a file path', value)}")
        self.record = None if record is None else Path(record)
        self.replay = None if replay is None else Path(replay)
        self.mode = str(mode)
        self.performer: Recorder | Replayer | None = None
        if self.replay is not None:
            self.header, self.entries = read_recording(self.replay)
        elif self.record is not None and not self.record.parent.is_dir():
            raise ConfigError(
                f"record: {expected('a file in an existing directory', str(self.record))}"
            )

    def validate_agent(self, agent_config: AgentConfig) -> None:
        mine = fingerprint(agent_config)
        if self.record is not None:
            self.performer = Recorder(self.record, mine)
            return
        assert self.replay is not None
        theirs = {k: self.header.get(k) for k in mine}
        if theirs != mine:
            # The prompt is kept as a hash, so it is named only when it is what differs.
            prompt = (
                "; its system prompt differs"
                if theirs["system_prompt"] != mine["system_prompt"]
                else ""
            )
            raise ConfigError(
                f"replay: {str(self.replay)!r} was recorded by another agent "
                f"({_describe(theirs)}), not this one ({_describe(mine)}){prompt}"
            )
        self.performer = Replayer(self.replay, self.entries, self.mode)

    def wrap_run(
        self, request: RunRequest, handler: Callable[[RunRequest], AgentResult]
    ) -> AgentResult:
        assert self.performer is not None
        with effects.performing(self.performer):
            return handler(request)

    async def awrap_run(
        self, request: RunRequest, handler: Callable[[RunRequest], Awaitable[AgentResult]]
    ) -> AgentResult:
        assert self.performer is not None
        with effects.performing(self.performer):
            return await handler(request)
