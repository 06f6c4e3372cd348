"""The copy on disk of the entry-point scan: a second process uses what the first found,
and never gives a user an answer a scan would have got right. Distributions are real
folders on a real ``sys.path``; "a new process" is a real one where the copy must cross
processes, else this process with its found entry points forgotten (not ``refresh``,
which removes the copy).

Folders a test writes are dated a minute back, as an install made before the run: no copy
is written while a stamp is under two seconds old (see ``_entrypoint_cache``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_entrypoints import install

import plait
from plait import _cache_dir, _entrypoints
from plait.errors import ConfigError

GREETING = "[plait.middleware]\ngreeting = acme_greeting:Greeting\n"


def age(*paths: Path) -> None:
    """Date ``paths`` a minute back, as folders written by an earlier install."""
    past = time.time_ns() - 60_000_000_000
    for path in paths:
        os.utime(path, ns=(past, past))


def stamps(path: Path) -> tuple[int, int]:
    got = path.stat()
    return got.st_atime_ns, got.st_mtime_ns


class Env:
    def __init__(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.site = tmp_path / "site"
        self.site.mkdir()
        self.cache = tmp_path / "cache"
        self.monkeypatch = monkeypatch
        monkeypatch.setenv("PLAIT_CACHE_DIR", str(self.cache))
        monkeypatch.delenv("PLAIT_NO_CACHE", raising=False)
        # The fake site, then the interpreter's own folders: not the ones pytest adds
        # (the checkout, tests/), which a test run writes into (caches, bytecode).
        own = [p for p in sys.path if p.startswith((sys.prefix, sys.base_prefix))]
        monkeypatch.setattr(sys, "path", [str(self.site), *own])
        for module in ("acme_greeting", "acme_greeting2"):
            monkeypatch.delitem(sys.modules, module, raising=False)

    def new_process(self) -> None:
        """What a new process would start from: nothing found yet, the copy on disk."""
        self.monkeypatch.setattr(_entrypoints, "_found", None)
        self.monkeypatch.setattr(_entrypoints, "_from_disk", False)

    def copies(self) -> list[Path]:
        return sorted(self.cache.glob("*")) if self.cache.exists() else []

    def middleware(self) -> dict[str, str]:
        """The middleware entry points of the test's distributions (not plait's own)."""
        found = _entrypoints.installed("plait.middleware")
        return {n: ep.value for n, ep in found.items() if ep.value.startswith("acme_")}


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Env]:
    _entrypoints.refresh()
    yield Env(tmp_path, monkeypatch)
    monkeypatch.undo()
    _entrypoints.refresh()


def said(middleware: str) -> list[str]:
    model = plait.ScriptedChatModel(["ok"])
    plait.create_agent(model, middleware=[middleware]).invoke("hi")
    return [m.text for m in model.requests[0].messages if isinstance(m, plait.HumanMessage)]


def test_a_new_process_reads_the_copy_the_first_wrote_and_finds_the_same(env: Env) -> None:
    install(env.site, "acme_greeting-1.0.dist-info", "acme_greeting", GREETING, "hello")
    age(env.site, env.site / "acme_greeting-1.0.dist-info" / "entry_points.txt")
    code = (
        "import json, sys\n"
        f"sys.path[:0] = [{str(env.site)!r}]\n"
        "from plait import _entrypoints\n"
        "found = _entrypoints.installed('plait.middleware')\n"
        "print(json.dumps([_entrypoints._from_disk, found['greeting'].value,\n"
        "                  found['greeting'].dist.name, sorted(found)]))\n"
    )

    def run() -> list[object]:
        # -I: no PYTHONPATH and no working directory on the path, only the interpreter's
        done = subprocess.run(
            [sys.executable, "-I", "-c", code], capture_output=True, text=True, check=True
        )
        return list(json.loads(done.stdout))

    first, second = run(), run()

    assert first[0] is False and second[0] is True  # scanned, then read from the copy
    assert first[1:] == second[1:]
    assert second[1:3] == ["acme_greeting:Greeting", "acme_greeting"]
    assert len(env.copies()) == 1 and env.copies()[0].name.startswith("entry-points-")


def test_a_distribution_installed_or_removed_after_the_copy_is_seen(env: Env) -> None:
    age(env.site)
    assert "greeting" not in env.middleware()
    assert len(env.copies()) == 1

    install(env.site, "acme_greeting-1.0.dist-info", "acme_greeting", GREETING, "installed")
    env.new_process()
    assert said("greeting") == ["hi", "installed"]
    assert _entrypoints._from_disk is False  # the folder changed: scanned

    age(env.site, *env.site.rglob("*"))  # now the stamps are old enough to be kept
    env.new_process()
    assert "greeting" in env.middleware() and _entrypoints._from_disk is False
    env.new_process()
    assert "greeting" in env.middleware() and _entrypoints._from_disk is True

    (env.site / "acme_greeting-1.0.dist-info" / "entry_points.txt").unlink()
    (env.site / "acme_greeting-1.0.dist-info" / "METADATA").unlink()
    (env.site / "acme_greeting-1.0.dist-info").rmdir()  # pip uninstall
    env.new_process()
    assert "greeting" not in env.middleware()
    with pytest.raises(ConfigError, match="unknown middleware 'greeting'"):
        said("greeting")


def test_an_upgrade_that_renames_the_metadata_folder_is_seen(env: Env) -> None:
    install(env.site, "acme_greeting-1.0.dist-info", "acme_greeting", GREETING, "v1")
    age(env.site, *env.site.rglob("*"))
    assert env.middleware() == {"greeting": "acme_greeting:Greeting"}

    old = env.site / "acme_greeting-1.0.dist-info"
    for child in old.iterdir():
        child.unlink()
    old.rmdir()
    install(
        env.site,
        "acme_greeting-2.0.dist-info",
        "acme_greeting2",
        "[plait.middleware]\ngreeting = acme_greeting2:Greeting\n",
        "v2",
    )
    env.new_process()
    assert said("greeting") == ["hi", "v2"]


def test_an_entry_points_file_rewritten_in_place_is_seen(env: Env) -> None:
    """``setup.py develop`` rewrites an ``.egg-info``'s file in place: no folder changes."""
    install(env.site, "acme_greeting.egg-info", "acme_greeting", GREETING, "hello")
    age(env.site, *env.site.rglob("*"))
    assert env.middleware() == {"greeting": "acme_greeting:Greeting"}
    folders = [stamps(env.site), stamps(env.site / "acme_greeting.egg-info")]

    text = env.site / "acme_greeting.egg-info" / "entry_points.txt"
    text.write_text(GREETING + "hello = acme_greeting:Greeting\n")
    assert [stamps(env.site), stamps(env.site / "acme_greeting.egg-info")] == folders
    env.new_process()
    assert env.middleware() == {
        "greeting": "acme_greeting:Greeting",
        "hello": "acme_greeting:Greeting",
    }
    assert _entrypoints._from_disk is False


