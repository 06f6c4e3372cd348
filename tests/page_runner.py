"""Runs the Python blocks of a Markdown page (a docs page, a README) as a reader would.

A page's blocks run top to bottom, as written, in one fresh Python process (under pytest
when the page shows a test), in an empty directory holding a copy of ``examples/``. Code
that names a real model reaches a loopback server speaking the OpenAI, Anthropic or
Gemini wire format (``tests/docs_provider.py``; ``OPENAI_BASE_URL`` and the others point at
it), which answers with the turns the test scripts for the page. What a page assumes its
reader already has (a tool named in passing, an agent built earlier) is defined by the
page's ``setup``; what a block defines is exercised by the ``after`` code that follows it.
A server address a page names is replaced by a local server's, each replacement checked
to occur.

A page's TOML blocks run too where the test asks (``run_page(..., toml=True)``): each is
an agent file (after the page's ``agent_table`` if it has no ``[agent]`` table of its
own), loaded with ``plait.agentfile.load_agent`` in the same process, after the Python.
Its fence may name the file the block is, as mkdocs shows above it
(``title="examples/hello.toml"`` after ``toml``). A titled agent file is written at that
path (so the modules beside it are the ones a reader has there), and must hold the same
TOML as the repository's file of that path if there is one. A block titled
``pyproject.toml`` (in any folder) is not an agent file: it is only checked to be valid
TOML. Files the page assumes its reader has (their own tools module, an installed
distribution's metadata) are the page's ``files``, written in the folder first.

Two kinds of block do not run, each marked in the page on the line before it:
``<!-- docs-test: signature of module:Qualified.name -->`` (checked against the named
object's real signature) and ``<!-- docs-test: not run: <why> -->`` (the reason is
required; ``check_pages`` fails on a mark without one).
"""

from __future__ import annotations

import ast
import importlib
import inspect
import os
import re
import shutil
import subprocess
import sys
import tomllib
import uuid
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest
from docs_provider import DocsProvider, Turn

REPO = Path(__file__).resolve().parents[1]
FENCE = r"^```{lang}(?:[ \t]+([^\n]*))?\n(.*?)^```"  # groups: info string, code
TITLE = re.compile(r'\btitle="([^"]+)"')
MARK = re.compile(r"<!-- docs-test: (signature of|not run:)\s*(.*?)\s*-->\s*$")


@attrs.frozen
class Page:
    setup: str = ""
    before: dict[int, str] = attrs.Factory(dict)
    after: dict[int, str] = attrs.Factory(dict)
    turns: tuple[Turn, ...] = ()
    replace: dict[str, str] = attrs.Factory(dict)  # text in the page -> fixture name
    stdout: str | None = None
    needs: tuple[str, ...] = ()  # importable modules (plugins) the page uses
    env: dict[str, str] = attrs.Factory(dict)  # environment variables the page reads
    otlp: tuple[str, ...] = ()  # paths the page's OpenTelemetry exporters must post to
    # Two comments that split a block into a server process and a client process:
    # (first line of the server part, first line of the client part).
    split: tuple[str, str] | None = None
    # For TOML blocks: the [agent] table put before a block without one, and the names
    # (defined by ``setup``) of the tools the agent is given.
    agent_table: str = '[agent]\nmodel = "openai:gpt-4.1"\n'
    agent_tools: tuple[str, ...] = ()
    files: dict[str, str] = attrs.Factory(dict)  # path in the folder -> its text


@attrs.frozen
class Block:
    code: str
    title: str | None = None  # the file the fence says the block is
    signature: str | None = None  # module:Qualified.name, for a signature block
    not_run: str | None = None  # why the block does not run ("" if the mark gives no reason)


TOOLS = '''
import plait

@plait.tool
def {name}({args}) -> str:
    """{doc}"""
    return {result}
'''


def tool(name: str, args: str, doc: str, result: str) -> str:
    """Source defining a tool the page uses but does not define."""
    return TOOLS.format(name=name, args=args, doc=doc, result=result)


