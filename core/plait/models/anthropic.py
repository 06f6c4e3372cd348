"""Deprecated: Anthropic's model is ``plait_anthropic.AnthropicChatModel`` (plugin
``plait-anthropic``); this path works for one more release, with a ``DeprecationWarning``."""

from plait.models._moved import moved

__getattr__ = moved("plait.models.anthropic", "plait_anthropic.model", "plait-anthropic")
