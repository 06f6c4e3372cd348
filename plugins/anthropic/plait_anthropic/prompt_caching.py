"""``anthropic_prompt_caching``: let Anthropic cache the stable prefix of every model call.

Each call to an Anthropic model asks for ``cache_control`` marks at the end of the tool
definitions, of the system prompt and of the last message (the Anthropic provider's
``cache_breakpoints`` request option). The provider places them as it lays out the body,
so they land on the right blocks whatever other middleware did to the request, and
nothing is written into the messages kept in state. With another provider the request is
left as it is (``unsupported_model_behavior`` says how loudly); ``model_fallback`` drops
the option when it falls back to another provider.
"""

from __future__ import annotations

import warnings
from typing import Any, Literal

import attrs

from plait.errors import ConfigError
from plait.lazy import frozen
from plait.middleware import RequestMiddleware
from plait.models import ChatModel
from plait.types import AgentConfig, ModelRequest

__all__ = ["AnthropicPromptCachingMiddleware", "PromptCachingWarning"]

PROVIDER = "anthropic"
PLACES = ("messages", "system", "tools")


class PromptCachingWarning(UserWarning):
    """A model call ran without prompt caching because its model is not Anthropic's."""


def _unsupported(model: ChatModel) -> str:
    """The problem; raised as a ``ConfigError`` the kernel adds the plugin's name to (a
    ``PromptCachingWarning`` names it by its class)."""
    return (
        "prompt caching needs an Anthropic model, and "
        f"{model.provider}:{model.model_name} is not one; this call is not cached "
        "(option 'unsupported_model_behavior' chooses between ignore, warn and raise)"
    )


@frozen(kw_only=True)
class AnthropicPromptCachingMiddleware(RequestMiddleware):
    """Marks the tools, the system prompt and the conversation so far for Anthropic's
    prompt cache on every call to an Anthropic model."""

    type: Literal["ephemeral"] = "ephemeral"
    """The cache type; the API knows only "ephemeral"."""
    ttl: Literal["5m", "1h"] = "5m"
    """How long an unused cache entry lives: "5m" or "1h" (writes cost more for "1h")."""
    min_messages_to_cache: int = attrs.field(default=0, validator=attrs.validators.ge(0))
    """Leave calls with fewer messages than this uncached (the system prompt counts as one)."""
    unsupported_model_behavior: Literal["ignore", "warn", "raise"] = "warn"
    """With a model of another provider: "ignore", "warn" (a ``PromptCachingWarning``) or
    "raise" (a ``ConfigError``, at ``create_agent`` for the agent's own model)."""

    @property
    def mark(self) -> dict[str, str]:
        """The ``cache_control`` mark each breakpoint gets."""
        return {"type": self.type, "ttl": self.ttl}

    def validate_agent(self, agent_config: AgentConfig) -> None:
        model = agent_config.model
        if self.unsupported_model_behavior == "raise" and model.provider != PROVIDER:
            raise ConfigError(_unsupported(model))

    def rewrite_request(self, request: ModelRequest) -> ModelRequest:
        if request.model.provider != PROVIDER:
            if self.unsupported_model_behavior == "raise":
                raise ConfigError(_unsupported(request.model))
            if self.unsupported_model_behavior == "warn":
                warnings.warn(_unsupported(request.model), PromptCachingWarning, stacklevel=2)
            return request
        count = len(request.messages) + (1 if request.system_prompt else 0)
        if count < self.min_messages_to_cache:
            return request
        options: dict[str, Any] = dict(request.provider_options.get(PROVIDER, {}))
        # Places the caller asked for themselves keep their own marks.
        options["cache_breakpoints"] = {
            **{place: self.mark for place in PLACES},
            **options.get("cache_breakpoints", {}),
        }
        return request.override(provider_options={**request.provider_options, PROVIDER: options})
