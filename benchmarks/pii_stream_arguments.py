"""What pii costs to rewrite a tool call's arguments as they stream, fragment by
fragment, as a ratio to a baseline measured in the same run on the same characters: the
same fragments streamed as the answer's text, which pii rewrites through the same held
tail without reading JSON. Linear: about the same ratio at every size.

- ``pseudonymize`` restores placeholders (``_Held``). Also shown: parsing the joined
  arguments once and writing them back (``json.loads`` then ``json.dumps``), the least
  that restoring the call whole when the answer ended did, but at its end, where
  streaming spreads its cost over the fragments.
- ``redact``, ``mask`` and ``hash`` (``apply_to_output``) redact e-mail addresses
  (``_Redacting``). Also shown: what redacting the call whole when the answer ended
  did (parse, redact every string value, write back), and how far behind the model the
  caller is: the characters held, averaged over the fragments (the arguments were held
  whole before: on average half of them).
- The answer's text of each built-in type, redacted through the run a value may still
  hold, as a ratio to the fixed 128-character look-back text was held by before (a
  detector pii does not know still is), with the characters each holds on average.

    python benchmarks/pii_stream_arguments.py [SIZES_KB ...]     # default: 10 100 1000

The arguments are records whose string values hold placeholders (addresses for the
redacting strategies), quotes and non-ASCII text, cut into fragments of ``FRAGMENT``
characters (providers stream a few characters a delta), with two addresses in the
thread's table.
"""

from __future__ import annotations

import json
import sys
import timeit
from collections.abc import Callable

from plait.messages import AIMessageChunk, ToolCallChunk
from plait.models import ScriptedChatModel
from plait.types import ModelRequest
from plait_pii import PIIMiddleware
from plait_pii._stream import _StreamRedactor
from plait_pii._walk import map_strings

FRAGMENT = 8
TABLE = {"email": {"jane@example.com": 1, "li@example.cn": 2}}
REQUEST = ModelRequest(model=ScriptedChatModel(), messages=(), state={"pii_pseudonyms": TABLE})


def arguments(size: int, to: str = "<EMAIL_1>", cc: str = "<EMAIL_2>") -> str:
    rows: list[dict[str, object]] = []
    total = 0
    while total < size:
        row = {"to": to, "note": f'ask {cc} about "Zoë" <b>', "n": len(rows)}
        rows.append(row)
        total += 70
    return json.dumps({"rows": rows})


def fragments(raw: str) -> list[AIMessageChunk]:
    return [
        AIMessageChunk(tool_call_chunks=[ToolCallChunk(0, args=raw[at : at + FRAGMENT])])
        for at in range(0, len(raw), FRAGMENT)
    ]


def text_chunks(raw: str) -> list[AIMessageChunk]:
    return [AIMessageChunk(raw[at : at + FRAGMENT]) for at in range(0, len(raw), FRAGMENT)]


def drain(pii: PIIMiddleware, chunks: list[AIMessageChunk]) -> None:
    for _ in pii.transform_model_stream(iter(chunks), REQUEST):
        pass


def redact_whole(pii: PIIMiddleware, chunks: list[AIMessageChunk]) -> None:
    """What redacting the call whole when the answer ended did."""
    joined = "".join(p.args for c in chunks for p in c.tool_call_chunks)
    json.dumps(map_strings(json.loads(joined), pii.redact), ensure_ascii=False)


def behind(pii: PIIMiddleware, chunks: list[AIMessageChunk], lookback: bool = False) -> float:
    """Characters received but not shown yet (held), averaged over the chunks (the
    text's or the call's), each counted before the model makes the next. With
    ``lookback``, the text is held as it was before (the last 128 characters, as for a
    detector pii does not know)."""
    stream = _StreamRedactor(pii)
    if lookback:
        stream.text.tail = None  # type: ignore[attr-defined]
    held: list[int] = []
    for chunk in chunks:
        for _ in stream.feed(chunk):
            pass
        calls = stream.calls.values()
        held.append(
            len(stream.text.pending)  # type: ignore[attr-defined]
            + sum(len(c.values.pending) + len(c.slot) + len(c.raw) for c in calls)  # type: ignore[attr-defined]
        )
    return sum(held) / len(held)


def parse_once(chunks: list[AIMessageChunk]) -> None:
    joined = "".join(p.args for c in chunks for p in c.tool_call_chunks)
    json.dumps(json.loads(joined), ensure_ascii=False)


