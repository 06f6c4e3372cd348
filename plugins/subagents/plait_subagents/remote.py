"""Remote sub-agents: a sub-agent that is an assistant of an Agent Protocol server (a
``plait serve``, a LangGraph server), reached by URL with LangGraph's own client,
``langgraph-sdk`` (the extra ``plait-subagents[remote]``).

``task`` runs the remote on a thread of the server whose id is derived from the call
(the parent thread, the AI message and the tool call id), so every pass of one call finds
the same remote thread: a run that pauses at an interrupt pauses the main run with the
remote's interrupt value, and the main agent's caller answers it as if it were local (the
answer goes back as ``command={"resume": ...}``; the remote's number of runs on the thread
tells how many answers it has had, so none is delivered twice).
While the main run is streamed, ``task`` streams the remote run and relays its events
into the main run's stream below the ``task`` call (``plait.nesting.emit``).

A background task is a thread and run of the server: ``start_task`` creates both and
answers at once; a watcher on the agent's loop follows the run and records its outcome
(its last AI message, an error, or an interrupt: status ``interrupted`` with the
interrupt's value, which ``update_task`` answers); ``update_task`` sends its message as a
new run on the same remote thread: when the current run ends if the task is running, at
once if it has completed or failed; ``cancel_task`` cancels the remote run. The thread's
state records where each task runs, so a later process picks up the tasks of one that
ended (``adopt``): a remote run outlives the process that started it. While the run that
started the task is streamed, the watcher streams the remote run and relays it into that
stream below the ``start_task`` call, as ``task`` does, until that stream ends (later
events are dropped); otherwise it joins the run.

The remote runs on its own server: the main agent's limits, ``pii`` and ``otel`` do not
reach it. The usage its AI messages report is the ``task`` answer's ``usage`` (so the
loop adds it to the main run's) and a background task's reported usage, counted in the
run that started the task (or sent it more instructions) under that call
(``plait.nesting.count``), each AI message once.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import threading
import uuid
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import attrs

from plait import interrupt, nesting
from plait.errors import ConfigError
from plait.lazy import frozen, lazy_exports
from plait.messages import (
    AIMessageChunk,
    AnyMessage,
    ToolCallChunk,
    ToolMessage,
    Usage,
    message_from_dict,
)
from plait.options import FieldError, expected
from plait.types import StreamEvent, ToolRuntime
from plait_subagents._text import sentence
from plait_subagents.background import BackgroundTasks, TaskRecord

if TYPE_CHECKING:
    from langgraph_sdk.client import LangGraphClient

__all__ = ["RemoteError", "RemoteSubAgent"]

__getattr__ = lazy_exports(
    __name__,
    {},
    deprecated={
        name: (f"{__name__}:_{name}", "it is internal (RemoteSubAgent checks its own options)")
        for name in ("check_env_name", "check_headers", "check_url")
    },
)

EXTRA = "pip install 'plait-subagents[remote]'"
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class RemoteError(Exception):
    """A remote sub-agent's server could not do what was asked; the text says why."""


def _check_url(value: Any) -> None:
    """An http(s) URL with a host, else ``FieldError('url', ...)``."""
    parts = urlsplit(value) if isinstance(value, str) else None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        raise FieldError(
            "url",
            expected(
                "an http(s) URL of an Agent Protocol server, such as 'http://127.0.0.1:8000'",
                value,
            ),
        )


def _check_env_name(value: Any) -> None:
    """``None`` or an environment variable's name, else ``FieldError('api_key_env', ...)``."""
    if value is not None and not (isinstance(value, str) and _ENV_NAME.fullmatch(value)):
        raise FieldError(
            "api_key_env",
            expected("the name of an environment variable holding the API key", value),
        )


def _check_headers(value: Any) -> None:
    """A mapping of header names to strings, else ``FieldError('headers', ...)``."""
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise FieldError("headers", expected("a mapping of header names to strings", value))


