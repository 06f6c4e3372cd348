"""What building a ``PIIMiddleware`` needs of the detectors: the match type (a detector
option's type names it) and the names of the built-in types. The detectors themselves
(``_detectors``, ~600 lines and the public-suffix list) load on the first detection, as
``_decoded`` does: an agent is built without them."""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["BUILTIN_TYPES", "PIIMatch"]

BUILTIN_TYPES = ("email", "credit_card", "ip", "mac_address", "url")
"""The types ``_detectors.BUILTIN`` finds, in its order (a test checks they agree)."""


class PIIMatch(NamedTuple):
    """One piece of personal data found in a text: ``text == source[start:end]``, except
    in what ``PIIMiddleware.matches`` reports for a value found only once the text was
    decoded (``jane%40example.com``): there ``text`` is the decoded value.

    A named tuple (immutable, compared and shown by its fields, as an attrs class would
    be): it is never structured from options, and every agent that names pii makes the
    class at import, where a tuple class costs a fifth of an attrs class."""

    text: str
    start: int
    end: int
