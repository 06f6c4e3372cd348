"""End to end: a main agent plans with ``todo_list``, delegates two research tasks to
sub-agents that run concurrently, saves both answers under ``/memories/`` (routed to a real
store by a ``CompositeBackend``), and a later conversation on another thread reads them
back. Real checkpointer and store (SQLite files), scripted models only."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import plait
from plait.backends import CompositeBackend, StateBackend, StoreBackend
from plait.messages import AIMessage, ToolMessage
from plait.testing import ai, call, scripted
from plait_filesystem import FilesystemMiddleware
from plait_subagents import SubAgent, SubAgentMiddleware
from plait_todo_list import TodoListMiddleware

TOPICS = {"alpha": "the Alpha protocol", "beta": "the Beta protocol"}
FINDINGS = {
    "alpha": "Alpha uses 3 round trips and was published in 2019.",
    "beta": "Beta needs one round trip but requires a shared clock.",
}


def _answer_of(messages: list[Any], call_id: str) -> str:
    [message] = [m for m in messages if isinstance(m, ToolMessage) and m.tool_call_id == call_id]
    return message.text


def build(
    tmp_path: Path, main: Any, researchers: dict[str, Any], barrier: asyncio.Barrier | None
) -> Any:
    async def search(query: str) -> str:
        """Search the literature.

        Args:
            query: what to look for.
        """
        if barrier is not None:
            # Opens only when both researchers are searching at once.
            await asyncio.wait_for(barrier.wait(), timeout=10)
        topic = next(name for name, text in TOPICS.items() if text in query)
        return FINDINGS[topic]

    specs = [
        SubAgent(
            name=f"{name}-researcher",
            description=f"Researches {TOPICS[name]}.",
            system_prompt=f"You research {TOPICS[name]} and answer in one sentence.",
            model=model,
            tools=["search"],
        )
        for name, model in researchers.items()
    ]
    backend = CompositeBackend(StateBackend(), {"/memories/": StoreBackend()})
    return plait.create_agent(
        main,
        tools=[search],
        system_prompt="You are a research lead.",
        middleware=[
            TodoListMiddleware(),
            SubAgentMiddleware(subagents=specs),
            FilesystemMiddleware(backend=backend),
        ],
        checkpointer=f"sqlite:///{tmp_path / 'threads.db'}",
        store=f"sqlite:///{tmp_path / 'store.db'}",
    )


def researcher(topic: str) -> Any:
    return scripted(
        ai("", call("search", query=TOPICS[topic])),
        lambda messages, tools: ai(f"Finding: {messages[-1].text}"),
    )


def plan(*statuses: str) -> AIMessage:
    items = ["Research Alpha", "Research Beta", "Save the findings"]
    todos = [{"content": c, "status": s} for c, s in zip(items, statuses, strict=True)]
    return ai("", call("write_todos", todos=todos))


def save(messages: list[Any], tools: Any) -> AIMessage:
    """Write each sub-agent's answer (read from the task results) to /memories/."""
    return ai(
        "",
        *(
            call(
                "write_file",
                file_path=f"/memories/{name}.md",
                content=_answer_of(messages, f"task_{name}"),
            )
            for name in TOPICS
        ),
    )


def test_research_with_subagents_saved_to_memories_and_recalled_elsewhere(
    tmp_path: Path,
) -> None:
    async def research() -> Any:
        barrier = asyncio.Barrier(2)
        main = scripted(
            plan("in_progress", "in_progress", "pending"),
            ai(
                "Delegating both.",
                call(
                    "task",
                    id="task_alpha",
                    description=f"Research {TOPICS['alpha']}: one sentence.",
                    subagent_type="alpha-researcher",
                ),
                call(
                    "task",
                    id="task_beta",
                    description=f"Research {TOPICS['beta']}: one sentence.",
                    subagent_type="beta-researcher",
                ),
            ),
            save,
            plan("completed", "completed", "completed"),
            "Saved both findings to /memories/.",
        )
        researchers = {name: researcher(name) for name in TOPICS}
        agent = build(tmp_path, main, researchers, barrier)
        result = await asyncio.wait_for(
            agent.ainvoke("Research Alpha and Beta and remember what you find.", thread_id="r1"),
            timeout=30,
        )
        return agent, main, researchers, result

    agent, main, researchers, result = asyncio.run(research())
    assert result.text == "Saved both findings to /memories/."
    assert [t["status"] for t in result.state["todos"]] == ["completed"] * 3
    tasks = [m for m in result.messages if isinstance(m, ToolMessage) and m.name == "task"]
    assert [m.text for m in tasks] == [f"Finding: {FINDINGS[n]}" for n in TOPICS]
    assert all(m.status == "success" for m in tasks)
    # Each researcher saw only its brief; the main agent saw only the answers.
    for name, model in researchers.items():
        assert [m.text for m in model.requests[0].messages] == [
            f"Research {TOPICS[name]}: one sentence."
        ]
    main_texts = [m.text for m in main.requests[-1].messages]
    assert not any(text == FINDINGS["alpha"] for text in main_texts)  # raw search results
    # Written to the store, not to the thread's own files.
    assert not any(path.startswith("/memories/") for path in result.state.get("files", {}))
    stored = [str(item.value) for item in agent.store.search(("filesystem",), limit=100)]
    for name in TOPICS:
        assert any(f"Finding: {FINDINGS[name]}" in value for value in stored)

    # A new conversation (another thread, a freshly built agent) recalls them.
    recall = scripted(
        ai(
            "",
            call("read_file", file_path="/memories/alpha.md"),
            call("read_file", file_path="/memories/beta.md"),
        ),
        lambda messages, tools: ai(
            "From memory:\n" + "\n".join(m.text for m in messages if isinstance(m, ToolMessage))
        ),
    )
    later = build(tmp_path, recall, {}, None)
    answer = later.invoke("What do you remember about Alpha and Beta?", thread_id="r2")
    for name in TOPICS:
        assert f"Finding: {FINDINGS[name]}" in answer.text
    assert "r1" not in answer.text