SEARCH = tool("search", "query: str", "Search the web.", "f'3 results for {query}'")


LOAD = """
import pathlib as _pathlib
import plait.agentfile as _agentfile
_pathlib.Path({file!r}).parent.mkdir(parents=True, exist_ok=True)
_pathlib.Path({file!r}).write_text({text!r}, encoding="utf-8")
with _agentfile.load_agent({file!r}, **{overrides}):
    pass
"""


def has_blocks(path: Path, lang: str = "python") -> bool:
    text = path.read_text(encoding="utf-8")
    return re.search(FENCE.format(lang=lang), text, re.MULTILINE | re.DOTALL) is not None


def blocks(path: Path, lang: str = "python") -> list[Block]:
    """The page's ``lang`` blocks, each with what the mark on the line before it says."""
    text = path.read_text(encoding="utf-8")
    found = []
    for match in re.finditer(FENCE.format(lang=lang), text, re.MULTILINE | re.DOTALL):
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        mark = MARK.search(before)
        title = TITLE.search(match.group(1) or "")
        block = Block(match.group(2), title=title.group(1) if title else None)
        if mark is not None and mark.group(1) == "signature of":
            block = attrs.evolve(block, signature=mark.group(2))
        elif mark is not None:
            block = attrs.evolve(block, not_run=mark.group(2))
        found.append(block)
    return found


def check_pages(pages: dict[Path, Page]) -> None:
    """Each page's ``before``/``after`` name one of its blocks, and every block that does
    not run says why."""
    for path, page in pages.items():
        found = blocks(path)
        assert all(index < len(found) for index in [*page.before, *page.after]), path
        for lang in ("python", "toml"):
            for index, block in enumerate(blocks(path, lang)):
                assert block.not_run != "", f"{path}: {lang} block {index} does not say why"


def run_page(
    path: Path, page: Page, folder: Path, request: pytest.FixtureRequest, *, toml: bool = False
) -> None:
    """Run the page's blocks (and its TOML blocks if ``toml``) in ``folder`` and check what
    the page promises."""
    for module in page.needs:
        pytest.importorskip(module)
    parts = [page.setup]
    for index, block in enumerate(blocks(path)):
        if block.signature is not None:
            _check_signature(block.code, block.signature)
            continue
        if block.not_run is not None:
            continue
        parts += [page.before.get(index, ""), block.code, page.after.get(index, "")]
    for index, block in enumerate(blocks(path, "toml") if toml else []):
        if block.not_run is not None:
            continue
        if block.title is not None and Path(block.title).name == "pyproject.toml":
            tomllib.loads(block.code)
            continue
        if block.title is not None and (REPO / block.title).is_file():
            shown = (REPO / block.title).read_text(encoding="utf-8")
            assert tomllib.loads(block.code) == tomllib.loads(shown), f"{path}: {block.title}"
        text = block.code
        if not re.search(r"^\[agent\]", text, re.MULTILINE):
            text = page.agent_table + "\n" + text
        overrides = f"dict(tools=[{', '.join(page.agent_tools)}])" if page.agent_tools else "{}"
        file = block.title or f"block_{index}.toml"
        parts.append(LOAD.format(file=file, text=text, overrides=overrides))
    script = "\n".join(parts)
    for text, fixture in page.replace.items():
        assert text in script, f"{path} no longer shows {text!r}"
        script = script.replace(text, str(request.getfixturevalue(fixture)))
    shutil.copytree(REPO / "examples", folder / "examples")
    for name, content in page.files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(content, encoding="utf-8")
    server = DocsProvider(page.turns)
    background = None
    try:
        if page.split is not None:
            script, background = _split(script, *page.split, folder, server, page.env)
        tests = bool(re.search(r"^def test_", script, re.MULTILINE))
        done = _run(script, folder, server, page.env, pytest_mode=tests)
    finally:
        if background is not None:
            background.kill()
            background.wait()
        server.close()
    assert done.returncode == 0, done.stdout + done.stderr
    if page.stdout is not None:
        assert done.stdout.endswith(page.stdout) or done.stdout == page.stdout, done.stdout
    assert server.unused == [], f"the page never asked for {server.unused}"
    posted = {path for path, _ in server.otlp}
    assert posted >= set(page.otlp), f"OTLP exports reached only {sorted(posted)}"


