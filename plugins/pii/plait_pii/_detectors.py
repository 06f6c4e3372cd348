"""The built-in detectors and the mask formats of each PII type.

Each detector finds candidates with a regular expression and then validates them (Luhn and
issuer prefixes for cards, ``ipaddress`` for IPs, URL structure...), so what is reported
is what a human would call that kind of data, not merely text of the right shape.
"""

from __future__ import annotations

import bisect
import functools
import ipaddress
import re
import unicodedata
import urllib.parse
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from plait.lazy import frozen
from plait_pii.middleware import PIIMatch

if TYPE_CHECKING:
    from publicsuffixlist import PublicSuffixList

__all__ = ["BUILTIN", "MASKS", "PIIMatch", "Tail", "merge", "tails"]


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


# -- scripts and boundaries ----------------------------------------------------------------

# Chinese, Japanese and Korean are one family here: they mix in one word without spaces.
_SCRIPT_FAMILY = {
    "HIRAGANA": "CJK",
    "KATAKANA": "CJK",
    "KATAKANA-HIRAGANA": "CJK",
    "HANGUL": "CJK",
    "IDEOGRAPHIC": "CJK",
}


@functools.lru_cache(maxsize=4096)
def _script(char: str) -> str | None:
    """The writing system of a letter, digit or script's own mark (``LATIN`` for ASCII
    letters and digits), ``""`` for a generic combining accent (it goes with the letter
    before it), ``None`` for anything else."""
    if char.isascii():
        return "LATIN" if char.isalnum() else None
    category = unicodedata.category(char)[0]
    if category not in "LNM":
        return None
    first = unicodedata.name(char, "").split(" ", 1)[0]
    if category == "M" and first in ("COMBINING", ""):
        return ""  # an accent of any script: it goes with the letter it sits on
    return _SCRIPT_FAMILY.get(first, first)


def _breaks(left: str, right: str) -> bool:
    """Whether a token of one kind cannot continue from ``left`` to ``right``: two letters
    of different scripts touching (``联系jane``, ``comпочта``), or ``right`` is punctuation,
    a symbol or a space outside ASCII (``。``, ``，``, ``）``, ``«``)."""
    if not right.isascii() and unicodedata.category(right)[0] in "PSZ":
        return True
    a, b = _script(left), _script(right)
    return bool(a and b and a != b)


@functools.cache
def _non_ascii() -> re.Pattern[str]:
    return re.compile(r"[^\x00-\x7f]")


def _cut_right(text: str, start: int, end: int) -> int:
    """``end`` moved back to the first break after ``start``."""
    first = _non_ascii().search(text, start, end)
    if first is None:
        return end  # ASCII never breaks: its letters and digits are all one script
    for i in range(max(start + 1, first.start()), end):
        if _breaks(text[i - 1], text[i]):
            return i
    return end


def _cut_left(text: str, start: int, end: int) -> int:
    """``start`` moved forward past the last break before ``end``."""
    if _non_ascii().search(text, start, end) is None:
        return start
    for i in range(end - 1, start, -1):
        if _breaks(text[i - 1], text[i]):
            return i
    return start


def _token_starts(text: str, start: int) -> bool:
    """Whether ``text[start]`` does not continue a word of its own script."""
    return start == 0 or _breaks(text[start - 1], text[start]) or not _script(text[start - 1])


# -- public suffixes -----------------------------------------------------------------------


@functools.cache
def _psl() -> PublicSuffixList:
    """The ICANN part of the Public Suffix List, from the snapshot the package ships (it never
    fetches a newer one). Parsed on first use (a fifth of a second), not at import: an agent
    that names pii pays for it (and for importing the package) only when a host is checked."""
    from publicsuffixlist import PublicSuffixList

    return PublicSuffixList(only_icann=True)


@functools.cache
def _file_extensions() -> frozenset[str]:
    """File extensions that are also top-level domains (.py, .sh, .zip...), from the
    standard library's own table (not the machine's /etc/mime.types), so ``setup.py/x``
    is not a host. Built on the first URL checked, not when pii is imported."""
    import mimetypes

    return frozenset(
        ext[1:].lower() for table in mimetypes.MimeTypes(()).types_map for ext in table
    )


@functools.lru_cache(maxsize=1024)
def _is_tld(label: str) -> bool:
    return _psl().publicsuffix(label.lower(), accept_unknown=False) == label.lower()


