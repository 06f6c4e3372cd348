"""``plait mcp-serve``: a client's tool calls pass the agent's guards (approval, limits),
checked with the SDK's client against the real command in a subprocess."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"

TOOLS = '''
import os
from pathlib import Path

LEDGER = Path(os.environ["LEDGER"])


def issue_refund(order_id: str, amount: float) -> str:
    """Refund an order.

    Args:
        order_id: The order to refund.
        amount: The amount in euros.
    """
    with LEDGER.open("a") as ledger:
        ledger.write(f"{order_id} {amount}\\n")
    return f"Refunded {amount:.2f} EUR for order {order_id}."
'''


def serve(path: Path, ledger: Path | None = None) -> StdioServerParameters:
    env = {"LEDGER": str(ledger)} if ledger is not None else {}
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "plait.cli", "mcp-serve", str(path)],
        env={**os.environ, **env},
    )


async def calls(params: StdioServerParameters, made: list[tuple[str, dict[str, Any]]]) -> Any:
    async with Client(params, cache=None) as client:
        return [await client.call_tool(name, args) for name, args in made]


def agent_file(tmp_path: Path, middleware: str) -> Path:
    (tmp_path / "refunds.py").write_text(TOOLS)
    path = tmp_path / "refunds.toml"
    path.write_text(
        '[agent]\nmodel = "scripted:x"\ntools = ["refunds:issue_refund"]\n'
        'checkpointer = "memory"\n' + middleware
    )
    return path


def test_the_support_example_does_not_refund_without_approval() -> None:
    (refund, lookup) = asyncio.run(
        calls(
            serve(EXAMPLES / "support.toml"),
            [
                ("issue_refund", {"order_id": "1042", "amount": 9999}),
                ("lookup_order", {"order_id": "1042"}),
            ],
        )
    )
    assert refund.is_error
    text = refund.content[0].text
    assert text.startswith("tool 'issue_refund' was not run: the agent pauses this call for")
    assert "which mcp-serve cannot ask for" in text
    assert "Refunded" not in text
    assert not lookup.is_error  # tools nobody reviews are served as before
    assert '"item": "blue kettle"' in lookup.content[0].text


def test_a_reviewed_tool_is_never_run_for_a_client(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.txt"
    path = agent_file(
        tmp_path, '[[middleware]]\nuse = "human_in_the_loop"\ninterrupt_on.issue_refund = true\n'
    )
    results = asyncio.run(
        calls(serve(path, ledger), [("issue_refund", {"order_id": "1", "amount": 9999})] * 3)
    )
    assert all(r.is_error and "was not run" in r.content[0].text for r in results)
    assert not ledger.exists()


def test_a_tool_call_limit_counts_every_call_of_the_client(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.txt"
    path = agent_file(
        tmp_path,
        '[[middleware]]\nuse = "tool_call_limit"\ntool_name = "issue_refund"\nrun_limit = 2\n',
    )
    results = asyncio.run(
        calls(
            serve(path, ledger),
            [("issue_refund", {"order_id": str(n), "amount": 10}) for n in range(4)],
        )
    )
    assert [r.is_error for r in results] == [False, False, True, True]
    assert results[0].content[0].text == "Refunded 10.00 EUR for order 0."
    blocked = results[2].content[0].text
    assert blocked.startswith(
        "Error: tool call limit exceeded: run limit (3/2 calls). This call to 'issue_refund' "
        "was not run."
    )
    assert ledger.read_text() == "0 10.0\n1 10.0\n"


def test_a_limit_that_stops_the_run_refuses_the_call_with_its_error(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.txt"
    path = agent_file(
        tmp_path,
        '[[middleware]]\nuse = "tool_call_limit"\nthread_limit = 1\nexit_behavior = "error"\n',
    )
    first, second = asyncio.run(
        calls(serve(path, ledger), [("issue_refund", {"order_id": "1", "amount": 5})] * 2)
    )
    assert not first.is_error
    assert second.is_error
    assert second.content[0].text == (
        "tool 'issue_refund' was stopped: ToolCallLimitExceededError: Tool call limit "
        "exceeded: thread limit (2/1 calls) for any tool."
    )
    assert ledger.read_text() == "1 5.0\n"


def test_pii_redacts_what_a_served_tool_answers(tmp_path: Path) -> None:
    (tmp_path / "contacts.py").write_text(
        "def contact(customer: str) -> str:\n"
        '    """The customer\'s address."""\n'
        '    return f"write to jane.doe@example.com about {customer}"\n'
    )
    path = tmp_path / "contacts.toml"
    path.write_text(
        '[agent]\nmodel = "scripted:x"\ntools = ["contacts:contact"]\n'
        '[[middleware]]\nuse = "pii"\npii_type = "email"\napply_to_tool_results = true\n'
    )
    (answer,) = asyncio.run(calls(serve(path), [("contact", {"customer": "c1"})]))
    assert (answer.is_error, answer.content[0].text) == (
        False,
        "write to [REDACTED_EMAIL] about c1",
    )