@pytest.fixture(scope="module")
def mcp_http_url() -> Iterator[str]:
    """An MCP server over streamable HTTP on loopback (tests/plugins/mcp/mcp_servers.py)."""
    sys.path.insert(0, str(REPO / "tests" / "plugins" / "mcp"))
    try:
        from mcp_servers import HTTPServer
    finally:
        sys.path.pop(0)
    server = HTTPServer()
    yield server.url
    server.stop()


@pytest.fixture
def postgres_database_url() -> Iterator[str]:
    """A new PostgreSQL database, dropped afterwards."""
    import psycopg
    from postgres_server import postgres_url_or_skip
    from psycopg import sql

    base = postgres_url_or_skip()
    name = f"plait_docs_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    head, _, tail = base.rpartition("/")
    query = tail.partition("?")[2]
    yield f"{head}/{name}" + (f"?{query}" if query else "")
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )


def _split(
    script: str,
    server_mark: str,
    client_mark: str,
    folder: Path,
    server: DocsProvider,
    extra: dict[str, str],
) -> tuple[str, subprocess.Popen[str]]:
    """Start the part of the script from ``server_mark`` to ``client_mark`` (after what
    comes before it) in a background process; the client script is the rest."""
    head, found, rest = script.partition(server_mark)
    assert found, f"the page no longer has {server_mark!r}"
    serving, found, client = rest.partition(client_mark)
    assert found, f"the page no longer has {client_mark!r}"
    path = folder / "serve.py"
    path.write_text(head + serving, encoding="utf-8")
    process = subprocess.Popen(
        [sys.executable, str(path)],
        cwd=folder,
        env=_env(server, extra),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    return head + client, process


def _run(
    script: str, folder: Path, server: DocsProvider, extra: dict[str, str], *, pytest_mode: bool
) -> subprocess.CompletedProcess[str]:
    path = folder / ("test_page.py" if pytest_mode else "page.py")
    path.write_text(script, encoding="utf-8")
    command = [sys.executable, str(path)]
    if pytest_mode:
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(path)]
    return subprocess.run(
        command,
        cwd=folder,
        env=_env(server, extra),
        capture_output=True,
        text=True,
        timeout=180,
    )


def _env(server: DocsProvider, extra: dict[str, str]) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PLAIT_", "OPENAI_", "ANTHROPIC_", "OTEL_", "GOOGLE_", "GEMINI_"))
        and "PROXY" not in k.upper()
    }
    env.update(
        OPENAI_BASE_URL=server.url + "/v1",
        OPENAI_API_KEY="sk-docs-test",
        ANTHROPIC_BASE_URL=server.url,
        ANTHROPIC_API_KEY="sk-ant-docs-test",
        GOOGLE_GEMINI_BASE_URL=server.url,
        GOOGLE_API_KEY="google-docs-test",
        OTEL_EXPORTER_OTLP_ENDPOINT=server.url + "/otlp",
        PYTHONDONTWRITEBYTECODE="1",
        # as in an activated virtual environment: its scripts (mcp-server-time) are found
        PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
        **extra,
    )
    return env


def _check_signature(code: str, target: str) -> None:
    module_name, _, qualname = target.partition(":")
    obj: object = importlib.import_module(module_name)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    [shown] = ast.parse(code).body
    assert isinstance(shown, ast.FunctionDef) and shown.name == qualname.rsplit(".", 1)[-1]
    real = inspect.signature(obj)  # type: ignore[arg-type]
    assert [a.arg for a in shown.args.args] == list(real.parameters)
