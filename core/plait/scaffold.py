"""``plait new-plugin NAME``: scaffold a third-party middleware distribution.

The result is what a built-in plugin looks like: ``plait-NAME`` with a ``plait.middleware``
entry point, a package ``plait_NAME`` whose ``__init__`` exports what its modules define
(the attrs middleware class, with one hook, in ``middleware.py``), ``py.typed``, a README
and a test written with ``plait.testing``'s ``make_agent`` fixture. A name that is a
built-in plugin's, or an installed middleware's, is refused: the entry points would clash.
The templates live here as strings so the kernel ships no data files.
"""

from __future__ import annotations

import keyword
import re
import string
from pathlib import Path

import attrs

from plait.errors import ConfigError
from plait.lazy import frozen

__all__ = ["CreatedPlugin", "create_plugin", "plugin_names"]

_NAME = re.compile(r"^[a-z][a-z0-9]*(?:[-_][a-z0-9]+)*$")


@frozen
class PluginNames:
    """The spellings of one plugin's name."""

    entry_point: str  # snake_case: what users write in use = "..."
    distribution: str  # plait-kebab-case
    package: str  # plait_snake_case
    class_name: str  # CamelCaseMiddleware


@frozen
class CreatedPlugin:
    """What ``create_plugin`` wrote: the distribution's folder, the entry-point name users
    write in ``use = "..."``, and the files made."""

    root: Path
    entry_point: str
    files: tuple[Path, ...]


def plugin_names(name: str) -> PluginNames:
    """Check ``name`` (``shout``, ``rate-limit``, ``rate_limit``) and spell it every way."""
    raw = name.strip().lower().removeprefix("plait-").removeprefix("plait_")
    if not _NAME.match(raw):
        raise ConfigError(
            f"plugin name {name!r} is not usable: use lowercase letters and digits, words "
            "joined by '-' or '_', starting with a letter (e.g. 'shout' or 'rate-limit')"
        )
    snake = raw.replace("-", "_")
    if keyword.iskeyword(snake):
        raise ConfigError(f"plugin name {name!r} is a Python keyword; choose another")
    camel = "".join(part.capitalize() for part in snake.split("_"))
    return PluginNames(
        snake, f"plait-{snake.replace('_', '-')}", f"plait_{snake}", f"{camel}Middleware"
    )


_PYPROJECT = """\
[build-system]
requires = ["flit_core>=3.12,<5"]
build-backend = "flit_core.buildapi"

[project]
name = "$distribution"
version = "0.1.0"
description = "A plait middleware that adds a note to every model call's system prompt."
readme = "README.md"
requires-python = ">=3.11"
dependencies = ["plait", "attrs"]

[project.optional-dependencies]
test = ["pytest"]

[project.entry-points."plait.middleware"]
$entry_point = "$package:$class_name"
"""

_INIT = '''\
"""$distribution: adds a note to the system prompt of every model call."""

from $package.middleware import $class_name

__all__ = ["$class_name"]
'''

_MIDDLEWARE = '''\
"""The $entry_point middleware.

Replace the hook with your own; keep the options as attrs fields so plait can validate
them (and ``plait plugins --verbose`` can list them).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import attrs
import plait
from plait import ModelRequest, ModelResponse
from plait.errors import FieldError
from plait.options import expected

__all__ = ["$class_name"]


def _not_blank(_: object, attribute: attrs.Attribute[str], value: str) -> None:
    # Say the problem only (FieldError, or ConfigError for a check across options):
    # plait adds "plugin '$entry_point': option 'note': " itself, once.
    if not isinstance(value, str) or not value.strip():
        raise FieldError(attribute.name, expected("a note that is not blank", value))


@attrs.frozen
class $class_name(plait.Middleware):
    """Appends ``note`` to the system prompt before each model call.

    :param note: the text to add; must not be blank.
    """

    note: str = attrs.field(default="Answer in one short paragraph.", validator=_not_blank)

    def _with_note(self, request: ModelRequest) -> ModelRequest:
        prompt = request.system_prompt
        return request.override(
            system_prompt=f"{prompt}\\n\\n{self.note}" if prompt else self.note
        )

    def wrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
    ) -> ModelResponse:
        return handler(self._with_note(request))

    async def awrap_model_call(
        self,
        request: ModelRequest,
        handler: Callable[[ModelRequest], Awaitable[ModelResponse]],
    ) -> ModelResponse:
        return await handler(self._with_note(request))
'''

