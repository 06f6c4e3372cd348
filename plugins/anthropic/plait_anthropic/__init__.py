"""plait-anthropic: Anthropic's prompt caching and its bash, text-editor, memory and
file-search tools as plait middleware."""

from plait_anthropic.bash import AnthropicBashMiddleware
from plait_anthropic.file_search import AnthropicFileSearchMiddleware
from plait_anthropic.memory import AnthropicMemoryMiddleware
from plait_anthropic.prompt_caching import AnthropicPromptCachingMiddleware, PromptCachingWarning
from plait_anthropic.text_editor import AnthropicTextEditorMiddleware

__all__ = [
    "AnthropicBashMiddleware",
    "AnthropicFileSearchMiddleware",
    "AnthropicMemoryMiddleware",
    "AnthropicPromptCachingMiddleware",
    "AnthropicTextEditorMiddleware",
    "PromptCachingWarning",
]
