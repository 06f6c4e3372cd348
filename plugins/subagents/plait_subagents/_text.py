"""Wording shared by the sub-agents' error answers."""


def sentence(text: str) -> str:
    """``text`` ending as a sentence, so an error message's own full stop is not doubled
    when more is said after it (``... (run limit: total_tokens 207/100). The task ...``)."""
    text = text.rstrip()
    return text if text.endswith((".", "!", "?")) else f"{text}."
