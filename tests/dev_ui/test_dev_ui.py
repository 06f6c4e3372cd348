"""``plait dev`` in real headless Chromium: the page served with examples/support.toml,
driven like a person would — a message sent with Enter, the streamed answer, a refund
approved from the keyboard, one edited in the form generated from the tool's schema, one
rejected with a reason (each checked by the server), the run timeline with the request
the model received after pii redacted it, a page reloaded mid-run that picks the run up
again, threads made, switched and deleted, the dark theme.

Opt-in (``tox -e dev-ui``, which sets ``PLAIT_DEV_UI=1``; ``.ci/run`` runs it): it needs
Chromium from the system (``apt-get install chromium``) and Playwright from PyPI, used
only to drive that browser. Screenshots go to ``PLAIT_DEV_UI_SCREENSHOTS`` (the docs'
``docs/img/`` when regenerating them; default: the test's temporary directory).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

if os.environ.get("PLAIT_DEV_UI") != "1":
    pytest.skip("opt-in: tox -e dev-ui (PLAIT_DEV_UI=1)", allow_module_level=True)

from playwright.sync_api import Page, expect, sync_playwright

# A loaded CI machine (two cores, a browser, a server) can take more than the default 5 s.
expect.set_options(timeout=20_000)

REPO = Path(__file__).resolve().parents[2]
SUPPORT = REPO / "examples" / "support.toml"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

# A run that takes a while: one tool call that sleeps, so a page can reload mid-run.
SLOW_AGENT = """
[agent]
model = "scripted:slow"
tools = ["slow_tools:wait_a_bit"]
checkpointer = "memory"

