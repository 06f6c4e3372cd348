"""plait-anthropic: Anthropic's prompt caching and its bash, text-editor, memory and
file-search tools as plait middleware."""

from plait_anthropic.prompt_caching import AnthropicPromptCachingMiddleware, PromptCachingWarning

__all__ = ["AnthropicPromptCachingMiddleware", "PromptCachingWarning"]