@functools.lru_cache(maxsize=1024)
def _registrable(host: str) -> bool:
    """Whether ``host`` is a name under a real public suffix (``docs.example.org``,
    ``x.co.uk``), not a suffix itself (``co.uk``) nor under an unknown one (``a.local``)."""
    return _psl().privatesuffix(host.lower(), accept_unknown=False) is not None


RESERVED_SUFFIXES = (
    "example",
    "test",
    "invalid",
    "localhost",  # RFC 2606 / RFC 6761
    "local",  # RFC 6762 (mDNS)
    "internal",  # ICANN's private-use TLD
    "intranet",
    "private",
    "corp",
    "home",
    "lan",  # RFC 6762 appendix G: used on private networks
    "home.arpa",  # RFC 8375
)
"""Suffixes that never reach the public DNS but name real hosts on private networks and
in test data: an address at ``jane@corp.internal`` is an enterprise's real address."""
_RESERVED = frozenset(RESERVED_SUFFIXES)


def _private_host(host: str) -> bool:
    """Whether ``host`` is a name (one label at least) under a reserved suffix:
    ``mail.corp.internal``, ``printer.local``, ``nas.home.arpa`` (``local`` alone is not)."""
    labels = host.lower().split(".")
    return any(".".join(labels[i:]) in _RESERVED for i in range(1, len(labels)))


# -- email ---------------------------------------------------------------------------------


@functools.cache
def _email() -> re.Pattern[str]:
    return re.compile(
        r"""
        [\w%+\-]+(?:\.[\w%+\-]+)*          # local part (never '*', so masked text is not found)
        @
        (?:[^\W_](?:[\w\-]{0,61}[^\W_])?\.)+  # domain labels, IDN letters included
        (?:xn--[a-z0-9\-]{2,59}|[^\W\d_]{2,63})  # the top-level domain
        """,
        re.VERBOSE | re.IGNORECASE,
    )


@functools.cache
def _density() -> re.Pattern[str]:
    """``2x``, ``3x``, ``1.5x``: the pixel-density part of an image name (``icon@2x.png``)."""
    return re.compile(r"\d+(?:\.\d+)?x\Z", re.IGNORECASE)


@functools.cache
def _domain_run() -> re.Pattern[str]:
    """What may follow an ``@`` in an address (checked whole afterwards)."""
    return re.compile(r"[\w.\-]*")


def _local_run_start(text: str, at: int, floor: int) -> int:
    """Where the run of local-part characters (``\\w . % + -``) that ends at ``at``
    starts, no further back than ``floor``: scanned backwards one character at a time, so
    each character of the text is looked at once over all the ``@`` of a text."""
    start = at
    while start > floor:
        char = text[start - 1]
        if char.isalnum() or char in "_.%+-":
            start -= 1
        else:
            break
    return start


def _email_at(text: str, start: int, at: int, end: int) -> PIIMatch | None:
    """The address in ``text[start:end]`` (``@`` at ``at``), cut where the script changes
    or at non-ASCII punctuation on either side, then checked whole."""
    start = _cut_left(text, start, at)
    end = _cut_right(text, at, end)
    while end > at + 1 and text[end - 1] in ".-":
        end -= 1
    if start == at or text[start] == "." or (start > 0 and text[start - 1] == "@"):
        return None
    if end < len(text) and text[end] in "_@(":
        return None  # x@y.method(), a longer token
    value = text[start:end]
    if not _email().fullmatch(value):
        return None
    domain = value[at - start + 1 :]
    labels = domain.split(".")
    if not _private_host(domain) and (not _is_tld(labels[-1]) or not _registrable(domain)):
        return None
    if _density().match(domain.rpartition(".")[0]):
        return None  # an image name: logo@2x.png, hero@1.5x.local
    return PIIMatch(value, start, end)


@functools.cache
def _authority() -> re.Pattern[str]:
    """A URL's authority (``user:password@host``): from the first ``://`` of a token (a run of
    text between spaces, quotes, ``<>`` and ``(``) to the next ``/`` or the token's end. One
    pass over the text, each token scanned once."""
    return re.compile(r"""(?:^|(?<=[ \t\n\r<>"'(]))[^ \t\n\r<>"'(]*?://([^/ \t\n\r<>"'(]*)""")


def _authorities(text: str) -> tuple[list[int], list[int]]:
    """The starts and ends of every URL authority in ``text``, in order."""
    starts: list[int] = []
    ends: list[int] = []
    if "://" in text:
        for m in _authority().finditer(text):
            starts.append(m.start(1))
            ends.append(m.end(1))
    return starts, ends


