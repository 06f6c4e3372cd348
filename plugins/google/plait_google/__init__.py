"""plait-google: Google Gemini as a plait model provider (``google:gemini-...``).

The entry point ``google`` in ``plait.models`` names ``GoogleChatModel``; importing this
package imports httpx, so plait loads it only when an agent names a ``google:`` model.
"""

from __future__ import annotations

from plait_google._wire import THOUGHT_SIGNATURES
from plait_google.model import GoogleChatModel

__all__ = ["THOUGHT_SIGNATURES", "GoogleChatModel"]
