"""``handoff``: the model hands the conversation to another agent, which answers from then on."""

from plait_handoff.middleware import STATE_KEY, TOOL_PREFIX, HandoffAgent, HandoffMiddleware

__all__ = ["STATE_KEY", "TOOL_PREFIX", "HandoffAgent", "HandoffMiddleware"]