def _in_authority(authorities: tuple[list[int], list[int]], start: int) -> bool:
    """Whether ``start`` is inside a URL's ``user:password@`` part, e.g. ``ftp://me@host``."""
    starts, ends = authorities
    index = bisect.bisect_right(starts, start) - 1
    return index >= 0 and start <= ends[index]


def find_emails(text: str) -> list[PIIMatch]:
    """Every address, in one pass: each ``@`` is widened to the characters an address may
    hold on either side, never past the previous candidate, so the work is linear in the
    text's length whatever it holds (a contact list on one line, a long base64 blob)."""
    found = []
    authorities: tuple[list[int], list[int]] | None = None
    floor = 0
    at = text.find("@")
    while at != -1:
        start = _local_run_start(text, at, floor)
        run = _domain_run().match(text, at + 1)
        end = run.end() if run is not None else at + 1
        floor = end
        match = _email_at(text, start, at, end)
        if match is not None:
            if authorities is None:
                authorities = _authorities(text)
            if not _in_authority(authorities, match.start):
                found.append(match)
        at = text.find("@", end)
    return found


def mask_email(value: str) -> str:
    local, _, domain = value.rpartition("@")
    return f"{local[:1]}***@****.{domain.rsplit('.', 1)[-1]}"


# -- credit card ---------------------------------------------------------------------------


@functools.cache
def _card() -> re.Pattern[str]:
    return re.compile(r"(?<![\d.])\d(?:[ \-]?\d){11,18}(?!\d|[.,]\d|-\d)", re.ASCII)


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
    for m in _card().finditer(text):
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


# ASCII classes: a CJK, Thai, Arabic or Cyrillic letter touching an address is a boundary.
@functools.cache
def _ipv4() -> re.Pattern[str]:
    return re.compile(r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?![\w]|\.\d)", re.ASCII)


@functools.cache
def _version_before() -> re.Pattern[str]:
    return re.compile(
        r"(?:\bv|\bver|\bversion|\bbuild|\brelease|\brev|\brevision|\bsection|\bsec|\bchapter|\bfig|\bfigure|\btable|\bclause)\.?\s*[:=#]?\s*$",
        re.IGNORECASE | re.ASCII,
    )


@functools.cache
def _ipv6() -> re.Pattern[str]:
    return re.compile(
        r"(?<![\w.])(?:[0-9a-f]{0,4}:){2,7}(?:(?:\d{1,3}\.){3}\d{1,3}|[0-9a-f]{0,4})"
        r"(?:%\w+(?:\.\w+)*)?(?![\w:]|\.\d)",
        re.IGNORECASE | re.ASCII,
    )


@functools.cache
def _group_before() -> re.Pattern[str]:
    return re.compile(r"(?<![\w])[0-9a-f]{1,4}[:\-]\Z|::\Z", re.IGNORECASE | re.ASCII)


def _continues_chain(text: str, start: int) -> bool:
    """Whether ``text[start:]`` is the tail of a longer run of hex groups (``00:`` before
    it), not a value of its own after a label such as ``value:``."""
    return _group_before().search(text, max(0, start - 6), start) is not None


def find_ips(text: str) -> list[PIIMatch]:
    found = []
    for m in _ipv4().finditer(text):
        if _version_before().search(text, max(0, m.start() - 14), m.start()):
            continue
        try:
            ipaddress.IPv4Address(m.group())
        except ValueError:
            continue
        found.append(PIIMatch(m.group(), m.start(), m.end()))
    for m in _ipv6().finditer(text):
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


@functools.cache
def _mac() -> re.Pattern[str]:
    return re.compile(
        r"(?<![\w.])(?:[0-9a-f]{2}([:\-])(?:[0-9a-f]{2}\1){4}[0-9a-f]{2}"
        r"|[0-9a-f]{4}\.[0-9a-f]{4}\.[0-9a-f]{4})(?![\w]|[:\-.][0-9a-f])",
        re.IGNORECASE | re.ASCII,
    )