def test_loading_a_plugin_checks_its_own_folder_and_a_listing_checks_every_one(
    env: Env,
) -> None:
    """Stat-ing every metadata folder a copy names was a third of reading it: a plugin
    loaded from the copy has its own folder's file checked, a listing checks them all;
    a file rewritten in place is seen either way."""
    other = "[plait.middleware]\nother = acme_other:Greeting\n"
    install(env.site, "acme_greeting.egg-info", "acme_greeting", GREETING, "hello")
    install(env.site, "acme_other-1.0.dist-info", "acme_other", other, "other")
    age(env.site, *env.site.rglob("*"))
    assert env.middleware() == {
        "greeting": "acme_greeting:Greeting",
        "other": "acme_other:Greeting",
    }
    env.new_process()
    assert said("greeting") == ["hi", "hello"]
    assert _entrypoints._from_disk is True
    left = set(_entrypoints._unchecked)
    assert str(env.site / "acme_other-1.0.dist-info") in left
    assert str(env.site / "acme_greeting.egg-info") not in left
    env.middleware()  # a listing
    assert _entrypoints._unchecked == {} and _entrypoints._from_disk is True

    # the loaded plugin's own file, rewritten in place (setup.py develop): seen at its load
    text = env.site / "acme_greeting.egg-info" / "entry_points.txt"
    text.write_text(GREETING.replace("acme_greeting:", "acme_greeting2:"))
    (env.site / "acme_greeting2.py").write_text(
        (env.site / "acme_greeting.py").read_text().replace("hello", "rewritten")
    )
    env.new_process()
    assert said("greeting") == ["hi", "rewritten"]
    assert _entrypoints._from_disk is False  # a scan


def test_a_name_missing_from_the_copy_is_looked_for_by_a_scan_before_the_error(
    env: Env,
) -> None:
    """An entry point added in place to a distribution that named no plait group: its
    file is not stamped (only plait's are), so the copy looks current."""
    install(env.site, "acme_greeting-1.0.dist-info", "acme_greeting", "[console_scripts]\n", "x")
    age(env.site, *env.site.rglob("*"))
    assert env.middleware() == {}
    (env.site / "acme_greeting-1.0.dist-info" / "entry_points.txt").write_text(GREETING)

    env.new_process()
    assert env.middleware() == {} and _entrypoints._from_disk is True  # stale, as said
    assert said("greeting") == ["hi", "x"]
    assert _entrypoints._from_disk is False

    env.new_process()
    with pytest.raises(ConfigError, match=r"unknown middleware 'gretting'.*did you mean"):
        said("gretting")


