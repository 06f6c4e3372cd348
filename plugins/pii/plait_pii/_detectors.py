"""The built-in detectors and the mask formats of each PII type.

Each detector finds candidates with a regular expression and then validates them (Luhn and
issuer prefixes for cards, ``ipaddress`` for IPs, URL structure...), so what is reported
is what a human would call that kind of data, not merely text of the right shape.
"""

from __future__ import annotations

import ipaddress
import re
import urllib.parse
from collections.abc import Callable, Iterable

import attrs

__all__ = ["BUILTIN", "MASKS", "PIIMatch", "merge"]


@attrs.frozen
class PIIMatch:
    """One piece of personal data found in a text: ``text == source[start:end]``."""

    text: str
    start: int
    end: int


Detector = Callable[[str], list[PIIMatch]]


def merge(matches: Iterable[PIIMatch], source: str) -> list[PIIMatch]:
    """Sorted, non-overlapping matches: overlapping or nested ones become their union."""
    ordered = sorted(
        (m for m in matches if 0 <= m.start < m.end <= len(source)),
        key=lambda m: (m.start, -m.end),
    )
    merged: list[PIIMatch] = []
    for match in ordered:
        if merged and match.start < merged[-1].end:
            last = merged[-1]
            if match.end > last.end:
                merged[-1] = PIIMatch(source[last.start : match.end], last.start, match.end)
            continue
        merged.append(match)
    return merged


# -- email ---------------------------------------------------------------------------------

_EMAIL = re.compile(
    r"""
    (?<![\w.%+\-@])
    [\w%+\-]+(?:\.[\w%+\-]+)*          # local part (never '*', so masked text is not found)
    @
    (?:[^\W_](?:[\w\-]{0,61}[^\W_])?\.)+  # domain labels, IDN letters included
    (?:xn--[a-z0-9\-]{2,59}|[^\W\d_]{2,63})  # the top-level domain
    (?![\w\-@(]|\.[^\W_])              # '(' after it: a method call, x@y.sum()
    """,
    re.VERBOSE | re.IGNORECASE,
)


def _in_url_authority(text: str, start: int) -> bool:
    """Whether ``start`` is inside a URL's ``user:password@`` part, e.g. ``ftp://me@host``."""
    token_start = max(text.rfind(c, 0, start) for c in " \t\n\r<>\"'(") + 1
    prefix = text[token_start:start]
    _scheme, sep, rest = prefix.partition("://")
    return bool(sep) and "/" not in rest


def find_emails(text: str) -> list[PIIMatch]:
    return [
        PIIMatch(m.group(), m.start(), m.end())
        for m in _EMAIL.finditer(text)
        if not _in_url_authority(text, m.start())
    ]


def mask_email(value: str) -> str:
    local, _, domain = value.rpartition("@")
    return f"{local[:1]}***@****.{domain.rsplit('.', 1)[-1]}"


# -- credit card ---------------------------------------------------------------------------

_CARD = re.compile(r"(?<![\d.])\d(?:[ \-]?\d){11,18}(?!\d|[.,]\d|-\d)")


def luhn_ok(digits: str) -> bool:
    total = 0
    for index, char in enumerate(reversed(digits)):
        value = int(char)
        if index % 2:
            value *= 2
            if value > 9:
                value -= 9
        total += value
    return total % 10 == 0


def _issuer_ok(digits: str) -> bool:
    """The number fits a known issuer's prefix and length (Visa, Mastercard, Amex, Discover,
    JCB, Diners, UnionPay, Maestro, UATP)."""
    n = len(digits)
    head2, head4 = int(digits[:2]), int(digits[:4])
    match digits[0]:
        case "4":
            return n in (13, 16, 19)
        case "5":
            return (51 <= head2 <= 55 and n == 16) or (head2 in (50, 56, 57, 58) and n >= 12)
        case "2":
            return 2221 <= head4 <= 2720 and n == 16
        case "3":
            if head2 in (34, 37):
                return n == 15
            return (head2 in (30, 36, 38, 39) and 14 <= n <= 19) or (
                3528 <= head4 <= 3589 and 16 <= n <= 19
            )
        case "6":
            return 12 <= n <= 19
        case "1":
            return n == 15
    return False


def find_cards(text: str) -> list[PIIMatch]:
    found = []
    for m in _CARD.finditer(text):
        raw = m.group()
        separators = set(re.sub(r"\d", "", raw))
        if len(separators) > 1:
            continue
        if separators:
            groups = re.split(r"[ \-]", raw)
            if len(groups[0]) != 4 or not all(3 <= len(g) <= 6 for g in groups[1:-1]):
                continue
            if not 1 <= len(groups[-1]) <= 6:
                continue
        digits = re.sub(r"\D", "", raw)
        if 13 <= len(digits) <= 19 and _issuer_ok(digits) and luhn_ok(digits):
            found.append(PIIMatch(raw, m.start(), m.end()))
    return found


def mask_card(value: str) -> str:
    digits_seen = 0
    total = sum(c.isdigit() for c in value)
    out = []
    for char in value:
        if char.isdigit():
            digits_seen += 1
            out.append(char if digits_seen > total - 4 else "*")
        else:
            out.append(char)
    return "".join(out)


# -- ip ------------------------------------------------------------------------------------