def best(action: Callable[[], object], rounds: int) -> float:
    """The best round (the least disturbed by other work on the machine), the garbage
    collector off while timing (``timeit``'s default)."""
    return min(timeit.repeat(action, number=1, repeat=rounds))


def pseudonymize(sizes: list[int]) -> None:
    pii = PIIMiddleware("email", strategy="pseudonymize")
    print("restoring streamed arguments, as a ratio to restoring the same fragments as text")
    print("(linear: about the same ratio at every size)\n")
    head = ["fragments", "as text", "arguments", "ratio", "parse once"]
    print(f"{'size':>9}" + "".join(f"{h:>11}" for h in head))
    for size in sizes:
        raw = arguments(size)
        chunks, texts = fragments(raw), text_chunks(raw)
        rounds = 5 if size <= 100_000 else 3

        base = best(lambda: drain(pii, texts), rounds)  # noqa: B023 (timed in this round)
        took = best(lambda: drain(pii, chunks), rounds)  # noqa: B023
        once = best(lambda: parse_once(chunks), rounds)  # noqa: B023
        print(
            f"{len(raw) // 1000:>6} KB{len(chunks):>11}{base * 1000:>9.1f}ms"
            f"{took * 1000:>9.1f}ms{took / base:>10.2f}x{once * 1000:>9.1f}ms"
        )


def redacting(sizes: list[int]) -> None:
    print("\nredacting streamed arguments (e-mail addresses, apply_to_output), as a ratio to")
    print("redacting the same fragments as text; held: characters held, on average\n")
    head = ["fragments", "as text", "arguments", "ratio", "whole", "held"]
    print(f"{'':15}" + "".join(f"{h:>11}" for h in head))
    for strategy in ("redact", "mask", "hash"):
        pii = PIIMiddleware("email", strategy=strategy, apply_to_output=True)
        for size in sizes:
            raw = arguments(size, "jane@example.com", "li@example.cn")
            chunks, texts = fragments(raw), text_chunks(raw)
            rounds = 5 if size <= 100_000 else 3
            base = best(lambda: drain(pii, texts), rounds)  # noqa: B023 (timed in this round)
            took = best(lambda: drain(pii, chunks), rounds)  # noqa: B023
            whole = best(lambda: redact_whole(pii, chunks), rounds)  # noqa: B023
            print(
                f"{strategy:>8}{len(raw) // 1000:>5} KB{len(chunks):>11}{base * 1000:>9.1f}ms"
                f"{took * 1000:>9.1f}ms{took / base:>10.2f}x{whole * 1000:>9.1f}ms"
                f"{behind(pii, chunks):>11.1f}"
            )


def text_tails(size: int) -> None:
    """The answer's text, held by the run a value may still hold against the fixed
    128-character look-back it was held by before (a detector pii does not know still
    is), as a ratio of their times; held: characters held, on average."""
    print("\nredacted text (mask): the held tail as a ratio to the 128-character look-back\n")
    head = ["look-back", "tail", "ratio", "held", "held 128"]
    print(f"{'':12}" + "".join(f"{h:>11}" for h in head))
    raw = arguments(size, "jane@example.com", "li@example.cn")
    texts = text_chunks(raw)
    for pii_type in ("email", "credit_card", "ip", "mac_address", "url"):
        pii = PIIMiddleware(pii_type, strategy="mask", apply_to_output=True)
        old = best(lambda: drain_text(pii, texts, lookback=True), 3)  # noqa: B023
        new = best(lambda: drain_text(pii, texts, lookback=False), 3)  # noqa: B023
        print(
            f"{pii_type:>12}{old * 1000:>9.1f}ms{new * 1000:>9.1f}ms{new / old:>10.2f}x"
            f"{behind(pii, texts):>11.1f}{behind(pii, texts, lookback=True):>11.1f}"
        )


def drain_text(pii: PIIMiddleware, chunks: list[AIMessageChunk], lookback: bool) -> None:
    stream = _StreamRedactor(pii)
    if lookback:
        stream.text.tail = None  # type: ignore[attr-defined]
    for chunk in chunks:
        for _ in stream.feed(chunk):
            pass
    for _ in stream.finish():
        pass


def main() -> None:
    sizes = [int(arg) * 1000 for arg in sys.argv[1:]] or [10_000, 100_000, 1_000_000]
    pseudonymize(sizes)
    redacting(sizes)
    text_tails(min(sizes[-1], 100_000))


if __name__ == "__main__":
    main()
