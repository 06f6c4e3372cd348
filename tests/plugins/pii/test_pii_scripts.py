"""Boundaries in every script: a value glued to Chinese, Japanese, Thai, Arabic or Russian
text, or to full-width punctuation, is found exactly; one inside a longer token of its own
kind is not."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from plait_pii import PIIMiddleware

ALPHABETS = {
    "chinese": "请联系获取详情服务器地址是已经更新的中文字",
    "japanese": "詳細はまでご連絡くださいサーバーのを確認しましたカタカナ",
    "thai": "กรุณาติดต่อเพื่อรับข้อมูลที่อยู่เครื่องคือครับ",
    "arabic": "يرجىالتواصلمعللمزيدعنوانالجهازمتصل",
    "cyrillic": "пишитенасегодняадрессервераработает",
    "fullwidth": "（）：。，、！？「」【】",
}
VALUES = {
    "email": ["jane.doe@example.com", "li.wei@mail.example.cn", "ivan@example.ru"],
    "credit_card": ["4111 1111 1111 1111", "5555-5555-5555-4444", "378282246310005"],
    "ip": ["10.0.0.254", "192.168.1.20", "2001:db8::8a2e:370:7334"],
    "mac_address": ["00:1A:2B:3C:4D:5E", "a4-5e-60-c2-11-0f", "0011.22aa.bbcc"],
    "url": [
        "https://example.com/a/b?c=d",
        "www.example.org/path",
        "docs.example.org/guide/install",
        "example.com/pricing",
    ],
}
CASES = [(pii_type, value) for pii_type, values in VALUES.items() for value in values]


def text_of(script: str) -> st.SearchStrategy[str]:
    return st.text(alphabet=ALPHABETS[script], min_size=0, max_size=12)


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(CASES),
    st.sampled_from(sorted(ALPHABETS)),
    st.sampled_from(sorted(ALPHABETS)),
    st.data(),
)
def test_value_touching_any_script_is_found_exactly(
    case: tuple[str, str], left_script: str, right_script: str, data: st.DataObject
) -> None:
    pii_type, value = case
    left = data.draw(text_of(left_script))
    right = data.draw(text_of(right_script))
    text = left + value + right
    found = [(m.start, m.end) for m in PIIMiddleware(pii_type).matches(text)]
    assert found == [(len(left), len(left) + len(value))], text


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(CASES), st.sampled_from(sorted(ALPHABETS)), st.data())
def test_redaction_inside_any_script_keeps_the_text_around(
    case: tuple[str, str], script: str, data: st.DataObject
) -> None:
    pii_type, value = case
    left, right = data.draw(text_of(script)), data.draw(text_of(script))
    redacted = PIIMiddleware(pii_type).redact(left + value + right)
    assert redacted == f"{left}[REDACTED_{pii_type.upper()}]{right}"


@pytest.mark.parametrize(
    ("pii_type", "text"),
    [
        ("ip", "服务器1.10.0.0.254正常"),  # a longer dotted sequence
        ("ip", "адрес10.0.0.2541"),
        ("mac_address", "地址00:1A:2B:3C:4D:5E:6F。"),
        ("credit_card", "卡号41111111111111111。"),
        ("email", "请联系jane@example.com.cn.x9z获取"),  # no such top-level domain
        ("url", "请看src/docs.example.org/guide获取"),  # part of a path, not a host
        ("url", "文件setup.py/build已经"),
    ],
)
def test_longer_tokens_of_the_same_kind_are_not_values(pii_type: str, text: str) -> None:
    assert PIIMiddleware(pii_type).matches(text) == []


@pytest.mark.parametrize(
    "text",
    [
        "icon@2x.png",
        "avatar@3x.webp",
        "logo@1.5x.jpg",
        "sprite@2x.gif",
        "react@18.2.0",
        "user@localhost",
        "x@host.notatld",
    ],
)
def test_image_names_and_unknown_domains_are_not_email(text: str) -> None:
    assert PIIMiddleware("email").matches(f"see {text} here") == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("read docs.example.org/guide/install first", "docs.example.org/guide/install"),
        ("prices at example.com/pricing.", "example.com/pricing"),
        ("shop.example.co.uk/cart/42, then", "shop.example.co.uk/cart/42"),
        ("api.example.io:8443/v1/users", "api.example.io:8443/v1/users"),
        ("(see example.org/about)", "example.org/about"),
    ],
)
def test_urls_without_a_scheme(text: str, expected: str) -> None:
    assert [m.text for m in PIIMiddleware("url").matches(text)] == [expected]


@pytest.mark.parametrize(
    "text",
    [
        "setup.py/build",
        "README.md and config.json",
        "os.path.join(a, b)",
        "archive.zip/inner",
        "python3.11/site-packages",
        "v1.2/changes",
        "e.g./i.e.",
        "U.S./Canada",
        "approx.km/h",
        "node_modules/react.dom/index",
        "example.com without a path",
        "co.uk/x",
        "printer.local/queue",
    ],
)
def test_not_urls_without_a_scheme(text: str) -> None:
    assert PIIMiddleware("url").matches(text) == []
