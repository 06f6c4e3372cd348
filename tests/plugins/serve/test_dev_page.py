"""The development page's routes (``plait dev`` / ``plait serve --ui``): the page and its
two files from the package, same-origin only, the tools' schemas the edit form is made
from — and none of it without ``ui=True``. The page itself is driven in Chromium by
tests/dev_ui (opt-in: tox -e dev-ui)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable

from serve_helpers import SUPPORT, Served

import plait


def test_the_page_and_its_files_are_served_with_ui(
    serve: Callable[..., Served], support: plait.Agent
) -> None:
    with serve(support, ui=True).client() as client:
        page = client.get("/")
        assert page.status_code == 200
        assert page.headers["content-type"] == "text/html; charset=utf-8"
        assert '<script src="/ui/app.js" defer></script>' in page.text
        # Nothing from another origin: no CDN, no inline script.
        assert "script-src 'self'" in page.headers["content-security-policy"]
        assert "http" not in page.text.replace('name="viewport"', "")
        script = client.get("/ui/app.js")
        assert script.headers["content-type"].startswith("text/javascript")
        assert "/ag-ui" in script.text and "/threads/search" in script.text
        assert client.get("/ui/app.css").headers["content-type"].startswith("text/css")
        tools = {t["name"]: t for t in client.get("/plait/tools").json()}
        refund = tools["issue_refund"]["parameters"]
        assert refund["properties"]["amount"]["type"] == "number"
        assert refund["required"] == ["order_id", "amount"]


def test_without_ui_there_is_no_page(serve: Callable[..., Served], support: plait.Agent) -> None:
    with serve(support).client() as client:
        assert client.get("/").status_code == 404
        assert client.get("/ui/app.js").status_code == 404
        assert client.get("/plait/tools").status_code == 404


def test_with_keys_the_files_are_public_and_the_data_is_not(
    serve: Callable[..., Served], support: plait.Agent
) -> None:
    served = serve(support, ui=True, keys=["k-one-0123456789"])
    with served.client() as anonymous:
        assert anonymous.get("/").status_code == 200
        assert anonymous.get("/ui/app.js").status_code == 200
        assert anonymous.get("/plait/tools").status_code == 401
    with served.client("k-one-0123456789") as keyed:
        assert keyed.get("/plait/tools").status_code == 200


def test_plait_dev_is_a_command() -> None:
    env = {k: v for k, v in os.environ.items() if k != "PLAIT_SERVE_KEYS"}
    done = subprocess.run(
        [sys.executable, "-m", "plait", "dev", "--help"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: plait dev ")
    assert "--ui " not in done.stdout  # the page is what dev is for
    broken = subprocess.run(
        [sys.executable, "-m", "plait", "dev", str(SUPPORT.with_name("nope.toml"))],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert broken.returncode == 1
    assert broken.stderr.startswith("plait dev: error:")
