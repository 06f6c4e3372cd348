"""``plait plugins``: the installed entry points of plait's groups, read from distribution
metadata alone, so listing imports no plugin and takes the time of a metadata scan;
``--verbose`` (and ``--json``) add each middleware's options, which imports its class."""

from __future__ import annotations

import json
from typing import IO, TYPE_CHECKING, Any

import attrs

from plait.lazy import frozen

if TYPE_CHECKING:
    from plait._entrypoints import EntryPoint
    from plait.options import OptionInfo

__all__ = ["PluginInfo", "collect_plugins", "list_plugins"]


@frozen
class PluginInfo:
    """One installed entry point of a plait group, as ``plait plugins`` lists it."""

    group: str
    name: str
    value: str
    distribution: str | None
    version: str | None
    disabled: bool = False
    options: list[OptionInfo] | None = None
    error: str | None = None


def collect_plugins(*, options: bool = True) -> list[PluginInfo]:
    """Every installed entry point of plait's groups; with ``options``, each middleware's
    options too (importing its class)."""
    from plait import _entrypoints

    blocked = _entrypoints.disabled()
    found: list[PluginInfo] = []
    for group, full in _entrypoints.GROUPS.items():
        for name, ep in sorted(_entrypoints.installed(full).items()):
            dist = ep.dist
            info = PluginInfo(
                group,
                name,
                ep.value,
                dist.name if dist is not None else None,
                dist.version if dist is not None else None,
                disabled=name in blocked,
            )
            if options and group == "middleware":
                info = _with_options(info, ep)
            found.append(info)
    return found


def _with_options(info: PluginInfo, ep: EntryPoint) -> PluginInfo:
    from plait.options import describe_options

    try:
        cls = ep.load()
        return attrs.evolve(info, options=describe_options(cls))
    except Exception as exc:
        return attrs.evolve(info, error=f"cannot load: {type(exc).__name__}: {exc}")


_TITLES = {
    "middleware": "Middleware",
    "models": "Model providers",
    "checkpointers": "Checkpointers",
    "stores": "Stores",
    "commands": "Commands",
    "tool_adapters": "Tool adapters",
}


def list_plugins(out: IO[str], *, as_json: bool = False, verbose: bool = False) -> int:
    """Write the listing; ``verbose`` adds the middleware options to the text."""
    from plait._text import short

    plugins = collect_plugins(options=as_json or verbose)
    if as_json:
        data: dict[str, list[dict[str, Any]]] = {group: [] for group in _TITLES}
        for info in plugins:
            data[info.group].append(attrs.asdict(info, filter=lambda a, _: a.name != "group"))
        json.dump(data, out, indent=2, ensure_ascii=False, default=repr)
        out.write("\n")
        return 0
    for group, title in _TITLES.items():
        rows = [p for p in plugins if p.group == group]
        out.write(f"{title}\n")
        if not rows:
            out.write("  (none installed)\n\n")
            continue
        table = [("NAME", "DISTRIBUTION", "VERSION", "OBJECT")] + [
            (
                p.name + (" (disabled)" if p.disabled else ""),
                p.distribution or "?",
                p.version or "?",
                p.value,
            )
            for p in rows
        ]
        widths = [max(len(row[i]) for row in table) for i in range(3)]
        for number, row in enumerate(table):
            cells = [row[i].ljust(widths[i]) for i in range(3)] + [row[3]]
            out.write("  " + "  ".join(cells).rstrip() + "\n")
            if number == 0:
                continue
            info = rows[number - 1]
            if info.error:
                out.write(f"      {info.error}\n")
            for option in info.options or ():
                default = "(required)" if option.required else f"= {option.default}"
                out.write(f"      {option.name}: {option.type} {default}\n")
                if option.help:
                    out.write(f"          {short(option.help, 90)}\n")
        out.write("\n")
    if not verbose:
        out.write("Each middleware's options: plait plugins --verbose\n")
    return 0
