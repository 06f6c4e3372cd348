"""Write ``pii_corpus.jsonl``: labelled snippets for the PII detectors' quality figures.

Run ``python tests/data/make_pii_corpus.py`` to regenerate (seeded, so the output is stable).
Each line: ``text``; ``type`` (the detector the snippet was written for); ``kind``
(``positive``: it holds that type; ``negative``: a hard negative for it); ``labels``: every
PII span of every built-in type in the text, ``{type: [[start, end], ...]}``.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

rng = random.Random(20260)
Part = tuple[str, str | None]

TEMPLATES = [
    "Please contact {} for details.",
    "The value is {}.",
    "{}",
    "See ({}) above",
    "Log line: 2024-05-01T10:22:03Z src={} status=ok",
    "Write to <{}> today",
    'config = "{}"',
    "Bitte wenden Sie sich an {} für weitere Informationen.",
    "Veuillez écrire à {} avant lundi.",
    "Por favor, escriba a {} mañana.",
    "请联系 {} 获取详情。",
    "詳細は {} までご連絡ください。",
    "Пожалуйста, напишите на {} сегодня.",
    "يرجى التواصل مع {} للمزيد",
    "- item: {}\n- next: none",
    "Earlier: nothing. Now: {}, then more text follows here",
    '{"field": "{}", "n": 3}',
    "value:{};",
    "{}'s owner replied",
    "CSV: a,{},c",
    "UPPER CASE NOTE: {}!",
    "[{}]",
    "Is it {}?",
    "\t{}\n",
]


def snippet(parts: list[Part]) -> tuple[str, dict[str, list[list[int]]]]:
    text = ""
    labels: dict[str, list[list[int]]] = {}
    for piece, kind in parts:
        if kind is not None:
            labels.setdefault(kind, []).append([len(text), len(text) + len(piece)])
        text += piece
    return text, labels


def in_template(value: str, kind: str | None, extra: list[Part] | None = None) -> list[Part]:
    template = rng.choice(TEMPLATES)
    before, _, after = template.partition("{}")
    return [(before, None), *(extra or [(value, kind)]), (after, None)]


# -- generators ----------------------------------------------------------------------------

FIRST = [
    "jane",
    "john",
    "maria",
    "li.wei",
    "o.connor",
    "anna-lena",
    "sam_99",
    "k",
    "dev+ops",
    "müller",
    "josé",
    "élodie",
    "zhang.san",
    "ivan.petrov",
    "a.b.c",
    "x_y-z",
    "team.lead",
]
DOMAINS = [
    "example.com",
    "mail.example.org",
    "corp.co.uk",
    "uni-heidelberg.de",
    "münchen.de",
    "xn--mnchen-3ya.de",
    "例え.jp",
    "пример.рф",
    "startup.io",
    "sub.domain.example.net",
    "company.travel",
    "bücher.at",
    "gmail.com",
    "outlook.fr",
    "xn--80ak6aa92e.com",
]


def email() -> str:
    return (
        f"{rng.choice(FIRST)}{rng.choice(['', '', str(rng.randint(1, 99))])}@{rng.choice(DOMAINS)}"
    )


def luhn_complete(prefix: str, length: int) -> str:
    body = prefix + "".join(str(rng.randint(0, 9)) for _ in range(length - len(prefix) - 1))
    for check in "0123456789":
        digits = body + check
        total = 0
        for i, c in enumerate(reversed(digits)):
            v = int(c) * (2 if i % 2 else 1)
            total += v - 9 if v > 9 else v
        if total % 10 == 0:
            return digits
    raise AssertionError


CARD_KINDS = [
    ("4", 16),
    ("4", 13),
    ("51", 16),
    ("55", 16),
    ("2221", 16),
    ("2720", 16),
    ("34", 15),
    ("37", 15),
    ("6011", 16),
    ("65", 16),
    ("3530", 16),
    ("36", 14),
    ("62", 16),
    ("4", 19),
]


def group(digits: str, sep: str) -> str:
    if not sep:
        return digits
    n = len(digits)
    if n == 15:
        sizes = [4, 6, 5]
    elif n == 14:
        sizes = [4, 6, 4]
    else:
        sizes = [4] * (n // 4) + ([n % 4] if n % 4 else [])
    out, pos = [], 0
    for size in sizes:
        out.append(digits[pos : pos + size])
        pos += size
    return sep.join(out)


def card(valid: bool = True) -> str:
    prefix, length = rng.choice(CARD_KINDS)
    digits = luhn_complete(prefix, length)
    if not valid:
        last = (int(digits[-1]) + rng.randint(1, 9)) % 10
        digits = digits[:-1] + str(last)
    return group(digits, rng.choice(["", " ", "-"]))


def ipv4() -> str:
    return ".".join(str(rng.randint(1, 254)) for _ in range(4))


def ipv6() -> str:
    groups = [f"{rng.randint(0, 0xFFFF):x}" for _ in range(8)]
    form = rng.randint(0, 6)
    if form == 0:
        return ":".join(groups)
    if form == 1:
        return ":".join(g.zfill(4) for g in groups)
    if form == 2:
        return "2001:db8::" + ":".join(groups[:2])
    if form == 3:
        return rng.choice(["::1", "fe80::1", "::ffff:192.0.2." + str(rng.randint(1, 254))])
    if form == 4:
        return f"fe80::{groups[0]}:{groups[1]}%eth{rng.randint(0, 3)}"
    if form == 5:
        return f"{groups[0]}:{groups[1]}::{groups[2]}"
    return ":".join(groups[:6]) + "::"


def mac() -> str:
    octets = [f"{rng.randint(0, 255):02x}" for _ in range(6)]
    if rng.random() < 0.5:
        octets = [o.upper() for o in octets]
    style = rng.randint(0, 2)
    if style == 2:
        joined = "".join(octets)
        return ".".join(joined[i : i + 4] for i in (0, 4, 8))
    return (":" if style == 0 else "-").join(octets)


HOSTS = [
    "example.com",
    "www.example.org",
    "docs.python.org",
    "en.wikipedia.org",
    "münchen.de",
    "shop.example.co.uk",
    "localhost",
    "192.168.1.10",
    "api.startup.io",
    "xn--bcher-kva.de",
]
PATHS = [
    "",
    "/",
    "/path/to/page",
    "/search?q=pii+test&lang=en",
    "/wiki/Python_(language)",
    "/a/b.html#section-2",
    "/files/report.pdf",
    "/users/42/profile?tab=settings",
    ":8080/health",
    "/%E4%BD%A0%E5%A5%BD",
]


def url() -> str:
    host = rng.choice(HOSTS)
    path = rng.choice(PATHS)
    if host.startswith("www.") and rng.random() < 0.4:
        return host + path
    scheme = rng.choice(["https://", "https://", "http://", "ftp://"])
    return scheme + host + path


# -- positives -----------------------------------------------------------------------------


def positives() -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []

    def add(kind: str, parts: list[Part]) -> None:
        text, labels = snippet(parts)
        records.append({"text": text, "type": kind, "kind": "positive", "labels": labels})

    for _ in range(100):
        add("email", in_template(email(), "email"))
    for _ in range(10):
        e = email()
        add("email", in_template("", None, [("mailto:", None), (e, "email")]))
    for _ in range(10):
        add("email", [("cc: ", None), (email(), "email"), (", ", None), (email(), "email")])
    for _ in range(110):
        add("credit_card", in_template(card(), "credit_card"))
    for _ in range(60):
        add("ip", in_template(ipv4(), "ip"))
    for _ in range(55):
        add("ip", in_template(ipv6(), "ip"))
    for _ in range(8):
        add("ip", [("connect to ", None), (ipv4(), "ip"), (":8443 now", None)])
    for _ in range(7):
        address = "2001:db8::" + str(rng.randint(1, 99))
        add("ip", [("GET https://[", None), (address, "ip"), ("]:443/", None)])
        records[-1]["labels"]["url"] = [[4, len(records[-1]["text"])]]
    for _ in range(110):
        add("mac_address", in_template(mac(), "mac_address"))
    for value, kind in [
        ("JANE.DOE@EXAMPLE.COM", "email"),
        ("user.name+tag-2024@sub-domain.example-mail.com", "email"),
        ("1.1.1.1", "ip"),
        ("2001:DB8::FF00:42:8329", "ip"),
        ("http://localhost:3000/api/v1", "url"),
        ("https://user:pw@example.com:8443/x?y=1", "url"),
        ("4111111111111111", "credit_card"),
        ("5500-0000-0000-0004", "credit_card"),
        ("3714 496353 98431", "credit_card"),
        ("0a-1b-2c-3d-4e-5f", "mac_address"),
    ]:
        for _ in range(3):
            add(kind, in_template(value, kind))
    for _ in range(3):
        add("ip", [("net ", None), ("10.20.30.40", "ip"), ("/24 routed", None)])
    for _ in range(100):
        add("url", in_template(url(), "url"))
    for _ in range(10):
        e = email()
        u = f"https://example.com/u/{e}"
        # an email inside a URL's path: both are labelled
        add(
            "url",
            [("profile: ", None), ("https://example.com/u/", None), (e, "email"), (" end", None)],
        )
        records[-1]["labels"]["url"] = [[9, 9 + len(u)]]
    for _ in range(10):
        add("url", [("(see ", None), (url(), "url"), (") and ", None), (url(), "url"), (".", None)])
    for record in records:  # a URL whose host is an IP address holds an IP too
        text = record["text"]
        if record["type"] == "url" and "192.168.1.10" in text:
            start = text.index("192.168.1.10")
            record["labels"]["ip"] = [[start, start + 12]]
    return records


# -- hard negatives ------------------------------------------------------------------------

EMAIL_NEG = [
    "Follow @jane_doe and @example.com_fans on social media",
    "read https://medium.com/@jane/my-post today",
    "install lodash@4.17.21 and react@18.2.0",
    "npm i @types/node@20.1.0",
    "@app.route('/home') decorates the view",
    "@property def name(self): ...",
    "@media screen and (max-width: 600px)",
    "masked: j***@****.com",
    "user@localhost is not routable",
    "send it to name@domain without a TLD",
    "x@y.z is too short",
    "price: 5@$10 each",
    "email me at jane at example dot com",
    "ftp://admin:secret@ftp.example.com/files",
    "https://bob@git.example.org/repo",
    "the @ sign and the .com suffix",
    "meet @ 10am at example.com",
    "foo@bar.c1 is invalid",
    "a@@b.com doubled",
    "(at)example(dot)org obfuscated",
    "Twitter: @élodie_paris, Weibo: @张三",
    "@everyone please check example.com",
    "use scope @org/package@1.0.0",
    "S@mple p@ssword example",
    "ratio 3@4.5 in the table",
    "c = matrix@weights.transpose()",
    "y = a@b.sum() + 1",
]

CARD_NEG_FIXED = [
    "call +1 415-555-0132 now",
    "ISBN 978-3-16-148410-0",
    "IBAN DE89 3704 0044 0532 0130 00",
    "timestamp 20240315123045",
    "epoch ms 1700000000000",
    "order #100234567890 shipped",
    "pi is 3.14159265358979323846",
    "tracking 1Z999AA10123456784",
    "IMEI 356938035643809",
    "IMEI 490154203237518",
    "serial 0000 0000 0000 0000",
    "account 9876 5432 1098 7654",
    "phone 0049 30 12345678",
    "ids 1234 5678 and 9012 3456",
    "uuid 550e8400-e29b-41d4-a716-446655440000",
]

IP_NEG = [
    "version 1.2.3.4 released",
    "v1.2.3.4",
    "ver 2.0.0.1 is old",
    "Version: 10.0.0.1",
    "upgrade to ver. 4.5.6.7",
    "OID 1.3.6.1.4.1.343",
    "release 1.2.3.4.5",
    "256.1.1.1 is not valid",
    "999.10.10.10",
    "300.300.300.300",
    "section 1.2.3",
    "at 12:30:45 today",
    "2024-01-01T10:20:30Z",
    "ratio 3:2:1",
    "John 3:16",
    "std::vector<int> v;",
    "a::b::c in Rust",
    "call ::main()",
    "duration 01:02:03:04",
    "2001:db8:::1 is malformed",
    "fe80:0:0:0:0:0:0:0:1 has nine groups",
    "12345::1 too long",
    "gggg::1 is not hex",
    "time 10:30 pm",
    "score 2:1 (3:3)",
    "::",
    "C++ ::operator new",
    "1.2.3",
    "1.2",
    "192.168.1",
    "v2.10.3.1-beta",
    "build 3.4.5.6 of the app is version",
    "MAC 00:1A:2B:3C:4D:5E",
    "coords 48.8566, 2.3522",
    "price 1.234.567,89 EUR",
]

MAC_NEG = [
    "00:11:22:33:44 has five bytes",
    "00:11:22:33:44:55:66 has seven",
    "00-11:22-33:44-55 mixes separators",
    "hash deadbeefcafe",
    "0x1a2b3c4d5e6f",
    "sha1 da39a3ee5e6b4b0d3255bfef95601890afd80709",
    "color #A1B2C3",
    "uuid 123e4567-e89b-12d3-a456-426614174000",
    "001a2b3c4d5e bare hex",
    "2001:0db8:85a3:0000:0000:8a2e:0370:7334",
    "12:30:45",
    "0g:11:22:33:44:55",
    "aa:bb:cc:dd:ee:ff:00:11",
    "1a2b.3c4d",
    "1a2b.3c4d.5e6f.7a8b",
    "AB-CD-EF",
    "git 3f2a9c1",
    "key A1B2-C3D4-E5F6-G7H8",
    "fe80::1ff:fe23:4567:890a",
    "00:00",
    "10.0.0.1",
]

URL_NEG = [
    "visit example dot com",
    "path /usr/local/bin/python",
    r"C:\Users\jane\file.txt",
    "the file report.pdf",
    "www alone",
    "www.example has no tld",
    "http:// is a scheme",
    "https://. is empty",
    "e.g. and i.e. are abbreviations",
    "ftp-server is down",
    "mailto:jane@example.com",
    "data:text/plain;base64,SGVsbG8=",
    "version 1.2.3",
    "see section 4.2.1",
    "httpsexample.com",
    "http//example.com",
    "www.",
    "file:///etc/hosts",
    "ssh://git@github",
    "the word http alone",
    "https://-",
    "example.com without a path",
]


def negatives() -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []

    def add(kind: str, parts: list[Part]) -> None:
        text, labels = snippet(parts)
        records.append({"text": text, "type": kind, "kind": "negative", "labels": labels})

    def fill(kind: str, fixed: list[str], count: int) -> None:
        for i in range(count):
            value = fixed[i % len(fixed)]
            add(kind, in_template(value, None))

    fill("email", EMAIL_NEG, 75)
    for _ in range(35):
        add("email", in_template(f"{rng.choice(FIRST)}@{rng.choice(['', 'host', 'a.b'])}", None))
    for _ in range(80):
        add("credit_card", in_template(card(valid=False), None))
    fill("credit_card", CARD_NEG_FIXED, 30)
    fill("ip", IP_NEG, 80)
    for _ in range(30):
        v = ".".join(str(rng.randint(0, 20)) for _ in range(4))
        add("ip", in_template(f"{rng.choice(['v', 'version ', 'ver ', 'Version '])}{v}", None))
    fill("mac_address", MAC_NEG, 80)
    for _ in range(30):
        add("mac_address", in_template(f"{rng.randbytes(6).hex()}", None))
    fill("url", URL_NEG, 110)
    # some negatives contain other types' PII: label it so precision is measured fairly
    for record in records:
        text = record["text"]
        if record["type"] == "ip" and "00:1A:2B:3C:4D:5E" in text:
            start = text.index("00:1A:2B:3C:4D:5E")
            record["labels"]["mac_address"] = [[start, start + 17]]
        if record["type"] in ("url", "mac_address") and "10.0.0.1" in text:
            start = text.index("10.0.0.1")
            record["labels"]["ip"] = [[start, start + 8]]
        if record["type"] == "mac_address" and "fe80::1ff:fe23:4567:890a" in text:
            start = text.index("fe80::1ff:fe23:4567:890a")
            record["labels"]["ip"] = [[start, start + 24]]
        if record["type"] == "mac_address" and "2001:0db8:85a3" in text:
            start = text.index("2001:0db8:85a3")
            record["labels"]["ip"] = [[start, start + 39]]
        if record["type"] == "mac_address" and "aa:bb:cc:dd:ee:ff:00:11" in text:
            start = text.index("aa:bb:cc:dd:ee:ff:00:11")
            record["labels"]["ip"] = [[start, start + 23]]
        if record["type"] == "url" and "mailto:jane@example.com" in text:
            start = text.index("jane@example.com")
            record["labels"]["email"] = [[start, start + 16]]
        if "ftp://admin:secret@ftp.example.com/files" in text:
            start = text.index("ftp://")
            record["labels"]["url"] = [[start, start + 40]]
        if "https://bob@git.example.org/repo" in text:
            start = text.index("https://bob")
            record["labels"]["url"] = [[start, start + 32]]
        if "https://medium.com/@jane/my-post" in text:
            start = text.index("https://medium")
            record["labels"]["url"] = [[start, start + 32]]
    return records


# -- private-use and reserved domains ------------------------------------------------------

PRIVATE_ADDRESSES = [
    "jane.doe@corp.internal",
    "ops@mail.corp.internal",
    "bob@printer.local",
    "admin@router.lan",
    "it-desk@hq.corp",
    "dev@api.test",
    "qa+run42@staging.test",
    "user@shop.example",
    "noreply@bounce.invalid",
    "root@box.localhost",
    "family@nas.home.arpa",
    "sales@intranet.private",
    "li.wei@wiki.intranet",
    "anna@media.home",
]
PRIVATE_TEMPLATES = [
    "Please contact {} for details.",
    "Write to <{}> today",
    '{"field": "{}", "n": 3}',
    "请联系 {} 获取详情。",
    "CSV: a,{},c",
]
IMAGE_NAMES = [
    "<img src='logo@2x.png'>",
    "icons: home@3x.jpg, back@2x.webp",
    "hero@1.5x.local is not an address either",
    "asset name@3x.jpg loaded",
    "sprite@2x.test.png",
]


def private_domains() -> list[dict[str, Any]]:
    """Addresses at domains that never reach the public DNS (RFC 2606, 6761, 6762,
    8375, ICANN's ``.internal``) are real addresses on private networks; image names
    with a pixel density are not. Written without the random generator, so the records
    above stay as they were."""
    records: list[dict[str, Any]] = []
    for index, address in enumerate(PRIVATE_ADDRESSES):
        for template in (PRIVATE_TEMPLATES[index % 5], PRIVATE_TEMPLATES[(index + 2) % 5]):
            before, _, after = template.partition("{}")
            text, labels = snippet([(before, None), (address, "email"), (after, None)])
            records.append({"text": text, "type": "email", "kind": "positive", "labels": labels})
    for text in IMAGE_NAMES:
        records.append({"text": text, "type": "email", "kind": "negative", "labels": {}})
    return records


def main() -> None:
    records = positives() + negatives() + private_domains()
    out = Path(__file__).with_name("pii_corpus.jsonl")
    with out.open("w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    kinds: dict[str, int] = {}
    for record in records:
        kinds[record["kind"]] = kinds.get(record["kind"], 0) + 1
    print(f"wrote {len(records)} snippets to {out}: {kinds}")


if __name__ == "__main__":
    main()
