"""Every agent in ``examples/`` runs offline through the real ``plait`` command."""

from __future__ import annotations

import tomllib
from importlib.metadata import entry_points
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
INSTALLED = {ep.name for ep in entry_points(group="plait.middleware")}


def _needs_plugins(name: str) -> None:
    data = tomllib.loads((EXAMPLES / name).read_text(encoding="utf-8"))
    missing = sorted({t["use"] for t in data.get("middleware", [])} - INSTALLED)
    if missing:
        pytest.skip(f"{name} needs the plugins {', '.join(missing)}")


def test_hello(plait_cli, tmp_path: Path) -> None:
    done = plait_cli("run", str(EXAMPLES / "hello.toml"), "What's the weather in Paris?")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "In Paris today it is sunny, 21 °C. Enjoy your day!"


def test_support_redacts_and_asks_before_refunding(plait_cli) -> None:
    _needs_plugins("support.toml")
    stdin = (
        "Hi, I'm jane@example.com. Please refund order 1042.\n"
        "a\n"
        "And order 2077?\n"
        "r\n"
        "not delivered yet\n"
    )
    done = plait_cli("chat", str(EXAMPLES / "support.toml"), input=stdin)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "Approval needed: issue_refund" in out
    assert "Refund 25.00 EUR for order 1042?" in out
    assert (
        "agent> Refunded 25.00 EUR for order 1042. I will send the confirmation to "
        "[REDACTED_EMAIL]." in out
    )
    assert "jane@example.com" not in out.split("you> Hi, I'm jane@example.com.", 1)[1]
    assert "agent> I have not refunded it. Refund not issued: a human rejected it " in out


def test_reader_clears_old_chapters_and_stops_at_the_limit(plait_cli) -> None:
    _needs_plugins("reader.toml")
    done = plait_cli("chat", str(EXAMPLES / "reader.toml"), input="read chapter 1\n" + "next\n" * 5)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "In this prompt I see 1 chapter(s) in full and 0 cleared." in out
    assert (
        "agent> I read chapter 5 (222 words). "
        "In this prompt I see 1 chapter(s) in full and 4 cleared." in out
    )
    assert "thread limit (10/10)" in out


def test_every_example_has_a_test() -> None:
    tested = {"hello.toml", "support.toml", "reader.toml"}
    assert {p.name for p in EXAMPLES.glob("*.toml")} == tested
