"""mkdocs hook: parts of the docs generated from the code, so they cannot drift.

A line holding only one of these comments is replaced when the site is built:

- ``<!-- plait-options: module:Class -->``: the options table of a middleware class, from
  its attrs fields (``plait.options.describe_options``);
- ``<!-- plait-api: module:name -->``: the signature and docstring of a public function or
  class (with its public methods), ``:param:``/``:return:`` fields turned into lists; for
  a constant, its value and the docstring under its assignment;
- ``<!-- plait-hook: name -->``: a hook's reference entry from its spec in
  ``plait.hookspecs`` — heading with its arguments, then the spec's docstring — so the
  prose of each hook is written once, where it is declared.

A name that cannot be imported fails the build (``mkdocs build --strict``).
"""

from __future__ import annotations

import functools
import importlib
import inspect
import logging
import pprint
import re
import typing
from typing import Any

log = logging.getLogger("mkdocs.plugins.plait_docs")

# On a line of its own, so a marker can be quoted in prose without being replaced.
_MARKER = re.compile(r"^<!--\s*plait-(options|api):\s*([\w.]+):([\w.]+)\s*-->[ \t]*$", re.MULTILINE)
_HOOK = re.compile(r"^<!--\s*plait-hook:\s*(\w+)\s*-->[ \t]*$", re.MULTILINE)


def _resolve(module: str, qualname: str) -> Any:
    obj: Any = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def _cell(text: str) -> str:
    """Text for a table cell: one line, its pipes escaped except inside code spans, where
    Python-Markdown's tables do not split (and an escape would show)."""
    parts = re.split(r"(`[^`]*`)", text.replace("\n", " "))
    return "".join(p if p.startswith("`") else p.replace("|", "\\|") for p in parts)


def _code(text: str) -> str:
    """``text`` as one code span in a cell, fenced past any backtick it holds."""
    text = text.replace("\n", " ")
    fence = "``" if "`" in text else "`"
    return f"{fence} {text} {fence}" if fence == "``" else f"`{text}`"


# A default longer than this (a built-in prompt) is shown whole below the table, not in a cell.
_CELL_DEFAULT_MAX = 60


def _literals(text: str) -> str:
    """reST literals (double backquotes) as markdown code."""
    return re.sub(r"``([^`]+)``", r"`\1`", text)


def _long_default(cls: Any, name: str) -> str | None:
    """The text of a string default too long (or too many lines) for a table cell."""
    import attrs

    default = getattr(attrs.fields(cls), name).default
    if isinstance(default, attrs.Factory):  # type: ignore[arg-type]
        return None
    if isinstance(default, str) and ("\n" in default or len(default) > _CELL_DEFAULT_MAX):
        return default
    return None


def options_table(cls: Any) -> str:
    """The table of ``cls``'s options (name, type, default, meaning from the field's doc),
    then each long text default whole, in a collapsed block named after its option."""
    from plait.options import describe_options

    rows = ["| option | type | default | meaning |", "|---|---|---|---|"]
    blocks: list[str] = []
    for option in describe_options(cls):
        long = None if option.required else _long_default(cls, option.name)
        if option.required:
            default = "required"
        elif long is not None:
            default = "built-in text, below"
            body = "\n".join(f"    {line}" if line else "" for line in long.splitlines())
            blocks += ["", f'??? note "Default `{option.name}`"', "", "    ```text", body]
            blocks += ["    ```"]
        else:
            default = _code(str(option.default))
        meaning = _cell(_literals(option.help or ""))
        rows.append(f"| `{option.name}` | {_code(option.type)} | {default} | {meaning} |")
    return "\n".join(rows + blocks)


def _docstring(obj: Any) -> str:
    """The docstring as markdown: reST literals as code, ``:param x:`` as a list."""
    text = inspect.getdoc(obj) or ""
    text = re.sub(r"``([^`]+)``", r"`\1`", text)
    lines: list[str] = []
    for line in text.splitlines():
        field = re.match(r":param (\w+):\s*(.*)", line)
        if field:
            lines.append(f"- `{field.group(1)}`: {field.group(2)}")
            continue
        field = re.match(r":(returns?|raises \w+):\s*(.*)", line)
        if field:
            lines.append(f"- *{field.group(1)}*: {field.group(2)}")
            continue
        if lines and lines[-1].startswith("- ") and line.startswith("    "):
            lines.append("  " + line.strip())
            continue
        lines.append(line)
    return "\n".join(lines)


