"""``plait run FILE --record runs.jsonl`` against a loopback OpenAI-compatible server, then
``--replay runs.jsonl`` with the server gone: the same answer, in real subprocesses."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from replay_server import ReplayServer, openai_completion

AGENT = """
[agent]
model = "openai:gpt-4.1"
tools = ["shop_tools:stock"]
model_settings = {{ base_url = "{url}/v1", api_key = "sk-test" }}
"""

TOOLS = '''
def stock(item: str) -> str:
    """How many of an item are in stock.

    Args:
        item: the item.
    """
    return f"{item}: 3 left"
'''


def test_record_then_replay_offline(plait_cli, write: Callable[[str, str], Path]) -> None:
    write("shop_tools.py", TOOLS)
    server = ReplayServer()
    try:
        server.json(openai_completion(None, ("c1", "stock", {"item": "kettle"})))
        server.json(openai_completion("There are 3 kettles left."))
        write("shop.toml", AGENT.format(url=server.url))
        recorded = plait_cli("run", "shop.toml", "Kettles?", "--record", "runs.jsonl", "--json")
        assert recorded.returncode == 0, recorded.stderr
        assert len(server.requests) == 2
    finally:
        server.close()
    replayed = plait_cli("run", "shop.toml", "Kettles?", "--replay", "runs.jsonl", "--json")
    assert replayed.returncode == 0, replayed.stderr
    assert json.loads(replayed.stdout)["text"] == "There are 3 kettles left."
    assert json.loads(replayed.stdout)["text"] == json.loads(recorded.stdout)["text"]

    changed = plait_cli("run", "shop.toml", "Toasters?", "--replay", "runs.jsonl")
    assert changed.returncode == 1
    assert changed.stderr.startswith(
        "plait: error: replay: this run's model call differs from the one recorded in"
    )
    assert '\n-   "content": "Kettles?",\n+   "content": "Toasters?",\n' in changed.stderr
    # streamed (no --json) against a recording that was not: the same answer
    shown = plait_cli("run", "shop.toml", "Kettles?", "--replay", "runs.jsonl")
    assert shown.returncode == 0, shown.stderr
    assert "There are 3 kettles left." in shown.stdout
