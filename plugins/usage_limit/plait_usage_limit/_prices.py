"""What a model call costs: from the option ``prices``, else from ``genai-prices``."""

from __future__ import annotations

import functools

import attrs
import genai_prices

from plait.lazy import frozen
from plait.messages import Usage
from plait.options import number

__all__ = ["Prices", "cost_of", "known"]

_PRICE = number(minimum=0)
_OPTIONAL_PRICE = number(minimum=0, optional=True)


@frozen(kw_only=True)
class Prices:
    """US dollars per million tokens. Cache prices default to the input price."""

    input: float = attrs.field(validator=_PRICE)
    """Dollars per million input tokens (uncached)."""
    output: float = attrs.field(validator=_PRICE)
    """Dollars per million output tokens."""
    cache_read: float | None = attrs.field(default=None, validator=_OPTIONAL_PRICE)
    """Dollars per million input tokens read from the provider's cache."""
    cache_write: float | None = attrs.field(default=None, validator=_OPTIONAL_PRICE)
    """Dollars per million input tokens written to the provider's cache."""

    def cost(self, usage: Usage) -> float:
        read, write = usage.cache_read_tokens, usage.cache_write_tokens
        plain = max(usage.input_tokens - read - write, 0)
        cache_read = self.input if self.cache_read is None else self.cache_read
        cache_write = self.input if self.cache_write is None else self.cache_write
        dollars = (
            plain * self.input
            + read * cache_read
            + write * cache_write
            + usage.output_tokens * self.output
        )
        return dollars / 1_000_000


def _calc(usage: Usage, provider: str, model: str) -> float:
    # plait's input_tokens is the whole prompt, cached part included, as genai-prices counts it.
    tokens = genai_prices.Usage(
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cache_read_tokens=usage.cache_read_tokens,
        cache_write_tokens=usage.cache_write_tokens,
    )
    try:
        price = genai_prices.calc_price(tokens, model, provider_id=provider)
    except LookupError:  # a provider genai-prices names otherwise: find the model alone
        price = genai_prices.calc_price(tokens, model)
    return float(price.total_price)


@functools.lru_cache(maxsize=256)
def known(provider: str, model: str) -> bool:
    """Whether genai-prices has a price for ``model`` of ``provider``."""
    try:
        _calc(Usage(), provider, model)
    except LookupError:
        return False
    return True


def cost_of(usage: Usage, provider: str, model: str, prices: Prices | None) -> float | None:
    """The call's cost in dollars, or ``None`` when no price is known."""
    if prices is not None:
        return prices.cost(usage)
    if not known(provider, model):
        return None
    return _calc(usage, provider, model)
