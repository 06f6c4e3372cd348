"""``plait-langchain``: LangChain's tools and chat models in plait agents.

``tool(lc_tool)`` makes a plait ``Tool`` of any LangChain ``BaseTool`` (and ``tools=``
takes one directly, through the ``plait.tool_adapters`` entry point); ``chat_model(lc_model)``
makes a plait ``ChatModel`` of any LangChain ``BaseChatModel``, and the model id
``"langchain:module:attr"`` names one. Depends on ``langchain-core`` only.
"""

from __future__ import annotations

from plait_langchain.model import LangChainChatModel, chat_model
from plait_langchain.tools import tool

__all__ = ["LangChainChatModel", "chat_model", "tool"]
