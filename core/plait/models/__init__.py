"""Chat models: the ``ChatModel`` base, ``init_chat_model`` and the scripted test model.

Providers are found through the ``plait.models`` entry-point group, so the HTTP clients
of ``openai``/``anthropic`` are imported only when an agent uses them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from plait._entrypoints import load
from plait.errors import ConfigError
from plait.models.base import ChatModel, ModelProfile

if TYPE_CHECKING:
    from plait.models.scripted import ScriptedChatModel

__all__ = ["ChatModel", "ModelProfile", "ScriptedChatModel", "init_chat_model"]


def init_chat_model(model: str | ChatModel, **settings: Any) -> ChatModel:
    """The chat model ``"provider:model"`` names (an instance is returned as is).

    ``settings`` go to the provider's factory (``temperature``, ``base_url``, ``profile``…).
    """
    if isinstance(model, ChatModel):
        if settings:
            raise ConfigError("settings can only be given with a model id, not an instance")
        return model
    if not isinstance(model, str) or ":" not in model:
        raise ConfigError(f"model must be a ChatModel or a 'provider:model' string, got {model!r}")
    provider, _, name = model.partition(":")
    factory = load("plait.models", provider, what="model provider")
    instance = factory(name, **settings)
    if not isinstance(instance, ChatModel):
        raise ConfigError(f"model provider {provider!r} returned {instance!r}, not a ChatModel")
    return instance


def __getattr__(name: str) -> Any:
    if name == "ScriptedChatModel":
        from plait.models.scripted import ScriptedChatModel

        return ScriptedChatModel
    raise AttributeError(f"module 'plait.models' has no attribute {name!r}")
