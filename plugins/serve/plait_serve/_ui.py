"""The development page (``plait dev``, ``plait serve --ui``): one HTML page, its script
and its style sheet, shipped in the wheel (``plait_serve/ui/``) and served at ``/`` —
no CDN, no build step.

The page is a client like any other: it runs the agent over AG-UI (``POST /ag-ui``,
``GET /ag-ui/threads/{id}/stream`` after a reload) and manages threads, state and
history over the Agent Protocol (``/threads/...``). The one route it adds besides its
files is ``GET /plait/tools``, the served tools' JSON schemas, which the page turns into
the form a reviewer edits a paused call's arguments in.
"""

from __future__ import annotations

from importlib import resources

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from plait_serve._app import Server

__all__ = ["ASSETS"]

ASSETS = {
    "/": ("index.html", "text/html; charset=utf-8"),
    "/ui/app.js": ("app.js", "text/javascript; charset=utf-8"),
    "/ui/app.css": ("app.css", "text/css; charset=utf-8"),
}
"""The page's paths, each with its file in ``plait_serve/ui/`` and its media type."""

# The page's own files only: no inline script, nothing from another origin.
_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; frame-ancestors 'none'"
)


def _asset(name: str, media_type: str) -> Response:
    body = resources.files("plait_serve").joinpath("ui", name).read_bytes()
    return Response(
        body,
        media_type=media_type,
        headers={"Cache-Control": "no-cache", "Content-Security-Policy": _POLICY},
    )


def _routes(server: Server) -> list[Route]:
    def page(path: str) -> Route:
        name, media_type = ASSETS[path]

        async def serve(request: Request) -> Response:
            return _asset(name, media_type)

        return Route(path, serve, methods=["GET"])

    async def tools(request: Request) -> Response:
        return JSONResponse(
            [
                {"name": t.name, "description": t.description, "parameters": dict(t.parameters)}
                for t in server.agent.tools
            ]
        )

    return [*(page(path) for path in ASSETS), Route("/plait/tools", tools, methods=["GET"])]