@frozen(kw_only=True)
class RemoteSubAgent:
    """A sub-agent spec's remote half, checked and ready: where the server is and how to
    authenticate. Built by the middleware at ``create_agent``."""

    name: str
    where: str
    """The spec's option path, ``subagents[0]``: error texts name it."""
    url: str
    assistant_id: str
    api_key_env: str | None
    headers: Mapping[str, str]
    timeout: float
    _clients: dict[tuple[int, str | None], tuple[asyncio.AbstractEventLoop, LangGraphClient]] = (
        attrs.field(init=False, factory=dict, eq=False, repr=False)
    )
    _lock: threading.Lock = attrs.field(init=False, factory=threading.Lock, eq=False, repr=False)
    _counted: dict[str, set[str]] = attrs.field(init=False, factory=dict, eq=False, repr=False)
    """Per background task, the ids of the remote AI messages whose usage was counted."""

    def __attrs_post_init__(self) -> None:
        try:
            import langgraph_sdk  # noqa: F401
        except ImportError:
            raise ConfigError(
                "a remote sub-agent is reached with LangGraph's client, langgraph-sdk, which "
                f"is not installed ({EXTRA})",
                option=f"{self.where}.url",
            ) from None
        if self.api_key_env is not None and not os.environ.get(self.api_key_env):
            raise ConfigError(
                f"expected the name of a set environment variable holding the API key of "
                f"{self.url}, got {self.api_key_env!r} (it is not set)",
                option=f"{self.where}.api_key_env",
            )

    # -- the client ----------------------------------------------------------------------------

    def client(self) -> LangGraphClient:
        """The running loop's client of the server. One is made per event loop and key
        and kept (making one costs about 0.1 s, its SSL context mostly); a client of a
        loop that has closed is dropped when the next one is made."""
        from langgraph_sdk import get_client

        options = self._client_options()
        loop = asyncio.get_running_loop()
        key = (id(loop), options["api_key"])
        with self._lock:
            found = self._clients.get(key)
            if found is not None and found[0] is loop:
                return found[1]
            for old, (its_loop, _) in list(self._clients.items()):
                if its_loop.is_closed():
                    del self._clients[old]
            client = get_client(url=self.url, **options)
            self._clients[key] = (loop, client)
        return client

    def _client_options(self) -> dict[str, Any]:
        """The key is read from the environment at each use, so a rotated key is picked
        up; it is sent as ``Authorization: Bearer`` and ``X-Api-Key``, the headers these
        servers read. No key configured means none is sent (the SDK's own
        LANGSMITH_API_KEY lookup is off)."""
        headers = dict(self.headers)
        key = None
        if self.api_key_env is not None:
            key = os.environ.get(self.api_key_env)
            if not key:
                raise RemoteError(
                    f"the environment variable {self.api_key_env} (option "
                    f"'{self.where}.api_key_env') holding its API key is not set"
                )
            headers.setdefault("Authorization", f"Bearer {key}")
        # (connect, read, write, pool): a wait reads for as long as the run takes.
        timeout = (min(self.timeout, 10.0), self.timeout, self.timeout, self.timeout)
        return {"api_key": key, "headers": headers, "timeout": timeout}

    def failure(self, exc: BaseException) -> str:
        """One sentence on what went wrong with the server, naming the option to check."""
        import httpx
        from langgraph_sdk import errors

        at = f"the server at {self.url} (option '{self.where}.url')"
        if isinstance(exc, RemoteError):
            return str(exc)
        if isinstance(exc, httpx.HTTPStatusError):  # the SDK's typed errors are ones too
            status, said = exc.response.status_code, _said(exc.response)
            if status in (401, 403):
                fix = (
                    f"check the key in {self.api_key_env} (option '{self.where}.api_key_env')"
                    if self.api_key_env
                    else f"it needs an API key: set option '{self.where}.api_key_env'"
                )
                return f"{at} refused the request (HTTP {status}: {said}); {fix}"
            if status == 404:
                return (
                    f"{at} answered 404 ({said}); check option '{self.where}.assistant_id' "
                    f"({self.assistant_id!r}) and the URL"
                )
            return f"{at} answered HTTP {status}: {said}"
        if isinstance(exc, httpx.TimeoutException | errors.APITimeoutError):
            return f"{at} did not answer within {self.timeout:g} s (option '{self.where}.timeout')"
        if isinstance(exc, httpx.TransportError | errors.APIConnectionError):
            return f"{at} could not be reached ({type(exc).__name__}: {exc})"
        return f"{at}: {type(exc).__name__}: {exc}"

    def _error(self, runtime: ToolRuntime, exc: BaseException) -> ToolMessage:
        return ToolMessage.error(
            runtime.tool_call,
            f"Error: remote sub-agent {self.name!r} failed: {sentence(self.failure(exc))} The "
            "task was not completed; retry it later, or do it another way.",
            name=runtime.tool_call.name,
        )

    def _input(self, text: str) -> dict[str, Any]:
        return {"messages": [{"role": "user", "content": text}]}

    # -- task: run and wait ----------------------------------------------------------------------

    async def task(self, description: str, runtime: ToolRuntime, key: str | None) -> ToolMessage:
        """Run the remote on ``description`` and answer with its last AI message. ``key``
        names this call (``None``: the main run keeps no thread, so an interrupt of the
        remote cannot pause it and is an error)."""
        from langgraph_sdk import errors

        if key is None:
            thread = str(uuid.uuid4())
        else:
            thread = str(uuid.uuid5(uuid.NAMESPACE_URL, f"{self.url}#{self.assistant_id}#{key}"))
        try:
            client = self.client()
            found = await client.threads.create(
                thread_id=thread,
                if_exists="do_nothing",
                metadata={"subagent_name": self.name, "parent": key or ""},
            )
            values: dict[str, Any] | None = None
            pending = _thread_interrupts(found)
            resumes = 0
            if pending:
                # Paused on an earlier pass: the runs after the first were its answers.
                resumes = len(await client.runs.list(thread, limit=1000)) - 1
            elif found.get("status") == "busy":  # an earlier pass's run still going
                latest = await client.runs.list(thread, limit=1)
                if not latest:
                    raise RemoteError(f"the server at {self.url} lists no run of a busy thread")
                values = await self._join(client, thread, latest[0]["run_id"])
            else:
                done = found.get("values")
                if _last_ai_text(done) is not None:  # finished on an earlier pass
                    return self._answer(runtime, done, thread)
                values = await self._wait(client, thread, input=self._input(description))
            # The k-th interrupt() of this call stands for the remote's k-th pause.
            for _ in range(resumes):
                interrupt(None)
            while True:
                if values is not None:
                    if "__error__" in values:
                        raise RemoteError(_run_error(self, values["__error__"]))
                    pending = list(values.get("__interrupt__") or [])
                    if not pending:
                        return self._answer(runtime, values, thread)
                if key is None:
                    raise RemoteError(
                        "it paused at an interrupt, which this run cannot wait for: "
                        "invoke the main agent with a thread_id and a checkpointer"
                    )
                answer = interrupt(_interrupt_value(pending))
                values = await self._wait(client, thread, command={"resume": answer})
        except (errors.LangGraphError, RemoteError, OSError) as exc:
            return self._error(runtime, exc)
        except Exception as exc:
            import httpx

            if isinstance(exc, httpx.HTTPError):
                return self._error(runtime, exc)
            raise

    async def _wait(self, client: LangGraphClient, thread: str, **given: Any) -> dict[str, Any]:
        """The run's final values (``__error__`` if it failed). Under a streamed main run
        the remote's run is streamed and relayed (``_relay``); else it is waited for."""
        modes = nesting.stream_modes()
        if modes:
            return await self._relay(client, thread, modes, given)
        result = await client.runs.wait(thread, self.assistant_id, raise_error=False, **given)
        if not isinstance(result, dict):
            raise RemoteError(f"the server at {self.url} answered a run with {result!r:.200}")
        return result

    async def _relay(
        self,
        client: LangGraphClient,
        thread: str,
        modes: frozenset[str],
        given: Mapping[str, Any],
    ) -> dict[str, Any]:
        """Stream the remote's run and put what arrives on the main run's stream below this
        ``task`` call (``StreamEvent.path`` is ``(tool call id,)``, as a local sub-agent's):
        its text chunks and tool messages in ``messages`` mode, its custom events in
        ``custom`` mode, its updates in ``updates`` mode (their messages as plait
        messages). Its ``values`` are not relayed: the last one is the run's outcome, as
        ``runs.wait`` would answer it."""
        parts = client.runs.stream(thread, self.assistant_id, stream_mode=_asked(modes), **given)
        return await self._relay_parts(parts)

    async def _relay_parts(self, parts: AsyncIterator[Any]) -> dict[str, Any]:
        """Relay a remote run's stream (``_relay``); its final values."""
        values: dict[str, Any] | None = None
        paused: Any = None
        async for part in parts:
            event, data = part.event, part.data
            if event == "values" and isinstance(data, dict):
                values = data
            elif event == "error":
                return {"__error__": data}
            elif event == "updates" and isinstance(data, Mapping):
                paused = data.get("__interrupt__", paused)
                for node, update in data.items():
                    source = "interrupt" if node == "__interrupt__" else str(node)
                    nesting.emit(StreamEvent("updates", {node: _plait_update(update)}, source))
            elif event == "messages" and isinstance(data, Sequence) and data:
                relayed = _stream_message(data[0])
                if relayed is not None:
                    nesting.emit(StreamEvent("messages", *relayed))
            elif event == "custom":
                nesting.emit(StreamEvent("custom", data, "custom"))
        if values is None:
            raise RemoteError(f"the server at {self.url} streamed a run without its state")
        if paused and "__interrupt__" not in values:
            values = {**values, "__interrupt__": paused}
        return values

    def _answer(self, runtime: ToolRuntime, values: Any, thread: str) -> ToolMessage:
        """The remote's last AI message as the tool answer. The usage its messages report
        is the answer's ``usage``, which the loop adds to the main run's: the remote's
        model calls are ones plait did not see."""
        text = _last_ai_text(values)
        content = text or f"(remote sub-agent {self.name!r} finished without a text answer)"
        used = _usage(values)
        report: dict[str, Any] = {
            "subagent_type": self.name,
            "url": self.url,
            "remote_thread_id": thread,
        }
        if used is not None:
            report["usage"] = attrs.asdict(used)
        return ToolMessage(
            content,
            tool_call_id=runtime.tool_call_id,
            name=runtime.tool_call.name,
            metadata={"subagents": report},
            usage=used,
        )

    # -- background tasks -----------------------------------------------------------------------

    async def start(self, tasks: BackgroundTasks, description: str, parent: str) -> TaskRecord:
        """Create a remote thread and run; a watcher records its outcome. Raises
        ``RemoteError`` (with the reason) if the server refuses or cannot be reached."""
        try:
            client = self.client()
            created = await client.threads.create(
                metadata={"subagent_name": self.name, "parent": parent}
            )
            thread = created["thread_id"]
            run = await client.runs.create(
                thread, self.assistant_id, input=self._input(description)
            )
        except Exception as exc:
            raise RemoteError(self.failure(exc)) from exc
        record = tasks.new(self.name, description, parent)
        self._follow_run(record, thread, run["run_id"])
        tasks.launch(record, self._watch(tasks, record, counted=True))
        return record

    async def send(self, tasks: BackgroundTasks, record: TaskRecord, message: str) -> None:
        """A new run on a finished task's thread, watched like the first: an interrupted
        task's interrupt is answered with ``message`` (as JSON if it parses, else the
        text); a completed or failed one is given ``message`` as more instructions, with
        its whole conversation on the server."""
        thread, _ = _where(record)
        given: dict[str, Any] = {"input": self._input(message)}
        if record.status == "interrupted":
            try:
                given = {"command": {"resume": json.loads(message)}}
            except ValueError:
                given = {"command": {"resume": message}}
        try:
            client = self.client()
            run = await client.runs.create(thread, self.assistant_id, **given)
        except Exception as exc:
            raise RemoteError(self.failure(exc)) from exc
        self._follow_run(record, thread, run["run_id"])
        tasks.launch(record, self._watch(tasks, record, counted=True))

    def _follow_run(self, record: TaskRecord, thread: str, run_id: str) -> None:
        record.remote = {"url": self.url, "thread_id": thread, "run_id": run_id}

    # -- a task of a process that ended ---------------------------------------------------------

    async def adopt(
        self, tasks: BackgroundTasks, task_id: str, parent: str, known: Mapping[str, Any]
    ) -> TaskRecord:
        """The record of a task the thread's state knows but this process did not start
        (the process that did has ended): its run went on on the server, so it is not
        lost. Its outcome is read from the server if the run has ended, else a watcher
        follows it from now on, as if this process had started it."""
        record = TaskRecord(
            id=task_id,
            thread_id=parent,
            subagent_type=self.name,
            description=str(known.get("description", "")),
            status=str(known.get("status", "running")),
            result=known.get("result"),
            started_at=str(known.get("started_at", "")),
            finished_at=known.get("finished_at"),
            delivered=True,
            remote={str(k): str(v) for k, v in known["remote"].items()},
        )
        adopted = tasks.adopt(record)
        if adopted is not record or record.status != "running":
            return adopted
        thread, run_id = _where(record)
        try:
            client = self.client()
            status = (await client.runs.get(thread, run_id))["status"]
            found = None if status in ("pending", "running") else await client.threads.get(thread)
        except Exception as exc:
            tasks.finish(record, "failed", self.failure(exc))
            return record
        if found is None:
            tasks.launch(record, self._watch(tasks, record, counted=False))
            return record
        values, pending = found.get("values"), _thread_interrupts(found)
        self._count(record, values, counted=False)
        if pending:
            tasks.finish(record, "interrupted", _interrupted_text(pending))
        elif status == "interrupted":  # cancelled on the server
            tasks.finish(record, "cancelled", f"its run was cancelled on {self.url}")
        elif status == "success":
            used = _usage(values)
            usage = None if used is None else attrs.asdict(used)
            tasks.finish(record, "completed", _last_ai_text(values) or "", usage)
        else:
            tasks.finish(record, "failed", f"its run on the server at {self.url} ended {status}")
        return record

    async def _watch(self, tasks: BackgroundTasks, record: TaskRecord, *, counted: bool) -> None:
        """Follow the task's remote run until it ends; send queued follow-ups as new runs
        on the same thread; record the outcome. Each run's reported usage is counted in
        the run that launched this watcher if ``counted`` (not for a task adopted from a
        process that ended). Cancelled: cancel the remote run too."""
        try:
            client = self.client()
            while True:
                thread, run_id = _where(record)
                values = await self._follow(client, thread, run_id)
                self._count(record, values, counted=counted)
                if "__error__" in values:
                    tasks.finish(record, "failed", _run_error(self, values["__error__"]))
                    return
                pending = values.get("__interrupt__") or []
                if pending:
                    tasks.finish(record, "interrupted", _interrupted_text(pending))
                    return
                followups = tasks.take_followups(record)
                if followups:
                    run = await client.runs.create(
                        thread, self.assistant_id, input=self._input("\n\n".join(followups))
                    )
                    self._follow_run(record, thread, run["run_id"])
                    continue
                used = _usage(values)
                usage = None if used is None else attrs.asdict(used)
                tasks.finish(record, "completed", _last_ai_text(values) or "", usage)
                return
        except asyncio.CancelledError:
            # cancel_task marks the task first; otherwise the loop is closing (the agent,
            # the process), and the remote run goes on for a later process to follow
            if record.status == "cancelled":
                await self._cancel_remote(record)
            raise
        except Exception as exc:
            tasks.finish(record, "failed", self.failure(exc))

    async def _follow(self, client: LangGraphClient, thread: str, run_id: str) -> dict[str, Any]:
        """The run's final values. While the stream of the run that launched the watcher
        is open the run is streamed and relayed into it below the ``start_task`` call
        (``_relay_parts``; the watcher runs where that call nests runs); a stream quiet
        for longer than ``timeout`` falls back to a join."""
        import httpx

        modes = nesting.stream_modes()
        if modes:
            parts = client.runs.join_stream(thread, run_id, stream_mode=_asked(modes))
            try:
                return await self._relay_parts(parts)
            except httpx.ReadTimeout:
                pass
        return await self._join(client, thread, run_id)

    def _count(self, record: TaskRecord, values: Any, *, counted: bool) -> None:
        """Count the usage the remote thread's AI messages not counted yet report in the
        run the watcher nests in (``plait.nesting.count``), or only mark them counted."""
        messages = values.get("messages") if isinstance(values, Mapping) else None
        seen = self._counted.setdefault(record.id, set())
        fresh = [m for m in messages or () if isinstance(m, Mapping) and m.get("id") not in seen]
        seen.update(str(m["id"]) for m in fresh if m.get("id"))
        used = _usage({"messages": fresh})
        if counted and used is not None:
            nesting.count(used)

    async def _join(self, client: LangGraphClient, thread: str, run_id: str) -> dict[str, Any]:
        """The run's final values; a join that outlasts ``timeout`` is made again while the
        server says the run is still going."""
        import httpx

        while True:
            try:
                values = await client.runs.join(thread, run_id)
            except httpx.ReadTimeout:
                run = await client.runs.get(thread, run_id)
                if run["status"] in ("pending", "running"):
                    continue
                raise
            if not isinstance(values, dict):
                raise RemoteError(f"the server at {self.url} answered a join with {values!r:.200}")
            return values

    async def _cancel_remote(self, record: TaskRecord) -> None:
        thread, run_id = _where(record)
        try:
            client = self.client()
            await client.runs.cancel(thread, run_id)
        except Exception:  # finished meanwhile (409), or gone: nothing left to stop
            return


