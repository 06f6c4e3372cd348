"""Tools and the scripted "model" of examples/deep.toml and examples/deep_support.toml.

``deep_brain`` plays both the desk (the main agent) and its researcher sub-agent, telling
them apart by the tools offered; it reads the conversation, so every turn of ``plait chat``
gets a sensible step. Nothing here calls the network.
"""

from __future__ import annotations

from plait import AIMessage, ToolCall

_FACTS = {
    "solar batteries": (
        "Lithium iron phosphate cells dominate home storage (IEA, 2024)",
        "Typical home systems store 10-15 kWh (Energy Saving Trust)",
    ),
}


def search(query: str) -> str:
    """Search the research library.

    Args:
        query: what to look for, e.g. "solar batteries".
    """
    facts = next((f for topic, f in _FACTS.items() if topic in query.lower()), None)
    if facts is None:
        return f"No results for {query!r}."
    return "\n".join(f"- {fact}" for fact in facts)


def _names(tools: list[object]) -> set[str]:
    return {str(getattr(tool, "name", "")) for tool in tools}


def _call(tool: str, **args: object) -> AIMessage:
    return AIMessage(tool_calls=[ToolCall(tool, dict(args))])


def deep_brain(messages: list[object], tools: list[object]) -> AIMessage | str:
    """One model call of the desk or of its researcher."""
    if "load_skill" not in _names(tools):
        return _researcher(messages)
    last = messages[-1]
    kind, text = getattr(last, "type", ""), str(getattr(last, "text", ""))
    if kind == "tool":
        return _after_tool(str(getattr(last, "name", "")), messages)
    if text.startswith("[Background task") and getattr(messages[-2], "type", "") == "tool":
        # The result arrived in the middle of this turn's steps: finish them first.
        return _after_tool(str(getattr(messages[-2], "name", "")), messages)
    findings = _unreported(messages)
    if findings is not None:
        return (
            "# Solar batteries\n\nHome storage is mostly lithium iron phosphate.\n\n"
            f"## Findings\n\n{findings}\n\n## Sources\n\n- IEA, 2024\n- Energy Saving Trust"
        )
    lowered = text.lower()
    if any(word in lowered for word in ("bill", "refund", "invoice", "charged")):
        return _call("transfer_to_support")
    if "research" in lowered:
        return _call("load_skill", name="report-writing")
    return "I can research a topic and write a report, or put you through to support."


def _after_tool(name: str, messages: list[object]) -> AIMessage | str:
    if name == "load_skill":
        topic = _topic(messages)
        return _call(
            "start_task",
            description=f"Research {topic}: the main facts, each with its source.",
            subagent_type="researcher",
        )
    if name == "start_task":
        return _call("update_agents_md", note="The user follows home energy storage.")
    if name == "update_agents_md":
        return (
            "The researcher is on it in the background. Ask me again in a moment and "
            "I will write the report."
        )
    return "Done."


def _unreported(messages: list[object]) -> str | None:
    """The findings of the last background result no report has used yet."""
    for message in reversed(messages):
        text = str(getattr(message, "text", ""))
        if getattr(message, "type", "") == "ai" and text.startswith("# "):
            return None
        if getattr(message, "type", "") == "human" and text.startswith("[Background task"):
            return text.partition("Result:\n")[2]
    return None


def _topic(messages: list[object]) -> str:
    for message in reversed(messages):
        if getattr(message, "type", "") == "human":
            text = str(getattr(message, "text", "")).lower()
            return next((topic for topic in _FACTS if topic in text), text)
    return "the topic"


def _researcher(messages: list[object]) -> AIMessage | str:
    last = messages[-1]
    if getattr(last, "type", "") == "tool":
        return str(getattr(last, "text", ""))
    brief = str(getattr(last, "text", ""))
    topic = brief.removeprefix("Research ").partition(":")[0]
    return _call("search", query=topic)


def support_brain(messages: list[object], tools: list[object]) -> str:
    """The support agent: answers billing questions."""
    return (
        "Support here. A double charge is a pending authorisation; it drops off within "
        "3 working days."
    )
