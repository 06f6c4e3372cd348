"""plait-mcp: the tools of Model Context Protocol servers as a plait agent's tools
(``MCPMiddleware``, entry point ``mcp``), and ``plait mcp-serve``.

Names are imported on first use, so ``plait`` loading the ``mcp-serve`` command does not
import the MCP SDK.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from plait.lazy import lazy_exports

_EXPORTS = {
    "MCPMiddleware": "plait_mcp.middleware",
    "ServerConfig": "plait_mcp._server_config",
    "elicit_result": "plait_mcp._tools",
}

__all__ = sorted(_EXPORTS)


__getattr__ = lazy_exports(__name__, _EXPORTS)


if TYPE_CHECKING:
    from plait_mcp._server_config import ServerConfig as ServerConfig
    from plait_mcp._tools import elicit_result as elicit_result
    from plait_mcp.middleware import MCPMiddleware as MCPMiddleware