class _Raw:
    """An annotation written as a string (``from __future__ import annotations``), shown
    as written rather than quoted."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


def _plain(annotation: Any) -> Any:
    return _Raw(annotation) if isinstance(annotation, str) else annotation


def _signature(name: str, obj: Any, *, method: bool = False, wrap: bool = False) -> str:
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return name
    params = [
        p.replace(annotation=_plain(p.annotation))
        for p in sig.parameters.values()
        if not (method and p.name in ("self", "cls"))
    ]
    sig = sig.replace(parameters=params, return_annotation=_plain(sig.return_annotation))
    return _wrapped(name, sig) if wrap else f"{name}{sig}"


SIGNATURE_WIDTH = 78
"""Characters a signature line may take: one line of a code block in the site's content
column at its widest (the browser test fails on a block wider than the column)."""


def _wrapped(name: str, sig: inspect.Signature) -> str:
    """``name(a, b) -> R`` on one line when it fits, else one parameter a line, as black
    formats a long ``def``; the ``/`` and ``*`` markers keep their places, and a default
    too long for its line (a function's repr) is written ``...``."""
    line = f"{name}{sig}"
    if len(line) + len("class ") <= SIGNATURE_WIDTH:
        return line
    params = list(sig.parameters.values())
    rendered: list[str] = []
    for index, param in enumerate(params):
        kind = param.kind
        before = params[index - 1].kind if index else None
        if kind is param.KEYWORD_ONLY and before not in (param.KEYWORD_ONLY, param.VAR_POSITIONAL):
            rendered.append("*")
        text = str(param)
        if len(text) + 5 > SIGNATURE_WIDTH and param.default is not param.empty:
            text = str(param.replace(default=_Raw("...")))  # as a stub writes a long default
        rendered.append(text)
        after = params[index + 1].kind if index + 1 < len(params) else None
        if kind is param.POSITIONAL_ONLY and after is not param.POSITIONAL_ONLY:
            rendered.append("/")
    body = "".join(f"    {text},\n" for text in rendered)
    returns = str(sig.replace(parameters=[])).removeprefix("()")
    return f"{name}(\n{body}){returns}"


@functools.cache
def _parsed(module: str) -> tuple[str, Any] | None:
    """``module``'s source and its syntax tree (read once a build), or ``None``."""
    import ast

    try:
        source = inspect.getsource(importlib.import_module(module))
    except (OSError, TypeError):
        return None
    return source, ast.parse(source)


def _assignment(
    module: str, name: str, seen: frozenset[str] = frozenset()
) -> tuple[str, str, bool]:
    """``(value as written, docstring, declared a TypeAlias)`` of ``name = ...`` in
    ``module``'s source (a constant's, a type alias's), following ``from x import name``
    and a lazy ``_EXPORTS`` table to where it is made; ``("", "", False)`` if not found."""
    import ast

    if module in seen:
        return "", "", False
    mod = importlib.import_module(module)
    parsed = _parsed(module)
    if parsed is None:
        return "", "", False
    source, tree = parsed
    for index, node in enumerate(tree.body):
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and any(
            isinstance(target, ast.Name) and target.id == name for target in targets
        ):
            written = ast.get_source_segment(source, node.value) if node.value else None
            after = tree.body[index + 1] if index + 1 < len(tree.body) else None
            doc = ""
            if isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant):
                doc = inspect.cleandoc(str(after.value.value))
            written = " ".join((written or "").split())
            if isinstance(node, ast.AnnAssign) and "TypeAlias" in ast.unparse(node.annotation):
                written = written.strip("\"'")  # an alias written as a string
                return written, doc, True
            return written, doc, False
    # then where it is imported from: at the top, or for type checkers (a lazy export)
    for node in tree.body + [n for i in tree.body if isinstance(i, ast.If) for n in i.body]:
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if any((alias.asname or alias.name) == name for alias in node.names):
                return _assignment(node.module, name, seen | {module})
    exports = getattr(mod, "_EXPORTS", None)
    if isinstance(exports, dict) and isinstance(exports.get(name), str):
        return _assignment(exports[name], name, seen | {module})
    return "", "", False


def _value(name: str, obj: Any) -> str:
    """``name = value`` as code, as wide as a signature may be: on one line when it fits,
    else a container one item a line and a text in parts (``pprint``, still the same
    Python value); a line still too wide (an item's long repr) is cut short."""
    head = f"{name} = "
    value = repr(obj)
    if isinstance(obj, frozenset) and obj:  # sorted: the same text on every build
        value = "frozenset({" + ", ".join(sorted(map(repr, obj))) + "})"
    if " at 0x" in value:  # objects without a readable repr: say what it is
        value = f"...  # a {type(obj).__name__}"
    if len(head) + len(value) <= SIGNATURE_WIDTH:
        return head + value
    if isinstance(obj, (tuple, list, dict, str)):
        width = SIGNATURE_WIDTH - len(head)
        value = pprint.pformat(obj, width=width, sort_dicts=False)
    lines = (head + value.replace("\n", "\n" + " " * len(head))).splitlines()
    cut = SIGNATURE_WIDTH - len(" ...")
    return "\n".join(
        line if len(line) <= SIGNATURE_WIDTH else line[:cut] + " ..." for line in lines
    )


def _alias(name: str, written: str) -> str:
    """``name = A | B`` as written, broken at its top-level ``|`` or ``,`` into lines of at
    most the signature width where it is wider."""
    line = f"{name} = {written}"
    if len(line) <= SIGNATURE_WIDTH:
        return line
    parts, depth, start = [], 0, 0
    for index, char in enumerate(written):
        depth += char in "([{"
        depth -= char in ")]}"
        if depth <= 1 and char in "|,":
            parts.append(written[start : index + 1])
            start = index + 1
    parts.append(written[start:])
    lines, current = [], f"{name} = "
    for part in parts:
        if len(current) + len(part) > SIGNATURE_WIDTH and current.strip():
            lines.append(current.rstrip())
            current = " " * (len(name) + 3) + part.lstrip()
        else:
            current += part
    return "\n".join([*lines, current.rstrip()])


