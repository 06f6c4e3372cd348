"""``tool_errors``: how a tool's exceptions reach the model (``ToolErrorMiddleware``)."""

from plait_tool_errors.middleware import ToolErrorMiddleware

__all__ = ["ToolErrorMiddleware"]
