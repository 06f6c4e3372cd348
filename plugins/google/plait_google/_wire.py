"""The Gemini API's answer shapes, and how its parts become plait chunks.

``generateContent`` answers with one ``GenerateContentResponse``; ``streamGenerateContent``
with a sequence of them, each carrying the next parts. ``PartReader`` folds either into
``AIMessageChunk``s, so ``invoke`` and ``stream`` read an answer through the same code
and assemble to the same message:

- text parts stream as ``content``; adjacent pieces form one run, and a run that ends
  with a ``thoughtSignature`` is given again, whole, as a ``text`` block carrying
  ``thought_signature`` (it stands in for the streamed text when chunks are assembled);
- thought parts (``thought: true``) are gathered into one ``thinking`` block per run;
- ``functionCall`` parts become tool calls; their signatures are kept in
  ``response_metadata["thought_signatures"]`` by tool-call id;
- any other part (``executableCode``, ``codeExecutionResult``, ``inlineData``...) is a
  block whose ``type`` is the part's own field name, the part's fields kept as they are.

A run ends at a part of another kind, at a signed part, and at the candidate's finish.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import attrs
import cattrs

import plait
from plait.errors import ProviderError
from plait.lazy import frozen
from plait.messages import AIMessageChunk, ToolCallChunk, Usage
from plait.models.http import retry_info_delay

PROVIDER = "google"

converter = cattrs.Converter()
"""Structures Gemini JSON (camelCase, as the API writes it) into the classes below;
unknown keys are ignored, so new API fields never break reading."""


@frozen
class Content:
    parts: list[dict[str, Any]] = attrs.Factory(list)
    role: str | None = None


@frozen
class Candidate:
    content: Content | None = None
    finishReason: str | None = None
    finishMessage: str | None = None
    safetyRatings: list[dict[str, Any]] | None = None
    citationMetadata: dict[str, Any] | None = None
    groundingMetadata: dict[str, Any] | None = None
    urlContextMetadata: dict[str, Any] | None = None
    avgLogprobs: float | None = None
    logprobsResult: dict[str, Any] | None = None
    index: int = 0


@frozen
class PromptFeedback:
    blockReason: str | None = None
    blockReasonMessage: str | None = None
    safetyRatings: list[dict[str, Any]] | None = None


@frozen
class UsageMetadata:
    promptTokenCount: int | None = None
    candidatesTokenCount: int | None = None
    thoughtsTokenCount: int | None = None
    cachedContentTokenCount: int | None = None
    toolUsePromptTokenCount: int | None = None
    totalTokenCount: int | None = None
    serviceTier: str | None = None
    trafficType: str | None = None


@frozen
class ErrorDetail:
    code: int | None = None
    message: str | None = None
    status: str | None = None
    details: Any = None
    """Typed detail objects; a ``RetryInfo`` among them says how long to wait."""


@frozen
class Response:
    candidates: list[Candidate] = attrs.Factory(list)
    promptFeedback: PromptFeedback | None = None
    usageMetadata: UsageMetadata | None = None
    modelVersion: str | None = None
    responseId: str | None = None
    error: ErrorDetail | None = None


BLOCKED = frozenset(
    {
        "SAFETY",
        "RECITATION",
        "BLOCKLIST",
        "PROHIBITED_CONTENT",
        "SPII",
        "IMAGE_SAFETY",
        "IMAGE_PROHIBITED_CONTENT",
        "IMAGE_RECITATION",
        "LANGUAGE",
    }
)
"""Finish reasons that mean the answer was withheld: a ``ProviderError`` (not retried:
the same request is blocked again), never an empty answer passed off as a whole one."""

MALFORMED = frozenset({"MALFORMED_FUNCTION_CALL", "MISSING_THOUGHT_SIGNATURE"})
"""Finish reasons of a tool-call attempt the API could not read: a ``ProviderError``
marked retryable (the model may well get it right on the next try) when nothing else
came with it."""

_TRANSIENT = frozenset({"UNAVAILABLE", "INTERNAL", "RESOURCE_EXHAUSTED", "DEADLINE_EXCEEDED"})

DATA_FIELDS = (
    "inlineData",
    "fileData",
    "executableCode",
    "codeExecutionResult",
    "functionResponse",
    "functionCall",
    "text",
)
"""A part's data field (its other fields — ``videoMetadata``, ``partMetadata`` — qualify
it); a native block is typed by it."""

THOUGHT_SIGNATURES = "thought_signatures"
"""``response_metadata`` key: ``{tool_call_id: thoughtSignature}`` of the signed calls."""


def usage(meta: UsageMetadata, requests: Mapping[str, int]) -> Usage:
    """plait's ``Usage``: the prompt with tool-use prompt tokens (search results, code
    output the model read) as input, answer and thoughts as output, so ``total_tokens``
    equals the API's ``totalTokenCount``."""
    thoughts = meta.thoughtsTokenCount or 0
    return Usage(
        input_tokens=(meta.promptTokenCount or 0) + (meta.toolUsePromptTokenCount or 0),
        output_tokens=(meta.candidatesTokenCount or 0) + thoughts,
        cache_read_tokens=meta.cachedContentTokenCount or 0,
        reasoning_tokens=thoughts,
        server_tool_requests=dict(requests),
    )


