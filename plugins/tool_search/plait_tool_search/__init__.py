"""``tool_search``: deferred tools hidden from the model until it finds them."""

from plait_tool_search.bm25 import BM25
from plait_tool_search.middleware import ProviderToolSearchMiddleware, ToolSearchMiddleware

__all__ = ["BM25", "ProviderToolSearchMiddleware", "ToolSearchMiddleware"]
