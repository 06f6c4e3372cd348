"""Entry points are found as ``importlib.metadata`` finds them, by plait's own cheaper scan:
a plugin installed in a folder on ``sys.path`` is found, the first distribution of a name
on the path wins, and the result matches ``importlib.metadata.entry_points()``."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from importlib.metadata import entry_points
from pathlib import Path

import pytest

import plait
from plait import _entrypoints
from plait.errors import ConfigError

MODULE = """
    import attrs
    import plait

    @attrs.frozen
    class Greeting(plait.Middleware):
        word: str = "{word}"

        def before_model(self, state):
            return {{"messages": [plait.HumanMessage(self.word)]}}
"""


def install(site: Path, folder: str, module: str, entry_points_txt: str, word: str) -> None:
    """Write a distribution as pip would: its module and its metadata folder in ``site``."""
    site.mkdir(exist_ok=True)
    (site / f"{module}.py").write_text(textwrap.dedent(MODULE.format(word=word)))
    info = site / folder
    info.mkdir()
    name, _, version = folder.removesuffix(".dist-info").removesuffix(".egg-info").partition("-")
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (info / "entry_points.txt").write_text(textwrap.dedent(entry_points_txt))


@pytest.fixture
def sites(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, Path]]:
    """Two folders put first on ``sys.path``, in this order; the scan is forgotten around
    the test so it sees them, and so later tests do not."""
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    monkeypatch.syspath_prepend(str(second))
    monkeypatch.syspath_prepend(str(first))
    for module in ("acme_greeting", "acme_greeting_old"):
        monkeypatch.delitem(sys.modules, module, raising=False)
    _entrypoints.refresh()
    yield first, second
    _entrypoints.refresh()


def said(middleware: str) -> list[str]:
    """The words the middleware put before the model's call."""
    model = plait.ScriptedChatModel(["ok"])
    agent = plait.create_agent(model, middleware=[middleware])
    agent.invoke("hi")
    return [m.text for m in model.requests[0].messages if isinstance(m, plait.HumanMessage)]


def test_a_plugin_installed_in_a_folder_on_the_path_is_found_and_runs(
    sites: tuple[Path, Path],
) -> None:
    first, _ = sites
    install(
        first,
        "acme_greeting-1.0.dist-info",
        "acme_greeting",
        "[plait.middleware]\ngreeting = acme_greeting:Greeting\n",
        "bonjour",
    )
    _entrypoints.refresh()

    assert said("greeting") == ["hi", "bonjour"]
    point = _entrypoints.available("plait.middleware")["greeting"]
    assert (point.value, point.dist and point.dist.name) == (
        "acme_greeting:Greeting",
        "acme_greeting",
    )


def test_the_first_distribution_of_a_name_on_the_path_shadows_the_others(
    sites: tuple[Path, Path],
) -> None:
    first, second = sites
    install(
        first,
        "acme_greeting-2.0.dist-info",
        "acme_greeting",
        "[plait.middleware]\ngreeting = acme_greeting:Greeting\n",
        "new",
    )
    # The same distribution, spelled as older tools spell it, further on the path: its
    # entry points are not seen, not even the one the first copy lacks.
    install(
        second,
        "Acme.Greeting-1.0.egg-info",
        "acme_greeting_old",
        """
        [plait.middleware]
        greeting = acme_greeting_old:Greeting
        old_only = acme_greeting_old:Greeting
        """,
        "old",
    )
    _entrypoints.refresh()

    assert said("greeting") == ["hi", "new"]
    with pytest.raises(ConfigError, match="unknown middleware 'old_only'"):
        said("old_only")
    assert "old_only" not in {ep.name for ep in entry_points(group="plait.middleware")}


def test_an_egg_info_folder_alone_is_found(sites: tuple[Path, Path]) -> None:
    """``pip install -e`` of an old setup.py project leaves an ``.egg-info`` in the source
    folder, which is on the path."""
    _, second = sites
    install(
        second,
        "acme_greeting.egg-info",
        "acme_greeting",
        "# a comment\n[console_scripts]\nacme = acme_greeting:main\n\n"
        "[plait.middleware]\n  greeting = acme_greeting:Greeting  \n",
        "egg",
    )
    _entrypoints.refresh()

    assert said("greeting") == ["hi", "egg"]


def test_a_plugin_installed_after_the_scan_is_found_after_refresh(
    sites: tuple[Path, Path],
) -> None:
    first, _ = sites
    assert "greeting" not in _entrypoints.available("plait.middleware")
    install(
        first,
        "acme_greeting-1.0.dist-info",
        "acme_greeting",
        "[plait.middleware]\ngreeting = acme_greeting:Greeting\n",
        "late",
    )
    assert "greeting" not in _entrypoints.available("plait.middleware")  # scanned once

    _entrypoints.refresh()
    assert said("greeting") == ["hi", "late"]


def test_every_plait_group_matches_importlib_metadata() -> None:
    """The scan finds in this environment what ``importlib.metadata.entry_points()``
    finds: the same names, objects and distributions in every ``plait.`` group."""
    _entrypoints.refresh()
    everything = entry_points()
    groups = {group for group in everything.groups if group.startswith("plait.")}
    assert "plait.middleware" in groups
    for group in groups:
        expected: dict[str, tuple[str, str | None]] = {}
        for ep in everything.select(group=group):
            expected.setdefault(ep.name, (ep.value, ep.dist and ep.dist.name))
        got = {
            name: (ep.value, ep.dist and ep.dist.name)
            for name, ep in _entrypoints.installed(group).items()
        }
        assert got == expected, group


@pytest.mark.parametrize(
    "name", ["plait_pii", "Plait-PII", "foo.bar", "foo--bar", "a-._b", "x__y", "zope.interface"]
)
def test_a_distribution_name_is_normalized_as_pep_503_says(name: str) -> None:
    """Two spellings of one distribution are one key (the first on the path wins): runs of
    ``-``, ``_`` and ``.`` are one separator, letters are lower case."""
    pep_503 = re.sub(r"[-_.]+", "-", name).lower().replace("-", "_")
    assert _entrypoints._key(name) == pep_503


def test_a_sync_agent_from_names_imports_neither_importlib_metadata_nor_asyncio() -> None:
    """Each costs more to import than building the agent: importlib.metadata (with
    email, csv...) is not needed to find entry points, asyncio not until an async call.
    An agent built from entry-point names and run synchronously does without both."""
    code = (
        "import sys, plait\n"
        "agent = plait.create_agent(plait.ScriptedChatModel(['ok']), middleware=[\n"
        "    ('model_call_limit', {'run_limit': 5}), 'model_retry', 'tool_retry',\n"
        "    ('pii', {'pii_type': 'email', 'strategy': 'redact'})])\n"
        "agent.invoke('write to ann@example.com')\n"
        "print(sorted({'importlib.metadata', 'asyncio'} & set(sys.modules)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