def _minus(new: Usage, old: Usage) -> Usage:
    requests = {
        name: count - old.server_tool_requests.get(name, 0)
        for name, count in new.server_tool_requests.items()
        if count != old.server_tool_requests.get(name, 0)
    }
    return Usage(
        input_tokens=new.input_tokens - old.input_tokens,
        output_tokens=new.output_tokens - old.output_tokens,
        cache_read_tokens=new.cache_read_tokens - old.cache_read_tokens,
        reasoning_tokens=new.reasoning_tokens - old.reasoning_tokens,
        server_tool_requests=requests,
    )


def error_type_retryable(status: str | None) -> bool:
    return status in _TRANSIENT


def new_call_id() -> str:
    """A tool-call id for a call the API gave none (the Gemini API never does): from
    plait's id source, so a replayed run makes the same ids."""
    return "call_" + plait.new_id()


class PartReader:
    """Folds ``GenerateContentResponse``s into chunks (see the module docstring)."""

    def __init__(self, id: str | None, metadata: Mapping[str, Any]) -> None:
        self.id = id
        self.first: dict[str, Any] = dict(metadata)
        self.kind: str | None = None  # "text" or "thought": the open run
        self.run: list[str] = []
        self.signature: str | None = None
        self.calls = 0
        self.signatures: dict[str, str] = {}
        self.requests: dict[str, int] = {}
        self.searches: int = 0
        self.meta: UsageMetadata | None = None
        self.sent_usage: Usage | None = None
        self.sent: dict[str, Any] = {}
        self.sent_text = False
        self.finished = False

    # -- chunks --------------------------------------------------------------------------

    def _chunk(self, content: str = "", **kwargs: Any) -> AIMessageChunk:
        return AIMessageChunk(content, id=self.id, **kwargs)

    def _metadata(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """The values not sent yet, or changed since (assembly keeps the last of each)."""
        out = {key: value for key, value in values.items() if self.sent.get(key, ...) != value}
        self.sent.update(out)
        return out

    def close(self) -> list[AIMessageChunk]:
        """The open run as a block, where it needs one."""
        kind, text, signature = self.kind, "".join(self.run), self.signature
        self.kind, self.run, self.signature = None, [], None
        if kind == "thought":
            block: dict[str, Any] = {"type": "thinking", "thinking": text}
        elif kind == "text" and signature is not None:
            block = {"type": "text", "text": text}
        else:
            return []
        if signature is not None:
            block["thought_signature"] = signature
        return [self._chunk(blocks=[block])]

    # -- reading -------------------------------------------------------------------------

    def feed(self, data: Any) -> list[AIMessageChunk]:
        """The chunks of one ``GenerateContentResponse`` (a JSON object)."""
        if not isinstance(data, Mapping):
            raise ValueError("a Gemini answer is a JSON object")
        response = converter.structure(data, Response)
        if response.error is not None:
            detail = response.error
            raise ProviderError(
                f"{PROVIDER} API error in a 200 response"
                + (f" ({detail.status})" if detail.status else "")
                + f": {detail.message or json.dumps(data)[:500]}",
                status_code=detail.code or 200,
                provider=PROVIDER,
                error_type=detail.status,
                retryable=error_type_retryable(detail.status),
                retry_after=retry_info_delay(detail.details),
            )
        out: list[AIMessageChunk] = []
        top: dict[str, Any] = {}
        if response.modelVersion is not None:
            top["model"] = response.modelVersion
        if response.responseId is not None:
            top["response_id"] = response.responseId
        if self.first:
            top = {**self.first, **top}
            self.first = {}
        if response.usageMetadata is not None:
            self.meta = response.usageMetadata
            if self.meta.serviceTier is not None:
                top["service_tier"] = self.meta.serviceTier
            if self.meta.trafficType is not None:
                top["traffic_type"] = self.meta.trafficType
        feedback = response.promptFeedback
        if feedback is not None:
            top["prompt_feedback"] = dict(data["promptFeedback"])
        top = self._metadata(top)
        if top:
            out.append(self._chunk(response_metadata=top))
        if feedback is not None and feedback.blockReason and not response.candidates:
            reason = feedback.blockReason
            raise ProviderError(
                f"{PROVIDER}: the prompt was blocked ({reason})"
                + (f": {feedback.blockReasonMessage}" if feedback.blockReasonMessage else ""),
                status_code=200,
                provider=PROVIDER,
                error_type="prompt_blocked",
                retryable=False,
            )
        # One answer per call (candidateCount above 1 is refused when the request is built).
        candidate = next((c for c in response.candidates if c.index == 0), None)
        if candidate is None:
            return out
        for part in candidate.content.parts if candidate.content is not None else ():
            out.extend(self._part(part))
        grounding = candidate.groundingMetadata
        if grounding is not None:
            queries = grounding.get("webSearchQueries")
            if isinstance(queries, list):
                self.searches = max(self.searches, len(queries))
        extras = self._candidate_metadata(candidate)
        if candidate.finishReason is not None:
            out.extend(self.close())
            self.finished = True
            extras["finish_reason"] = candidate.finishReason
        extras = self._metadata(extras)
        if extras:
            out.append(self._chunk(response_metadata=extras))
        if self.finished:
            out.extend(self._usage())
            self._check_finish(candidate)
        return out

    def finish(self) -> list[AIMessageChunk]:
        """What is left when the whole answer has been read (``invoke``)."""
        return [*self.close(), *self._usage()]

    def _usage(self) -> list[AIMessageChunk]:
        """The usage so far, less what was sent (a stream repeats it, cumulative, in every
        response; it is sent once the candidate finishes, then only if it changes)."""
        if self.meta is None:
            return []
        requests = dict(self.requests)
        if self.searches:
            requests["google_search"] = self.searches
        total = usage(self.meta, requests)
        if total == self.sent_usage:
            return []
        change = total if self.sent_usage is None else _minus(total, self.sent_usage)
        self.sent_usage = total
        return [self._chunk(usage=change)]

    @staticmethod
    def _candidate_metadata(candidate: Candidate) -> dict[str, Any]:
        extras: dict[str, Any] = {}
        if candidate.finishMessage is not None:
            extras["finish_message"] = candidate.finishMessage
        if candidate.safetyRatings is not None:
            extras["safety_ratings"] = [dict(r) for r in candidate.safetyRatings]
        if candidate.citationMetadata is not None:
            extras["citation_metadata"] = dict(candidate.citationMetadata)
        if candidate.groundingMetadata is not None:
            extras["grounding_metadata"] = dict(candidate.groundingMetadata)
        if candidate.urlContextMetadata is not None:
            extras["url_context_metadata"] = dict(candidate.urlContextMetadata)
        if candidate.avgLogprobs is not None:
            extras["avg_logprobs"] = candidate.avgLogprobs
        if candidate.logprobsResult is not None:
            extras["logprobs"] = dict(candidate.logprobsResult)
        return extras

    def _check_finish(self, candidate: Candidate) -> None:
        reason = candidate.finishReason or ""
        detail = f": {candidate.finishMessage}" if candidate.finishMessage else ""
        if reason in BLOCKED:
            blocked = [
                str(rating.get("category"))
                for rating in candidate.safetyRatings or ()
                if rating.get("blocked")
            ]
            categories = f" (blocked: {', '.join(blocked)})" if blocked else ""
            raise ProviderError(
                f"{PROVIDER}: the answer was withheld, finish reason {reason}{categories}{detail}",
                status_code=200,
                provider=PROVIDER,
                error_type=reason,
                retryable=False,
            )
        if reason in MALFORMED and self.calls == 0 and not self.sent_text:
            raise ProviderError(
                f"{PROVIDER}: the model's tool call could not be read, finish reason "
                f"{reason}{detail}",
                status_code=200,
                provider=PROVIDER,
                error_type=reason,
                retryable=True,
            )

    def _part(self, part: Mapping[str, Any]) -> list[AIMessageChunk]:
        signature = part.get("thoughtSignature")
        signature = signature if isinstance(signature, str) and signature else None
        if isinstance(part.get("functionCall"), Mapping):
            out = self.close()
            call = part["functionCall"]
            given = call.get("id")
            call_id = given if isinstance(given, str) and given else new_call_id()
            args = call.get("args")
            raw = json.dumps(args if args is not None else {}, ensure_ascii=False)
            out.append(
                self._chunk(
                    tool_call_chunks=[ToolCallChunk(self.calls, call_id, str(call["name"]), raw)]
                )
            )
            self.calls += 1
            if signature is not None:
                self.signatures[call_id] = signature
                out.append(self._chunk(response_metadata={THOUGHT_SIGNATURES: self.signatures}))
                self.signatures = dict(self.signatures)
            return out
        if isinstance(part.get("text"), str):
            text: str = part["text"]
            kind = "thought" if part.get("thought") is True else "text"
            if not text and signature is None:
                return []
            out = []
            if self.kind != kind or self.signature is not None:
                out.extend(self.close())
                self.kind = kind
            self.run.append(text)
            self.signature = signature
            if kind == "text" and text:
                self.sent_text = True
                out.append(self._chunk(text))
            return out
        out = self.close()
        fields = {key: value for key, value in part.items() if key != "thoughtSignature"}
        if not fields:
            return out
        if "executableCode" in fields:
            self.requests["code_execution"] = self.requests.get("code_execution", 0) + 1
        kind = next((name for name in DATA_FIELDS if name in fields), min(fields))
        block: dict[str, Any] = {"type": kind, **fields}
        if signature is not None:
            block["thought_signature"] = signature
        out.append(self._chunk(blocks=[block]))
        return out
