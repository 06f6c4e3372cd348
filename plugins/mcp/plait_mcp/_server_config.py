"""One MCP server as the ``servers`` option describes it (a ``[[middleware.servers]]`` table)."""

from __future__ import annotations

import attrs

from plait.errors import ConfigError
from plait.lazy import frozen
from plait.options import FieldError, expected, non_empty_string, number

__all__ = ["ServerConfig"]


@frozen(kw_only=True)
class ServerConfig:
    """How to reach one MCP server and which of its tools the agent gets.

    Give ``command`` (a subprocess spoken to over stdio) or ``url`` (streamable HTTP), not both.
    """

    name: str = attrs.field(validator=non_empty_string())
    """The server's name in error messages and stream events; required."""
    command: str | None = None
    """stdio: the executable to start."""
    args: list[str] = attrs.field(factory=list)
    """stdio: its arguments."""
    env: dict[str, str] | None = None
    """stdio: extra environment variables (over the SDK's safe default environment)."""
    cwd: str | None = None
    """stdio: its working directory."""
    url: str | None = None
    """streamable HTTP: the server's endpoint, e.g. ``http://127.0.0.1:8000/mcp``."""
    headers: dict[str, str] = attrs.field(factory=dict)
    """streamable HTTP: headers sent with every request (``Authorization`` …)."""
    tool_prefix: str | None = None
    """Prepended to each tool's name as the model sees it (``time_`` makes
    ``get_current_time`` ``time_get_current_time``)."""
    include: list[str] | None = None
    """Only these tools (server names, before the prefix); None: all."""
    exclude: list[str] = attrs.field(factory=list)
    """Never these tools (server names, before the prefix)."""
    timeout: float | None = attrs.field(default=None, validator=number(above=0, optional=True))
    """Seconds one call may take; past it the call is cancelled and the model told so.
    None: no limit of its own."""
    connect_timeout: float = attrs.field(default=30.0, validator=number(above=0))
    """Seconds starting (or reconnecting to) the server and listing its tools may take."""

    def __attrs_post_init__(self) -> None:
        where = f"server {self.name!r}"
        if (self.command is None) == (self.url is None):
            raise ConfigError(
                f"{where}: give either 'command' (stdio) or 'url' (streamable HTTP), not "
                f"{'both' if self.command is not None else 'neither'}"
            )
        if self.url is not None:
            if self.args or self.env is not None or self.cwd is not None:
                raise ConfigError(f"{where}: 'args', 'env' and 'cwd' are for stdio servers only")
            if not self.url.startswith(("http://", "https://")):
                raise FieldError("url", expected("an http:// or https:// URL", self.url))
        elif self.headers:
            raise ConfigError(f"{where}: 'headers' are for streamable HTTP servers only")
        if self.include is not None:
            clash = sorted(set(self.include) & set(self.exclude))
            if clash:
                raise ConfigError(f"{where}: {clash} are both included and excluded")

    @property
    def transport(self) -> str:
        return "stdio" if self.command is not None else "streamable HTTP"

    def wants(self, tool_name: str) -> bool:
        """Whether the server's tool ``tool_name`` is offered to the model."""
        if tool_name in self.exclude:
            return False
        return self.include is None or tool_name in self.include
