"""Detectors installed as distributions of their own (entry points in
``plait.pii_detectors``), usable by name from code, by name with options, and from agent
files. The distribution is written to a folder on ``sys.path`` with its ``.dist-info``,
so ``importlib.metadata`` finds it exactly as it finds a pip-installed one."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import pytest

import plait
from plait.agentfile import load_agent
from plait.models import ScriptedChatModel
from plait_pii import PIIMiddleware

DETECTORS = """
import re
from plait_pii import PIIMatch

def employee_ids(text):
    return [PIIMatch(m.group(), m.start(), m.end()) for m in re.finditer(r"EMP\\d{5}", text)]

TICKET = r"TCK-\\d+"

def broken(text):
    return [(0, 1)]
"""
ENTRY_POINTS = """\
[plait.pii_detectors]
employee_id = acme_pii_detectors:employee_ids
ticket = acme_pii_detectors:TICKET
broken = acme_pii_detectors:broken
missing = acme_pii_detectors:not_there
"""


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A site folder holding the ``acme-pii-detectors`` distribution, on ``sys.path``."""
    folder = tmp_path / "site"
    folder.mkdir()
    (folder / "acme_pii_detectors.py").write_text(textwrap.dedent(DETECTORS))
    info = folder / "acme_pii_detectors-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: acme-pii-detectors\nVersion: 1.0\n"
    )
    (info / "entry_points.txt").write_text(ENTRY_POINTS)
    (info / "RECORD").write_text("")
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.delitem(sys.modules, "acme_pii_detectors", raising=False)
    return folder


def test_the_distribution_is_seen_by_importlib_metadata(site: Path) -> None:
    names = {ep.name for ep in entry_points(group="plait.pii_detectors")}
    assert {"employee_id", "ticket"} <= names


def test_an_installed_detector_by_type_name(site: Path, make_agent: Any) -> None:
    agent = make_agent(
        ["ok"],
        middleware=[
            PIIMiddleware("employee_id", strategy="mask"),
            ("pii", {"pii_type": "ticket", "strategy": "hash"}),
        ],
    )
    agent.invoke("EMP00042 opened TCK-991")
    text = agent.model.requests[0].messages[0].text
    assert text.startswith("****0042 opened <ticket_hash:")
    assert "TCK-991" not in text


def test_an_unknown_type_lists_the_installed_detectors(site: Path, make_agent: Any) -> None:
    with pytest.raises(plait.ConfigError) as info:
        make_agent(["ok"], middleware=[("pii", {"pii_type": "passport"})])
    message = str(info.value)
    assert "plait.pii_detectors" in message and "employee_id" in message
    assert "ticket" in message and "give a detector" in message


def test_a_detector_that_fails_to_load_is_a_config_error(site: Path, make_agent: Any) -> None:
    with pytest.raises(plait.ConfigError, match=r"pii detector 'missing'.*failed to load"):
        make_agent(["ok"], middleware=[("pii", {"pii_type": "missing"})])


def test_a_detector_returning_the_wrong_type_is_reported(site: Path, make_agent: Any) -> None:
    agent = make_agent(["ok"], middleware=[PIIMiddleware("broken")])
    with pytest.raises(TypeError, match="PIIMatch"):
        agent.invoke("x")


def test_an_installed_detector_from_an_agent_file(site: Path, tmp_path: Path) -> None:
    path = tmp_path / "agent.toml"
    path.write_text(
        '[agent]\nmodel = "scripted:x"\n\n'
        '[[middleware]]\nuse = "pii"\npii_type = "employee_id"\nstrategy = "redact"\n'
    )
    model = ScriptedChatModel(["noted"])
    agent = load_agent(path, model=model)
    agent.invoke("badge EMP12345 lost")
    assert model.requests[0].messages[0].text == "badge [REDACTED_EMPLOYEE_ID] lost"


def test_nothing_is_imported_until_an_agent_names_it(site: Path) -> None:
    code = (
        "import sys, plait_pii; "
        "plait_pii.PIIMiddleware('email'); "
        "print('acme_pii_detectors' in sys.modules); "
        "plait_pii.PIIMiddleware('ticket'); "
        "print('acme_pii_detectors' in sys.modules)"
    )
    env_path = str(site)
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": env_path, "PATH": ""},
    )
    assert out.stdout.split() == ["False", "True"]
