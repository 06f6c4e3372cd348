"""A LangChain ``BaseChatModel`` as a plait ``ChatModel``: ``chat_model(lc_model)``, or the
model id ``"langchain:module:attr"`` (a chat model instance, class or factory), or with the
``langchain`` package installed ``"langchain:provider:model"`` through its
``init_chat_model``. So a provider plait has no plugin for is one line away.

Tools are bound with the model's ``bind_tools`` (a model without it, such as LangChain's
fake models, is called without them and may still answer with tool calls). Structured
answers go through plait's answer tool: the profile says the model has no native
structured output, so plait never relies on a provider feature LangChain may lack.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.utils.function_calling import convert_to_openai_tool

from plait.errors import ConfigError
from plait.messages import AIMessage, AIMessageChunk, AnyMessage
from plait.models import ChatModel, ModelProfile
from plait.models.base import ToolDefinition
from plait.options import expected, pydantic_problems
from plait_langchain._messages import chunk_from_langchain, from_langchain, to_langchain

__all__ = ["LangChainChatModel", "chat_model"]

_CHOICES = {"required": "any", "auto": "auto", "none": "none"}


class LangChainChatModel(ChatModel):
    """Any LangChain chat model, called through LangChain (``invoke``, ``stream``,
    ``ainvoke``, ``astream``): text, tool calls, streamed chunks and usage come back as
    plait's."""

    provider = "langchain"

    def __init__(self, model: BaseChatModel, **settings: Any) -> None:
        if not isinstance(model, BaseChatModel):
            raise ConfigError(
                f"plait_langchain.chat_model: {expected('a LangChain BaseChatModel', model)}"
            )
        self.model = model
        self.model_name = _name(model)
        self.settings = dict(settings)
        limits: Mapping[str, Any] = getattr(model, "profile", None) or {}
        self.profile = ModelProfile(
            max_input_tokens=limits.get("max_input_tokens"),
            max_output_tokens=limits.get("max_output_tokens"),
            structured_output=False,
        )

    def _bound(self, tools: Sequence[ToolDefinition], tool_choice: str | None) -> Any:
        if not tools:
            if tool_choice is not None:  # one that needs a tool is refused, never dropped
                from plait.models.http import resolve_tool_choice

                resolve_tool_choice(self.provider, tool_choice, ())
            return self.model
        specs = [
            convert_to_openai_tool(
                {"name": t.name, "description": t.description, "parameters": dict(t.parameters)}
            )
            for t in tools
        ]
        choice = _CHOICES.get(tool_choice, tool_choice) if tool_choice else None
        try:
            if choice is None:
                return self.model.bind_tools(specs)
            return self.model.bind_tools(specs, tool_choice=choice)
        except NotImplementedError:
            return self.model  # LangChain's fake models: no tool binding

    def _call(self, messages: Sequence[AnyMessage], options: dict[str, Any]) -> tuple[Any, Any]:
        runnable = self._bound(options.pop("tools", ()), options.pop("tool_choice", None))
        prompt = to_langchain(messages, options.pop("system_prompt", None))
        options.pop("response_format", None)  # answered through plait's answer tool
        options.pop("provider_options", None)
        return runnable, (prompt, {**self.settings, **options})

    def invoke(self, messages: Sequence[AnyMessage], **options: Any) -> AIMessage:
        runnable, (prompt, kwargs) = self._call(messages, dict(options))
        return from_langchain(runnable.invoke(prompt, **kwargs))

    async def ainvoke(self, messages: Sequence[AnyMessage], **options: Any) -> AIMessage:
        runnable, (prompt, kwargs) = self._call(messages, dict(options))
        return from_langchain(await runnable.ainvoke(prompt, **kwargs))

    def stream(self, messages: Sequence[AnyMessage], **options: Any) -> Iterator[AIMessageChunk]:
        runnable, (prompt, kwargs) = self._call(messages, dict(options))
        for chunk in runnable.stream(prompt, **kwargs):
            yield chunk_from_langchain(chunk)

    async def astream(
        self, messages: Sequence[AnyMessage], **options: Any
    ) -> AsyncIterator[AIMessageChunk]:
        runnable, (prompt, kwargs) = self._call(messages, dict(options))
        async for chunk in runnable.astream(prompt, **kwargs):
            yield chunk_from_langchain(chunk)


def _name(model: BaseChatModel) -> str:
    for attr in ("model_name", "model", "model_id"):
        value = getattr(model, attr, None)
        if isinstance(value, str) and value:
            return value
    return type(model).__name__


def chat_model(model: BaseChatModel, **settings: Any) -> LangChainChatModel:
    """A plait ``ChatModel`` calling the LangChain chat model ``model`` (``settings`` are
    passed with every call, as LangChain's ``invoke`` keyword arguments)."""
    return LangChainChatModel(model, **settings)


_ID_FORMS = (
    "'langchain:module:attr' naming a LangChain chat model (an instance, a class or a "
    "factory), or 'langchain:provider:model' with the langchain package installed"
)


def from_id(name: str, **settings: Any) -> LangChainChatModel:
    """The ``plait.models`` factory of ``"langchain:..."`` ids (the part after
    ``langchain:`` is ``name``): an entry point's target, not exported (write
    ``"langchain:..."`` or call ``chat_model``)."""
    module_name, _, attr = name.partition(":")
    target: Any = None
    if attr:
        try:
            target = getattr(importlib.import_module(module_name), attr, None)
        except ImportError:
            target = None
    if target is None:
        return _by_langchain(name, settings)
    if isinstance(target, BaseChatModel):
        made: Any = target
        if settings:
            made = target.model_copy(update=settings)
    elif callable(target):
        made = _make(name, target, settings)
    else:
        made = target
    if not isinstance(made, BaseChatModel):
        raise ConfigError(f"model 'langchain:{name}': {expected(_ID_FORMS, made)}")
    return LangChainChatModel(made)


def _make(name: str, factory: Any, settings: dict[str, Any]) -> Any:
    """``factory(**settings)``, a refusal of the settings worded as plait words options."""
    pydantic = sys.modules.get("pydantic")
    try:
        return factory(**settings)
    except Exception as exc:
        if pydantic is not None and isinstance(exc, pydantic.ValidationError):
            problems = pydantic_problems(factory, exc.errors())
            text = "; ".join(f"option {p.path!r}: {p.message}" for p in problems)
        else:
            text = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        raise ConfigError(f"model 'langchain:{name}': {text}") from None


def _by_langchain(name: str, settings: dict[str, Any]) -> LangChainChatModel:
    try:
        factory = importlib.import_module("langchain.chat_models").init_chat_model
    except ImportError:
        raise ConfigError(f"model 'langchain:{name}': {expected(_ID_FORMS, name)}") from None
    return LangChainChatModel(factory(name, **settings))