_IPV4 = re.compile(r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?![\w]|\.\d)")
_VERSION_BEFORE = re.compile(
    r"(?:\bv|\bver|\bversion|\bbuild|\brelease|\brev|\brevision)\.?\s*[:=#]?\s*$", re.IGNORECASE
)
_IPV6 = re.compile(
    r"(?<![\w.])(?:[0-9a-f]{0,4}:){2,7}(?:(?:\d{1,3}\.){3}\d{1,3}|[0-9a-f]{0,4})"
    r"(?:%\w+(?:\.\w+)*)?(?![\w:]|\.\d)",
    re.IGNORECASE,
)
_GROUP_BEFORE = re.compile(r"(?<![\w])[0-9a-f]{1,4}[:\-]\Z|::\Z", re.IGNORECASE)


def _continues_chain(text: str, start: int) -> bool:
    """Whether ``text[start:]`` is the tail of a longer run of hex groups (``00:`` before
    it), not a value of its own after a label such as ``value:``."""
    return _GROUP_BEFORE.search(text, max(0, start - 6), start) is not None


def find_ips(text: str) -> list[PIIMatch]:
    found = []
    for m in _IPV4.finditer(text):
        if _VERSION_BEFORE.search(text, max(0, m.start() - 14), m.start()):
            continue
        try:
            ipaddress.IPv4Address(m.group())
        except ValueError:
            continue
        found.append(PIIMatch(m.group(), m.start(), m.end()))
    for m in _IPV6.finditer(text):
        value = m.group()
        if _continues_chain(text, m.start()):
            continue
        if not re.search(r"[0-9a-f]", value.split("%")[0], re.IGNORECASE):
            continue  # "::" alone is punctuation far more often than an address
        try:
            ipaddress.IPv6Address(value)
        except ValueError:
            continue
        found.append(PIIMatch(value, m.start(), m.end()))
    return found


def mask_ip(value: str) -> str:
    if ":" not in value:
        return "*.*.*." + value.rsplit(".", 1)[-1]
    last = ipaddress.IPv6Address(value.split("%")[0]).exploded.rsplit(":", 1)[-1]
    return "*:*:*:*:*:*:*:" + (last.lstrip("0") or "0")


# -- mac address ---------------------------------------------------------------------------

_MAC = re.compile(
    r"(?<![\w.])(?:[0-9a-f]{2}([:\-])(?:[0-9a-f]{2}\1){4}[0-9a-f]{2}"
    r"|[0-9a-f]{4}\.[0-9a-f]{4}\.[0-9a-f]{4})(?![\w]|[:\-.][0-9a-f])",
    re.IGNORECASE,
)


def find_macs(text: str) -> list[PIIMatch]:
    return [
        PIIMatch(m.group(), m.start(), m.end())
        for m in _MAC.finditer(text)
        if not _continues_chain(text, m.start())
    ]


def mask_mac(value: str) -> str:
    keep = 2
    out = []
    hex_total = sum(c not in ":-." for c in value)
    seen = 0
    for char in value:
        if char in ":-.":
            out.append(char)
        else:
            seen += 1
            out.append(char if seen > hex_total - keep else "*")
    return "".join(out)


# -- url -----------------------------------------------------------------------------------

# Commas end a URL: they are legal in paths but far more often separate list items.
_URL = re.compile(r"(?<![\w@.\-/])(?:(?:https?|ftp)://|www\.)[^\s<>\"'`,]+", re.IGNORECASE)
_CLOSERS = {")": "(", "]": "[", "}": "{"}


def _trim_url(value: str) -> str:
    while value:
        last = value[-1]
        if last in ".,;:!?*":
            value = value[:-1]
        elif last in _CLOSERS and value.count(last) > value.count(_CLOSERS[last]):
            value = value[:-1]
        else:
            break
    return value


def _host_ok(value: str) -> bool:
    target = value if "://" in value else "http://" + value
    try:
        host = urllib.parse.urlsplit(target).hostname
    except ValueError:
        return False
    if not host:
        return False
    if host == "localhost":
        return True
    try:
        ipaddress.ip_address(host)
        return True
    except ValueError:
        pass
    labels = host.split(".")
    if len(labels) < 2 or not all(labels):
        return False
    return labels[-1].isalpha() or labels[-1].startswith("xn--")


def find_urls(text: str) -> list[PIIMatch]:
    found = []
    for m in _URL.finditer(text):
        value = _trim_url(m.group())
        if value.lower().startswith("www.") and value.count(".") < 2:
            continue
        if _host_ok(value):
            found.append(PIIMatch(value, m.start(), m.start() + len(value)))
    return found


def mask_url(value: str) -> str:
    return "[MASKED_URL]"


def mask_custom(value: str) -> str:
    """Keep the last four characters (nothing when the value is that short)."""
    if len(value) <= 4:
        return "*" * len(value)
    return "*" * (len(value) - 4) + value[-4:]


BUILTIN: dict[str, Detector] = {
    "email": find_emails,
    "credit_card": find_cards,
    "ip": find_ips,
    "mac_address": find_macs,
    "url": find_urls,
}
MASKS: dict[str, Callable[[str], str]] = {
    "email": mask_email,
    "credit_card": mask_card,
    "ip": mask_ip,
    "mac_address": mask_mac,
    "url": mask_url,
}
