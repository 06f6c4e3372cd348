"""An MCP server for the plugin's tests, written with the SDK's ``MCPServer``.

``python demo_server.py stdio`` serves it over stdio; ``python demo_server.py http PORT``
over streamable HTTP on 127.0.0.1. Each tool exercises one kind of answer.
"""

from __future__ import annotations

import asyncio
import base64
import os
import sys
from typing import Annotated

from mcp.server.mcpserver import Context, Elicit, ElicitationResult, MCPServer, Resolve
from mcp.types import EmbeddedResource, ImageContent, TextResourceContents
from pydantic import BaseModel

server = MCPServer("demo")
COUNTER = {"value": 0}

# a 1x1 transparent PNG
PIXEL = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360000002000001e221bc330000000049454e44ae426082"
    )
).decode()


@server.tool()
def echo(text: str) -> str:
    """Repeat the text."""
    return text


@server.tool()
def count() -> int:
    """Add one to this server process's counter and return it (shows a session is kept)."""
    COUNTER["value"] += 1
    return COUNTER["value"]


@server.tool()
def pid() -> int:
    """This server's process id."""
    return os.getpid()


class Weather(BaseModel):
    city: str
    celsius: float


@server.tool()
def weather(city: str) -> Weather:
    """Structured weather for a city."""
    return Weather(city=city, celsius=21.5)


@server.tool()
def picture() -> list[ImageContent | EmbeddedResource]:
    """An image and an embedded text resource."""
    return [
        ImageContent(type="image", data=PIXEL, mime_type="image/png"),
        EmbeddedResource(
            type="resource",
            resource=TextResourceContents(
                uri="file:///notes.txt", mime_type="text/plain", text="hi"
            ),
        ),
    ]


@server.tool()
def fail(reason: str) -> str:
    """Always fails with the reason."""
    raise ValueError(reason)


@server.tool()
async def slow(seconds: float) -> str:
    """Sleep, then answer."""
    await asyncio.sleep(seconds)
    return f"slept {seconds}"


@server.tool()
def crash() -> str:
    """Kill this server process in the middle of the call."""
    os._exit(3)


@server.tool()
async def progress(steps: int, ctx: Context) -> str:
    """Report progress for each step."""
    for step in range(1, steps + 1):
        await ctx.report_progress(step, steps, f"step {step}")
        await asyncio.sleep(0.01)
    return "done"


class Booking(BaseModel):
    seats: int


@server.tool()
async def book(ctx: Context) -> str:
    """Ask the user how many seats to book."""
    answer = await ctx.elicit("How many seats?", Booking)
    if answer.action == "accept":
        return f"booked {answer.data.seats}"
    return f"not booked ({answer.action})"


def ask_seats() -> Elicit[Booking]:
    return Elicit("How many seats?", Booking)


@server.tool()
def reserve(show: str, answer: Annotated[ElicitationResult[Booking], Resolve(ask_seats)]) -> str:
    """Reserve seats for a show, asking the user how many (protocol 2026-07-28 elicitation)."""
    if answer.action == "accept":
        return f"reserved {answer.data.seats} seats for {show}"
    return f"no reservation for {show} ({answer.action})"


@server.tool()
def header(name: str, ctx: Context) -> str:
    """The value of one HTTP request header (streamable HTTP only)."""
    return (ctx.headers or {}).get(name.lower(), "(none)")


if __name__ == "__main__":
    if sys.argv[1] == "http":
        asyncio.run(server.run_streamable_http_async(host="127.0.0.1", port=int(sys.argv[2])))
    else:
        server.run("stdio")
