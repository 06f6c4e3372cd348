"""One export over real OTLP/HTTP: the SDK's exporter posts protobuf to a receiver on
loopback, which decodes it with the OTLP protobuf messages."""

from __future__ import annotations

import gzip
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.trace.v1.trace_pb2 import Span
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

import plait
from plait.messages import Usage
from plait.testing import ai, call, scripted
from plait_otel import OtelMiddleware


class Receiver(BaseHTTPRequestHandler):
    received: list[tuple[str, str, ExportTraceServiceRequest]]

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        if self.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        type(self).received.append((self.path, self.headers["Content-Type"], request))
        answer = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def receiver() -> Iterator[tuple[str, list[Any]]]:
    handler = type("Handler", (Receiver,), {"received": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1/traces", handler.received
    server.shutdown()
    server.server_close()


@plait.tool
def ping(host: str) -> str:
    """Ping a host."""
    return f"pong from {host}"


def attributes(span: Span) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kv in span.attributes:
        value = kv.value
        kind = value.WhichOneof("value")
        if kind == "array_value":
            out[kv.key] = [v.string_value for v in value.array_value.values]
        else:
            out[kv.key] = getattr(value, kind)
    return out


def test_spans_arrive_over_otlp_http(receiver: tuple[str, list[Any]]) -> None:
    endpoint, received = receiver
    provider = TracerProvider(resource=Resource.create({"service.name": "support-bot"}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
    agent = plait.create_agent(
        scripted(ai("", call("ping", id="c1", host="a"), usage=Usage(12, 3)), "done", name="m1"),
        [ping],
        middleware=[OtelMiddleware(tracer_provider=provider)],
        name="support",
        checkpointer="memory",
    )
    agent.invoke("go", thread_id="th-9")
    provider.force_flush()
    provider.shutdown()

    assert [(path, kind) for path, kind, _ in received] == [
        ("/v1/traces", "application/x-protobuf")
    ]
    (request,) = [r for _, _, r in received]
    (resource_spans,) = request.resource_spans
    service = {kv.key: kv.value.string_value for kv in resource_spans.resource.attributes}
    assert service["service.name"] == "support-bot"
    spans = [s for scope in resource_spans.scope_spans for s in scope.spans]
    assert {s.name for s in resource_spans.scope_spans[0].spans} == {
        "invoke_agent support",
        "chat m1",
        "execute_tool ping",
    }
    assert resource_spans.scope_spans[0].scope.name == "plait_otel"
    by_name: dict[str, list[Span]] = {}
    for span in spans:
        by_name.setdefault(span.name, []).append(span)
    (run,) = by_name["invoke_agent support"]
    first, _ = sorted(by_name["chat m1"], key=lambda s: s.start_time_unix_nano)
    (tool,) = by_name["execute_tool ping"]
    assert run.kind == Span.SPAN_KIND_INTERNAL and run.parent_span_id == b""
    assert first.kind == Span.SPAN_KIND_CLIENT and first.parent_span_id == run.span_id
    assert tool.kind == Span.SPAN_KIND_INTERNAL and tool.parent_span_id == run.span_id
    assert attributes(run)["gen_ai.conversation.id"] == "th-9"
    chat = attributes(first)
    assert chat["gen_ai.operation.name"] == "chat"
    assert chat["gen_ai.usage.input_tokens"] == 12
    assert chat["gen_ai.usage.output_tokens"] == 3
    assert chat["gen_ai.response.finish_reasons"] == ["tool_calls"]
    assert attributes(tool)["gen_ai.tool.call.id"] == "c1"
