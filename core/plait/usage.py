"""The usage ledger of a run: what every model call made on its behalf spent.

Every call of a ``ChatModel`` made while a run is in progress is recorded in that run's
``RunUsage`` and in the ledgers of the runs it is nested in: the agent's own calls, each
retry or fallback attempt, an answer refused by ``response_format``, the calls a
middleware makes itself (summaries, tool selection, emulation), and every call of a run
started inside one of the run's tool calls (a sub-agent). ``result.usage`` is the
ledger's total. A call whose provider reports no usage is recorded as an estimate
(``plait.tokens``) with ``Usage.estimated`` set, never as zero.

Limits (``usage_limit``, ``model_call_limit``) register a check on the ledger of their run
(``RunUsage.limit``); each model call made in that run, or in a run nested in it, runs
every check up the chain before it starts, so no call starts once a limit is reached.
A nested run started inside ``exempt(...)`` skips the named limits of the runs around it.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from typing import Any

import attrs

from plait.messages import AIMessage, AnyMessage, Usage
from plait.tokens import count_tokens

__all__ = ["RunUsage", "current", "estimate", "exempt"]

Check = Callable[["RunUsage"], None]
Price = Callable[[Any, Usage], "float | None"]
"""``price(model, usage)``: a call's cost in dollars (``model`` is the ``ChatModel``)."""

_current: ContextVar[RunUsage | None] = ContextVar("plait_run_usage", default=None)
_exempt: ContextVar[frozenset[str]] = ContextVar("plait_usage_exempt", default=frozenset())


def current() -> RunUsage | None:
    """The ledger of the run in progress in this context (``None`` outside a run)."""
    return _current.get()


@contextlib.contextmanager
def exempt(*names: str) -> Iterator[None]:
    """Runs started inside the ``with`` block skip the limits registered under ``names``
    by the runs around them (a sub-agent that opts out of its parent's budget). Their
    calls are still counted in every ledger."""
    token = _exempt.set(_exempt.get() | frozenset(names))
    try:
        yield
    finally:
        _exempt.reset(token)


class RunUsage:
    """One run's ledger. Thread-safe: a run's calls may finish in several threads at once
    (parallel tool calls, sub-agents)."""

    def __init__(
        self,
        *,
        base: Usage | None = None,
        base_calls: int = 0,
        parent: RunUsage | None = None,
        path: tuple[str, ...] = (),
        exempt: frozenset[str] = frozenset(),
    ) -> None:
        """:param base: what the run had spent before this part of it (a resumed run).
        :param parent: the ledger of the run this one is nested in.
        :param path: the tool call ids, from the outermost run's, of the calls this run
            was started in.
        :param exempt: limit names of the outer runs this run skips."""
        self.parent = parent
        self.path = path
        self.exempt = exempt
        self._lock = threading.Lock()
        self._base = base or Usage()
        self._base_calls = base_calls
        self._spent = Usage()
        self._calls = 0
        self._nested: dict[tuple[str, ...], Usage] = {}
        self._limits: dict[Hashable, tuple[str, Check]] = {}
        self._price: Price | None = None

    @classmethod
    def start(
        cls, *, base: Usage | None = None, base_calls: int = 0, path: tuple[str, ...] = ()
    ) -> RunUsage:
        """A ledger for a run starting in this context, nested in the run in progress."""
        return cls(
            base=base, base_calls=base_calls, parent=_current.get(), path=path, exempt=_exempt.get()
        )

    @contextlib.contextmanager
    def active(self) -> Iterator[RunUsage]:
        """Record the model calls made inside the ``with`` block in this ledger."""
        token = _current.set(self)
        try:
            yield self
        finally:
            _current.reset(token)

    # -- what was spent --------------------------------------------------------------------

    @property
    def total(self) -> Usage:
        """The whole run's usage: earlier parts of it (``base``), this part's calls and
        the calls of every run nested in it."""
        with self._lock:
            return self._base + self._spent

    @property
    def spent(self) -> Usage:
        """This part of the run only (without ``base``)."""
        with self._lock:
            return self._spent

    @property
    def calls(self) -> int:
        """Model calls of the whole run, nested runs' included."""
        with self._lock:
            return self._base_calls + self._calls

    @property
    def nested(self) -> dict[tuple[str, ...], Usage]:
        """The usage of each run nested in this one (at any depth), by its path below this
        run: the tool call ids it was started in (``("call_1",)`` for a sub-agent started
        by the tool call ``call_1``)."""
        with self._lock:
            return dict(self._nested)

    # -- limits ----------------------------------------------------------------------------

    def limit(self, name: str, check: Check, *, key: Hashable = None) -> None:
        """Run ``check(self)`` before every model call of this run and of the runs nested
        in it (unless they are ``exempt`` from ``name``); it raises (a ``StopRun``) to
        refuse the call. Registering under the same ``key`` (default: ``name``) again
        replaces the check (a limiter updates what it compares with)."""
        with self._lock:
            self._limits[name if key is None else key] = (name, check)

    def pricing(self, price: Price) -> None:
        """Price each call of this run and its nested runs whose usage has no ``cost``:
        ``price(model, usage)`` is dollars, or ``None`` when unknown."""
        self._price = price

    def check(self) -> None:
        """Refuse a model call about to start (raise) if a limit of this run or an outer
        one is reached."""
        ledger: RunUsage | None = self
        skipped: frozenset[str] = frozenset()
        while ledger is not None:
            with ledger._lock:
                checks = [c for n, c in ledger._limits.values() if n not in skipped]
            for check in checks:
                check(ledger)
            skipped |= ledger.exempt
            ledger = ledger.parent

    # -- recording -------------------------------------------------------------------------

    def record_call(
        self,
        model: Any,
        messages: Sequence[AnyMessage],
        options: Mapping[str, Any],
        answer: AIMessage | None,
    ) -> Usage:
        """Record one model call that finished with ``answer``; what was recorded."""
        usage = answer.usage if answer is not None else None
        if usage is None:
            usage = estimate(messages, options.get("system_prompt"), answer)
        if usage.cost is None:
            price = self._pricer()
            cost = price(model, usage) if price is not None else None
            if cost is not None:
                usage = attrs.evolve(usage, cost=cost)
        self.add(usage, calls=1)
        return usage

    def add(self, usage: Usage, *, calls: int = 0) -> None:
        """Add ``usage`` (of ``calls`` model calls) to this run and every outer one."""
        ledger: RunUsage | None = self
        below: tuple[str, ...] = ()
        while ledger is not None:
            with ledger._lock:
                ledger._spent = ledger._spent + usage
                ledger._calls += calls
                if below:
                    ledger._nested[below] = ledger._nested.get(below, Usage()) + usage
            below = ledger.path[len(ledger.parent.path) :] + below if ledger.parent else below
            ledger = ledger.parent

    def _pricer(self) -> Price | None:
        ledger: RunUsage | None = self
        while ledger is not None:
            if ledger._price is not None:
                return ledger._price
            ledger = ledger.parent
        return None

    def __repr__(self) -> str:
        return f"<RunUsage path={self.path} calls={self.calls} total={self.total}>"


def estimate(messages: Sequence[AnyMessage], system_prompt: Any, answer: AIMessage | None) -> Usage:
    """plait's estimate of a call's usage (``plait.tokens``), marked ``estimated``."""
    prompt = count_tokens(messages)
    if isinstance(system_prompt, str):
        prompt += count_tokens([AIMessage(system_prompt)])
    written = count_tokens([answer]) if answer is not None else 0
    return Usage(input_tokens=prompt, output_tokens=written, estimated=True)