def _asked(modes: frozenset[str]) -> list[Any]:
    """The stream modes to ask the server for, to relay ``modes``: ``values`` for the
    outcome, ``updates`` for an interrupt the values may lack."""
    asked: list[Any] = ["values", "updates"]
    if "messages" in modes:
        asked.append("messages-tuple")
    if "custom" in modes:
        asked.append("custom")
    return asked


def _where(record: TaskRecord) -> tuple[str, str]:
    """A remote task's ``(thread id, current run id)`` on its server."""
    assert record.remote is not None, "a remote task records where it runs"
    return record.remote["thread_id"], record.remote["run_id"]


def _watched(record: TaskRecord) -> bool:
    """Whether a watcher of this process follows the task's run."""
    return record.handle is not None and not record.handle.done()


def _interrupted_text(pending: Sequence[Mapping[str, Any]]) -> str:
    return (
        "The sub-agent paused at an interrupt and waits for an answer: "
        f"{json.dumps(_interrupt_value(pending))}. Answer it with update_task (your message "
        "is sent as the resume value, as JSON if it is JSON) or stop it with cancel_task."
    )


def _thread_interrupts(thread: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A thread's pending interrupts (``interrupts`` maps a task to its list)."""
    found: list[dict[str, Any]] = []
    for items in (thread.get("interrupts") or {}).values():
        found.extend(items)
    return found


def _interrupt_value(pending: Sequence[Mapping[str, Any]]) -> Any:
    """As a local sub-agent's: the value of one interrupt, ``[{"id", "value"}]`` for
    several (answered with ``{id: answer}``)."""
    if len(pending) == 1:
        return pending[0].get("value")
    return [{"id": item.get("id"), "value": item.get("value")} for item in pending]


def _last_ai_text(values: Any) -> str | None:
    """The text of the last message of ``values`` if it is an AI message without tool
    calls (the remote's answer), else ``None``."""
    messages = values.get("messages") if isinstance(values, Mapping) else None
    if not messages:
        return None
    last = messages[-1]
    if not isinstance(last, Mapping) or last.get("type") not in ("ai", "AIMessageChunk"):
        return None
    if last.get("tool_calls"):
        return None
    content = last.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(block.get("text", ""))
            for block in content
            if isinstance(block, Mapping) and block.get("type") == "text"
        )
    return ""