def find_macs(text: str) -> list[PIIMatch]:
    return [
        PIIMatch(m.group(), m.start(), m.end())
        for m in _mac().finditer(text)
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
@functools.cache
def _url() -> re.Pattern[str]:
    return re.compile(
        r"(?<![\w@.\-/])(?:(?:https?|ftp)://|www\.)[^\s<>\"'`,]+", re.IGNORECASE | re.ASCII
    )


# A URL without a scheme: an ASCII host name, an optional port, then a path.
@functools.cache
def _bare_url() -> re.Pattern[str]:
    return re.compile(
        r"(?<![\w@.\-/:%+~#])((?:[a-z0-9](?:[a-z0-9\-]{0,61}[a-z0-9])?\.)+(?:[a-z]{2,63}|xn--[a-z0-9\-]{2,59}))"
        r"(?::\d{1,5})?/[^\s<>\"'`,]*",
        re.IGNORECASE | re.ASCII,
    )


@functools.cache
def _unit() -> re.Pattern[str]:
    """A one-letter path after a two-label host is a unit (``approx.km/h``), not a page."""
    return re.compile(r"/[^\W\d_]\Z")


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


def _bare_host_ok(host: str) -> bool:
    """A host written without a scheme must be a name under a real public suffix; with two
    labels, its suffix must not also be a file extension (``setup.py/``, ``a.zip/``)."""
    labels = host.lower().split(".")
    if not _is_tld(labels[-1]) or not _registrable(host):
        return False
    return not (len(labels) == 2 and labels[-1] in _file_extensions())


def _url_match(text: str, start: int, end: int) -> PIIMatch | None:
    if not _token_starts(text, start):
        return None
    value = _trim_url(text[start : _cut_right(text, start, end)])
    return PIIMatch(value, start, start + len(value)) if value else None


def find_urls(text: str) -> list[PIIMatch]:
    found = []
    for m in _url().finditer(text):
        match = _url_match(text, m.start(), m.end())
        if match is None:
            continue
        if match.text.lower().startswith("www.") and match.text.count(".") < 2:
            continue
        if _host_ok(match.text):
            found.append(match)
    if "/" in text:
        for m in _bare_url().finditer(text):
            if m.group(1).lower().startswith("www.") or not _bare_host_ok(m.group(1)):
                continue
            match = _url_match(text, m.start(), m.end())
            if match is None or (match.text.count(".") == 1 and _unit().search(match.text)):
                continue
            found.append(match)
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


# -- streamed text: what may still be a value ----------------------------------------------


@frozen
class Tail:
    """The characters a value of one type may hold, and those its detector reads around
    a value to decide it (a card followed by ``.5`` is a decimal, an address by ``(`` a
    method call, an address in a URL's authority none), JSON ``\\u`` escapes and
    percent-encoding included (the decoded view reads them). Any other character ends
    every value of the type before it and decides every value before it: a stream holds
    back only the run of the text's last characters that are none of them (``_stream``).

    ``ascii_breaks`` finds an ASCII character that is not one of them, or a character
    beyond ASCII (checked with ``breaks``)."""

    ascii_breaks: re.Pattern[str]
    breaks: Callable[[str], bool]

    def ends(self, char: str) -> bool:
        """Whether no value of the type holds ``char``."""
        return bool(self.ascii_breaks.match(char)) and (char.isascii() or self.breaks(char))


def _not_word(char: str) -> bool:
    return not char.isalnum()  # an address's letters and digits are the regex's \w


def _beyond_ascii(char: str) -> bool:
    return True  # cards, IPs and MAC addresses are ASCII


def _ends_url(char: str) -> bool:
    # a URL is cut at non-ASCII punctuation, symbols and spaces (_cut_right)
    return char.isspace() or unicodedata.category(char)[0] in "PSZ"


@functools.cache
def tails() -> dict[str, Tail]:
    """Each built-in type's ``Tail``, compiled on the first stream that needs one."""
    escaped = r"\\%"  # with the hex digits and the u, which each class holds
    return {
        # local part, @, domain, and whatever else a URL's authority holds (the token
        # _authority reads), so a URL's user:password@host, which is no address, is
        # read with the "://" before it however long the authority
        "email": Tail(re.compile(r"[\s<>\"'(]|[^\x00-\x7f]"), _not_word),
        # digit groups and their separators, and ".5", ",5", "-5" after the last digit
        "credit_card": Tail(re.compile(rf"[^0-9A-Fa-fu \-.,{escaped}]"), _beyond_ascii),
        # IPv4, IPv6 with a zone (%eth0); a letter or digit right after one undoes it
        "ip": Tail(re.compile(rf"[^\w.:{escaped}]", re.ASCII), _beyond_ascii),
        "mac_address": Tail(re.compile(rf"[^\w.:\-{escaped}]", re.ASCII), _beyond_ascii),
        # anything the URL patterns take but a space, quote, <, >, backtick or comma
        "url": Tail(re.compile(r"[\s\"'<>`,]|[^\x00-\x7f]"), _ends_url),
    }
