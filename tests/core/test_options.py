"""``plait.options``: middleware options structured strictly, with errors naming plugin and path."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Literal

import attrs
import pytest

import plait
from plait.errors import ConfigError, FieldError
from plait.models import ChatModel, ScriptedChatModel
from plait.options import OptionInfo, check_tool_names, describe_options, structure_options
from plait.retry import RetryPolicy
from plait.types import AgentConfig

BARE = (
    "a bare id whose provider is inferred (gpt-*, o1*, o3*, o4* for openai, claude-* for "
    "anthropic, gemini-* for google)"
)


@attrs.frozen
class Edit:
    trigger_tokens: int = attrs.field(default=100, validator=attrs.validators.ge(1))
    placeholder: str = "[cleared]"


def shout(text: str) -> list[str]:
    return [text.upper()]


@attrs.frozen
class LimitMiddleware(plait.Middleware):
    """A middleware with one option of each kind the converter must handle.

    Attributes:
        thread_limit: Calls allowed per thread.
    """

    tool_name: str
    """The tool to limit."""
    run_limit: int = attrs.field(default=3, validator=attrs.validators.ge(0))
    thread_limit: int | None = None
    ratio: float = attrs.field(default=0.5, metadata={"help": "A fraction of the window."})
    exclude: list[str] = attrs.field(factory=list)
    mode: Literal["end", "error"] = "end"
    edits: tuple[Edit, ...] = ()
    model: str | ChatModel | None = None
    on_text: Callable[[str], str] | None = None
    retry_on: tuple[type[Exception], ...] = (Exception,)
    matcher: re.Pattern[str] | str | Callable[[str], list[str]] | None = None
    pattern: re.Pattern[str] | None = None

    def __attrs_post_init__(self) -> None:
        if self.ratio > 1:
            raise ValueError("ratio must be at most 1")
        if self.thread_limit is not None and self.thread_limit < self.run_limit:
            raise ValueError("thread_limit cannot be below run_limit")
        if self.mode == "error" and self.tool_name == "*":
            raise ConfigError("mode 'error' needs a tool_name")


def build(**options: Any) -> LimitMiddleware:
    return structure_options(LimitMiddleware, {"tool_name": "search", **options}, plugin="limit")


def error_of(**options: Any) -> str:
    with pytest.raises(ConfigError) as info:
        build(**options)
    return str(info.value)


# --------------------------------------------------------------------------- structuring


def test_valid_options_build_the_middleware() -> None:
    mw = build(run_limit=2, exclude=["a"], mode="error", edits=[{"trigger_tokens": 5}], ratio=1)
    assert mw == LimitMiddleware(
        "search", run_limit=2, exclude=["a"], mode="error", edits=(Edit(5),), ratio=1.0
    )
    assert isinstance(mw.ratio, float)


def test_options_build_what_the_converter_builds_field_by_field() -> None:
    """structure_options skips generating the converter's function for a class when it can
    build the same instance without it: every kind of option, compared with the converter's
    own result value by value and type by type."""
    from plait import _convert

    options: dict[str, Any] = {
        "tool_name": "search",
        "run_limit": 2,
        "thread_limit": 4,
        "ratio": 1,
        "exclude": ("a", "b"),
        "mode": "error",
        "edits": [{"trigger_tokens": 5}, Edit(6)],
        "model": "openai:gpt-4o",
        "on_text": "textwrap:dedent",
        "retry_on": ["builtins:TimeoutError", KeyError],
        "matcher": shout,
        "pattern": r"\d+",
    }
    built = structure_options(LimitMiddleware, options, plugin="limit")
    converted = _convert.structure(dict(options), LimitMiddleware)
    assert built == converted
    for field in attrs.fields(LimitMiddleware):
        assert type(getattr(built, field.name)) is type(getattr(converted, field.name))
    assert isinstance(built.ratio, float)
    assert built.exclude == ["a", "b"] and built.edits == (Edit(5), Edit(6))


@pytest.mark.parametrize("value", ["two", 1.7, True, None, [3]])
def test_an_int_option_takes_only_ints(value: Any) -> None:
    text = error_of(run_limit=value)
    assert text == f"plugin 'limit': option 'run_limit': expected an int, got {value!r}"


def test_optional_int_names_none_as_allowed() -> None:
    assert error_of(thread_limit="two") == (
        "plugin 'limit': option 'thread_limit': expected an int or None, got 'two'"
    )


def test_a_string_is_not_a_list() -> None:
    assert error_of(exclude="search") == (
        "plugin 'limit': option 'exclude': expected a list, got 'search'"
    )
    assert error_of(exclude=["a", 1]) == (
        "plugin 'limit': option 'exclude[1]': expected a string, got 1"
    )


def test_a_float_is_not_a_string() -> None:
    assert "option 'tool_name': expected a string, got 1.5" in error_of(tool_name=1.5)


def test_a_literal_option_lists_its_choices() -> None:
    assert error_of(mode="stop") == (
        "plugin 'limit': option 'mode': expected one of 'end', 'error', got 'stop'"
    )


def test_unknown_option_lists_the_valid_ones() -> None:
    text = error_of(run_limt=2)
    assert text.startswith(
        "plugin 'limit': unknown option 'run_limt' (did you mean 'run_limit'?); valid options: "
    )
    assert "tool_name, run_limit, thread_limit, ratio, exclude, mode" in text


def test_missing_required_option_says_so() -> None:
    with pytest.raises(ConfigError) as info:
        structure_options(LimitMiddleware, {}, plugin="limit")
    assert str(info.value) == "plugin 'limit': missing required option 'tool_name'"


def test_options_must_be_a_mapping() -> None:
    with pytest.raises(ConfigError) as info:
        structure_options(LimitMiddleware, ["tool_name"], plugin="limit")  # type: ignore[arg-type]
    assert str(info.value) == (
        "plugin 'limit': options: expected a mapping of option names to values, got ['tool_name']"
    )
    with pytest.raises(ConfigError) as info:
        plait.create_agent(plait.testing.scripted("ok"), middleware=[("tool_call_limit", 3)])
    assert str(info.value) == (
        "plugin 'tool_call_limit': options: expected a mapping of option names to values, got 3"
    )


def test_every_problem_is_reported_at_once() -> None:
    text = error_of(run_limit="x", mode="y", extra=1)
    assert "option 'run_limit': expected an int, got 'x'" in text
    assert "option 'mode': expected one of 'end', 'error', got 'y'" in text
    assert "unknown option 'extra'" in text
    assert text.count("plugin 'limit'") == 1


# --------------------------------------------------------------------------- pass-through


def test_instances_pass_through_a_union() -> None:
    model = ScriptedChatModel(["hi"])
    assert build(model=model).model is model
    assert build(model="openai:gpt-4.1").model == "openai:gpt-4.1"
    text = error_of(model=3)
    assert text == ("plugin 'limit': option 'model': expected a string, a ChatModel or None, got 3")


def test_nested_attrs_instances_pass_through() -> None:
    edit = Edit(7)
    assert build(edits=[edit]).edits[0] is edit


def test_callables_pass_through_and_module_attr_strings_import() -> None:
    def upper(text: str) -> str:
        return text.upper()

    assert build(on_text=upper).on_text is upper
    assert build(on_text="textwrap:dedent").on_text.__name__ == "dedent"  # type: ignore[union-attr]
    text = error_of(on_text="no_such_module_xyz:f")
    assert text.startswith("plugin 'limit': option 'on_text': expected a callable")
    assert "cannot import 'no_such_module_xyz:f': no module named 'no_such_module_xyz'" in text
    assert "module 'textwrap' has no attribute 'nope'" in error_of(on_text="textwrap:nope")
    assert "expected a callable" in error_of(on_text=5)


@attrs.frozen
class Hooks(plait.Middleware):
    check: Callable[[int], bool] | Callable[[str, int], bool] | None = None


def test_a_union_says_each_alternative_once() -> None:
    # two callable members describe to the same words: said once, not "a callable or a
    # 'module:attr' string, a callable or a 'module:attr' string or None"
    with pytest.raises(ConfigError) as info:
        structure_options(Hooks, {"check": 3}, plugin="hooks")
    assert str(info.value) == (
        "plugin 'hooks': option 'check': expected a callable, a 'module:attr' string or None, got 3"
    )


def test_exception_types_take_classes_or_module_attr_strings() -> None:
    mw = build(retry_on=["builtins:TimeoutError", KeyError])
    assert mw.retry_on == (TimeoutError, KeyError)
    assert error_of(retry_on=["builtins:len"]).startswith(
        "plugin 'limit': option 'retry_on[0]': expected a subclass of Exception"
    )
    assert "option 'retry_on[0]'" in error_of(retry_on=[int])
    assert "option 'retry_on': expected a list" in error_of(retry_on="builtins:ValueError")


def test_pattern_union_keeps_what_already_fits() -> None:
    compiled = re.compile(r"\d+")
    assert build(matcher=compiled).matcher is compiled
    assert build(matcher=r"\d+").matcher == r"\d+"  # str is a member: it stays a str
    assert build(matcher=shout).matcher is shout
    # a string already fits the str member, so it is not taken as a "module:attr" path
    assert build(matcher=f"{__name__}:shout").matcher == f"{__name__}:shout"


def test_pattern_option_compiles_strings_and_reports_bad_regexes() -> None:
    assert build(pattern=r"a+").pattern == re.compile("a+")
    text = error_of(pattern="(")
    assert text.startswith("plugin 'limit': option 'pattern': expected a regular expression")
    assert "invalid regex" in text


# --------------------------------------------------------------------------- validators


def test_attrs_validator_failure_carries_the_option_path() -> None:
    assert error_of(run_limit=-1) == (
        "plugin 'limit': option 'run_limit': 'run_limit' must be >= 0: -1"
    )


def test_nested_validator_failure_carries_the_full_path() -> None:
    assert error_of(edits=[{}, {"trigger_tokens": 0}]) == (
        "plugin 'limit': option 'edits[1].trigger_tokens': 'trigger_tokens' must be >= 1: 0"
    )


def test_post_init_error_naming_one_option_gets_its_path() -> None:
    assert error_of(ratio=2) == "plugin 'limit': option 'ratio': ratio must be at most 1"


def test_post_init_error_naming_several_options_stays_at_the_root() -> None:
    assert error_of(thread_limit=1, run_limit=2) == (
        "plugin 'limit': thread_limit cannot be below run_limit"
    )


def test_config_error_from_the_class_names_the_plugin() -> None:
    text = error_of(tool_name="*", mode="error")
    assert text.startswith("plugin 'limit': ")
    assert "mode 'error' needs a tool_name" in text


# --------------------------------------------------------------------------- describe


def test_describe_options_for_plait_plugins() -> None:
    infos = {info.name: info for info in describe_options(LimitMiddleware)}
    assert list(infos)[:3] == ["tool_name", "run_limit", "thread_limit"]
    assert infos["tool_name"] == OptionInfo(
        "tool_name", "str", None, required=True, help="The tool to limit."
    )
    assert infos["run_limit"] == OptionInfo("run_limit", "int", "3", required=False, help=None)
    assert infos["thread_limit"].type == "int | None"
    assert infos["thread_limit"].help == "Calls allowed per thread."
    assert infos["ratio"].help == "A fraction of the window."
    assert infos["exclude"].default == "[]"
    assert infos["mode"].type == "Literal['end', 'error']"
    assert infos["model"].type == "str | ChatModel | None"
    assert infos["on_text"].type == "Callable[[str], str] | None"
    assert infos["retry_on"].type == "tuple[type[Exception], ...]"
    assert infos["retry_on"].default == "(<class 'Exception'>,)"
    assert infos["matcher"].type == "Pattern[str] | str | Callable[[str], list[str]] | None"


def test_describe_options_of_a_non_attrs_class_is_empty() -> None:
    assert describe_options(dict) == []


def test_a_plugin_with_unusable_annotations_gets_a_config_error() -> None:
    @attrs.frozen
    class Broken:
        later: NotDefinedAnywhere  # type: ignore[name-defined]  # noqa: F821

    with pytest.raises(ConfigError, match=r"^plugin 'broken': the option types of .*Broken"):
        structure_options(Broken, {"later": 1}, plugin="broken")


def _config_with_tools(*names: str) -> AgentConfig:
    def make(name: str) -> plait.Tool:
        return plait.Tool(name=name, description="", parameters={}, func=lambda: "")

    tools = tuple(make(name) for name in names)
    return AgentConfig(ScriptedChatModel([]), tools, None, (), None, None)


def test_check_tool_names_accepts_the_agents_tools() -> None:
    check_tool_names(["search"], _config_with_tools("fetch", "search"), plugin="p", option="o")


def test_check_tool_names_names_plugin_option_and_the_closest_tool() -> None:
    with pytest.raises(ConfigError) as raised:
        check_tool_names(
            ["serch", "fax", "serch"],
            _config_with_tools("fetch", "search"),
            plugin="tool_retry",
            option="tools",
        )
    assert str(raised.value) == (
        "plugin 'tool_retry': option 'tools' names tools the agent does not have: "
        "'serch' (did you mean 'search'?), 'fax'; the agent's tools are: fetch, search"
    )


def test_check_tool_names_on_an_agent_without_tools() -> None:
    with pytest.raises(ConfigError, match=r"the agent's tools are: none$"):
        check_tool_names(["x"], _config_with_tools(), plugin="p", option="o")


def test_chat_model_takes_ids_and_models_and_words_the_rest_like_every_option() -> None:
    from plait.options import chat_model

    @attrs.frozen
    class Picker:
        model: str | ChatModel | None = attrs.field(
            default=None, validator=chat_model(optional=True)
        )
        judge: str | ChatModel = attrs.field(default="scripted:x", validator=chat_model())

    assert Picker("openai:gpt-4.1").model == "openai:gpt-4.1"
    assert isinstance(Picker(ScriptedChatModel([])).model, ChatModel)
    with pytest.raises(ValueError) as info:
        Picker("llama3")
    assert (
        str(info.value)
        == f"model: expected a 'provider:model' id, {BARE}, a ChatModel or None, got 'llama3'"
    )
    with pytest.raises(ValueError) as info:
        Picker(judge=None)  # type: ignore[arg-type]
    assert (
        str(info.value) == f"judge: expected a 'provider:model' id, {BARE} or a ChatModel, got None"
    )
    with pytest.raises(ConfigError) as error:
        structure_options(Picker, {"model": "llama3"}, plugin="picker")
    assert str(error.value) == (
        f"plugin 'picker': option 'model': expected a 'provider:model' id, {BARE}, a ChatModel "
        "or None, got 'llama3'"
    )


def _no_negative_size(_: Any, attribute: attrs.Attribute[Any], value: int) -> None:
    if value < 0:
        raise TypeError("a size below zero cannot be laid out")


@attrs.frozen
class Picky(plait.Middleware):
    name: str
    size: int = attrs.field(default=1, validator=_no_negative_size)


def test_a_middleware_called_wrongly_reads_like_a_wrong_option() -> None:
    """The argument check of an attrs middleware's ``__init__``: each wrong call says what
    is wrong in an option's words; a ``TypeError`` of a call whose arguments are right (a
    validator's) passes unchanged."""
    with pytest.raises(ConfigError) as missing:
        Picky()  # type: ignore[call-arg]
    assert str(missing.value) == "Picky: missing required option 'name'"
    with pytest.raises(ConfigError) as misspelt:
        Picky(name="a", sise=2)  # type: ignore[call-arg]
    assert str(misspelt.value) == (
        "Picky: unknown option 'sise' (did you mean 'size'?); valid options: name, size"
    )
    with pytest.raises(ConfigError) as too_many:
        Picky("a", 2, 3)  # type: ignore[call-arg]
    assert str(too_many.value).startswith(
        "Picky: arguments: expected at most 2 positional argument(s), the rest by name, got"
    )
    with pytest.raises(TypeError, match=r"^a size below zero cannot be laid out$"):
        Picky("a", size=-1)
    assert Picky("a", size=2) == Picky(name="a", size=2)
    assert Picky.__init__.__qualname__ == "Picky.__init__"