def _said(response: Any) -> str:
    """What an error response says: its JSON message (plait serve's ``{"error":
    {"message"}}``, LangGraph's ``{"detail"}``), else its text, shortened."""
    try:
        body = response.json()
    except Exception:
        body = None
    if isinstance(body, Mapping):
        error = body.get("error")
        for found in (
            error.get("message") if isinstance(error, Mapping) else error,
            body.get("message"),
            body.get("detail"),
        ):
            if isinstance(found, str) and found:
                return found[:300]
    try:
        return str(response.text)[:300] or str(response.reason_phrase)
    except Exception:
        return str(response.reason_phrase)


def _usage(values: Any) -> Usage | None:
    """The usage the AI messages of a remote thread report, summed: plait's ``usage``
    (what ``plait serve`` sends) or LangChain's ``usage_metadata`` (a LangGraph server's);
    ``None`` if none reports any."""
    messages = values.get("messages") if isinstance(values, Mapping) else None
    total: Usage | None = None
    for message in messages or ():
        if not isinstance(message, Mapping) or message.get("type") not in ("ai", "AIMessageChunk"):
            continue
        found = _message_usage(message)
        if found is not None:
            total = found if total is None else total + found
    return total


_USAGE_FIELDS = frozenset(attrs.fields_dict(Usage))


