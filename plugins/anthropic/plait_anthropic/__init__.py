"""plait-anthropic: Anthropic's Messages API as a plait model provider (``anthropic:claude-...``),
and its prompt caching and bash, text-editor, memory and file-search tools as middleware.

Each name loads its module on first use, so an agent that names only ``anthropic:`` models
imports none of the tools' dependencies, and one that names only a tool imports no model.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from plait.lazy import lazy_exports

if TYPE_CHECKING:
    from plait_anthropic.bash import AnthropicBashMiddleware as AnthropicBashMiddleware
    from plait_anthropic.file_search import (
        AnthropicFileSearchMiddleware as AnthropicFileSearchMiddleware,
    )
    from plait_anthropic.memory import AnthropicMemoryMiddleware as AnthropicMemoryMiddleware
    from plait_anthropic.model import AnthropicChatModel as AnthropicChatModel
    from plait_anthropic.prompt_caching import (
        AnthropicPromptCachingMiddleware as AnthropicPromptCachingMiddleware,
    )
    from plait_anthropic.prompt_caching import PromptCachingWarning as PromptCachingWarning
    from plait_anthropic.text_editor import (
        AnthropicTextEditorMiddleware as AnthropicTextEditorMiddleware,
    )

_EXPORTS = {
    "AnthropicBashMiddleware": "plait_anthropic.bash",
    "AnthropicChatModel": "plait_anthropic.model",
    "AnthropicFileSearchMiddleware": "plait_anthropic.file_search",
    "AnthropicMemoryMiddleware": "plait_anthropic.memory",
    "AnthropicPromptCachingMiddleware": "plait_anthropic.prompt_caching",
    "AnthropicTextEditorMiddleware": "plait_anthropic.text_editor",
    "PromptCachingWarning": "plait_anthropic.prompt_caching",
}

__all__ = sorted(_EXPORTS)


__getattr__ = lazy_exports(__name__, _EXPORTS)