@attrs.frozen(kw_only=True)
class PolicyMiddleware(RetryPolicy, plait.Middleware):
    """Options declared in another module (``on_failure: OnFailure`` names an alias this
    module never imports) and one of its own."""

    mode: Literal["end", "error"] = "end"


def test_given_options_are_typed_where_their_class_declares_them() -> None:
    """Building from options evaluates the annotation of each option given, in the
    module of the class that declares it, as the converter's full path does."""
    from plait import _convert

    options: dict[str, Any] = {"on_failure": "error", "max_retries": 1, "mode": "error"}
    built = structure_options(PolicyMiddleware, options, plugin="policy")
    assert built == _convert.structure(dict(options), PolicyMiddleware)
    assert (built.on_failure, built.max_retries, built.mode) == ("error", 1, "error")
    assert error_of_policy(on_failure="stop").startswith(
        "plugin 'policy': option 'on_failure': expected one of 'continue', 'error'"
    )


def error_of_policy(**options: Any) -> str:
    with pytest.raises(ConfigError) as info:
        structure_options(PolicyMiddleware, options, plugin="policy")
    return str(info.value)


@attrs.frozen
class Switches(plait.Middleware):
    mode: Literal["end", "error"] = "end"
    verbose: bool = False
    level: Literal[1, 2] | None = None
    strategy: str = attrs.field(default="a", validator=attrs.validators.in_(("a", "b")))
    flag: bool = attrs.field(default=False, validator=attrs.validators.instance_of(bool))


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"mode": "loud"}, "mode: expected one of 'end', 'error', got 'loud'"),
        ({"verbose": "yes"}, "verbose: expected a bool, got 'yes'"),
        ({"level": True}, "level: expected one of 1, 2 or None, got True"),
        ({"strategy": "c"}, "strategy: expected one of 'a', 'b', got 'c'"),
        ({"flag": 1}, "flag: expected a bool, got 1"),
    ],
)
def test_the_class_checks_closed_options_as_an_agent_file_does(
    options: dict[str, Any], message: str
) -> None:
    """``Cls(option=...)`` refuses what is outside a Literal or not a bool, in the words
    of the agent file's check, instead of taking it silently (or with attrs' tuple)."""
    with pytest.raises(FieldError) as info:
        Switches(**options)
    assert str(info.value) == message
    assert Switches(mode="error", verbose=True, level=2, strategy="b", flag=True).level == 2


