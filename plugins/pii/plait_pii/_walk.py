"""Rewriting every string leaf of a JSON value (tool-call arguments, structured answers,
interrupt payloads) without recursion, so a value nested thousands of levels deep is
handled like a flat one instead of ending the run with ``RecursionError``."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs

__all__ = ["map_objects", "map_strings"]


def map_objects(value: Any, rewrite: Callable[[str], str]) -> Any:
    """``map_strings`` that also goes into attrs instances (a structured answer, an
    ``Interrupt``), rebuilt with their string fields rewritten; they nest as deep as their
    classes do, so they are walked by recursion."""

    def leaf(item: Any) -> Any:
        if not attrs.has(type(item)):
            return item
        changes = {}
        for field in attrs.fields(type(item)):
            if field.init:
                old = getattr(item, field.name)
                new = map_strings(old, rewrite, leaf)
                changes[field.alias] = tuple(new) if isinstance(old, tuple) else new
        return attrs.evolve(item, **changes)

    return map_strings(value, rewrite, leaf)


def map_strings(
    value: Any, rewrite: Callable[[str], str], leaf: Callable[[Any], Any] | None = None
) -> Any:
    """``value`` with ``rewrite`` applied to every string leaf, in document order (the
    order in which numbering strategies must meet values). Mappings become dicts with the
    same keys in the same order, lists and tuples become lists; other leaves stay (or
    become what ``leaf`` makes of them)."""
    if isinstance(value, str):
        return rewrite(value)
    if not isinstance(value, Mapping | list | tuple):
        return value if leaf is None else leaf(value)
    root: list[Any] = [None]
    # (node, the container its result goes in, the key or index there)
    stack: list[tuple[Any, Any, Any]] = [(value, root, 0)]
    while stack:
        node, parent, key = stack.pop()
        if isinstance(node, str):
            parent[key] = rewrite(node)
        elif isinstance(node, Mapping):
            new: dict[Any, Any] = dict.fromkeys(node)
            parent[key] = new
            stack.extend((item, new, k) for k, item in reversed(list(node.items())))
        elif isinstance(node, list | tuple):
            items: list[Any] = [None] * len(node)
            parent[key] = items
            stack.extend((node[i], items, i) for i in range(len(node) - 1, -1, -1))
        else:
            parent[key] = node if leaf is None else leaf(node)
    return root[0]
