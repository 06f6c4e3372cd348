"""A third-party middleware, installed as its own distribution, enabled by name."""

from __future__ import annotations

from typing import Any

import attrs

import plait


@attrs.frozen
class HelloMiddleware(plait.Middleware):
    """Prefixes the system prompt with a greeting and counts model calls in state."""

    greeting: str = "Hello"

    def state_fields(self) -> dict[str, plait.StateField]:
        return {"hello_calls": plait.StateField(default=0)}

    def wrap_model_call(self, request: plait.ModelRequest, handler: Any) -> Any:
        prompt = f"{self.greeting}! {request.system_prompt or ''}".strip()
        return handler(request.override(system_prompt=prompt))

    def after_model(self, state: Any) -> dict[str, Any]:
        return {"hello_calls": state["hello_calls"] + 1}