def _message_usage(message: Mapping[str, Any]) -> Usage | None:
    plait_usage = message.get("usage")
    try:
        if isinstance(plait_usage, Mapping):
            return Usage(**{k: v for k, v in plait_usage.items() if k in _USAGE_FIELDS})
        metadata = message.get("usage_metadata")
        if isinstance(metadata, Mapping):
            given = metadata.get("input_token_details") or {}
            made = metadata.get("output_token_details") or {}
            return Usage(
                input_tokens=int(metadata.get("input_tokens") or 0),
                output_tokens=int(metadata.get("output_tokens") or 0),
                cache_read_tokens=int(given.get("cache_read") or 0),
                cache_write_tokens=int(given.get("cache_creation") or 0),
                reasoning_tokens=int(made.get("reasoning") or 0),
            )
    except (TypeError, ValueError):  # a server's odd figures: not worth failing the task
        return None
    return None


def _run_error(remote: RemoteSubAgent, error: Any) -> str:
    if isinstance(error, Mapping):
        error = f"{error.get('error')}: {error.get('message')}"
    return f"its run on the server at {remote.url} failed ({error})"


_MESSAGE_KEYS = {
    "ai": ("id", "content", "tool_calls"),
    "tool": ("id", "content", "tool_call_id", "name", "status"),
    "human": ("id", "content"),
    "system": ("id", "content"),
}


