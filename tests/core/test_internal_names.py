"""Names that were public by accident left their modules' ``__all__``: each old import
path still works for one release with a ``DeprecationWarning`` naming what to use, and
entry points whose targets were unexported still load (plait reads ``module:attribute``)."""

from __future__ import annotations

import importlib
import warnings

import pytest

from plait._entrypoints import load
from plait.options import FieldError

# (old module, name, where the object lives now, what the warning advises)
DEPRECATED = [
    ("plait.models.base", "merge_text_blocks", "plait.models.http:merge_text_blocks", "import"),
    ("plait_serve", "RunLog", "plait_serve._runlog:RunLog", "plait_serve.app"),
    ("plait_serve", "Server", "plait_serve._app:Server", "plait_serve.app"),
    ("plait_serve", "Busy", "plait_serve._runlog:Busy", "HTTP 409"),
    ("plait_serve", "NotFound", "plait_serve._runlog:NotFound", "HTTP 404"),
    ("plait_serve", "ResumeRefused", "plait_serve._interrupts:ResumeRefused", "HTTP 409"),
    ("plait_serve", "check_resume", "plait_serve._interrupts:check_resume", "every resume"),
    ("plait_serve.ag_ui", "routes", "plait_serve.ag_ui:_routes", "plait_serve.app"),
    ("plait_serve.openai_compat", "routes", "plait_serve.openai_compat:_routes", "app"),
    ("plait_serve.agent_protocol", "routes", "plait_serve.agent_protocol:_routes", "app"),
    ("plait_serve.a2a_protocol", "routes", "plait_serve.a2a_protocol:_routes", "app"),
    ("plait_subagents.remote", "check_url", "plait_subagents.remote:_check_url", "checks"),
    ("plait_subagents.remote", "check_headers", "plait_subagents.remote:_check_headers", "its"),
    ("plait_subagents.remote", "check_env_name", "plait_subagents.remote:_check_env_name", "own"),
    ("plait_tool_search.bm25", "words", "plait_tool_search.bm25:_words", "internal to BM25"),
]


def _resolve(where: str) -> object:
    module, _, attribute = where.partition(":")
    return getattr(importlib.import_module(module), attribute)


@pytest.mark.parametrize(("old", "name", "now", "advice"), DEPRECATED)
def test_an_old_path_warns_and_gives_the_same_object(
    old: str, name: str, now: str, advice: str
) -> None:
    module = importlib.import_module(old)
    assert name not in module.__all__
    message = rf"^{old}\.{name} is deprecated and will be removed in the next release: .*{advice}"
    with pytest.warns(DeprecationWarning, match=message) as caught:
        value = getattr(module, name)
    assert value is _resolve(now)
    assert caught[0].filename == __file__  # the warning points at the importing line
    with pytest.warns(DeprecationWarning, match=message):  # not kept: every use warns
        exec(f"from {old} import {name}", {})


def test_deprecated_helpers_still_do_their_job() -> None:
    with pytest.warns(DeprecationWarning):
        from plait.models.base import merge_text_blocks
        from plait_subagents.remote import check_url
        from plait_tool_search.bm25 import words
    assert merge_text_blocks(
        [{"type": "text", "text": "a"}, {"type": "text", "text": ""}, {"type": "text", "text": "b"}]
    ) == [{"type": "text", "text": "ab"}]
    assert words("get_stockLevel") == ["get", "stock", "level"]
    with pytest.raises(FieldError, match=r"expected an http\(s\) URL .*, got 'ftp://h/a'"):
        check_url("ftp://h/a")


def test_public_paths_do_not_warn() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        from plait.models.http import merge_text_blocks
        from plait_serve import app
        from plait_serve.ag_ui import project
        from plait_tool_search import BM25
    assert merge_text_blocks([{"type": "text", "text": "x"}]) == [{"type": "text", "text": "x"}]
    assert callable(app) and callable(project)
    assert BM25(["get_stockLevel", "send_mail"]).top("stock level", 1) == [0]


@pytest.mark.parametrize(
    ("group", "name", "module", "attribute"),
    [
        ("plait.commands", "worker", "plait_dbos.cli", "worker_command"),
        ("plait.commands", "submit", "plait_dbos.cli", "submit_command"),
        ("plait.commands", "workers", "plait_dbos.cli", "workers_command"),
        ("plait.models", "langchain", "plait_langchain.model", "from_id"),
    ],
)
def test_an_unexported_entry_point_target_still_loads_without_a_warning(
    group: str, name: str, module: str, attribute: str
) -> None:
    assert attribute not in importlib.import_module(module).__all__
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loaded = load(group, name, what="entry point")
    assert loaded is getattr(importlib.import_module(module), attribute)
