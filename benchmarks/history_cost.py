"""What thread history, forks and replay cost, against baselines measured in the same run.

1. Bytes per step on SQLite at turn 500: a thread of 500 agent-sized steps (an AI message
   with a tool call, its tool result, the run record) saved with history
   (``keep_steps=None``) and without it (``keep_steps=1``, one record kept); both files
   are VACUUMed and divided by the steps. Also the undo records' own bytes per step.
2. Fork of the 500-step thread: time of ``fork`` against one ``save`` and one ``load``
   of the same thread; bytes the fork adds to the file against what a copy of the
   thread's rows would add; time of the fork's first save (when its rows are written).
3. Replay of a 50-model-call recording (49 tool runs between): the run replayed from the
   file against the same run live with the scripted model (no network either way, so the
   ratio is the replay's own overhead: reading and hashing each request).

Figures are printed, never asserted.

    python benchmarks/history_cost.py
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import plait
from plait.checkpoint import StepDelta
from plait.messages import AIMessage, HumanMessage, ToolCall, ToolMessage
from plait.persistence import SQLiteCheckpointer
from plait.testing import ai, call, scripted

TURNS = 500
TEXT = "The quick brown fox jumps over the lazy dog. " * 6  # ~270 characters
RUN = {
    "run_id": "0" * 32,
    "node": "model",
    "hook": 0,
    "model_calls": 0,
    "status": "running",
    "interrupts": [],
    "resume": {},
    "usage": {"input_tokens": 100, "output_tokens": 20, "total_tokens": 120},
    "owner": "12345-abcdef01/1",
    "saved_at": 1.7e9,
}


def delta(step: int) -> StepDelta:
    if step == 1:
        return StepDelta(1, upserts=(HumanMessage("Plan the trip.", id="h"),), values={"r": RUN})
    tool_call = ToolCall("search", {"query": f"question {step}", "limit": 5}, f"call-{step}")
    return StepDelta(
        step,
        upserts=(
            AIMessage("", tool_calls=[tool_call], id=f"a{step}"),
            ToolMessage(f"result {step}: {TEXT}", tool_call_id=tool_call.id, id=f"t{step}"),
        ),
        values={"r": {**RUN, "model_calls": step}},
        run_id="0" * 32,
        node="tools",
    )


def fill(path: Path, keep_steps: int | None) -> SQLiteCheckpointer:
    saver = SQLiteCheckpointer(path, keep_steps=keep_steps, synchronous="normal")
    for step in range(1, TURNS + 1):
        saver.save("t", delta(step))
    return saver


def vacuumed_size(saver: SQLiteCheckpointer) -> int:
    import sqlite3

    with sqlite3.connect(saver.path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.execute("VACUUM")
    return Path(saver.path).stat().st_size


def column_bytes(saver: SQLiteCheckpointer, sql: str) -> int:
    import sqlite3

    with sqlite3.connect(saver.path) as conn:
        return int(conn.execute(sql).fetchone()[0] or 0)


def median_ms(fn: Any, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def bytes_per_step(folder: Path) -> SQLiteCheckpointer:
    full = fill(folder / "history.db", None)
    bare = fill(folder / "bare.db", 1)
    with_history, without = vacuumed_size(full), vacuumed_size(bare)
    undo = column_bytes(full, "SELECT sum(length(undo) + length(thread) + 48) FROM plait_steps")
    state = column_bytes(
        full,
        "SELECT (SELECT sum(length(data) + length(id) + length(thread) + 8) FROM plait_messages)"
        " + (SELECT sum(length(data) + length(key) + length(thread)) FROM plait_values)",
    )
    print(f"1. SQLite bytes per step at turn {TURNS} (file after VACUUM / steps)")
    print(f"   without history (keep_steps=1): {without / TURNS:8.0f} B/step  (baseline)")
    print(
        f"   with history (every step kept): {with_history / TURNS:8.0f} B/step  "
        f"ratio {with_history / without:.2f}"
    )
    print(
        f"   undo records alone:             {undo / TURNS:8.0f} B/step  "
        f"(the thread's rows: {state / TURNS:.0f} B/step, ratio {undo / state:.2f})"
    )
    bare.close()
    return full


def fork_cost(full: SQLiteCheckpointer, folder: Path) -> None:
    forks = 200
    step = TURNS // 2
    base = vacuumed_size(full)
    counter = iter(range(10**6))
    fork_ms = median_ms(lambda: full.fork("t", step, f"f{next(counter)}"), forks)
    after = vacuumed_size(full)
    copy_bytes = column_bytes(
        full,
        "SELECT (SELECT sum(length(data) + length(id) + length(thread) + 8) FROM plait_messages"
        " WHERE thread = 't') + (SELECT sum(length(data) + length(key) + length(thread))"
        " FROM plait_values WHERE thread = 't')",
    )
    fork_rows = column_bytes(
        full,
        "SELECT (SELECT sum(length(id) + 24) FROM plait_threads WHERE id != 't')"
        " + (SELECT sum(length(thread) + length(parent) + 16) FROM plait_forks)",
    )
    load_ms = median_ms(lambda: full.load("t"), 20)
    saves = iter(range(TURNS + 1, TURNS + 1000))
    save_ms = median_ms(lambda: full.save("t", delta(next(saves))), 20)
    load_fork_ms = median_ms(lambda: full.load("f0"), 20)
    targets = iter(range(1, forks))
    first_save_ms = median_ms(lambda: full.save(f"f{next(targets)}", delta(step + 1)), 20)
    written = iter(range(1, 20))
    next_save_ms = median_ms(lambda: full.save(f"f{next(written)}", delta(step + 2)), 19)
    print(f"2. fork of a {TURNS}-step thread at step {step} ({forks} forks)")
    print(f"   save of one step:                {save_ms:8.3f} ms  (baseline)")
    print(f"   load of the thread:              {load_ms:8.3f} ms  ratio {load_ms / save_ms:.2f}")
    print(f"   fork:                            {fork_ms:8.3f} ms  ratio {fork_ms / save_ms:.2f}")
    print(
        f"   load of an unwritten fork:       {load_fork_ms:8.3f} ms  "
        f"ratio {load_fork_ms / save_ms:.2f} (rebuilt from the parent's records)"
    )
    print(
        f"   first save to a fork:            {first_save_ms:8.3f} ms  "
        f"ratio {first_save_ms / save_ms:.2f} (its rows are written then: copy on write)"
    )
    later = f"{next_save_ms:8.3f} ms  ratio {next_save_ms / save_ms:.2f}"
    print(f"   a fork's later saves:            {later}")
    print(
        f"   bytes per fork: file {(after - base) / forks:.0f} B, rows {fork_rows / forks:.0f} B; "
        f"a copy of the thread's rows: {copy_bytes} B (ratio "
        f"{max(after - base, fork_rows) / forks / copy_bytes:.5f})"
    )


def replay_cost(folder: Path) -> None:
    calls = 50

    @plait.tool
    def lookup(n: int) -> str:
        """Look up a number."""
        return f"value {n}: {TEXT}"

    def script() -> list[Any]:
        answers: list[Any] = [ai("", call("lookup", id=f"c{i}", n=i)) for i in range(calls - 1)]
        return [*answers, "All looked up."]

    path = folder / "runs.jsonl"
    recorder = plait.create_agent(scripted(*script()), [lookup], record=path)
    recorder.invoke("Look up 49 numbers.", recursion_limit=calls + 5)
    entries = len(path.read_text().splitlines()) - 1

    def live() -> None:
        agent = plait.create_agent(scripted(*script()), [lookup])
        agent.invoke("Look up 49 numbers.", recursion_limit=calls + 5)

    def replayed() -> None:
        agent = plait.create_agent(scripted(*script()), [lookup], replay=path)
        agent.invoke("Look up 49 numbers.", recursion_limit=calls + 5)

    live_ms = median_ms(live, 7)
    replay_ms = median_ms(replayed, 7)
    print(
        f"3. replay of a {calls}-model-call recording ({entries} entries, {path.stat().st_size} B)"
    )
    print(f"   the run live (scripted model):   {live_ms:8.1f} ms  (baseline)")
    print(
        f"   the run replayed from the file:  {replay_ms:8.1f} ms  ratio {replay_ms / live_ms:.2f}"
    )


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        full = bytes_per_step(folder)
        fork_cost(full, folder)
        full.close()
        replay_cost(folder)


if __name__ == "__main__":
    main()