def test_an_entry_point_of_the_copy_that_fails_to_import_is_looked_for_again(
    env: Env,
) -> None:
    """A change in the time step the stamps were read in leaves them as they were (here
    set back by hand, as a coarse file system leaves them): the copy names a module that
    is gone; the scan finds where the entry point points now, and that is imported."""
    install(env.site, "acme_greeting-1.0.dist-info", "acme_greeting", GREETING, "old")
    text = env.site / "acme_greeting-1.0.dist-info" / "entry_points.txt"
    age(env.site, *env.site.rglob("*"))
    assert env.middleware() == {"greeting": "acme_greeting:Greeting"}
    before = [stamps(p) for p in (env.site, text.parent, text)]

    (env.site / "acme_greeting.py").rename(env.site / "acme_greeting2.py")
    text.write_text(GREETING.replace("= acme_greeting:", "=acme_greeting2:"))  # same size
    for path, (atime, mtime) in zip((env.site, text.parent, text), before, strict=True):
        os.utime(path, ns=(atime, mtime))
    env.new_process()
    assert env.middleware() == {"greeting": "acme_greeting:Greeting"}  # stale

    assert said("greeting") == ["hi", "old"]  # imported from acme_greeting2
    assert env.middleware() == {"greeting": "acme_greeting2:Greeting"}

    # a module that fails to import for a reason of its own: one scan, then the error
    (env.site / "acme_greeting2.py").write_text("raise RuntimeError('broken plugin')\n")
    age(env.site, *env.site.rglob("*"))
    _entrypoints.refresh()
    env.middleware()  # scanned and written
    env.new_process()
    sys.modules.pop("acme_greeting2", None)
    with pytest.raises(ConfigError, match=r"could not be imported: RuntimeError: broken plugin"):
        said("greeting")
    assert _entrypoints._from_disk is False


def test_two_scripts_run_in_turn_each_read_their_own_copy(env: Env, tmp_path: Path) -> None:
    """A script's folder is on its ``sys.path``: two scripts (or a script and the
    ``plait`` command) of one interpreter, run in turn, each keep their copy."""
    install(env.site, "acme_greeting-1.0.dist-info", "acme_greeting", GREETING, "hello")
    other = tmp_path / "other_script"
    other.mkdir()
    age(other, env.site, env.site / "acme_greeting-1.0.dist-info" / "entry_points.txt")

    def run(*path: Path) -> object:
        code = (
            f"import sys; sys.path[:0] = {[str(p) for p in path]!r}\n"
            "from plait import _entrypoints\n"
            "assert 'greeting' in _entrypoints.installed('plait.middleware')\n"
            "print(_entrypoints._from_disk)\n"
        )
        done = subprocess.run(
            [sys.executable, "-I", "-c", code], capture_output=True, text=True, check=True
        )
        return done.stdout.strip()

    first = [run(env.site), run(env.site, other)]
    again = [run(env.site), run(env.site, other)]

    assert first == ["False", "False"] and again == ["True", "True"]
    assert len(env.copies()) == 2


def test_only_the_most_recently_written_copies_are_kept(env: Env, tmp_path: Path) -> None:
    from plait import _entrypoint_cache

    age(env.site)
    names = []
    for i in range(_entrypoint_cache._KEPT + 3):
        script = tmp_path / f"script{i}"
        script.mkdir()
        age(script)
        sys.path[:] = [str(script), *sys.path[1:]] if i else [str(script), *sys.path]
        env.new_process()
        env.middleware()
        names.append(_entrypoint_cache._name())
        written = env.cache / names[-1]
        at = time.time_ns() - 30_000_000_000 + i * 1_000_000_000  # in writing order
        os.utime(written, ns=(at, at))

    assert [copy.name for copy in env.copies()] == sorted(names[3:])


