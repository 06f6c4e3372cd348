"""Chat models: the ``ChatModel`` base, ``init_chat_model`` and the scripted test model.

Providers are found through the ``plait.models`` entry-point group, so a provider's HTTP
client is imported only when an agent uses it. The kernel ships the OpenAI Chat Completions
provider (and its local-server presets); Anthropic's and the Responses API's are plugins.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from plait._convert import expected
from plait._entrypoints import load
from plait.errors import ConfigError
from plait.models.base import ChatModel, ModelProfile

if TYPE_CHECKING:
    from plait.models.openai import OpenAIChatModel as OpenAIChatModel
    from plait.models.scripted import ScriptedChatModel as ScriptedChatModel

__all__ = [
    "MODEL_FORMS",
    "OPTIONAL_MODEL_FORMS",
    "ChatModel",
    "ModelProfile",
    "OpenAIChatModel",
    "ScriptedChatModel",
    "infer_provider",
    "init_chat_model",
]

_MOVED = {
    "AnthropicChatModel": "plait.models.anthropic",
    "OpenAIResponsesModel": "plait.models.openai_responses",
}
"""Providers that left the kernel for plugins: their old names, through the deprecated
modules (one release)."""

_LAZY = {
    "ScriptedChatModel": "plait.models.scripted",
    "OpenAIChatModel": "plait.models.openai",
}


_BARE_IDS = (
    (r"(gpt-|chatgpt-|o[134](-|$))", "openai"),
    (r"claude-", "anthropic"),
    (r"gemini-", "google"),
)
"""The provider a bare model id belongs to, by its start (as LangChain's
``init_chat_model`` infers it); the provider is then found by its ``plait.models``
entry point like any ``"provider:model"`` id. The patterns are compiled (and cached by
``re``) when a bare id is first read, not when ``plait`` is imported."""

_BARE = (
    "a bare id whose provider is inferred (gpt-*, o1*, o3*, o4* for openai, claude-* for "
    "anthropic, gemini-* for google)"
)
MODEL_FORMS = f"a 'provider:model' id, {_BARE} or a ChatModel"
"""The accepted forms of a model, for "expected ..." messages."""
OPTIONAL_MODEL_FORMS = f"a 'provider:model' id, {_BARE}, a ChatModel or None"
"""The same where ``None`` (the agent's model) is accepted too."""


def infer_provider(model_id: str) -> str | None:
    """The provider of a bare model id (``"gpt-4o"`` → ``"openai"``), or ``None``."""
    for pattern, provider in _BARE_IDS:
        if re.match(pattern, model_id):
            return provider
    return None


def init_chat_model(model: str | ChatModel, **settings: Any) -> ChatModel:
    """The chat model ``"provider:model"`` names (an instance is returned as is). A bare id
    such as ``"gpt-4o"``, ``"claude-sonnet-4-5"`` or ``"gemini-2.5-flash"`` names its
    provider by its start (``infer_provider``).

    ``settings`` go to the provider's factory (``temperature``, ``base_url``, ``profile``…).
    """
    if isinstance(model, ChatModel):
        if settings:
            raise ConfigError("settings can only be given with a model id, not an instance")
        return model
    if isinstance(model, str) and ":" not in model and infer_provider(model) is not None:
        model = f"{infer_provider(model)}:{model}"
    if not isinstance(model, str) or ":" not in model:
        raise ConfigError(f"model: {expected(MODEL_FORMS, model)}")
    provider, _, name = model.partition(":")
    factory = load("plait.models", provider, what="model provider")
    instance = factory(name, **settings)
    if not isinstance(instance, ChatModel):
        raise ConfigError(f"model provider {provider!r} returned {instance!r}, not a ChatModel")
    return instance


def __getattr__(name: str) -> Any:
    """Provider classes load on first use, so ``import plait.models`` imports no httpx."""
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    if name in _MOVED:
        import importlib

        module = importlib.import_module(_MOVED[name])
        moved: Any = vars(module)["__getattr__"]
        return moved(name, stacklevel=3)
    raise AttributeError(f"module 'plait.models' has no attribute {name!r}")
