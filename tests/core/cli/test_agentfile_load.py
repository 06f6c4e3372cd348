"""``load_agent``: a TOML file becomes a working agent."""

from __future__ import annotations

from collections.abc import Callable
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from plait.agentfile import AgentFileError, load_agent, read_agent_file
from plait.testing import transcript

TOOLS = '''
def lookup(word: str) -> str:
    """Look a word up.

    Args:
        word: the word.
    """
    return word.upper()
'''


def test_tools_are_found_beside_the_file_and_responses_scripted(
    write: Callable[[str, str], Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(Path("/"))  # the working directory does not matter
    write("sub/word_tools.py", TOOLS)
    path = write(
        "sub/words.toml",
        """
[agent]
model = "scripted:words"
system_prompt = "Be helpful."
tools = ["word_tools:lookup"]

[[agent.model_settings.responses]]
text = "Let me look."
tool_calls = [{ name = "lookup", args = { word = "plait" }, id = "c1" }]

[[agent.model_settings.responses]]
text = "It is PLAIT."
""",
    )
    agent = load_agent(path)
    result = agent.invoke("What is it?")
    assert transcript(result.messages) == [
        ("human", "What is it?"),
        ("ai", "Let me look."),
        ("tool", "PLAIT"),
        ("ai", "It is PLAIT."),
    ]
    assert result.messages[1].tool_calls[0].id == "c1"
    assert agent.model.requests[0].system_prompt == "Be helpful."
    assert [t.name for t in agent.model.requests[0].tools] == ["lookup"]


def test_checkpointer_and_recursion_limit(write: Callable[[str, str], Path]) -> None:
    path = write(
        "agent.toml",
        '[agent]\nmodel = "scripted:x"\ncheckpointer = "memory"\nrecursion_limit = 3\n'
        'model_settings = { responses = ["one", "two"] }\n',
    )
    spec = read_agent_file(path)
    assert spec.recursion_limit == 3
    agent = spec.build()
    agent.invoke("a", thread_id="t")
    result = agent.invoke("b", thread_id="t")
    assert transcript(result.messages) == [
        ("human", "a"),
        ("ai", "one"),
        ("human", "b"),
        ("ai", "two"),
    ]


def test_the_agent_is_named_in_its_file(write: Callable[[str, str], Path]) -> None:
    path = write("agent.toml", '[agent]\nmodel = "scripted:x"\nname = "support"\n')
    agent = read_agent_file(path).build()
    assert agent.name == "support"
    unnamed = write("other.toml", '[agent]\nmodel = "scripted:x"\n')
    assert read_agent_file(unnamed).build().name == "agent"


def test_overrides_replace_the_files_arguments(write: Callable[[str, str], Path]) -> None:
    from plait.models import ScriptedChatModel

    path = write("agent.toml", '[agent]\nmodel = "scripted:x"\nsystem_prompt = "File."\n')
    model = ScriptedChatModel(["From the override."])
    agent = load_agent(path, model=model, system_prompt="Override.")
    assert agent.invoke("hi").text == "From the override."
    assert model.requests[0].system_prompt == "Override."


def test_response_format_class(write: Callable[[str, str], Path]) -> None:
    write(
        "formats.py",
        "import attrs\n\n@attrs.frozen\nclass Answer:\n    city: str\n    celsius: int\n",
    )
    path = write(
        "agent.toml",
        '[agent]\nmodel = "scripted:x"\nresponse_format = "formats:Answer"\n'
        'model_settings = { responses = [\'{"city": "Paris", "celsius": 21}\'] }\n',
    )
    result = load_agent(path).invoke("Weather?")
    assert (result.structured_response.city, result.structured_response.celsius) == ("Paris", 21)


@pytest.mark.skipif(
    not any(ep.name == "hello" for ep in entry_points(group="plait.middleware")),
    reason="needs the plait-hello test plugin",
)
def test_middleware_tables_are_enabled_by_name_with_options(
    write: Callable[[str, str], Path],
) -> None:
    path = write(
        "agent.toml",
        '[agent]\nmodel = "scripted:x"\nsystem_prompt = "Help."\n'
        'model_settings = { responses = ["ok"] }\n'
        '[[middleware]]\nuse = "hello"\ngreeting = "Bonjour"\n',
    )
    agent = load_agent(path)
    result = agent.invoke("hi")
    assert agent.model.requests[0].system_prompt == "Bonjour! Help."
    assert result.state["hello_calls"] == 1


def test_agent_level_errors_are_prefixed_with_the_file(write: Callable[[str, str], Path]) -> None:
    write("dupe_tools.py", TOOLS)
    path = write(
        "agent.toml",
        '[agent]\nmodel = "scripted:x"\ntools = ["dupe_tools:lookup", "dupe_tools:lookup"]\n',
    )
    with pytest.raises(AgentFileError, match=r"agent\.toml: two tools are named 'lookup'"):
        load_agent(path)


def test_a_scripted_response_can_repeat(write: Callable[[str, str], Path]) -> None:
    path = write(
        "agent.toml",
        '[agent]\nmodel = "scripted:x"\ncheckpointer = "memory"\n'
        '[[agent.model_settings.responses]]\ntext = "again"\nrepeat = 3\n',
    )
    agent = load_agent(path)
    for _ in range(3):
        assert agent.invoke("hi", thread_id="t").text == "again"
    with pytest.raises(Exception, match="has 3 response"):
        agent.invoke("hi", thread_id="t")


COUNTING = """
import attrs
import plait

BUILT = []


@attrs.frozen
class Counting(plait.Middleware):
    label: str = "x"

    def __attrs_post_init__(self) -> None:
        BUILT.append(self.label)

    def after_model(self, state):
        return None
"""


def test_each_middleware_table_is_built_once(
    write: Callable[[str, str], Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys
    from importlib.metadata import EntryPoint

    from plait import _entrypoints

    write("counting_mw.py", COUNTING)
    real = _entrypoints.available
    counting = EntryPoint("counting", "counting_mw:Counting", "plait.middleware")
    monkeypatch.setattr(
        _entrypoints,
        "available",
        lambda group: (
            {**real(group), "counting": counting} if group == "plait.middleware" else real(group)
        ),
    )
    monkeypatch.delitem(sys.modules, "counting_mw", raising=False)
    path = write(
        "agent.toml",
        '[agent]\nmodel = "scripted:x"\nmodel_settings = { responses = ["ok"] }\n'
        '[[middleware]]\nuse = "counting"\nlabel = "a"\n'
        '[[middleware]]\nuse = "counting"\nlabel = "b"\n',
    )
    spec = read_agent_file(path)
    built = sys.modules["counting_mw"].BUILT
    assert built == ["a", "b"]
    agent = spec.build()
    assert built == ["a", "b"]  # the agent got the instances the file check built
    assert agent.compiled.registry.names[-2:] == ["counting", "counting#2"]
    assert agent.invoke("hi").messages[-1].text == "ok"
    # a second agent from the same spec gets middleware of its own
    second = spec.build()
    assert built == ["a", "b", "a", "b"]
    assert not set(map(id, second.middleware)) & set(map(id, agent.middleware))
