"""``grep_search`` matches a pattern whose backtracking is bounded with Python's ``re`` and
any other under the ``regex`` package's timeout: the two must find the same lines for every
pattern given to ``re`` (flags, Unicode classes, word boundaries, anchors, case folding),
and a pattern that can backtrack without end must still reach the timeout, and stop."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest
import regex
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import plait
from plait.backends import BackendError
from plait.testing import ai, call, scripted, tool_answers
from plait_anthropic._pattern import _BUDGET, SearchPattern, _alike
from plait_anthropic.file_search import AnthropicFileSearchMiddleware

# characters where engines could part: case folding (sharp s, long s, the Kelvin sign,
# dotted and dotless i, the three sigmas, micro, a titlecase digraph, the fi ligature, the
# combining iota), digits and spaces outside ASCII, letters and marks of other scripts
TRICKY = (
    "aAbBzZ019 _-.\u00e9\t\u00df\u017f\u212a\u0130\u0131\u03a3\u03c3\u03c2\u00b5\u01c5"
    "\ufb01\u0345\u0663\u00a0\u2003\u200b\u0436\u0416\ud55c\u5b57\u0301"
)
LINE_ENDS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
ASCII = st.characters(max_codepoint=127, exclude_characters=LINE_ENDS)
ALPHABET = (
    ASCII
    | st.sampled_from(TRICKY)
    | st.characters(exclude_categories=("Cs",), exclude_characters=LINE_ENDS)
)
"""What a line may hold: any character but a line end (``text_lines`` splits on those)."""

CLASSES = [".", r"\w", r"\W", r"\d", r"\D", r"\s", r"\S"]
ANCHORS = ["^", "$", r"\b", r"\B", r"\A", r"\Z"]
QUANTIFIERS = ["", "", "*", "+", "?", "*?", "+?", "??", "{2}", "{1,3}", "{2,}", "{,2}"]
FLAGS = ["", "", "(?i)", "(?m)", "(?s)", "(?a)", "(?ia)", "(?ims)"]

literal = st.sampled_from(TRICKY).map(regex.escape)
member = literal | st.sampled_from(
    [r"\w", r"\d", r"\s", r"\W", "a-z", "0-9", "A-Z", "\u03b1-\u03c9"]
)
char_set = st.builds(
    lambda negate, items: "[" + ("^" if negate else "") + "".join(items) + "]",
    st.booleans(),
    st.lists(member, min_size=1, max_size=3),
    # not [^\w\W]: it matches no character, as re finds, but every one for the regex
    # package (its bug; with (?i) it fails to compile): there re's answer is the right one
).filter(lambda s: not (s.startswith("[^") and r"\w" in s and r"\W" in s))
one_char = literal | st.sampled_from(CLASSES) | char_set
quantified = st.builds(str.__add__, one_char, st.sampled_from(QUANTIFIERS))


def _group(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    alternation = st.lists(inner, min_size=1, max_size=3).map("|".join)
    return st.builds(
        lambda opening, body, count: f"{opening}{body}){count}",
        st.sampled_from(["(", "(?:", "(?=", "(?!"]),
        alternation,
        st.sampled_from(["", "", "{2}"]),
    )


sequence = st.recursive(
    st.lists(quantified | st.sampled_from(ANCHORS), min_size=1, max_size=3).map("".join),
    lambda inner: st.lists(inner | _group(inner), min_size=1, max_size=3).map("".join),
    max_leaves=6,
)
safe_pattern = st.builds(
    lambda flags, parts: flags + "|".join(parts),
    st.sampled_from(FLAGS),
    st.lists(sequence, min_size=1, max_size=2),
)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    pattern=safe_pattern,
    lines=st.lists(st.text(ASCII, max_size=24) | st.text(ALPHABET, max_size=24), max_size=8),
)
def test_re_finds_what_regex_finds_for_every_pattern_it_is_given(
    pattern: str, lines: list[str]
) -> None:
    try:
        found = SearchPattern(pattern, 60.0)
    except BackendError:  # the regex package's own bug: (?i)[^\w\W] fails to compile
        assume(False)
        raise
    assume(found.work is not None)  # a long enough chain of quantifiers goes to regex
    try:
        bounded = regex.compile(pattern)
    except AttributeError:  # the regex package's own bug: (?i)[^\w\W] fails to compile
        assume(False)
    plain = found._re  # the compiled pattern the search runs
    for line in lines:
        if not _alike(line):  # such a line is matched by regex: checked below
            continue
        ours, theirs = plain.search(line), bounded.search(line)
        assert (ours and ours.span()) == (theirs and theirs.span()), (pattern, line)
    expected = [(n, line) for n, line in enumerate(lines, 1) if bounded.search(line)]
    assert found.matching_lines(lines) == expected


@pytest.mark.parametrize(
    "pattern",
    [r"def \w+\(", "TODO", "error|warning", r"^\s*return\b", r"(?i)\bimport\s+\w+", r"\d{1,3}"],
)
def test_common_patterns_are_matched_by_re(pattern: str) -> None:
    assert SearchPattern(pattern, 1.0).work is not None


CATASTROPHIC = [
    # (pattern, a line it backtracks on for hours without a limit)
    ("(a+)+$", "a" * 5000 + "b"),
    ("(a|a)*$", "a" * 5000 + "b"),
    ("(a|aa)*$", "a" * 5000 + "b"),
    (r"(\w+\s?)*$", "word " * 1000 + "!"),
    ("(x+x+)+y", "x" * 5000),
    (r"(\w|\d)+$", "1" * 5000 + "!"),
]


@pytest.mark.parametrize(
    "pattern",
    [
        *(p for p, _ in CATASTROPHIC),
        r"(a*)*\1b",
        r"(a)\1*",
        r"(a)?(?(1)b|c)",
        "(.*a){20}",
        r"(ab)+c",
    ],
)
def test_a_pattern_without_a_polynomial_bound_is_never_given_to_re(pattern: str) -> None:
    # nested quantifiers, quantified alternatives and groups, backreferences, conditionals
    assert SearchPattern(pattern, 1.0).work is None


@pytest.mark.parametrize(("pattern", "line"), CATASTROPHIC, ids=[p for p, _ in CATASTROPHIC])
def test_a_pattern_that_can_backtrack_without_end_is_stopped_by_the_timeout(
    pattern: str, line: str, tmp_path: Path
) -> None:
    (tmp_path / "ok.txt").write_text("fine\n")
    (tmp_path / "slow.txt").write_text("x\n" + line + "\n")
    agent = plait.create_agent(
        scripted(ai("", call("grep_search", "g", pattern=pattern)), "done"),
        middleware=[AnthropicFileSearchMiddleware(backend=f"disk:{tmp_path}", timeout=0.5)],
    )
    outcome: list[Any] = []
    worker = threading.Thread(target=lambda: outcome.append(agent.invoke("go")), daemon=True)
    began = time.monotonic()
    worker.start()
    worker.join(60)  # generous: the bound is 0.5 s, without it each takes hours
    assert not worker.is_alive(), f"grep_search did not stop {pattern!r}"
    assert time.monotonic() - began < 60
    got = tool_answers(outcome[0].messages)["g"]
    assert got.status == "error"
    assert got.content == (
        f"Error: the pattern {pattern!r} took longer than 0.5 s (stopped on /slow.txt line 2); "
        "try a simpler pattern"
    )


def test_a_bounded_pattern_on_a_line_too_long_for_re_is_stopped_by_the_timeout(
    tmp_path: Path,
) -> None:
    # four quantifiers in a row: on a 5000-character line, ~5000**5 steps for re, which
    # cannot be stopped; such a line goes to regex and its timeout
    pattern = r"\w*\w*\w*\w*!"
    assert SearchPattern(pattern, 1.0).work is not None
    (tmp_path / "long.txt").write_text("short!\n" + "a" * 5000 + " !\n")
    agent = plait.create_agent(
        scripted(ai("", call("grep_search", "g", pattern=pattern)), "done"),
        middleware=[AnthropicFileSearchMiddleware(backend=f"disk:{tmp_path}", timeout=0.5)],
    )
    began = time.monotonic()
    got = tool_answers(agent.invoke("go").messages)["g"]
    assert time.monotonic() - began < 60  # generous: without the timeout, years
    assert got.content == (
        f"Error: the pattern {pattern!r} took longer than 0.5 s (stopped on /long.txt line 2); "
        "try a simpler pattern"
    )


def test_many_files_a_bounded_pattern_is_slow_on_are_stopped_between_batches(
    tmp_path: Path,
) -> None:
    # each line alone is quick for re (two quantifiers in a row on 140 characters, ~1 ms),
    # short enough to be given to re, but all of them together outlast the limit: re is
    # stopped between batches of lines
    pattern = r"\w*\w*!"
    work = SearchPattern(pattern, 1.0).work
    assert work is not None and work.on_line(140) <= _BUDGET
    for n in range(4):
        (tmp_path / f"f{n}.txt").write_text(("a" * 140 + "\n") * 400)
    agent = plait.create_agent(
        scripted(ai("", call("grep_search", "g", pattern=pattern)), "done"),
        middleware=[AnthropicFileSearchMiddleware(backend=f"disk:{tmp_path}", timeout=0.2)],
    )
    began = time.monotonic()
    got = tool_answers(agent.invoke("go").messages)["g"]
    assert time.monotonic() - began < 60  # generous: all of it takes ~2 s
    assert got.status == "error"
    assert got.content.startswith(f"Error: the pattern {pattern!r} took longer than 0.2 s")


def test_lines_and_patterns_the_engines_read_differently_are_found_as_regex_finds_them() -> None:
    # re's \w takes no combining mark, regex's does; re folds the dotted capital I to I
    # under (?i), regex does not: such lines and patterns keep regex's answer
    mark = SearchPattern(r"e\w", 1.0)
    assert mark.work is not None  # the pattern is re's; the line beyond ASCII is not
    assert mark.matching_lines(["e\u0301", "ex", "e."]) == [(1, "e\u0301"), (2, "ex")]
    folded = SearchPattern("(?i)\u0130", 1.0)
    assert folded.work is None
    assert folded.matching_lines(["I", "i\u0307", "\u0130"]) == [(2, "i\u0307"), (3, "\u0130")]
