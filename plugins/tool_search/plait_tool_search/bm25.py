"""Okapi BM25 over short documents (a tool's name and description), with the stdlib."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

from plait.lazy import lazy_exports

__all__ = ["BM25"]

__getattr__ = lazy_exports(
    __name__, {}, deprecated={"words": (f"{__name__}:_words", "it is internal to BM25")}
)

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_WORD = re.compile(r"[a-z0-9]+")


def _words(text: str) -> list[str]:
    """Lower-case words; ``get_stockLevel`` is ``get``, ``stock``, ``level``."""
    return _WORD.findall(_CAMEL.sub(" ", text).lower())


class BM25:
    """Ranks ``documents`` for a query: ``k1`` saturates repeated words, ``b`` weighs
    the length of a document against the average. Documents and queries are compared as
    lower-case words: ``get_stockLevel`` is ``get``, ``stock``, ``level``."""

    def __init__(self, documents: Sequence[str], k1: float = 1.5, b: float = 0.75) -> None:
        self.docs = [Counter(_words(d)) for d in documents]
        self.lengths = [sum(d.values()) for d in self.docs]
        self.average = sum(self.lengths) / len(self.docs) if self.docs else 0.0
        frequency = Counter(word for doc in self.docs for word in doc)
        n = len(self.docs)
        self.idf = {w: math.log(1 + (n - f + 0.5) / (f + 0.5)) for w, f in frequency.items()}
        self.k1, self.b = k1, b

    def scores(self, query: str) -> list[float]:
        terms = _words(query)
        out = []
        for doc, length in zip(self.docs, self.lengths, strict=True):
            norm = self.k1 * (1 - self.b + self.b * length / (self.average or 1))
            out.append(
                sum(
                    self.idf[t] * doc[t] * (self.k1 + 1) / (doc[t] + norm)
                    for t in terms
                    if t in doc
                )
            )
        return out

    def top(self, query: str, n: int) -> list[int]:
        """The indices of the ``n`` best documents with a score above zero, best first."""
        scored = [(s, -i) for i, s in enumerate(self.scores(query)) if s > 0]
        return [-i for _, i in sorted(scored, reverse=True)[:n]]
