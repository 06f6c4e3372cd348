"""plait-guardrails: input, output and tool guardrails with tripwires.

A guardrail is a function (sync or async), a regex or keyword rule, or an LLM judge; a
trip raises ``GuardrailTripped`` or ends the run with a message. With an output guardrail
on, streamed text is held back and released only once the guardrails pass it.
"""

from plait_guardrails._guardrail import (
    Guardrail,
    GuardrailData,
    GuardrailResult,
    GuardrailTripped,
    input_guardrail,
    output_guardrail,
    tool_guardrail,
    tool_input_guardrail,
    tool_output_guardrail,
)
from plait_guardrails._middleware import GuardrailsMiddleware

__all__ = [
    "Guardrail",
    "GuardrailData",
    "GuardrailResult",
    "GuardrailTripped",
    "GuardrailsMiddleware",
    "input_guardrail",
    "output_guardrail",
    "tool_guardrail",
    "tool_input_guardrail",
    "tool_output_guardrail",
]
