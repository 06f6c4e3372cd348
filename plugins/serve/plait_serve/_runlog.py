"""The run log: every run on a thread appends its events, numbered per thread, to the
agent's checkpointer (``plait.checkpoint.EventLog``), and every protocol streams a
projection of it.

A run is a background task: the client that started it only follows its events, so a
client that disconnects cancels nothing; it reconnects from the last number it saw and
gets exactly the events after it, from the checkpointer and then live. While a run goes
on, its events are kept in memory too and written to the checkpointer in batches, so a
follower in this process gets each event as it happens and a slow disk never holds the
run back. A follower of a run in another process (a second server on the same database)
polls the checkpointer instead.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

import attrs

from plait import Agent
from plait.checkpoint import (
    HEARTBEAT_LEASE,
    RUN_HEARTBEAT,
    RUN_LEASE,
    EventLog,
    EventRetention,
    MemoryCheckpointer,
    RunLeases,
)
from plait.errors import ConfigError, ThreadBusyError
from plait.lazy import define
from plait.runlog import (
    END_TYPES,
    RunHandle,
    RunJob,
    abandon_run,
    arecord_run,
    cancel_paused_run,
    describe_error,
    submits_runs,
    submitted,
)
from plait_serve._timeline import recording

__all__ = [
    "CREATED",
    "REGISTRY",
    "SWEEP_EVERY",
    "TEMPORARY",
    "Busy",
    "Full",
    "NotFound",
    "RunLog",
    "safe_error",
]

log = logging.getLogger("plait_serve")

T = TypeVar("T")

_BATCH = 256  # events per append to a database checkpointer
_PAGE = 500  # events per read while catching up
_POLL = 0.1  # seconds between reads of a log another process writes
_RUN_ID_THREADS = 1024  # threads whose run ids are kept read (the latest used)

TEMPORARY = "stateless-"
"""What the id of a thread made for one run only (a stateless run's) begins with, the
key's scope aside: among the saved threads, a sweep looks only at such ids for the ones
a stopped server left (``RunLog.sweep``)."""

REGISTRY = "plait-serve:stateless-threads"
"""The run log listing the threads made for one run: one ``{"type": "temporary",
"thread": id}`` event each, written once its lease is held and before the thread is
made, forgotten once it is deleted. ``list_threads`` holds only threads that saved a
step, so without it a sweep would miss one whose run was killed before its first save.
No client can name it (``plait_serve._app.Server.thread``)."""

CREATED = "plait-serve:created-threads"
"""The run log listing the threads made before any run (the Agent Protocol's ``POST
/threads``): one ``{"type": "created", "thread": id}`` event each, written once the
thread's record is. ``list_threads`` holds only threads that saved a step, so without
it a thread search would miss one that has not run yet (``RunLog.threads``). A row is
forgotten once its thread saved a step or is gone. No client can name it."""

SWEEP_EVERY = 60.0
"""Seconds between a server's sweeps for the threads of stateless runs that a stopped
server left (``RunLog.sweeping``; ``plait serve --sweep-every``)."""


class NotFound(Exception):
    """The thread does not exist for this caller (or belongs to another key): HTTP 404."""


class Busy(Exception):
    """A run is already going on in this thread: HTTP 409."""


class Full(Exception):
    """The server runs as many runs as it allows at once: HTTP 429."""


def safe_error(exc: BaseException) -> tuple[str, str]:
    """``(message, code)`` for a failed run, fit for a client (``plait.runlog``'s)."""
    return describe_error(exc)


@define(eq=False)
class _Live:
    """A run going on in this process: its events so far (numbered ``first`` on), how
    many of them the checkpointer holds, and the waiters for the next one."""

    run_id: str
    first: int
    last: int
    flushed: int
    events: list[tuple[int, dict[str, Any]]] = attrs.field(factory=list)
    changed: asyncio.Event = attrs.field(factory=asyncio.Event)
    done: bool = False
    task: asyncio.Task[None] | None = None
    flushing: asyncio.Lock = attrs.field(factory=asyncio.Lock)
    flush_task: asyncio.Task[None] | None = None

    def notify(self) -> None:
        changed, self.changed = self.changed, asyncio.Event()
        changed.set()


@define(eq=False)
class _RunIds:
    """The run ids a thread's log holds, read up to event ``cursor``; ``head`` is its
    first event (never forgotten), so a thread deleted and made again reads anew."""

    head: Any
    cursor: int = 0
    ids: set[str] = attrs.field(factory=set)


def _cut(
    batch: list[tuple[int, dict[str, Any]]], one_run: bool
) -> tuple[list[tuple[int, dict[str, Any]]], bool]:
    """``batch`` up to its first end event (if ``one_run``), and whether it has one."""
    if one_run:
        for index, (_, event) in enumerate(batch):
            if event.get("type") in END_TYPES:
                return batch[: index + 1], True
    return batch, False


class RunLog:
    """Runs ``agent`` in background tasks and records their events; see the module doc.

    :param agent: the served agent; its checkpointer must be an ``EventLog`` (every
        built-in one is).
    :param max_runs: how many runs may go on at once (more: ``Full``).
    :param timeline: also record each model call (the request as the provider got it)
        and tool run, with its duration and usage (``plait_serve._timeline``).
    :param tell: what a value read out of the log becomes for its client (the stored
        thread ids in its texts named as the client names them: ``_auth.unscoper``);
        applied to every event read (``batches``, ``read``, ``written_soon``,
        ``record``), so an error text the kernel wrote with the stored id reads with the
        client's.
    """

    def __init__(
        self,
        agent: Agent,
        *,
        max_runs: int = 256,
        timeline: bool = False,
        keep_events: int | None = None,
        tell: Callable[[Any], Any] | None = None,
    ) -> None:
        checkpointer = agent.checkpointer
        if checkpointer is None or not isinstance(checkpointer, EventLog):
            got = "no checkpointer" if checkpointer is None else type(checkpointer).__name__
            raise ConfigError(
                "plait-serve: agent checkpointer: expected a checkpointer that keeps a run "
                "log ('memory', 'sqlite:///agent.db', 'postgresql://...'), got " + got
            )
        self.agent = agent
        self.log: EventLog = checkpointer
        self._tell = tell
        # The memory checkpointer answers in microseconds: call it inline, not in a thread.
        self._inline = isinstance(checkpointer, MemoryCheckpointer)
        self._live: dict[str, _Live] = {}
        self.max_runs = max_runs
        self.timeline = timeline
        self._reserved = 0  # runs being started (counted against max_runs)
        # One start at a time per thread; the lock goes when nobody waits for it.
        self._starting: dict[str, asyncio.Lock] = {}
        self._waiting: collections.Counter[str] = collections.Counter()
        self._run_ids: collections.OrderedDict[str, _RunIds] = collections.OrderedDict()
        # Runs a middleware took over (``submit_run``: a dbos worker runs them), by thread.
        self._away: dict[str, RunHandle] = {}
        # Threads made for one run only, by thread: the run's id. Their lease is held
        # (renewed by the heartbeat) until ``discard`` deletes them, so another server's
        # sweep knows they are not left behind (``sweep``).
        self._held: dict[str, str] = {}
        # Their rows in the REGISTRY, by thread: kept where a sweep can prove a run dead
        # (run leases) and rows can be forgotten (event retention) — not in memory,
        # which no other process shares and a killed one takes along.
        self._rows: dict[str, int] = {}
        self._registry = (
            not self._inline
            and isinstance(checkpointer, RunLeases)
            and isinstance(checkpointer, EventRetention)
        )
        self._watchers: set[asyncio.Task[None]] = set()
        self._submits = submits_runs(agent)
        self.elsewhere = self._submits
        """Whether a middleware runs this agent's runs (``submit_run``): a run whose log
        has not ended is going on elsewhere (a queued durable run), not lost."""
        # The heartbeat: while runs go on here, their leases are renewed every
        # RUN_HEARTBEAT s, so a follower in another process sees within HEARTBEAT_LEASE s
        # that this one died.
        self._leases = checkpointer if isinstance(checkpointer, RunLeases) else None
        self._beating: asyncio.Task[None] | None = None
        self.keep_events = keep_events
        if keep_events is not None and not isinstance(checkpointer, EventRetention):
            raise ConfigError(
                "plait-serve: keep_events: expected a checkpointer whose run log forgets "
                f"events (memory, SQLite, PostgreSQL), got {type(checkpointer).__name__}"
            )

    @contextlib.asynccontextmanager
    async def _start_lock(self, thread_id: str) -> AsyncIterator[None]:
        lock = self._starting.setdefault(thread_id, asyncio.Lock())
        self._waiting[thread_id] += 1
        try:
            async with lock:
                yield
        finally:
            self._waiting[thread_id] -= 1
            if not self._waiting[thread_id]:
                del self._waiting[thread_id], self._starting[thread_id]

    async def call(self, func: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """``func(*args, **kwargs)`` without blocking the event loop."""
        if self._inline:
            return func(*args, **kwargs)
        return await asyncio.to_thread(func, *args, **kwargs)

    # -- owners ----------------------------------------------------------------------------

    async def owner(self, thread_id: str) -> str | None:
        """The key id owning ``thread_id`` (its first event), or ``None``."""
        first = await self.call(self.log.read_events, thread_id, after=0, limit=1)
        if first and first[0][1].get("type") == "thread":
            owner = first[0][1].get("owner")
            return owner if isinstance(owner, str) else None
        return None

    async def require(self, thread_id: str, owner: str) -> None:
        """``NotFound`` unless ``owner`` owns ``thread_id``."""
        if await self.owner(thread_id) != owner:
            raise NotFound(thread_id)

    async def _new_thread(self, thread_id: str, owner: str, *, adopt: bool) -> bool:
        """Whether ``thread_id`` is new (``owner`` may claim it); ``NotFound`` if another
        owner has it. A thread with state but no run log (made outside the server) is
        ``owner``'s to take only if ``adopt`` (no keys are configured)."""
        current = await self.owner(thread_id)
        if current is not None:
            if current != owner:
                raise NotFound(thread_id)
            return False
        if await self.call(self.log.last_event, thread_id) > 0:
            raise NotFound(thread_id)  # a log without an owner record: not ours to take
        checkpointer = self.agent.checkpointer
        assert checkpointer is not None
        if not adopt and await self.call(checkpointer.step, thread_id) > 0:
            raise NotFound(thread_id)
        return True

    async def claim(
        self,
        thread_id: str,
        owner: str,
        *,
        adopt: bool,
        metadata: dict[str, Any] | None = None,
    ) -> bool:
        """Make ``thread_id`` ``owner``'s before any run (the Agent Protocol's ``POST
        /threads``); ``False`` if it was theirs already, ``NotFound`` if another's."""
        async with self._start_lock(thread_id):
            if not await self._new_thread(thread_id, owner, adopt=adopt):
                return False
            await self._claim(thread_id, owner, metadata=metadata)
            row = {"type": "created", "thread": thread_id}
            await self.call(self._append_row, CREATED, row)
            return True

    async def threads(self) -> list[str]:
        """Every thread id with state or a record, oldest first: the saved ones
        (``list_threads``) and then those made before any run that have not saved a step
        yet (``CREATED``); the rows of the others (saved since, or deleted) are forgotten
        here, where the checkpointer forgets events."""
        saved = await self.call(self.agent.list_threads)
        known = set(saved)
        made: dict[str, None] = {}
        done: list[int] = []
        for number, event in await self.call(self.log.read_events, CREATED):
            thread = event.get("thread") if isinstance(event, dict) else None
            if not isinstance(thread, str) or thread in known or thread in made:
                done.append(number)
            elif await self.call(self.log.last_event, thread) == 0:
                done.append(number)  # deleted: no record left
            else:
                made[thread] = None
        if done and isinstance(self.log, EventRetention):
            await self.call(self._forget_rows, CREATED, done)
        return [*saved, *made]

    async def record(self, thread_id: str) -> dict[str, Any] | None:
        """The thread's first event (its owner, creation time, metadata), or ``None``;
        as a client reads it (``tell``: the owner, a key id, is no thread id)."""
        first = await self.call(self.log.read_events, thread_id, after=0, limit=1)
        if first and first[0][1].get("type") == "thread":
            return dict(self.tell(first[0][1]))
        return None

    async def _claim(
        self,
        thread_id: str,
        owner: str,
        *,
        metadata: dict[str, Any] | None = None,
        temporary: bool = False,
    ) -> None:
        record: dict[str, Any] = {"type": "thread", "owner": owner, "created": time.time()}
        if metadata:
            record["metadata"] = metadata
        if temporary:
            record["temporary"] = True
        try:
            await self.call(self.log.append_events, thread_id, [record], after=0)
        except ThreadBusyError:  # another server process claimed it first
            if await self.owner(thread_id) != owner:
                raise NotFound(thread_id) from None

    # -- runs ------------------------------------------------------------------------------

    async def run_ids(self, thread_id: str) -> frozenset[str]:
        """The ids of the runs in the thread's log — read whole once, then only the
        events appended since (a long thread is not read again for every run)."""
        head = await self.call(self.log.read_events, thread_id, after=0, limit=1)
        first = head[0][1] if head else None
        known = self._run_ids.pop(thread_id, None)
        if known is None or known.head != first:
            known = _RunIds(first)
        while rows := await self.call(
            self.log.read_events, thread_id, after=known.cursor, limit=_PAGE
        ):
            known.cursor = rows[-1][0]
            known.ids.update(e["run_id"] for _, e in rows if e.get("type") == "run_started")
        self._run_ids[thread_id] = known
        if len(self._run_ids) > _RUN_ID_THREADS:
            self._run_ids.popitem(last=False)
        return frozenset(known.ids)

    def running(self, thread_id: str) -> str | None:
        """The id of the run going on in ``thread_id`` that this process runs or
        submitted, if any."""
        away = self._away.get(thread_id)
        if away is not None:
            return away.job.run_id
        live = self._live.get(thread_id)
        return None if live is None or live.done else live.run_id

    def written_soon(self, thread_id: str) -> list[tuple[int, dict[str, Any]]]:
        """The numbered events of the run going on here in ``thread_id``: the
        checkpointer may not hold the last of them yet (they are written in batches)."""
        live = self._live.get(thread_id)
        return [] if live is None else self._told(live.events)

    def tell(self, value: Any) -> Any:
        """``value`` (a text, an event) as a client reads it (see ``tell`` above)."""
        return value if self._tell is None else self._tell(value)

    def _told(self, rows: list[tuple[int, dict[str, Any]]]) -> list[tuple[int, dict[str, Any]]]:
        if self._tell is None:
            return list(rows)
        return [(seq, self._tell(event)) for seq, event in rows]

    async def read(
        self, thread_id: str, after: int, limit: int
    ) -> list[tuple[int, dict[str, Any]]]:
        """Up to ``limit`` of the thread's stored events after ``after``, as a client
        reads them (``tell``)."""
        rows = await self.call(self.log.read_events, thread_id, after=after, limit=limit)
        return self._told(rows)

    async def start(
        self,
        thread_id: str,
        prepare: Callable[[], Awaitable[Any]],
        *,
        run_id: str,
        owner: str,
        adopt: bool,
        metadata: dict[str, Any] | None = None,
        temporary: bool = False,
    ) -> int:
        """Start a run on ``thread_id`` for ``owner`` in the background; returns the
        number of its first event. ``NotFound`` if another owner has the thread, ``Busy``
        if a run is going on there. ``prepare()`` returns the run's input; it runs only
        then, so what it checks (a pending interrupt) cannot change before the run
        starts, and whatever it raises starts nothing and claims no thread. ``metadata``
        (the client's, for the run) is kept in its ``run_started`` event. A
        ``temporary`` thread (new, its id beginning with ``TEMPORARY``) is made for this
        run only: its lease is taken before it is made and held until ``discard``."""
        async with self._start_lock(thread_id):
            new = await self._new_thread(thread_id, owner, adopt=adopt)
            if thread_id in self._away and await self._settled(
                thread_id, await self.call(self.log.last_event, thread_id)
            ):  # its log has ended; its workflow is finishing up
                del self._away[thread_id]
            ending = self._live.get(thread_id)
            while ending is not None and not ending.done and ending.events:
                if ending.events[-1][1].get("type") not in END_TYPES:
                    break
                # It has ended (its client may already ask for the next run): its last
                # events are being written; the next run starts after them.
                await ending.changed.wait()
            if self.running(thread_id) is not None:
                raise Busy(thread_id)
            if len(self._live) + len(self._away) + self._reserved >= self.max_runs:
                raise Full(self.max_runs)
            self._reserved += 1
            try:
                input = await prepare()
                temporary = temporary and new and not self._submits
                row = 0
                if temporary and self._leases is not None:  # held before it exists
                    await self.call(self._leases.renew_lease, thread_id, run_id, HEARTBEAT_LEASE)
                    if self._registry:  # listed before it exists, its lease held
                        row = await self.call(self._register, thread_id)
                if new:
                    await self._claim(thread_id, owner, temporary=temporary)
                last = await self.call(self.log.last_event, thread_id)
                alive = await self._lease_alive(thread_id)
                if alive is not None and not await self._settled(thread_id, last):
                    # A run of another process (a server on the same database) is in
                    # the log: busy while it lives; if it died, its log ends here.
                    if alive:
                        raise Busy(thread_id)
                    if await self._lost(thread_id, last) is not None:
                        last += 1
                started: dict[str, Any] = {"type": "run_started", "run_id": run_id}
                if metadata:
                    started["metadata"] = metadata
                if self._submits:
                    first = await self._submit(thread_id, input, started, last)
                    if first is not None:
                        return first
                    last += 1  # run_started is written: the run is this process's after all
            finally:
                self._reserved -= 1
            live = _Live(run_id, first=last + 1, last=last, flushed=last)
            if self._leases is not None:  # before its first event is written
                await self.call(self._leases.renew_lease, thread_id, run_id, HEARTBEAT_LEASE)
            self._live[thread_id] = live
            if temporary:
                self._held[thread_id] = run_id
                if row:
                    self._rows[thread_id] = row
            if self._leases is not None and (self._beating is None or self._beating.done()):
                self._beating = asyncio.create_task(self._heartbeat())
        if not self._submits:
            self._emit(thread_id, live, started)
        else:
            live.first -= 1
            live.events.append((live.first, started))
        live.task = asyncio.create_task(self._run(thread_id, live, input))
        return live.first

    async def _submit(
        self, thread_id: str, input: Any, started: dict[str, Any], last: int
    ) -> int | None:
        """Offer the run to the agent's ``submit_run`` hooks (the ``dbos`` middleware
        queues it for its workers), its ``started`` event written first, after the log's
        last event — refused (``Busy``) while a run of another process has not ended
        there. The number of its ``run_started`` when a middleware took it, ``None`` when
        none did (it is then this process's to run)."""
        if not await self._settled(thread_id, last):
            raise Busy(thread_id)
        run_id = started["run_id"]
        try:
            first = await self.call(self.log.append_events, thread_id, [started], after=last)
        except ThreadBusyError:  # another server started a run there meanwhile
            raise Busy(thread_id) from None
        try:
            handle = await submitted(self.agent, RunJob(thread_id, input, run_id, first))
        except Exception as exc:
            message, code = safe_error(exc)
            log.error("run %s on thread %s was not submitted", run_id, thread_id, exc_info=exc)
            error = {"type": "run_error", "run_id": run_id, "message": message, "code": code}
            await self.call(self.log.append_events, thread_id, [error], after=first)
            return first
        if handle is None:
            return None
        self._away[thread_id] = handle
        task = asyncio.create_task(self._watch(thread_id, handle))
        self._watchers.add(task)
        task.add_done_callback(self._watchers.discard)
        return first

    async def _watch(self, thread_id: str, handle: RunHandle) -> None:
        """Forget a submitted run once it has ended."""
        try:
            await handle.wait()
        except Exception:
            log.exception("could not follow run %s on thread %s", handle.job.run_id, thread_id)
        finally:
            if self._away.get(thread_id) is handle:
                del self._away[thread_id]

    async def cancel(self, thread_id: str) -> bool:
        """Cancel the run going on in ``thread_id`` (its log ends with a ``cancelled``
        ``run_finished``); ``False`` if none was. A submitted run is cancelled where it
        runs (for ``dbos``: its workflow is cancelled)."""
        away = self._away.get(thread_id)
        if away is not None:
            await away.cancel()
            return True
        live = self._live.get(thread_id)
        if live is None or live.done or live.task is None:
            return False
        live.task.cancel()
        return True

    async def cancel_paused(self, thread_id: str, run_id: str) -> bool:
        """End the thread's run paused at an interrupt without answering it
        (``plait.runlog.cancel_paused_run``: the calls it held back get error results),
        logged under ``run_id`` — the paused run's id, so it reads as that run going on
        and ending ``cancelled`` (``_runs.runs_of``), not as a run of its own; ``False``
        if the thread is not paused, ``Busy`` while a run goes on there."""
        async with self._start_lock(thread_id):
            last = await self.call(self.log.last_event, thread_id)
            if self.running(thread_id) is not None or not await self._settled(thread_id, last):
                raise Busy(thread_id)
            try:
                events = await self.call(cancel_paused_run, self.agent, thread_id, run_id)
                if events is None:
                    return False
                started = {"type": "run_started", "run_id": run_id}
                await self.call(self.log.append_events, thread_id, [started, *events], after=last)
            except ThreadBusyError:  # a run of another process on the same database
                raise Busy(thread_id) from None
            return True

    async def _run(self, thread_id: str, live: _Live, input: Any) -> None:
        def emit(event: dict[str, Any]) -> None:
            self._emit(thread_id, live, event)

        try:
            with self._recording(thread_id, live):
                await arecord_run(
                    self.agent,
                    input,
                    thread_id=thread_id,
                    run_id=live.run_id,
                    emit=emit,
                    describe=self._describe(live, thread_id),
                )
        except asyncio.CancelledError:
            pass  # recorded as a cancelled run
        finally:
            with contextlib.suppress(Exception):
                await self._flush(thread_id, live)
            live.done = True
            live.notify()
            if self._live.get(thread_id) is live:
                del self._live[thread_id]
            # Housekeeping once the thread is free (the next run may start meanwhile:
            # its lease is its own, and it appends after what is trimmed).
            if self._leases is not None and thread_id not in self._held:
                with contextlib.suppress(Exception):
                    await self.call(self._leases.end_lease, thread_id, live.run_id)
            if self.keep_events is not None:
                try:
                    await self.call(self._trim, thread_id, self.keep_events)
                except Exception:
                    log.exception("could not trim the run log of thread %s", thread_id)

    def _trim(self, thread_id: str, keep: int) -> int:
        """Forget the events of the thread's finished runs that end before its last
        ``keep`` events — whole runs, and never its first event (it names the owner).
        Returns how many were forgotten. Blocking."""
        assert isinstance(self.log, EventRetention)
        cut = self.log.last_event(thread_id) - keep
        if cut <= 1:
            return 0
        rows = self.log.read_events(thread_id, after=1, limit=cut)
        ends = [seq for seq, event in rows if seq <= cut and event.get("type") in END_TYPES]
        if not ends:
            return 0
        return self.log.forget_events(thread_id, after=1, through=ends[-1])

    async def kept(self, thread_id: str, after: int) -> int | None:
        """``None`` if the events after ``after`` are all kept; else the number of the
        last forgotten one (``keep_events``), which a reader must resume after."""
        if after < 1:
            return None  # "everything": what is kept
        rows = await self.call(self.log.read_events, thread_id, after=after, limit=1)
        if rows and rows[0][0] > after + 1:
            return int(rows[0][0]) - 1
        return None

    async def _heartbeat(self) -> None:
        """Renew the lease of each run going on here, until none does."""
        assert self._leases is not None
        while True:
            await asyncio.sleep(RUN_HEARTBEAT)
            if not self._live and not self._held:
                return  # (no await since the check: a run started now starts a new beat)
            leases = {t: live.run_id for t, live in self._live.items() if not live.done}
            for thread_id, run_id in {**self._held, **leases}.items():
                try:
                    await self.call(self._leases.renew_lease, thread_id, run_id, HEARTBEAT_LEASE)
                except Exception:  # the database is away: the lease may run out
                    log.warning("could not renew the lease of run %s", run_id)

    async def _lease_alive(self, thread_id: str) -> bool | None:
        """Whether the thread's run lease is held (``None``: no lease to tell)."""
        if self._leases is None:
            return None
        lease = await self.call(self._leases.run_lease, thread_id)
        return None if lease is None else lease.expires > time.time()

    async def held(self, thread_id: str, run_id: str) -> bool:
        """Whether ``run_id`` holds the thread's lease: it goes on in a live process
        (another server on the same database, if not this one)."""
        if self._leases is None:
            return False
        lease = await self.call(self._leases.run_lease, thread_id)
        return lease is not None and lease.run_id == run_id and lease.expires > time.time()

    async def _lost(self, thread_id: str, cursor: int) -> dict[str, Any] | None:
        """The ``run_error`` that ends the log of a run whose process died (its lease ran
        out), appended after ``cursor``, its stored run marked failed (so the thread
        takes new input at once); ``None`` while it lives, when the checkpointer keeps
        no leases, or when another writer appended meanwhile. Never for a run a
        middleware runs (a durable run is taken over by another worker, not lost)."""
        if self._leases is None or self.elsewhere:
            return None
        lease = await self.call(self._leases.run_lease, thread_id)
        now = time.time()
        if lease is None or lease.expires > now:
            return None
        event = {
            "type": "run_error",
            "run_id": lease.run_id,
            "code": "run_lost",
            "message": (
                f"the process running run {lease.run_id} stopped: its lease ran out "
                f"{now - lease.expires:.1f} s ago without a heartbeat; the thread keeps "
                "what the run saved, and new input starts a new run"
            ),
        }
        try:
            await self.call(self.log.append_events, thread_id, [event], after=cursor)
        except ThreadBusyError:
            return None
        with contextlib.suppress(ThreadBusyError):  # saved meanwhile: it was alive
            await self.call(abandon_run, self.agent, thread_id)
        return event

    @staticmethod
    def _describe(live: _Live, thread_id: str) -> Callable[[BaseException], tuple[str, str]]:
        def describe(exc: BaseException) -> tuple[str, str]:
            message, code = safe_error(exc)
            if code == "internal_error":
                log.error("run %s on thread %s failed", live.run_id, thread_id, exc_info=exc)
            return message, code

        return describe

    def _recording(self, thread_id: str, live: _Live) -> contextlib.AbstractContextManager[None]:
        """The timeline's performer installed for the run (if ``timeline``)."""
        if not self.timeline:
            return contextlib.nullcontext()
        loop = asyncio.get_running_loop()
        home = threading.get_ident()

        def emit(event: dict[str, Any]) -> None:
            # Tools and sync providers run in worker threads: the log is the loop's.
            if threading.get_ident() == home:
                self._emit(thread_id, live, event)
            else:
                loop.call_soon_threadsafe(self._emit, thread_id, live, event)

        return recording(emit)

    def _emit(self, thread_id: str, live: _Live, event: dict[str, Any]) -> None:
        live.last += 1
        live.events.append((live.last, event))
        live.notify()
        if self._inline:
            self.log.append_events(thread_id, [event], after=live.last - 1)
            live.flushed = live.last
        elif live.flush_task is None or live.flush_task.done():
            live.flush_task = asyncio.create_task(self._flush(thread_id, live))

    async def _flush(self, thread_id: str, live: _Live) -> None:
        """Write the events the checkpointer does not hold yet, in order, in batches."""
        async with live.flushing:
            while live.flushed < live.last:
                start = live.flushed - live.first + 1
                batch = [event for _, event in live.events[start : start + _BATCH]]
                try:
                    await self.call(self.log.append_events, thread_id, batch, after=live.flushed)
                except Exception:
                    log.exception("could not write the run log of thread %s", thread_id)
                    raise
                live.flushed += len(batch)

    # -- followers -------------------------------------------------------------------------

    async def follow(
        self, thread_id: str, after: int, *, one_run: bool = True
    ) -> AsyncIterator[tuple[int, dict[str, Any]]]:
        """The thread's events numbered above ``after``, one by one (see ``batches``)."""
        async for batch in self.batches(thread_id, after, one_run=one_run):
            for item in batch:
                yield item

    async def batches(
        self, thread_id: str, after: int, *, one_run: bool = True
    ) -> AsyncIterator[list[tuple[int, dict[str, Any]]]]:
        """The thread's events numbered above ``after``, as they happen, in batches of
        those ready together (one write to the client each): from the checkpointer, then
        from the run going on (if any). With ``one_run``, it ends after the first run's
        end event; otherwise when the log has nothing newer and no run goes on."""
        cursor = after
        idle_since = time.monotonic()
        while True:
            live = self._live.get(thread_id)
            if live is not None and cursor >= live.first - 1:
                waiter = live.changed
                batch = live.events[cursor - (live.first - 1) :]
                if batch:
                    batch, ended = _cut(batch, one_run)
                    cursor = batch[-1][0]
                    yield self._told(batch)
                    if ended:
                        return
                    continue
                if live.done:
                    if self._live.get(thread_id) is live:
                        return
                    continue
                await waiter.wait()
                continue
            limit = _PAGE
            if live is not None:
                limit = min(limit, live.first - 1 - cursor)
            rows = await self.call(self.log.read_events, thread_id, after=cursor, limit=limit)
            if rows:
                cursor = rows[-1][0]
                idle_since = time.monotonic()
                batch, ended = _cut([r for r in rows if r[1].get("type") != "thread"], one_run)
                if batch:
                    cursor = batch[-1][0] if ended else cursor
                    yield self._told(batch)
                if ended:
                    return
                continue
            if self._live.get(thread_id) is not None:
                continue
            if thread_id in self._away:  # a worker elsewhere writes it: poll
                await asyncio.sleep(_POLL)
                continue
            if not one_run or await self._settled(thread_id, cursor):
                return
            # A run in another process (another server on the same database) may still
            # be writing: poll, until it ends, its lease runs out (its process died: the
            # log ends with a run_error), or — without leases — it has been silent as
            # long as a run lease.
            silent = time.monotonic() - idle_since
            lost = await self._lost(thread_id, cursor) if silent > RUN_HEARTBEAT else None
            if lost is not None:
                yield self._told([(cursor + 1, lost)])
                return
            if silent > RUN_LEASE:
                return
            await asyncio.sleep(_POLL)

    async def _settled(self, thread_id: str, cursor: int) -> bool:
        """Whether the log up to ``cursor`` ends with a finished run (or is empty)."""
        if cursor == 0:
            return True
        last = await self.call(self.log.read_events, thread_id, after=cursor - 1, limit=1)
        return not last or last[0][1].get("type") in END_TYPES | {"thread"}

    async def discard(self, thread_id: str) -> None:
        """Delete a thread made for one run (``start(temporary=True)``) once that run
        has ended, unless a run started on it since."""
        self._held.pop(thread_id, None)
        if self.running(thread_id) is None:
            await self.call(self.agent.delete_thread, thread_id)
            row = self._rows.pop(thread_id, None)
            if row is not None:
                await self.call(self._unregister, row)

    def _register(self, thread_id: str) -> int:
        """List ``thread_id`` in the ``REGISTRY``; the number of its row. Blocking."""
        return self._append_row(REGISTRY, {"type": "temporary", "thread": thread_id})

    def _append_row(self, registry: str, row: dict[str, Any]) -> int:
        """Append ``row`` to the run log ``registry``; its number. Blocking."""
        while True:
            last = self.log.last_event(registry)
            try:
                return self.log.append_events(registry, [row], after=last)
            except ThreadBusyError:  # another writer listed its row meanwhile: after it
                continue

    def _unregister(self, row: int) -> None:
        """Forget the ``REGISTRY``'s row ``row`` (its thread is gone). Blocking."""
        self._forget_rows(REGISTRY, [row])

    def _forget_rows(self, registry: str, rows: list[int]) -> None:
        """Forget the rows ``rows`` of the run log ``registry`` — except its newest: a
        log's last number is its newest event's, so forgetting that one would give its
        number to the next row (a reader of the registry before would then forget the
        wrong one). The next pass after a newer row forgets it. Blocking."""
        assert isinstance(self.log, EventRetention)
        last = self.log.last_event(registry)
        for row in rows:
            if row < last:
                self.log.forget_events(registry, after=row - 1, through=row)

    async def sweeping(self, every: float | None) -> None:
        """``sweep`` now, looking at every saved thread too (those a server left before
        the registry), then every ``every`` seconds (``None``: never again) until
        cancelled. A pass that fails (the database is away) is logged; the next tries
        again."""
        saved = True
        while True:
            try:
                await self.sweep(saved=saved)
                saved = False
            except Exception:
                log.exception("could not delete the threads stateless runs left")
            if every is None:
                return
            await asyncio.sleep(every)

    async def sweep(self, *, saved: bool = True) -> int:
        """Delete the threads made for one run that a stopped server left (it was
        killed mid-run, or before it deleted one): those the ``REGISTRY`` lists (its
        run killed before its first save included) and, if ``saved`` or the
        checkpointer keeps no registry, the saved ones whose id has ``TEMPORARY`` —
        each whose first event says it is one and whose lease no live process holds.
        One whose lease is alive is looked at again once it would have run out, and
        left if it was renewed (its server lives, and deletes it). Without run leases
        (a custom checkpointer) no process can be proved dead: nothing is deleted.
        Returns how many were."""
        if self._leases is None:
            return 0
        found: dict[str, int | None] = {}
        if saved or not self._registry:
            threads = await self.call(self.agent.list_threads)
            found.update((t, None) for t in threads if TEMPORARY in t)
        if self._registry:
            for number, event in await self.call(self.log.read_events, REGISTRY):
                thread = event.get("thread") if isinstance(event, dict) else None
                if isinstance(thread, str):
                    found[thread] = number
        waiting: dict[str, float] = {}
        deleted = 0
        for thread_id, row in found.items():
            expires = await self._abandoned(thread_id, listed=row is not None)
            if expires == 0.0:
                deleted += await self._delete(thread_id, row)
            elif expires is not None:
                waiting[thread_id] = expires
        if waiting:
            await asyncio.sleep(max(waiting.values()) - time.time() + 1)
            for thread_id in waiting:
                if await self._abandoned(thread_id, listed=found[thread_id] is not None) == 0.0:
                    deleted += await self._delete(thread_id, found[thread_id])
        if deleted:
            log.info("deleted %d thread(s) of stateless runs a stopped server left", deleted)
        return deleted

    async def _delete(self, thread_id: str, row: int | None) -> int:
        """For ``sweep``: delete an abandoned thread and forget its row; 1 if the
        thread was there (a registry row may outlive its thread by a moment)."""
        made = await self.record(thread_id) is not None
        await self.call(self.agent.delete_thread, thread_id)
        if row is not None:
            await self.call(self._unregister, row)
        return int(made)

    async def _abandoned(self, thread_id: str, *, listed: bool = False) -> float | None:
        """For ``sweep``: ``0.0`` if ``thread_id`` is a thread made for one run that no
        live process holds (or, ``listed`` in the registry, one that is gone or was
        never made: its row is done with); the time its lease runs out if one may
        (alive now); ``None`` if it is not to be deleted."""
        if self.running(thread_id) is not None or thread_id in self._held:
            return None
        record = await self.record(thread_id)
        if record is None and not listed:
            return None  # not the server's
        if record is not None and record.get("temporary") is not True:
            return None
        if self.elsewhere and not await self._settled(
            thread_id, await self.call(self.log.last_event, thread_id)
        ):
            return None  # a durable run goes on without a server
        assert self._leases is not None
        lease = await self.call(self._leases.run_lease, thread_id)
        if lease is not None and lease.expires > time.time():
            return lease.expires
        return 0.0

    async def aclose(self) -> None:
        """Cancel every run going on here and wait for their logs to be written. A run
        a middleware took over goes on without this server (a durable run outlives it).
        The threads made for one run are deleted."""
        for watcher in list(self._watchers):
            watcher.cancel()
        if self._beating is not None:
            self._beating.cancel()
        tasks = [live.task for live in self._live.values() if live.task is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for thread_id in list(self._held):
            with contextlib.suppress(Exception):
                await self.discard(thread_id)
