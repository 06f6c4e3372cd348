"""The built site, opened in real headless Chromium with no network: every page loads,
every mermaid diagram is drawn as an SVG (never left as raw ``flowchart`` text), nothing
that must be read whole is clipped (a diagram, drawn or in text, wider than its box; an API
signature that scrolls sideways; a table wider than the content column), and no page asks
for anything outside the site.

Opt-in (``tox -e docs-browser``, which sets ``PLAIT_DOCS_BROWSER=1``): it needs Chromium
from the system (Debian/Ubuntu: ``apt-get install chromium``) and Playwright from PyPI,
used only to drive that browser. Screenshots of the pages with diagrams are written to
``PLAIT_DOCS_SCREENSHOTS`` (default: the test's temporary directory).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

if os.environ.get("PLAIT_DOCS_BROWSER") != "1":
    pytest.skip("opt-in: tox -e docs-browser (PLAIT_DOCS_BROWSER=1)", allow_module_level=True)

REPO = Path(__file__).resolve().parents[2]
API_PAGE = "api/index.html"  # its code blocks are signatures generated from the code

# Material puts each drawn diagram in a closed shadow root; open them so the test can look.
OPEN_SHADOWS = """
const attach = Element.prototype.attachShadow;
Element.prototype.attachShadow = function (options) {
  return attach.call(this, { ...options, mode: "open" });
};
"""

DIAGRAMS = """
() => {
  const HEAD = /^\\s*((flowchart|graph)[ \\t]+(TB|TD|BT|RL|LR)|sequenceDiagram)\\b/;
  const raw = [...document.querySelectorAll("pre.mermaid, code")]
    // a diagram's first line ("flowchart LR"), not code that starts with the word
    // (`graph.stream()`)
    .filter((el) => HEAD.test(el.textContent));
  const drawn = [...document.querySelectorAll("div.mermaid")].map((host) => {
    const svg = host.shadowRoot && host.shadowRoot.querySelector("svg");
    const box = svg ? svg.getBoundingClientRect() : { width: 0, height: 0 };
    return {
      nodes: svg ? svg.querySelectorAll("g.node").length : 0,
      error: svg ? /Syntax error/.test(svg.textContent) : true,
      width: box.width,
      height: box.height,
    };
  });
  return { raw: raw.length, drawn };
}
"""


# What would be cut off at the right edge of the content column, each with its page.
CLIPPED = """
(apiPage) => {
  const out = [];
  const wide = (el) => el.scrollWidth > el.clientWidth + 1;
  const first = (el) => el.textContent.trim().split("\\n")[0].slice(0, 60);
  const size = (el) => `${el.scrollWidth} px in ${el.clientWidth}`;
  document.querySelectorAll(".md-content pre > code").forEach((code) => {
    if (!wide(code)) return;
    if (/[\\u2500-\\u257f\\u25b2\\u25bc]/.test(code.textContent)) {
      out.push(`text diagram scrolls sideways (${size(code)}): ${first(code)}`);
    } else if (apiPage) {
      out.push(`signature scrolls sideways (${size(code)}): ${first(code)}`);
    }
  });
  const column = document.querySelector(".md-content .md-typeset").clientWidth;
  document.querySelectorAll(".md-content table").forEach((table) => {
    const holder = table.closest(".md-typeset__scrollwrap") || table;
    const width = table.getBoundingClientRect().width;
    if (wide(holder) || wide(table) || width > column + 1) {
      const text = `${Math.round(width)} px in ${column}`;
      out.push(`table wider than the column (${text}): ${first(table)}`);
    }
  });
  document.querySelectorAll("div.mermaid").forEach((host, index) => {
    const svg = host.shadowRoot && host.shadowRoot.querySelector("svg");
    if (!svg) return;
    const drawn = svg.getBoundingClientRect().width;
    if (drawn > host.clientWidth + 1 || drawn > column + 1) {
      const text = `${Math.round(drawn)} px in ${host.clientWidth}`;
      out.push(`diagram ${index + 1} wider than its box (${text})`);
    }
  });
  return out;
}
"""


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    pytest.fail("no Chromium on PATH: apt-get install chromium")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("site")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(folder)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    return folder


def _expected_diagrams() -> dict[str, int]:
    """Page path in the site -> number of mermaid blocks in its markdown."""
    counts = {}
    for md in (REPO / "docs").rglob("*.md"):
        count = md.read_text(encoding="utf-8").count("```mermaid")
        if count:
            relative = md.relative_to(REPO / "docs").with_suffix("")
            page = "index.html" if relative.name == "index" else f"{relative}/index.html"
            counts[str(Path(page))] = count
    return counts


def test_every_page_draws_its_diagrams_offline(site: Path, tmp_path: Path) -> None:
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    from playwright.sync_api import sync_playwright

    shots = Path(os.environ.get("PLAIT_DOCS_SCREENSHOTS") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    expected = _expected_diagrams()
    assert expected, "no page has a mermaid diagram"
    pages = sorted(str(p.relative_to(site)) for p in site.rglob("index.html"))
    outside: list[str] = []
    problems: list[str] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=_chromium())
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        context.add_init_script(OPEN_SHADOWS)

        def refuse(route, request) -> None:  # type: ignore[no-untyped-def]
            if request.url.startswith(("file:", "data:", "blob:")):
                route.continue_()
            else:
                outside.append(request.url)
                route.abort()

        context.route("**/*", refuse)
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        for name in pages:
            errors.clear()
            page.goto((site / name).as_uri(), wait_until="load")
            want = expected.get(name, 0)
            if want:
                with contextlib.suppress(PlaywrightTimeout):  # what is on screen is checked below
                    page.wait_for_function(
                        "n => document.querySelectorAll('div.mermaid').length >= n"
                        " && !document.querySelector('pre.mermaid')",
                        arg=want,
                        timeout=20_000,
                    )
                page.screenshot(path=str(shots / (name.replace("/", "_") + ".png")), full_page=True)
            seen = page.evaluate(DIAGRAMS)
            if seen["raw"]:
                problems.append(f"{name}: {seen['raw']} diagram(s) shown as raw text")
            if len(seen["drawn"]) != want:
                problems.append(f"{name}: {len(seen['drawn'])} diagram(s) drawn, {want} expected")
            for index, drawn in enumerate(seen["drawn"]):
                if drawn["error"] or drawn["nodes"] < 2 or drawn["width"] < 100:
                    problems.append(f"{name}: diagram {index + 1} is not a drawn chart: {drawn}")
            problems += [f"{name}: script error: {error}" for error in errors]
            problems += [f"{name}: {what}" for what in page.evaluate(CLIPPED, name == API_PAGE)]
        browser.close()
    assert problems == []
    assert outside == [], "pages asked for resources outside the site"
    print(f"{len(pages)} pages, {sum(expected.values())} diagrams; screenshots in {shots}")