def constant_entry(module: str, qualname: str, obj: Any) -> str:
    """A constant's entry: ``NAME = value`` and the docstring written under its
    assignment; a text of several lines (a default prompt) is shown whole below, in a
    collapsed block, as an options table shows a long default."""
    name = qualname.rsplit(".", 1)[-1]
    long_text = isinstance(obj, str) and "\n" in obj.strip()  # a prompt: shown whole
    code = f"{name}: str  # the text below" if long_text else _value(name, obj)
    written, doc, alias = _assignment(module, name)
    if written and (alias or typing.get_origin(obj) is not None):
        code = _alias(name, written)  # a type alias, as its source writes it
    parts = [f"### `{name}`", "", "```python", code, "```", "", f"From `{module}`.", ""]
    parts.append(_literals(doc))
    if long_text:
        body = "\n".join(f"    {line}" if line else "" for line in obj.splitlines())
        parts += ["", f'??? note "The text of `{name}`"', "", "    ```text", body, "    ```"]
    return "\n".join(parts)


def _is_constant(obj: Any) -> bool:
    """A value rather than a class or function: plain data, a type alias (``A | B``,
    ``tuple[str, int]``, ``Callable[...]``), or an object whose docstring is its type's or
    none (a marker instance) — each explained by the docstring under its assignment."""
    if typing.get_origin(obj) is not None:
        return True
    if inspect.isclass(obj) or inspect.isroutine(obj):
        return False
    plain = (str, bytes, int, float, tuple, frozenset, dict, list, type(None))
    return isinstance(obj, plain) or getattr(obj, "__doc__", None) in (None, type(obj).__doc__)


def api_entry(module: str, qualname: str, obj: Any) -> str:
    name = qualname.rsplit(".", 1)[-1]
    if _is_constant(obj):
        return constant_entry(module, qualname, obj)
    kind = "class" if inspect.isclass(obj) else "def"
    parts = [
        f"### `{name}`",
        "",
        "```python",
        f"{kind} {_signature(name, obj, wrap=True)}",
        "```",
        "",
        f"From `{module}`.",
        "",
        _docstring(obj),
    ]
    if inspect.isclass(obj):
        for attr, member in vars(obj).items():
            if attr.startswith("_") or not (
                inspect.isfunction(member) or isinstance(member, property)
            ):
                continue
            target = member.fget if isinstance(member, property) else member
            if not inspect.getdoc(target):
                continue
            head = attr if isinstance(member, property) else _signature(attr, member, method=True)
            parts += ["", f"`{head}`", ":   " + _docstring(target).replace("\n", "\n    ")]
    return "\n".join(parts)


def hook_entry(name: str) -> str:
    """A hook's reference entry: ``### `name(args)` ``, what it does, each argument as a
    list item, then "Returns: ..."."""
    from plait import hookspecs

    spec = getattr(hookspecs, name)
    if name not in hookspecs.HOOKS:
        raise LookupError(f"{name!r} is not a plait hook")
    params = list(inspect.signature(spec).parameters)
    text = re.sub(r"``([^`]+)``", r"`\1`", inspect.getdoc(spec) or "")
    lines = [f"### `{name}({', '.join(params)})`", ""]
    field = ""
    for line in text.splitlines():
        param = re.match(r":param (\w+):\s*(.*)", line)
        returns = re.match(r":returns?:\s*(.*)", line)
        if param:
            if field == "":
                lines.append("")
            field = "param"
            lines.append(f"- `{param.group(1)}`: {param.group(2)}")
        elif returns:
            if field == "":
                lines.append("Arguments: none." if not params else "")
            field = "return"
            lines += ["", f"Returns: {returns.group(1)}"]
        elif field and line.startswith("    "):
            lines.append(("  " if field == "param" else "") + line.strip())
        else:
            lines.append(line)
    return "\n".join(lines).replace("\n\n\n", "\n\n")


def on_page_markdown(markdown: str, page: Any, **_: Any) -> str:
    def hook(match: re.Match[str]) -> str:
        try:
            return hook_entry(match.group(1))
        except Exception as exc:
            log.warning(
                "%s: cannot document hook %s: %s: %s",
                page.file.src_path,
                match.group(1),
                type(exc).__name__,
                exc,
            )
            return match.group(0)

    markdown = _HOOK.sub(hook, markdown)

    def replace(match: re.Match[str]) -> str:
        kind, module, qualname = match.groups()
        try:
            obj = _resolve(module, qualname)
            return options_table(obj) if kind == "options" else api_entry(module, qualname, obj)
        except Exception as exc:
            log.warning(
                "%s: cannot generate %s for %s:%s: %s: %s",
                page.file.src_path,
                kind,
                module,
                qualname,
                type(exc).__name__,
                exc,
            )
            return match.group(0)

    return _MARKER.sub(replace, markdown)