[[agent.model_settings.responses]]
function = "slow_tools:brain"
repeat = 10
"""

SLOW_TOOLS = '''
import time

from plait.messages import AIMessage, ToolCall


def wait_a_bit(seconds: float) -> str:
    """Wait, then say so.

    Args:
        seconds: How long to wait.
    """
    time.sleep(seconds)
    return f"waited {seconds} s"


def brain(messages, tools):
    if messages[-1].type == "human":
        return AIMessage("Waiting first.", tool_calls=[ToolCall("wait_a_bit", {"seconds": 3})])
    return AIMessage("All done after the wait: " + messages[-1].text)
'''


def _chromium() -> str:
    if Path("/usr/bin/chromium").exists():  # Debian's, as CI installs it
        return "/usr/bin/chromium"
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    pytest.fail("no Chromium on PATH: apt-get install chromium")


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@contextlib.contextmanager
def _plait_dev(agent: Path) -> Iterator[str]:
    """``plait dev AGENT`` in a real subprocess; yields its URL."""
    port = _port()
    process = subprocess.Popen(
        [sys.executable, "-m", "plait", "dev", str(agent), "--port", str(port)],
        cwd=agent.parent,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(url + "/healthz", timeout=1).status_code == 200:
                    break
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                raise AssertionError(f"plait dev did not start: {process.communicate()[1]}")
            time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = os.environ.get("PLAIT_DEV_UI_SCREENSHOTS")
    path = Path(folder) if folder else tmp_path_factory.mktemp("screenshots")
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=_chromium(), args=ARGS)
        yield browser
        browser.close()


def _offline(context: Any, base: str) -> list[str]:
    """Refuse every request outside the server; returns the refused URLs."""
    refused: list[str] = []

    def route(route: Any, request: Any) -> None:
        if request.url.startswith(base):
            route.continue_()
        else:
            refused.append(request.url)
            route.abort()

    context.route("**/*", route)
    return refused


def _send(page: Page, text: str) -> None:
    box = page.locator("#input")
    box.fill(text)
    box.press("Enter")


def test_chat_and_approvals_on_the_support_example(browser: Any, shots: Path) -> None:
    with _plait_dev(SUPPORT) as url:
        context = browser.new_context(viewport={"width": 1400, "height": 860}, color_scheme="light")
        refused = _offline(context, url)
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(url + "/")
        expect(page.locator("#agent-name")).to_have_text("plait dev · agent")

        # 1. Approve from the keyboard: Enter sends, the Approve button has the focus.
        _send(page, "Hi, I'm jane@example.com. Please refund order 1042.")
        expect(page.locator(".msg.user").first).to_have_text(
            "Hi, I'm jane@example.com. Please refund order 1042."
        )
        expect(page.locator(".msg.assistant").first).to_have_text("Let me look that order up.")
        lookup = page.locator("details.tool[data-call]").first
        expect(lookup.locator(".name")).to_have_text("lookup_order")
        expect(lookup.locator(".result")).to_contain_text('"blue kettle"')
        approve = page.locator("#approvals button[data-decision='approve']")
        expect(approve).to_be_focused()
        expect(page.locator("#approvals")).to_contain_text("A refund moves money")
        expect(page.locator("#approvals pre.args")).to_contain_text('"amount": 25')
        page.screenshot(path=str(shots / "dev-ui-approval.png"))
        page.keyboard.press("Enter")
        answer = page.locator(".msg.assistant").last
        expect(answer).to_have_text(
            "Refunded 25.00 EUR for order 1042. I will send the confirmation to [REDACTED_EMAIL]."
        )
        expect(page.locator("#approvals")).to_be_empty()
        refund = page.locator("details.tool[data-call]").nth(1)
        expect(refund.locator(".status")).to_have_text("done")
        refund.locator("summary").click()
        expect(refund.locator(".result")).to_have_text("Refunded 25.00 EUR for order 1042.")
        expect(page.locator("#panel-state [data-state]")).to_be_visible()
        page.screenshot(path=str(shots / "dev-ui-chat.png"))
        first_thread = page.evaluate("window.plaitPage.thread")

        # The timeline: two runs (paused, then approved), each model call and tool run in
        # order, and the request as the model got it — after pii redacted the address.
        page.locator("#tab-timeline").click()
        rows = page.locator("table.timeline tbody tr:not(.hook)")
        expect(rows).to_have_count(9)
        kinds = [rows.nth(i).get_attribute("data-kind") for i in range(9)]
        assert kinds == [
            "run",
            "model_call",
            "tool_run",
            "model_call",
            "end",
            "run",
            "tool_run",
            "model_call",
            "end",
        ], kinds
        expect(rows.nth(4)).to_contain_text("paused for approval")
        expect(rows.nth(1)).to_contain_text("model scripted:support")
        expect(rows.nth(1).locator("td").nth(2)).to_contain_text(" ms")
        expect(rows.nth(1).locator("td").nth(3)).to_contain_text("→")
        expect(rows.nth(2)).to_contain_text("tool lookup_order · success")
        expect(rows.nth(6)).to_contain_text("tool issue_refund · success")
        # Hook calls in the order the kernel made them: pii rewrites the input before the
        # first model call; human_in_the_loop pauses the run after the second.
        hooks = page.locator("table.timeline tr.hook summary")
        names = hooks.all_inner_texts()
        assert names.index("hook pii.before_agent") < names.index("hook pii.before_model")
        assert "hook human_in_the_loop.after_model" in names
        assert "hook model_retry.awrap_model_call" in names
        rows.nth(1).locator("details.request summary").click()
        request = rows.nth(1).locator(".request-text")
        expect(request).to_contain_text(
            "human: Hi, I'm [REDACTED_EMAIL]. Please refund order 1042."
        )
        expect(request).to_contain_text("system: You are Acme's support agent.")
        expect(request).not_to_contain_text("jane@example.com")
        expect(rows.nth(1).locator(".answer-text")).to_contain_text("-> lookup_order")
        page.screenshot(path=str(shots / "dev-ui-timeline.png"))
        page.locator("#tab-state").click()

        # 2. Edit the arguments in the form made from issue_refund's JSON schema.
        page.locator("#new-thread").click()
        _send(page, "Please refund order 2077.")
        page.locator("#approvals button[data-decision='edit']").click()
        amount = page.locator("form.decision-edit input[name='amount']")
        expect(amount).to_have_attribute("type", "number")
        expect(amount).to_have_value("40")
        expect(page.locator("form.decision-edit input[name='order_id']")).to_have_value("2077")
        amount.fill("10")
        page.screenshot(path=str(shots / "dev-ui-edit.png"))
        amount.press("Enter")
        expect(page.locator(".msg.assistant").last).to_have_text(
            "A reviewer changed the refund. Refunded 10.00 EUR for order 2077."
        )

        # 3. Reject with a reason, typed and sent from the keyboard.
        page.locator("#new-thread").click()
        _send(page, "Please refund order 1042.")
        page.locator("#approvals button[data-decision='reject']").focus()
        page.keyboard.press("Enter")
        reason = page.locator("form.decision-reject textarea")
        expect(reason).to_be_focused()
        reason.type("Order 1042 was refunded already.")
        reason.press("Enter")
        last = page.locator(".msg.assistant").last
        expect(last).to_contain_text("I have not refunded order 1042.")
        expect(last).to_contain_text("Order 1042 was refunded already.")
        expect(page.locator("details.tool.error .status")).to_have_text("error")

        # Threads: three listed; switch back to the first, delete the last.
        expect(page.locator("#threads li")).to_have_count(3)
        page.locator(f"#threads li[data-thread='{first_thread}'] button.open").click()
        expect(page.locator(".msg.assistant").last).to_contain_text("Refunded 25.00 EUR")
        page.once("dialog", lambda dialog: dialog.accept())
        page.locator("#threads li").first.locator("button[aria-label^='Delete']").click()
        expect(page.locator("#threads li")).to_have_count(2)

        # Dark theme, from the system's preference.
        dark = browser.new_context(viewport={"width": 1400, "height": 860}, color_scheme="dark")
        _offline(dark, url)
        night = dark.new_page()
        night.goto(url + "/")
        night.locator(f"#threads li[data-thread='{first_thread}'] button.open").click()
        expect(night.locator(".msg.assistant").last).to_contain_text("Refunded 25.00 EUR")
        background = night.evaluate("getComputedStyle(document.body).backgroundColor")
        assert background == "rgb(18, 20, 23)", background
        night.screenshot(path=str(shots / "dev-ui-dark.png"))
        dark.close()

        # Time travel: a second turn, then back to the step before it — the message
        # edited and run again on a fork that keeps the first turn.
        _send(page, "Please refund order 2077.")
        expect(page.locator("#approvals button[data-decision='approve']")).to_be_focused()
        page.locator("#tab-history").click()
        step = page.locator("#panel-history li", has_text="+ human: Please refund order 2077.")
        expect(step).to_have_count(1)
        step.locator("button.edit-rerun").click()
        composer = page.locator("#input")
        expect(composer).to_have_value("Please refund order 2077.")
        expect(composer).to_be_focused()
        forked = page.evaluate("window.plaitPage.thread")
        assert forked != first_thread
        expect(page.locator("#approvals")).to_be_empty()
        expect(page.locator(".msg.assistant").last).to_contain_text("Refunded 25.00 EUR")
        composer.fill("Please refund order 9999.")
        composer.press("Enter")
        expect(page.locator(".msg.assistant").last).to_contain_text(
            "Sorry, I could not find that order."
        )
        expect(page.locator(".msg.assistant").last).to_contain_text("there is no order 9999")
        expect(page.locator(".msg.user")).to_have_count(2)
        page.screenshot(path=str(shots / "dev-ui-history.png"))
        # The original thread still waits for its approval of order 2077.
        page.locator(f"#threads li[data-thread='{first_thread}'] button.open").click()
        expect(page.locator("#approvals pre.args")).to_contain_text('"2077"')

        assert not refused, refused
        assert not errors, errors
        context.close()


def test_a_reloaded_page_picks_the_run_up_again(browser: Any, tmp_path: Path, shots: Path) -> None:
    (tmp_path / "slow.toml").write_text(SLOW_AGENT, encoding="utf-8")
    (tmp_path / "slow_tools.py").write_text(SLOW_TOOLS, encoding="utf-8")
    with _plait_dev(tmp_path / "slow.toml") as url:
        context = browser.new_context(viewport={"width": 1400, "height": 860})
        page = context.new_page()
        page.goto(url + "/")
        _send(page, "Take your time.")
        expect(page.locator("details.tool .status")).to_have_text("running")
        expect(page.locator("#cancel")).to_be_enabled()
        page.reload()
        # The thread is reopened, the run followed from its first event: nothing twice.
        expect(page.locator("#cancel")).to_be_enabled()
        expect(page.locator(".msg.user")).to_have_text("Take your time.")
        expect(page.locator(".msg.assistant").last).to_have_text(
            "All done after the wait: waited 3.0 s", timeout=15_000
        )
        expect(page.locator(".msg.assistant")).to_have_count(2)
        expect(page.locator("details.tool")).to_have_count(1)
        expect(page.locator("#cancel")).to_be_disabled()

        # Esc cancels the run going on (the server's cancel route); the page says so.
        _send(page, "Again, please.")
        expect(page.locator("details.tool .status").last).to_have_text("running")
        page.keyboard.press("Escape")
        expect(page.locator(".msg[data-cancelled]")).to_have_text("Run cancelled.")
        expect(page.locator("#cancel")).to_be_disabled()
        context.close()
