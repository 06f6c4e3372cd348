"""What pii's ``pseudonymize`` costs to restore a tool call's arguments as they stream,
fragment by fragment, as a ratio to a baseline measured in the same run on the same
characters: the same fragments streamed as the answer's text, which pii restores
through the same held tail (``_Held``) without reading JSON. Linear: about the same
ratio at every size. Also shown: parsing the joined arguments once and writing them back
(``json.loads`` then ``json.dumps``), the least that restoring the call whole when the
answer ended did, but at its end, where streaming spreads its cost over the fragments.

    python benchmarks/pii_stream_arguments.py [SIZES_KB ...]     # default: 10 100 1000

The arguments are records whose string values hold placeholders, quotes and non-ASCII
text, cut into fragments of ``FRAGMENT`` characters (providers stream a few characters
a delta), with two addresses in the thread's table.
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

FRAGMENT = 8
TABLE = {"email": {"jane@example.com": 1, "li@example.cn": 2}}
REQUEST = ModelRequest(model=ScriptedChatModel(), messages=(), state={"pii_pseudonyms": TABLE})


def arguments(size: int) -> str:
    rows: list[dict[str, object]] = []
    total = 0
    while total < size:
        row = {"to": "<EMAIL_1>", "note": 'ask <EMAIL_2> about "Zoë" <b>', "n": len(rows)}
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


def parse_once(chunks: list[AIMessageChunk]) -> None:
    joined = "".join(p.args for c in chunks for p in c.tool_call_chunks)
    json.dumps(json.loads(joined), ensure_ascii=False)


def best(action: Callable[[], object], rounds: int) -> float:
    """The best round (the least disturbed by other work on the machine), the garbage
    collector off while timing (``timeit``'s default)."""
    return min(timeit.repeat(action, number=1, repeat=rounds))


def main() -> None:
    sizes = [int(arg) * 1000 for arg in sys.argv[1:]] or [10_000, 100_000, 1_000_000]
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


if __name__ == "__main__":
    main()
