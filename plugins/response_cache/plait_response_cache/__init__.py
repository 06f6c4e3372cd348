"""``response_cache``: repeated model calls answered from a cache."""

from plait_response_cache.cache import CachePerformer, no_cache
from plait_response_cache.middleware import ResponseCacheMiddleware

__all__ = ["CachePerformer", "ResponseCacheMiddleware", "no_cache"]