def _message(data: Any) -> AnyMessage | None:
    """A remote's message dict as a plait message (``None`` if it is not one)."""
    keys = _MESSAGE_KEYS.get(str(data.get("type"))) if isinstance(data, Mapping) else None
    if keys is None:
        return None
    try:
        return message_from_dict(
            {"type": data["type"], **{k: data[k] for k in keys if data.get(k) is not None}}
        )
    except (TypeError, ValueError):
        return None


def _plait_update(update: Any) -> Any:
    """A remote's update with its messages as plait messages (others kept as sent)."""
    if not isinstance(update, Mapping) or not isinstance(update.get("messages"), list):
        return update
    messages = [_message(item) or item for item in update["messages"]]
    return {**update, "messages": messages}


def _stream_message(data: Any) -> tuple[Any, str] | None:
    """A ``messages-tuple`` item as a plait stream item and its source: an AI chunk as an
    ``AIMessageChunk`` (``"model"``), a tool message as a ``ToolMessage`` (its tool)."""
    if not isinstance(data, Mapping):
        return None
    if data.get("type") in ("AIMessageChunk", "ai"):
        content = data.get("content")
        if isinstance(content, list):  # a LangGraph server's content blocks
            content = "".join(str(b.get("text", "")) for b in content if isinstance(b, Mapping))
        chunks = [
            ToolCallChunk(
                index=int(c.get("index") or i),
                id=c.get("id"),
                name=c.get("name"),
                args=c["args"] if isinstance(c.get("args"), str) else json.dumps(c.get("args")),
            )
            for i, c in enumerate(data.get("tool_call_chunks") or data.get("tool_calls") or ())
            if isinstance(c, Mapping)
        ]
        chunk = AIMessageChunk(
            content if isinstance(content, str) else "",
            tool_call_chunks=chunks,
            id=data.get("id"),
        )
        return chunk, "model"
    message = _message(data)
    if isinstance(message, ToolMessage):
        return message, message.name or "tools"
    return None