_TEST = '''\
"""Tests for $distribution, written with plait.testing (a pytest plugin plait installs)."""

from __future__ import annotations

import pytest
from plait.errors import ConfigError

from $package import $class_name


def test_note_is_added_to_the_system_prompt(make_agent):
    agent = make_agent(
        ["Sure."],
        middleware=[$class_name(note="Be brief.")],
        system_prompt="You help.",
    )
    result = agent.invoke("hello")
    assert result.text == "Sure."
    assert agent.model.requests[0].system_prompt == "You help.\\n\\nBe brief."


def test_enabled_by_entry_point_name_with_options(make_agent):
    agent = make_agent(
        ["Sure."],
        middleware=[("$entry_point", {"note": "Use French."})],
    )
    agent.invoke("hello")
    assert agent.model.requests[0].system_prompt == "Use French."


def test_bad_option_fails_when_the_agent_is_built(make_agent):
    with pytest.raises(ConfigError) as raised:
        make_agent(
            ["Sure."],
            middleware=[("$entry_point", {"note": " "})],
        )
    assert str(raised.value) == (
        "plugin '$entry_point': option 'note': expected a note that is not blank, got ' '"
    )
'''

_README = """\
# $distribution

A plait middleware: appends a note to the system prompt of every model call.

## Install

```
pip install -e .
```

## Use

In Python:

```python
import plait

agent = plait.create_agent(
    "openai:gpt-4.1-mini",
    middleware=[("$entry_point", {"note": "Answer in French."})],
)
```

In an agent file (`plait run agent.toml "Hello"`):

```toml
[agent]
model = "openai:gpt-4.1-mini"

[[middleware]]
use = "$entry_point"
note = "Answer in French."
```

## Options

| option | type | default | meaning |
|---|---|---|---|
| `note` | `str` | `"Answer in one short paragraph."` | text added to the prompt (not empty) |

## Test

```
pip install -e '.[test]'
pytest
```
"""

_GITIGNORE = """\
__pycache__/
*.egg-info/
build/
dist/
"""


def _refuse_a_taken_name(name: str, names: PluginNames) -> None:
    """A built-in plugin's name (entry point or distribution), or an installed middleware's
    entry point, would make ``use = "NAME"`` ambiguous."""
    from plait import _entrypoints

    builtin = _entrypoints.BUILTIN["plait.middleware"]
    folders = {folder for group in _entrypoints.BUILTIN.values() for folder in group.values()}
    if names.entry_point in builtin or names.entry_point in folders:
        folder = builtin.get(names.entry_point, names.entry_point)
        raise ConfigError(
            f"plugin name {name!r} is taken by plait's built-in plugin "
            f"plait-{folder.replace('_', '-')}; choose another (e.g. 'my-{names.entry_point}')"
        )
    installed = _entrypoints.available("plait.middleware").get(names.entry_point)
    if installed is not None:
        dist = installed.dist.name if installed.dist is not None else installed.value
        raise ConfigError(
            f"plugin name {name!r} is taken by the installed middleware {names.entry_point!r} "
            f"of {dist}; choose another"
        )


def create_plugin(name: str, directory: Path | str = ".") -> CreatedPlugin:
    """Write ``plait-NAME`` under ``directory``; refuses to overwrite an existing folder."""
    names = plugin_names(name)
    _refuse_a_taken_name(name, names)
    root = Path(directory) / names.distribution
    if root.exists():
        raise ConfigError(f"{root} already exists; choose another --dir or name")
    values = attrs.asdict(names)
    files = {
        "pyproject.toml": _PYPROJECT,
        "README.md": _README,
        ".gitignore": _GITIGNORE,
        f"{names.package}/__init__.py": _INIT,
        f"{names.package}/middleware.py": _MIDDLEWARE,
        f"{names.package}/py.typed": "",
        f"tests/test_{names.entry_point}.py": _TEST,
    }
    written: list[Path] = []
    for relative, template in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(string.Template(template).substitute(values), encoding="utf-8")
        written.append(path)
    return CreatedPlugin(root, names.entry_point, tuple(written))
