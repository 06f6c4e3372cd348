"""Deprecated: the Responses API model is ``plait_openai_responses.OpenAIResponsesModel``
(plugin ``plait-openai-responses``); this path works for one more release, with a
``DeprecationWarning``."""

from plait.models._moved import moved

__getattr__ = moved(
    "plait.models.openai_responses", "plait_openai_responses.model", "plait-openai-responses"
)
