"""Context middleware cost: what summarization, context_editing and pii add to each model
call, against the scripted model call itself, and how that grows with the conversation.

For conversations of 100, 1,000 and 10,000 messages (human turns, AI tool calls, tool
results) it times, per model call, each middleware's per-call hooks in their steady state
(the trigger not holding, so nothing is rewritten) and in their working state (context
editing clearing, which it must redo on every call in request mode), next to one call of
the scripted model with the same messages. It prints each cost as a ratio to the model
call at 1,000 messages, and the growth from 100 to 10,000 messages (100x more messages:
linear is ~100x, quadratic ~10,000x; the last column, 1,000 to 10,000, is less blurred by
fixed costs: linear is ~10x). Allocation-heavy rows can grow a little faster than the work
they do because the garbage collector rescans the live conversation between calls.

    python benchmarks/context_cost.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Callable
from typing import Any

from plait.messages import AIMessage, AnyMessage, HumanMessage, ToolCall, ToolMessage
from plait.models.scripted import ScriptedChatModel
from plait.types import ModelRequest, ModelResponse, Runtime
from plait_context_editing import ClearToolUsesEdit, ContextEditingMiddleware
from plait_pii import PIIMiddleware
from plait_summarization import Keep, SummarizationMiddleware, TriggerCondition

SIZES = (100, 1_000, 10_000)


def conversation(size: int) -> list[AnyMessage]:
    """``size`` messages: a user turn, then AI tool calls with their results, repeating."""
    messages: list[AnyMessage] = []
    turn = 0
    while len(messages) < size:
        turn += 1
        messages.append(HumanMessage(f"question {turn}: please look at the logs of host {turn}"))
        call = ToolCall("read_logs", {"host": f"h{turn}", "lines": 50}, f"call_{turn}")
        messages.append(AIMessage("", tool_calls=[call]))
        messages.append(ToolMessage("log line " * 40, tool_call_id=call.id, name="read_logs"))
        messages.append(AIMessage(f"host {turn} looks fine"))
    messages = messages[:size]
    messages.append(HumanMessage("and the next one? reply to ops@example.com"))
    return messages


def per_call(action: Callable[[], Any], repeat: int) -> float:
    """Seconds per call: the best of ``repeat`` batches sized to run for ~50 ms."""
    number = 1
    while True:
        start = time.perf_counter()
        for _ in range(number):
            action()
        if time.perf_counter() - start > 0.05 or number >= 1 << 16:
            break
        number *= 2
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            action()
        best = min(best, (time.perf_counter() - start) / number)
    return best


def measure(size: int, repeat: int) -> dict[str, float]:
    messages = conversation(size)
    answer = AIMessage("fine")
    model = ScriptedChatModel([answer] * 10**7, profile={"max_input_tokens": 10**9})
    runtime = Runtime(thread_id=None, run_id="bench", model=model)
    state = {"messages": messages}
    request = ModelRequest(model=model, messages=tuple(messages), state=state, runtime=runtime)
    response = ModelResponse([answer])

    def handler(req: ModelRequest) -> ModelResponse:
        return response

    loop = asyncio.new_event_loop()
    summarization = SummarizationMiddleware(
        ScriptedChatModel(["summary"]),
        trigger=[TriggerCondition(tokens=10**9), TriggerCondition(fraction=0.9)],
        keep=Keep(messages=20),
    )
    editing_idle = ContextEditingMiddleware(edits=[ClearToolUsesEdit(trigger_tokens=10**9)])
    editing_busy = ContextEditingMiddleware(edits=[ClearToolUsesEdit(trigger_tokens=0)])
    pii_all = [
        PIIMiddleware(t, apply_to_output=True, apply_to_tool_results=True)
        for t in ("email", "credit_card", "ip", "mac_address", "url")
    ]

    def model_call() -> None:
        model.invoke(list(request.messages))

    def pii_hooks() -> None:
        for mw in pii_all:
            mw.before_model(state, runtime)
            mw.wrap_model_call(request, handler)

    try:
        return {
            "scripted model call": per_call(model_call, repeat),
            "summarization (not triggered)": per_call(
                lambda: loop.run_until_complete(summarization.before_model(state, runtime)),
                repeat,
            ),
            "context_editing (below trigger)": per_call(
                lambda: editing_idle.wrap_model_call(request, handler), repeat
            ),
            "context_editing (clearing)": per_call(
                lambda: editing_busy.wrap_model_call(request, handler), repeat
            ),
            "pii x5 types (input + output)": per_call(pii_hooks, repeat),
        }
    finally:
        loop.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    results = {size: measure(size, args.repeat) for size in SIZES}
    base = results[1_000]["scripted model call"]
    names = list(results[SIZES[0]])
    print("per model call; ratio = cost / scripted model call at 1,000 messages")
    header = f"{'':34}" + "".join(f"{f'{n:,} msgs':>14}" for n in SIZES)
    print(header + f"{'ratio@1k':>10}{'x 100->10k':>12}{'x 1k->10k':>11}")
    for name in names:
        cells = "".join(f"{results[n][name] * 1e6:>11.1f} us" for n in SIZES)
        ratio = results[1_000][name] / base
        growth = results[10_000][name] / results[100][name]
        late = results[10_000][name] / results[1_000][name]
        print(f"{name:34}{cells}{ratio:>10.2f}{growth:>11.1f}x{late:>10.1f}x")


if __name__ == "__main__":
    main()
