"""plait-openai-responses: OpenAI's Responses API as a plait model provider
(``openai-responses:gpt-...``).

The entry point ``openai-responses`` in ``plait.models`` names ``OpenAIResponsesModel``;
plait imports this package only when an agent names an ``openai-responses:`` model.
"""

from __future__ import annotations

from plait_openai_responses.model import OpenAIResponsesModel

__all__ = ["OpenAIResponsesModel"]
