"""Building an agent with pii pays only for what its configuration uses: OpenSSL's
bindings (``hashlib``) load for the ``hash`` strategy, the stream rewriter for a streamed
answer, the detectors and the encoded-text view when a text is first scanned. A server
building an agent per request, or a short script, does not load them for an agent that
never uses them."""

from __future__ import annotations

import subprocess
import sys

RUN = """
import sys, plait
agent = plait.create_agent(plait.ScriptedChatModel(["noted"]), middleware=[
    ("pii", {"pii_type": "email", "strategy": %r})])
built = sorted(m for m in %r if m in sys.modules)
result = agent.invoke("mail me at ana@example.org")
ran = sorted(m for m in %r if m in sys.modules)
print(built, ran, result.messages[0].text)
"""

DEFERRED = ["hashlib", "plait_pii._decoded", "plait_pii._detectors", "plait_pii._stream"]


def _run(strategy: str) -> str:
    code = RUN % (strategy, DEFERRED, DEFERRED)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return done.stdout.strip()


def test_building_a_redacting_agent_loads_none_of_them_and_its_run_only_the_scanner() -> None:
    assert _run("redact") == (
        "[] ['plait_pii._decoded', 'plait_pii._detectors'] mail me at [REDACTED_EMAIL]"
    )


def test_the_hash_strategy_still_hashes_with_hashlib_loaded_when_it_runs() -> None:
    out = _run("hash")
    assert out.startswith(
        "[] ['hashlib', 'plait_pii._decoded', 'plait_pii._detectors'] mail me at <email_hash:"
    )


def test_the_built_in_type_names_are_the_detectors_types() -> None:
    """Building an agent checks ``pii_type`` against ``BUILTIN_TYPES`` without
    loading the detectors; they are the types the detectors find, in their order."""
    from plait_pii._detectors import BUILTIN, MASKS
    from plait_pii.middleware import BUILTIN_TYPES

    assert tuple(BUILTIN) == tuple(MASKS) == BUILTIN_TYPES