Mode = Literal["end", "error"]


@attrs.frozen
class Annotations(plait.Middleware):
    """Annotations ``field_type`` reads by name and ones it leaves to ``get_type_hints``."""

    Inner = Literal["x", "y"]  # a name only the class namespace has
    Mode = Literal["shadowed"]  # the module's Mode is looked up first, as eval does

    count: int = 0
    label: str | None = None
    nothing: None = None
    mode: Mode = "end"
    maybe_mode: None | Mode = None  # noqa: RUF036  # None first, as some write it
    inner: Inner = "x"
    sizes: list[int] = attrs.Factory(list)
    level: Literal[1, 2] = 1
    pattern: re.Pattern[str] | None = None
    shadowed: Edit | None = None


def test_field_types_are_what_get_type_hints_gives() -> None:
    """``field_type`` reads a plain class, ``None`` or ``Literal`` named by an annotation
    without compiling it; each field's type is still exactly what Python's own
    evaluation of the class's annotations gives."""
    import typing

    from plait import _convert

    expected = typing.get_type_hints(Annotations, include_extras=True)
    fields = attrs.fields(Annotations)
    got = {field.name: _convert.field_type(Annotations, field) for field in fields}
    assert got == expected
    assert got["maybe_mode"] == Mode | None
    assert got["nothing"] is type(None)
