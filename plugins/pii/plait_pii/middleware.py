"""``PIIMiddleware``: one PII type found and handled in the input, the output and tool
results; streaming in ``_stream``, message rewriting in ``_rewrite``."""

from __future__ import annotations

import contextlib
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

import attrs

from plait.errors import PIIDetectionError
from plait.lazy import frozen
from plait.messages import (
    AIMessage,
    AIMessageChunk,
    AnyMessage,
    Content,
    HumanMessage,
    Message,
    ToolMessage,
)
from plait.middleware import Middleware
from plait.options import FieldError, expected
from plait.tools import (
    error_text,
    error_update,
    raised_by_tool,
    set_error_text,
    set_error_update,
)
from plait.types import (
    Command,
    ModelRequest,
    ModelResponse,
    RunRequest,
    Runtime,
    StateField,
    ToolCallRequest,
)

if TYPE_CHECKING:
    from plait.types import Interrupt
    from plait_pii._pseudonyms import Assigner

# Imported on first use, as building an agent needs none of them: ``_detectors`` (the
# built-in detectors and masks), ``_decoded`` (the encoded-text view), ``_stream`` (token
# streams), ``_pseudonyms`` and ``_rewrite`` (the pseudonymize strategy), ``_walk``
# (tool-call arguments), ``_installed`` (a type no built-in detector finds) and ``hashlib``.

__all__ = ["BUILTIN_TYPES", "PIIMatch", "PIIMiddleware"]

BUILTIN_TYPES = ("email", "credit_card", "ip", "mac_address", "url")
"""The ``pii_type`` values the middleware detects itself, with no ``detector`` option (a
test checks this list against its detectors, which load only when a run needs them)."""


class PIIMatch(NamedTuple):
    """One piece of personal data found in a text: ``text == source[start:end]``, except
    in what ``PIIMiddleware.matches`` reports for a value found only once the text was
    decoded (``jane%40example.com``): there ``text`` is the decoded value.

    A named tuple (immutable, compared and shown by its fields, as an attrs class would
    be): it is never structured from options, and every agent that names pii makes the
    class at import, where a tuple class costs a fifth of an attrs class. Here, beside
    the middleware, rather than in a module of its own: the detectors, which return it,
    are imported on the first detection, and another module would cost an agent's build
    its import (~0.1 ms)."""

    text: str
    start: int
    end: int


Strategy = Literal["block", "redact", "mask", "hash", "pseudonymize"]
DetectorSpec = str | re.Pattern[str] | Callable[[str], Sequence[PIIMatch]]


class _Counter:
    """Matches seen by one hook call, for the ``block`` strategy's error."""

    def __init__(self) -> None:
        self.count = 0


def _type_name(instance: Any, attribute: attrs.Attribute[Any], value: str) -> None:
    # an ASCII letter, then ASCII letters, digits and underscores (string methods: a
    # pattern compiled at import would cost every agent that names pii)
    if not (
        isinstance(value, str)
        and value[:1].isalpha()
        and value.isascii()
        and value.replace("_", "a").isalnum()
    ):
        raise FieldError(
            attribute.name, expected("a name of letters, digits and underscores", value)
        )


def _built_in(pii_type: str) -> Callable[[str], list[PIIMatch]]:
    """The built-in detector of ``pii_type``, its module imported on the first call."""

    def find(text: str) -> list[PIIMatch]:
        from plait_pii._detectors import BUILTIN

        return BUILTIN[pii_type](text)

    return find