def test_a_corrupt_copy_is_a_scan_and_is_replaced(env: Env) -> None:
    install(env.site, "acme_greeting-1.0.dist-info", "acme_greeting", GREETING, "hello")
    age(env.site, *env.site.rglob("*"))
    env.middleware()
    (copy,) = env.copies()
    good = copy.read_text()

    for bad in ("{not json", good[: len(good) // 2], "[]", '{"key": null}', ""):
        copy.write_text(bad)
        env.new_process()
        assert env.middleware() == {"greeting": "acme_greeting:Greeting"}
        assert _entrypoints._from_disk is False
        assert json.loads(copy.read_text()) == json.loads(good)  # written anew


def test_a_copy_that_cannot_be_written_is_never_an_error(
    env: Env, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file where the folder should be (permissions do not stop root, who runs CI), and
    a folder where the file should be: the scan's result is used, nothing is left over."""
    install(env.site, "acme_greeting-1.0.dist-info", "acme_greeting", GREETING, "hello")
    age(env.site, *env.site.rglob("*"))
    blocker = tmp_path / "blocker"
    blocker.write_text("")
    monkeypatch.setenv("PLAIT_CACHE_DIR", str(blocker / "plait"))
    assert said("greeting") == ["hi", "hello"]
    _entrypoints.refresh()
    assert said("greeting") == ["hi", "hello"]

    monkeypatch.setenv("PLAIT_CACHE_DIR", str(env.cache))
    age(env.site, *env.site.rglob("*"))  # the import above wrote bytecode there
    env.new_process()
    env.middleware()
    (copy,) = env.copies()
    copy.unlink()
    copy.mkdir()
    env.new_process()
    assert said("greeting") == ["hi", "hello"]
    assert env.copies() == [copy] and copy.is_dir()  # no temporary file left


@pytest.mark.skipif(not hasattr(os, "getuid") or os.getuid() != 0, reason="needs chown")
def test_a_copy_another_user_owns_is_not_read(env: Env) -> None:
    install(env.site, "acme_greeting-1.0.dist-info", "acme_greeting", GREETING, "hello")
    age(env.site, *env.site.rglob("*"))
    env.middleware()
    (copy,) = env.copies()
    forged = json.loads(copy.read_text())
    for point in forged["points"]:  # [group, name, value, distribution]
        if point[1] == "greeting":
            point[2] = "os:system"
    copy.write_text(json.dumps(forged))
    os.chown(copy, 4242, -1)

    env.new_process()
    assert env.middleware() == {"greeting": "acme_greeting:Greeting"}


def test_plait_no_cache_turns_the_copy_off(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    install(env.site, "acme_greeting-1.0.dist-info", "acme_greeting", GREETING, "hello")
    age(env.site, *env.site.rglob("*"))
    env.middleware()
    (copy,) = env.copies()
    forged = json.loads(copy.read_text())
    ours = next(p for p in forged["points"] if p[1] == "greeting")
    forged["points"].append(["plait.middleware", "forged", "acme_greeting:Greeting", ours[3]])
    copy.write_text(json.dumps(forged))
    env.new_process()
    assert "forged" in env.middleware()  # the copy is what is read

    monkeypatch.setenv("PLAIT_NO_CACHE", "1")
    env.new_process()
    assert env.middleware() == {"greeting": "acme_greeting:Greeting"}
    _entrypoints.refresh()
    env.middleware()
    assert copy.read_text() == json.dumps(forged)  # neither written nor removed


def test_refresh_removes_the_copy(env: Env) -> None:
    age(env.site)
    env.middleware()
    assert len(env.copies()) == 1
    _entrypoints.refresh()
    assert env.copies() == []


def test_no_copy_is_written_while_a_stamp_is_too_recent_to_trust(env: Env) -> None:
    install(env.site, "acme_greeting-1.0.dist-info", "acme_greeting", GREETING, "hello")
    env.middleware()
    assert env.copies() == []  # just installed: a change in its time step would not show

    age(env.site)  # the file itself is recent still
    env.new_process()
    env.middleware()
    assert env.copies() == []

    age(*env.site.rglob("*"))
    env.new_process()
    env.middleware()
    assert len(env.copies()) == 1


def test_no_copy_is_kept_for_a_path_with_a_zip(env: Env, tmp_path: Path) -> None:
    """A zip's distributions change inside one file: no copy is trusted to follow them,
    whether or not they name a plait group."""
    archive = tmp_path / "plugins.zip"
    sys.path.append(str(archive))
    for points in ("[console_scripts]\n", "[plait.middleware]\nzipped = acme_zipped:Greeting\n"):
        with zipfile.ZipFile(archive, "w") as zipped:
            zipped.writestr("acme_zipped-1.0.dist-info/METADATA", "Name: acme_zipped\n")
            zipped.writestr("acme_zipped-1.0.dist-info/entry_points.txt", points)
        age(env.site, archive)
        env.new_process()
        assert env.middleware() == (
            {"zipped": "acme_zipped:Greeting"} if "zipped" in points else {}
        )
        assert env.copies() == []


def test_the_copy_goes_to_the_users_cache_folder(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("PLAIT_NO_CACHE", raising=False)
    monkeypatch.delenv("PLAIT_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert _cache_dir.folder() == str(tmp_path / "xdg" / "plait")
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/ignored")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert _cache_dir.folder() == str(tmp_path / "home" / ".cache" / "plait")
    monkeypatch.setenv("PLAIT_CACHE_DIR", str(tmp_path / "chosen"))
    assert _cache_dir.folder() == str(tmp_path / "chosen")
    monkeypatch.setenv("PLAIT_NO_CACHE", "1")
    assert _cache_dir.folder() is None
