"""Detectors installed by other distributions, through the ``plait.pii_detectors``
entry-point group: ``ssn = "my_pkg.detectors:find_ssns"`` makes ``pii_type = "ssn"``
work with no ``detector`` option. Loaded only when an agent names one (and
``importlib.metadata`` imported only then: a built-in type never needs it)."""

from __future__ import annotations

GROUP = "plait.pii_detectors"


def installed_names() -> list[str]:
    from importlib.metadata import entry_points

    return sorted({ep.name for ep in entry_points(group=GROUP)})


def load_installed(name: str) -> object | None:
    """The object the entry point ``name`` names, or ``None`` when none is installed."""
    from importlib.metadata import entry_points

    for entry in entry_points(group=GROUP, name=name):
        try:
            loaded: object = entry.load()
        except Exception as exc:
            raise ValueError(
                f"pii detector {name!r} ({entry.value}, group {GROUP}) failed to load: {exc}"
            ) from None
        return loaded
    return None