@frozen
class PIIMiddleware(Middleware):
    """Detect ``pii_type`` and apply ``strategy`` to it, in the parts ``apply_to_*`` name."""

    pii_type: str = attrs.field(validator=_type_name)
    """``email``, ``credit_card``, ``ip``, ``mac_address``, ``url``, the name of an installed
    detector, or any name (letters, digits, ``_``) with a ``detector``."""
    strategy: Strategy = attrs.field(
        default="redact",
        validator=attrs.validators.in_(("block", "redact", "mask", "hash", "pseudonymize")),
    )
    """What is done to a match: ``block``, ``redact``, ``mask``, ``hash`` or ``pseudonymize``."""
    detector: DetectorSpec | None = attrs.field(default=None, eq=False)
    """A regex string, a compiled ``re.Pattern``, or a function ``str -> list[PIIMatch]``;
    ``None``: the built-in or installed detector of ``pii_type``."""
    apply_to_input: bool = True
    """New user messages, before the model sees them and before the first checkpoint."""
    apply_to_output: bool = False
    """The model's answers: text, tool-call arguments, streamed chunks."""
    apply_to_tool_results: bool = False
    """What tools return (a ``ToolMessage``, or the tool messages of a ``Command``)."""

    find: Callable[[str], list[PIIMatch]] = attrs.field(init=False, repr=False, eq=False)

    @find.default
    def _make_finder(self) -> Callable[[str], list[PIIMatch]]:
        detector: object = self.detector
        if detector is None:
            if self.pii_type in BUILTIN_TYPES:
                return _built_in(self.pii_type)
            from plait_pii._installed import GROUP, installed_names, load_installed

            detector = load_installed(self.pii_type)
            if detector is None:
                installed = ", ".join(installed_names()) or "none"
                known = f"a built-in type ({', '.join(BUILTIN_TYPES)}) or an installed one"
                raise FieldError(
                    "pii_type",
                    expected(
                        f"{known} ({GROUP}: {installed})",
                        self.pii_type,
                        "for another type, give a detector: a regex string, a compiled "
                        "pattern, or a function returning PIIMatch objects",
                    ),
                )
        if isinstance(detector, str):
            try:
                detector = re.compile(detector)
            except re.error as exc:
                raise FieldError(
                    "detector", expected("a regular expression", detector, f"invalid regex: {exc}")
                ) from None
        if isinstance(detector, re.Pattern):
            pattern = detector
            return lambda text: [
                PIIMatch(m.group(), m.start(), m.end())
                for m in pattern.finditer(text)
                if m.end() > m.start()
            ]
        if not callable(detector):
            raise FieldError(
                "detector", expected("a regular expression, a callable or None", detector)
            )
        function = detector

        def call(text: str) -> list[PIIMatch]:
            found = list(function(text))
            for match in found:
                if not isinstance(match, PIIMatch):
                    raise TypeError(
                        f"pii detector for {self.pii_type!r} returned {match!r}; "
                        "it must return plait_pii.PIIMatch objects"
                    )
            return found

        return call

    def __attrs_post_init__(self) -> None:
        if not (self.apply_to_input or self.apply_to_output or self.apply_to_tool_results):
            raise ValueError(
                "apply_to_input, apply_to_output and apply_to_tool_results are all false; "
                "enable at least one"
            )

    # -- text ------------------------------------------------------------------------------

    def replacement(self, value: str) -> str:
        """What a match becomes under ``redact``, ``mask`` or ``hash`` (``pseudonymize``
        outside an agent numbers values per call: ``<EMAIL_1>``)."""
        if self.strategy == "redact":
            return f"[REDACTED_{self.pii_type.upper()}]"
        if self.strategy == "hash":
            import hashlib  # here: OpenSSL's bindings cost ms to import, and only 'hash' uses them

            digest = hashlib.sha256(value.encode()).hexdigest()[:8]
            return f"<{self.pii_type}_hash:{digest}>"
        from plait_pii._detectors import MASKS, mask_custom

        mask = MASKS.get(self.pii_type, mask_custom) if self.detector is None else mask_custom
        return mask(value)

    def matches(self, text: str) -> list[PIIMatch]:
        """Sorted, non-overlapping matches in ``text`` and in its decoded view (JSON
        ``\\u`` escapes and percent-encoding undone): ``start``/``end`` in ``text``,
        ``text`` the value, decoded where it was written encoded."""
        if not text:
            return []
        from plait_pii._decoded import scan

        return scan(self.find, text)

    def _apply(self, text: str, found: Sequence[PIIMatch], seen: _Counter) -> str:
        if not found:
            return text
        seen.count += len(found)
        if self.strategy == "block":
            return text
        parts: list[str] = []
        position = 0
        for match in found:
            parts.append(text[position : match.start])
            parts.append(self.replacement(match.text))
            position = match.end
        parts.append(text[position:])
        return "".join(parts)

    def text(self, text: str, seen: _Counter) -> str:
        return self._apply(text, self.matches(text), seen)

    def redact(self, text: str) -> str:
        """``text`` with this type handled by ``strategy`` (``block`` raises
        ``PIIDetectionError``): the same rewrite the hooks apply, for direct use."""
        if self.strategy == "pseudonymize":
            from plait_pii._pseudonyms import Assigner

            return Assigner(self.pii_type, {}, self.matches, True).text(text)
        seen = _Counter()
        result = self.text(text, seen)
        self._check(seen, "text")
        return result

    def _content(self, content: Content, seen: _Counter) -> Content:
        if isinstance(content, str):
            return self.text(content, seen)
        blocks: list[dict[str, Any]] = []
        for block in content:
            if block.get("type") == "text" and isinstance(block.get("text"), str):
                block = {**block, "text": self.text(block["text"], seen)}
            blocks.append(block)
        return blocks

    def _value(self, value: Any, seen: _Counter) -> Any:
        """A JSON value with every string leaf redacted: keys, numbers and shape stay."""
        from plait_pii._walk import map_strings

        return map_strings(value, lambda text: self.text(text, seen))

    def message(self, message: AnyMessage, seen: _Counter) -> AnyMessage:
        """``message`` with this type handled (the same object if nothing was found)."""
        before = seen.count
        content = self._content(message.content, seen)
        changes: dict[str, Any] = {"content": content}
        if message.metadata:  # kept in state too (an MCP tool's structured_content)
            changes["metadata"] = self._value(message.metadata, seen)
        if isinstance(message, AIMessage) and message.tool_calls:
            # a call whose arguments did not parse has none: its error quotes them
            changes["tool_calls"] = [
                attrs.evolve(
                    call,
                    args=self._value(call.args, seen),
                    error=call.error and self.text(call.error, seen),
                )
                for call in message.tool_calls
            ]
        if seen.count == before or self.strategy == "block":
            return message
        return attrs.evolve(message, **changes)

    def _check(self, seen: _Counter, where: str) -> None:
        if self.strategy == "block" and seen.count:
            plural = "instance" if seen.count == 1 else "instances"
            raise PIIDetectionError(
                f"pii: found {seen.count} {plural} of {self.pii_type} in the {where}; "
                "the run was stopped (strategy 'block')"
            )

    # -- input -----------------------------------------------------------------------------

    def _input(self, state: Mapping[str, Any]) -> dict[str, Any] | None:
        """Every human message since the last AI message, redacted in place by id."""
        if not self.apply_to_input:
            return None
        seen = _Counter()
        changed: list[Message] = []
        for message in reversed(state["messages"]):
            if isinstance(message, AIMessage):
                break
            if isinstance(message, HumanMessage):
                handled = self.message(message, seen)
                if handled is not message:
                    changed.append(handled)
        self._check(seen, "user input")
        return {"messages": changed[::-1]} if changed else None

    def before_agent(self, state: Mapping[str, Any], runtime: Runtime) -> dict[str, Any] | None:
        if self.strategy == "pseudonymize":
            return self._pseudonymize_new(state)
        return self._input(state)

    def before_model(self, state: Mapping[str, Any], runtime: Runtime) -> dict[str, Any] | None:
        if self.strategy == "pseudonymize":
            return self._pseudonymize_new(state)
        return self._input(state)

    # -- pseudonymize ----------------------------------------------------------------------

    def state_fields(self) -> dict[str, StateField]:
        if self.strategy != "pseudonymize":
            return {}
        from plait_pii._pseudonyms import KEY, Pseudonyms
        from plait_pii._pseudonyms import merge as merge_tables

        return {KEY: StateField(default=Pseudonyms(), reducer=merge_tables, private=True)}

    def _table(self, state: Mapping[str, Any]) -> Mapping[str, int]:
        """The thread's table of this type, with the numbers this run handed out that
        the state does not hold yet (``RunNumbers``)."""
        from plait_pii._pseudonyms import KEY, run_numbers

        tables = state.get(KEY) or {}
        return run_numbers().known(self.pii_type, tables.get(self.pii_type, {}))

    @contextlib.contextmanager
    def _assigning(self, state: Mapping[str, Any], new_allowed: bool) -> Iterator[Assigner]:
        """An ``Assigner`` on the run's numbers: what it hands out is recorded for the
        run's other numberings, under the run's lock."""
        from plait_pii._pseudonyms import Assigner, run_numbers

        numbers = run_numbers()
        with numbers.lock:
            assigner = Assigner(self.pii_type, self._table(state), self.matches, new_allowed)
            yield assigner
            numbers.record(self.pii_type, assigner.added)

    def _assigned(self, assigner: Assigner, message: AnyMessage) -> AnyMessage:
        """``message`` with its values replaced by placeholders (the same object if none)."""
        from plait_pii._rewrite import _rewritten

        return _rewritten(message, assigner.text)

    def _update(self, changed: list[AnyMessage], state: Mapping[str, Any]) -> dict[str, Any] | None:
        """``changed`` and the numbers this run handed out that the state does not hold
        yet: the ones just given, and any a message made outside this middleware carries
        (``tool_retry`` or ``tool_errors`` listed before pii answer a failed call with
        the error text pii numbered, but without the step update pii gave the error)."""
        from plait_pii._pseudonyms import KEY, Pseudonyms, run_numbers

        update: dict[str, Any] = {}
        if changed:
            update["messages"] = changed
        held = (state.get(KEY) or {}).get(self.pii_type, {})
        given = run_numbers().added.get(self.pii_type, {})
        missing = {value: n for value, n in given.items() if held.get(value) != n}
        if missing:
            update[KEY] = Pseudonyms({self.pii_type: missing})
        return update or None

    def _pseudonymize_new(self, state: Mapping[str, Any]) -> dict[str, Any] | None:
        """User and tool messages since the last AI message: known values always become
        their placeholders, new ones are numbered where ``apply_to_*`` asks."""
        changed: list[AnyMessage] = []
        with self._assigning(state, False) as assigner:
            for message in reversed(state["messages"]):
                if isinstance(message, AIMessage):
                    break
                if isinstance(message, HumanMessage):
                    assigner.new_allowed = self.apply_to_input
                elif isinstance(message, ToolMessage):
                    assigner.new_allowed = self.apply_to_tool_results
                else:
                    continue
                handled = self._assigned(assigner, message)
                if handled is not message:
                    changed.append(handled)
        return self._update(changed[::-1], state)

    def after_model(self, state: Mapping[str, Any], runtime: Runtime) -> dict[str, Any] | None:
        """The model's answer as state keeps it: placeholders, even where the stream showed
        the caller real values."""
        if self.strategy != "pseudonymize" or not state["messages"]:
            return None
        message = state["messages"][-1]
        if not isinstance(message, AIMessage):
            return None
        with self._assigning(state, self.apply_to_output) as assigner:
            handled = self._assigned(assigner, message)
        return self._update([handled] if handled is not message else [], state)

    def after_agent(self, state: Mapping[str, Any], runtime: Runtime) -> dict[str, Any] | None:
        """A run that ends after its tools step (``jump_to="end"``, a structured answer)
        keeps the numbers a message made outside pii carries (see ``_update``)."""
        if self.strategy != "pseudonymize":
            return None
        return self._update([], state)

    def _restore_result(self, result: Any) -> Any:
        """What the caller gets: messages and the structured answer with real values; the
        thread keeps placeholders. (Interrupts are shown by ``show_interrupts``.)"""
        from plait_pii._pseudonyms import Restorer
        from plait_pii._rewrite import _restored
        from plait_pii._walk import map_objects

        restorer = Restorer(self.pii_type, self._table(result.state))
        if not restorer.values:
            return result
        return attrs.evolve(
            result,
            messages=[_restored(m, restorer) for m in result.messages],
            structured_response=map_objects(result.structured_response, restorer.text),
        )

    def show_interrupts(
        self, interrupts: list[Interrupt], state: Mapping[str, Any]
    ) -> list[Interrupt]:
        """The questions of a paused run with real values, wherever a reviewer reads them
        (the result, the stream's interrupt event, ``get_interrupts`` from storage): a
        reviewer approves the real call. The checkpoint keeps placeholders."""
        if self.strategy != "pseudonymize":
            return interrupts
        from plait_pii._pseudonyms import Restorer
        from plait_pii._walk import map_objects

        restorer = Restorer(self.pii_type, self._table(state))
        if not restorer.values:
            return interrupts
        return [map_objects(i, restorer.text) for i in interrupts]

    def show_messages(
        self, messages: list[AnyMessage], state: Mapping[str, Any]
    ) -> list[AnyMessage]:
        """Whole messages of the ``messages`` stream (a tool's answer, an answer that
        streamed no token) with real values, as its tokens are; the thread keeps
        placeholders."""
        if self.strategy != "pseudonymize":
            return messages
        from plait_pii._pseudonyms import Restorer
        from plait_pii._rewrite import _restored

        restorer = Restorer(self.pii_type, self._table(state))
        if not restorer.values:
            return messages
        return [_restored(m, restorer) for m in messages]

    def wrap_run(self, request: RunRequest, handler: Callable[[RunRequest], Any]) -> Any:
        if self.strategy != "pseudonymize":
            return handler(request)
        from plait_pii._pseudonyms import numbering

        with numbering(request.runtime.run_id):
            return self._restore_result(handler(request))

    async def awrap_run(
        self, request: RunRequest, handler: Callable[[RunRequest], Awaitable[Any]]
    ) -> Any:
        if self.strategy != "pseudonymize":
            return await handler(request)
        from plait_pii._pseudonyms import numbering

        with numbering(request.runtime.run_id):
            return self._restore_result(await handler(request))

    def _real_arguments(self, request: ToolCallRequest) -> ToolCallRequest:
        from plait_pii._pseudonyms import Restorer

        restorer = Restorer(self.pii_type, self._table(request.state))
        if not restorer.values:
            return request
        call = request.tool_call
        return attrs.evolve(request, tool_call=attrs.evolve(call, args=restorer.value(call.args)))

    # -- output ----------------------------------------------------------------------------

    def _placeholders_again(self, response: ModelResponse, request: ModelRequest) -> ModelResponse:
        """A streamed answer is assembled from the chunks ``transform_model_stream`` restored
        for the caller: put the known values back into placeholders before the answer
        enters state, so no hook that runs before pii's ``after_model`` (a reviewer's
        ``after_model`` listed after pii, whose interrupt is checkpointed) holds a real
        value. New values are numbered by ``after_model``, as for an unstreamed answer."""
        changed = False
        messages: list[Any] = []
        with self._assigning(request.state, False) as assigner:
            for message in response.messages:
                handled = (
                    self._assigned(assigner, message) if isinstance(message, AIMessage) else message
                )
                changed = changed or handled is not message
                messages.append(handled)
        return attrs.evolve(response, messages=messages) if changed else response

    def _response(self, response: ModelResponse, request: ModelRequest) -> ModelResponse:
        if self.strategy == "pseudonymize":
            return self._placeholders_again(response, request)
        if not self.apply_to_output:
            return response
        seen = _Counter()
        messages = [
            self.message(m, seen) if isinstance(m, AIMessage) else m for m in response.messages
        ]
        self._check(seen, "model output")
        if all(new is old for new, old in zip(messages, response.messages, strict=True)):
            return response
        return attrs.evolve(response, messages=messages)

    def wrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
    ) -> ModelResponse:
        return self._response(handler(request), request)

    async def awrap_model_call(
        self,
        request: ModelRequest,
        handler: Callable[[ModelRequest], Awaitable[ModelResponse]],
    ) -> ModelResponse:
        return self._response(await handler(request), request)

    def transform_model_stream(
        self, chunks: Iterator[AIMessageChunk], request: ModelRequest
    ) -> Iterator[AIMessageChunk]:
        from plait_pii._pseudonyms import Restorer
        from plait_pii._stream import _StreamRedactor, _StreamRestorer

        if self.strategy == "pseudonymize":
            restorer = Restorer(self.pii_type, self._table(request.state))
            if not restorer.values:  # no placeholder to restore: nothing is held
                yield from chunks
                return
            restoring = _StreamRestorer(restorer)
            for chunk in chunks:
                yield from restoring.feed(chunk)
            yield from restoring.finish()
            return
        if not self.apply_to_output:
            yield from chunks
            return
        stream = _StreamRedactor(self)
        for chunk in chunks:
            yield from stream.feed(chunk)
        yield from stream.finish()

    async def atransform_model_stream(
        self, chunks: AsyncIterator[AIMessageChunk], request: ModelRequest
    ) -> AsyncIterator[AIMessageChunk]:
        from plait_pii._pseudonyms import Restorer
        from plait_pii._stream import _StreamRedactor, _StreamRestorer

        if self.strategy == "pseudonymize":
            restorer = Restorer(self.pii_type, self._table(request.state))
            if not restorer.values:  # no placeholder to restore: nothing is held
                async for chunk in chunks:
                    yield chunk
                return
            restoring = _StreamRestorer(restorer)
            async for chunk in chunks:
                for out in restoring.feed(chunk):
                    yield out
            for out in restoring.finish():
                yield out
            return
        if not self.apply_to_output:
            async for chunk in chunks:
                yield chunk
            return
        stream = _StreamRedactor(self)
        async for chunk in chunks:
            for out in stream.feed(chunk):
                yield out
        for out in stream.finish():
            yield out

    # -- tool results ----------------------------------------------------------------------

    def _tool_result(self, result: ToolMessage | Command) -> ToolMessage | Command:
        if not self.apply_to_tool_results or self.strategy == "pseudonymize":
            return result
        seen = _Counter()
        if isinstance(result, ToolMessage):
            handled: ToolMessage | Command = self.message(result, seen)  # type: ignore[assignment]
        else:
            handled = result
            update = result.update
            if update is not None and "messages" in update:
                items = update["messages"]
                single = isinstance(items, Message)
                listed = [items] if single else list(items)
                redacted = [
                    self.message(m, seen) if isinstance(m, ToolMessage) else m for m in listed
                ]
                new_update = {**update, "messages": redacted[0] if single else redacted}
                handled = attrs.evolve(result, update=new_update)
        self._check(seen, "tool result")
        return handled

    def _pseudonymized_result(
        self, result: ToolMessage | Command, request: ToolCallRequest
    ) -> ToolMessage | Command:
        """The tool's answer with placeholders before it enters state, so nothing that
        reads the state — a summary written before pii's own ``before_model``, a
        checkpoint — meets a real value. New numbers travel with it as a state update."""
        from plait_pii._pseudonyms import KEY
        from plait_pii._pseudonyms import merge as merge_tables

        update = dict(result.update or {}) if isinstance(result, Command) else {}
        items: Any = result if isinstance(result, ToolMessage) else update.get("messages")
        single = isinstance(items, Message)
        listed: list[Any] = [items] if single else list(items or ())
        with self._assigning(request.state, self.apply_to_tool_results) as assigner:
            handled = [
                self._assigned(assigner, m) if isinstance(m, ToolMessage) else m for m in listed
            ]
        if not assigner.added:
            if isinstance(result, ToolMessage):
                return handled[0]  # type: ignore[return-value]
            if all(new is old for new, old in zip(handled, listed, strict=True)):
                return result
            update["messages"] = handled[0] if single else handled
            return attrs.evolve(result, update=update)
        update["messages"] = handled[0] if single else handled
        update[KEY] = merge_tables(update.get(KEY), {self.pii_type: assigner.added})
        if isinstance(result, ToolMessage):
            return Command(update=update)
        return attrs.evolve(result, update=update)

    def wrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], ToolMessage | Command],
    ) -> ToolMessage | Command:
        pseudonymize = self.strategy == "pseudonymize"
        try:
            result = handler(self._real_arguments(request) if pseudonymize else request)
        except Exception as error:
            self._tool_error(error, request)
            raise
        if pseudonymize:
            return self._pseudonymized_result(result, request)
        return self._tool_result(result)

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command]],
    ) -> ToolMessage | Command:
        pseudonymize = self.strategy == "pseudonymize"
        try:
            result = await handler(self._real_arguments(request) if pseudonymize else request)
        except Exception as error:
            self._tool_error(error, request)
            raise
        if pseudonymize:
            return self._pseudonymized_result(result, request)
        return self._tool_result(result)

    def _tool_error(self, error: Exception, request: ToolCallRequest) -> None:
        """A tool's exception is its answer too: the model reads its text in the error
        message the kernel makes of it (after this hook), so that text is handled here as
        a result's would be, starting from what a pii instance inside this one left
        (``error_text``). With ``pseudonymize`` known values become their placeholders
        (new ones are numbered with ``apply_to_tool_results``) and the new numbers go into
        the tools step with the message (``set_error_update``), so no step of the thread
        keeps the value."""
        if not raised_by_tool(error):
            return
        text = error_text(error)
        if self.strategy == "pseudonymize":
            self._pseudonymized_error(error, text, request)
            return
        if not self.apply_to_tool_results:
            return
        call = request.tool_call
        handled = self._tool_result(ToolMessage(text, tool_call_id=call.id, name=call.name))
        if isinstance(handled, ToolMessage) and handled.text != text:
            set_error_text(error, handled.text)

    def _pseudonymized_error(self, error: Exception, text: str, request: ToolCallRequest) -> None:
        from plait_pii._pseudonyms import KEY
        from plait_pii._pseudonyms import merge as merge_tables

        with self._assigning(request.state, self.apply_to_tool_results) as assigner:
            handled = assigner.text(text)
        if handled != text:
            set_error_text(error, handled)
        if assigner.added:
            update = error_update(error)
            update[KEY] = merge_tables(update.get(KEY), {self.pii_type: assigner.added})
            set_error_update(error, update)
