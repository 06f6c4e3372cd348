"""What a provider plugin needs to speak HTTP like plait's own providers — public API.

A provider plugin (``plait-google`` is one) subclasses ``HTTPChatModel`` and supplies only
its wire format; the class owns the rest: pooled ``httpx`` clients, the sync, async and
streamed calls, every failure mapped to a ``ProviderError`` (status, timeout, refused
connection, malformed body, a stream cut short), retry-after, one redaction path that
keeps the API key out of every error, and the ``from_id`` entry-point factory. A subclass
sets the class variables ``provider``, ``api_key_env``, ``base_url_env`` and
``default_base_url``, says how its API differs in class data — ``auth_header`` and
``auth_scheme`` (the key's header: ``authorization: Bearer KEY`` unless set),
``api_headers`` (sent with every request, such as an API version), ``overflow_statuses``
and ``overflow_words`` (which errors mean the prompt is over the context window, raised
as ``ContextOverflowError``) — and implements:

- ``_prepare(request)`` — a ``PreparedCall`` (URL, JSON body, headers, and any
  ``context`` parsing needs) for a ``ChatRequest`` (the messages, ``system_prompt``,
  ``tools``, ``tool_choice``, ``response_format``, ``provider_options`` — of which
  ``options_for(provider)`` is the vendor's own — ``settings`` and ``stream``);
- ``_parse(call, data, metadata)`` — the ``AIMessage`` in a JSON answer (shape errors
  raised as ``ValueError``/``TypeError``/``KeyError`` or cattrs errors become an
  ``invalid_response`` ``ProviderError``);
- ``_stream_parser(call, metadata, id)`` — a ``StreamParser`` turning each ``SSEEvent``
  into ``AIMessageChunk``s and setting ``complete`` when the answer is whole.

``_auth_headers(key)`` and ``_is_overflow(status, error_type, message)`` read the class data
above; a vendor whose rule is not a header or a word list overrides them.

What the SDK knows of a vendor is class data the subclass sets: ``key_shapes`` (its API
keys' regular expressions, so ``redact`` removes a key-shaped token from any error) and
``known_profiles`` (its models' documented limits by family). ``resolve_tool_choice`` reads
a ``tool_choice`` the same way for every provider (which then writes its wire form) and
``safe_tool_name`` makes a name every API accepts. What a vendor's distribution declares
in metadata, so a provider reads a thread another one wrote without importing it: the keys
it puts on text blocks (``plait.text_marks``, dropped by ``foreign_text_keys``) and the
block types it writes images as (``plait.image_forms``, each naming a reader of such a
block into an ``Image``, which ``read_image`` calls), and the reader of its content blocks
as LangChain's standard blocks (``plait.content_blocks``, named by its ``provider``: a
function ``(block, calls) -> list[dict] | None``, which ``msg.content_blocks`` calls; such a
reader writes a tool call as ``tool_call_block(call)`` and keeps unread keys with
``with_extras``).

The helpers below are the ones those methods use: ``wire`` (a cattrs converter that
ignores unknown keys), ``loads_event``, ``stream_error``/``body_error`` for errors inside
a 200, ``error_details`` for the error-body shapes seen in the wild, ``redact``,
``Secret``, ``parse_retry_after`` (and ``retry_info_delay`` for a delay in a Google
error body), the incremental ``SSEDecoder`` and
``message_to_chunk``; ``ToolDefinition`` is what ``_prepare`` reads of each tool.
Importing this module imports httpx, so a plugin should import it only from the module
its entry point names.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from plait.lazy import lazy_exports
from plait.models._http import (
    ChatRequest,
    ErrorDetails,
    HTTPChatModel,
    PreparedCall,
    Secret,
    SSEDecoder,
    SSEEvent,
    StreamParser,
    ToolChoice,
    body_error,
    error_details,
    foreign_text_keys,
    loads_event,
    merge_text_blocks,
    parse_retry_after,
    redact,
    resolve_tool_choice,
    retry_info_delay,
    safe_tool_name,
    stream_error,
    wire,
)
from plait.models._images import IMAGE_FORMS, IMAGE_TYPES, Image, image_from_url, read_image
from plait.models.base import ToolDefinition, message_to_chunk

if TYPE_CHECKING:
    from plait._lc_view import CONTENT_BLOCKS, tool_call_block, with_extras

__all__ = [
    "CONTENT_BLOCKS",
    "IMAGE_FORMS",
    "IMAGE_TYPES",
    "ChatRequest",
    "ErrorDetails",
    "HTTPChatModel",
    "Image",
    "PreparedCall",
    "SSEDecoder",
    "SSEEvent",
    "Secret",
    "StreamParser",
    "ToolChoice",
    "ToolDefinition",
    "body_error",
    "error_details",
    "foreign_text_keys",
    "image_from_url",
    "loads_event",
    "merge_text_blocks",
    "message_to_chunk",
    "parse_retry_after",
    "read_image",
    "redact",
    "resolve_tool_choice",
    "retry_info_delay",
    "safe_tool_name",
    "stream_error",
    "tool_call_block",
    "wire",
    "with_extras",
]

# What a content-block translator uses lives with the reading of content blocks, loaded
# when a translator imports it, not by every provider that imports this module.
__getattr__ = lazy_exports(
    __name__,
    {name: "plait._lc_view" for name in ("CONTENT_BLOCKS", "tool_call_block", "with_extras")},
)
