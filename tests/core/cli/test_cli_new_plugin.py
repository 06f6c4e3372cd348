"""``plait new-plugin``: the scaffold installs into a fresh venv, passes its own test and
is enabled by name in an agent file."""

from __future__ import annotations

import json
import os
import shlex
import site
import subprocess
import sys
import textwrap
import tomllib
import venv
from pathlib import Path

from plait_env import outside_env


def _venv_with_this_environment(path: Path) -> Path:
    """A new venv that also sees this interpreter's packages (plait, pytest...), through
    a .pth file, so the test needs to install only the scaffolded plugin."""
    venv.EnvBuilder(with_pip=False, system_site_packages=False).create(path)
    python = path / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    own = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    dirs = [*site.getsitepackages(), site.getusersitepackages()]
    lines = [f"import site; site.addsitedir({d!r})" for d in dirs if os.path.isdir(d)]
    Path(own, "_outer_environment.pth").write_text("\n".join(lines) + "\n")
    return python


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = outside_env()
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return subprocess.run(list(args), capture_output=True, text=True, cwd=cwd, env=env, timeout=300)


def test_scaffolded_plugin_installs_passes_its_test_and_is_enabled_by_name(
    plait_cli, tmp_path: Path
) -> None:
    made = plait_cli("new-plugin", "shout-it", "--dir", str(tmp_path / "src"))
    assert made.returncode == 0, made.stderr
    root = tmp_path / "src" / "plait-shout-it"
    assert (root / "plait_shout_it" / "py.typed").exists()
    assert 'shout_it = "plait_shout_it:ShoutItMiddleware"' in (root / "pyproject.toml").read_text()
    assert "make_agent" in (root / "tests" / "test_shout_it.py").read_text()

    python = _venv_with_this_environment(tmp_path / "venv")
    installed = _run(
        sys.executable,
        "-m",
        "pip",
        "--python",
        str(python),
        "install",
        "-q",
        str(root),
        cwd=tmp_path,
    )
    assert installed.returncode == 0, installed.stderr
    # Installed into the new venv only, not into the environment running this test.
    outside = _run(sys.executable, "-c", "import plait_shout_it", cwd=tmp_path)
    assert outside.returncode != 0

    tested = _run(str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests", cwd=root)
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert "3 passed" in tested.stdout

    listed = _run(str(python), "-m", "plait.cli", "plugins", "--json", cwd=tmp_path)
    row = next(r for r in json.loads(listed.stdout)["middleware"] if r["name"] == "shout_it")
    assert row["distribution"] == "plait-shout-it"
    assert [o["name"] for o in row["options"]] == ["note"]

    (tmp_path / "agent.toml").write_text(
        '[agent]\nmodel = "scripted:x"\nsystem_prompt = "Be kind."\n'
        'model_settings = { responses = ["ok"] }\n'
        '[[middleware]]\nuse = "shout_it"\nnote = "SHOUT."\n'
    )
    check = (
        "from plait.agentfile import load_agent\n"
        "agent = load_agent('agent.toml')\n"
        "print(agent.invoke('hi').text)\n"
        "print(repr(agent.model.requests[0].system_prompt))\n"
    )
    ran = _run(str(python), "-c", check, cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.splitlines() == ["ok", repr("Be kind.\n\nSHOUT.")]

    (tmp_path / "bad.toml").write_text(
        '[agent]\nmodel = "scripted:x"\n[[middleware]]\nuse = "shout_it"\nnote = ""\n'
    )
    bad = _run(str(python), "-m", "plait.cli", "run", "bad.toml", "hi", cwd=tmp_path)
    assert bad.returncode == 1
    assert bad.stderr.startswith('plait: error: bad.toml: [[middleware]] #1 (use = "shout_it")')
    assert "note" in bad.stderr


def test_bad_names_and_existing_folders_are_refused(plait_cli, tmp_path: Path) -> None:
    bad = plait_cli("new-plugin", "Not A Name", "--dir", str(tmp_path))
    assert bad.returncode == 1
    assert "plugin name 'Not A Name' is not usable" in bad.stderr
    assert plait_cli("new-plugin", "twice", "--dir", str(tmp_path)).returncode == 0
    again = plait_cli("new-plugin", "twice", "--dir", str(tmp_path))
    assert again.returncode == 1
    assert "already exists" in again.stderr


def test_the_printed_next_steps_work_as_printed(plait_cli, tmp_path: Path) -> None:
    made = plait_cli("new-plugin", "echo-note", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    lines = made.stdout.splitlines()
    install = next(line.strip() for line in lines if line.strip().startswith("pip install"))
    assert install == "pip install -e './plait-echo-note[test]'"
    python = _venv_with_this_environment(tmp_path / "venv")
    words = shlex.split(install)
    pip = [sys.executable, "-m", "pip", "--python", str(python), *words[1:]]
    installed = _run(*pip, cwd=tmp_path)
    assert installed.returncode == 0, installed.stderr
    imported = _run(str(python), "-c", "import plait_echo_note.middleware", cwd=tmp_path)
    assert imported.returncode == 0, imported.stderr
    test = next(line.strip() for line in lines if line.strip().startswith("pytest "))
    tested = _run(
        str(python), "-m", *shlex.split(test), "-q", "-p", "no:cacheprovider", cwd=tmp_path
    )
    assert tested.returncode == 0, tested.stdout + tested.stderr
    hint = made.stdout.split("then enable it in an agent file:\n", 1)[1]
    assert tomllib.loads(textwrap.dedent(hint)) == {"middleware": [{"use": "echo_note"}]}


def test_a_built_in_plugins_name_is_refused(plait_cli, tmp_path: Path) -> None:
    for name, dist in (("pii", "plait-pii"), ("anthropic-bash", "plait-anthropic")):
        refused = plait_cli("new-plugin", name, "--dir", str(tmp_path))
        assert refused.returncode == 1
        assert f"plugin name {name!r} is taken by plait's built-in plugin {dist}" in refused.stderr
    assert list(tmp_path.iterdir()) == []
