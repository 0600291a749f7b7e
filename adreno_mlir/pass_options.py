"""Pass options: what a pass accepts, checked once, and errors that say so.

A pass declares its options as dataclass fields (xDSL's `ModulePass` convention:
`select-kernel-config{conv-co-block=4}` sets `conv_co_block`). What values are allowed
beyond the field's type is declared with `option(...)`:

    conv_co_block: int = option(8, choices=(1, 2, 4, 8))
    target_items: int = option(64, minimum=1)
    target: str = option("adreno-740", check=check_target, values="a target profile: ...")

and a pass whose class derives from `CheckedPass` checks them when it is made, from a
pipeline string or in Python. Pipeline strings are read by `parse_passes` (adreno-opt's
`-p`, `compile(pipeline=...)`, `adreno_mlir.pipeline.run_pipeline`), which checks the
option names, the presence and the types of values before xDSL builds the passes. Every
error is a one-line `PassOptionError` (a `CompileError`) naming the pass, the option and
what it accepts: its type and range or choices, or the pass's options for an unknown one,
e.g.

    select-kernel-config: option conv-co-block must be an integer, one of 1, 2, 4, 8; got 0
    graph-fuse: unknown option 'nope'; graph-fuse has no options
"""

from __future__ import annotations

import dataclasses
import difflib
import re
import types
import typing
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.utils.arg_spec import ArgSpec, parse_pipeline
from xdsl.utils.exceptions import ArgSpecParseError
from xdsl.utils.hints import isa

from adreno_mlir.errors import CompileError

OPTION_KEY = "adreno_mlir.option"
"""The dataclass field metadata key under which `option` keeps an `OptionSpec`."""


class PassOptionError(CompileError):
    """A pass pipeline or pass option that cannot be used (the message says which and why)."""


@dataclass(frozen=True)
class OptionSpec:
    """What values an option takes beyond its type."""

    choices: tuple[Any, ...] = ()
    """The allowed values (compared as text: `tile=2` and `tile="2"` are the same)."""
    minimum: int | None = None
    """The smallest allowed value (of each element, for a tuple)."""
    max_len: int | None = None
    """The most elements a tuple may have."""
    values: str | Callable[[], str] = ""
    """A description of the allowed values, replacing the generated one (or a function
    that returns it when a message needs it)."""
    check: Callable[[Any], None] | None = None
    """Raises ValueError for a value it refuses (e.g. an unknown target profile)."""


def option(default: Any, *, choices: tuple[Any, ...] = (), minimum: int | None = None,
           max_len: int | None = None, values: str | Callable[[], str] = "",
           check: Callable[[Any], None] | None = None) -> Any:
    """A pass option's dataclass field: its default and the values it accepts (the
    default is always accepted, e.g. fma's empty string)."""
    return dataclasses.field(default=default, metadata={
        OPTION_KEY: OptionSpec(tuple(choices), minimum, max_len, values, check)})


def check_target(name: Any) -> None:
    """`target` options: a registered profile, "auto", or "device-<OpenCL device name>"
    (which `get_profile` resolves when the pass runs, from the devices of this machine)."""
    from adreno_mlir.target import LIVE_PREFIX, get_profile

    if isinstance(name, str) and (name == "auto" or name.startswith(LIVE_PREFIX)):
        return
    get_profile(name)  # ValueError for an unknown name


def target_values() -> str:
    """What a `target` option accepts, in words (the profiles registered now)."""
    from adreno_mlir.target import LIVE_PREFIX, list_profiles

    return f"a target profile: {', '.join(list_profiles())}, auto or {LIVE_PREFIX}<OpenCL device name>"


def target_option(default: str = "adreno-740") -> Any:
    """The `target` option of a pass (a target profile, checked when the pass is made)."""
    return option(default, check=check_target, values=target_values)


_module_profiles: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
"""module -> {target option value: TargetProfile}: what each module's passes resolved
(weak: an entry goes with its module)."""


def target_profile(p: ModulePass, module: ModuleOp | None = None):
    """The `TargetProfile` of pass `p`'s `target` option, the one helper every pass with
    a `target=` option resolves it through; a PassOptionError naming the pass and the
    option if there is none.

    With `module` (the module the pass runs on), the name is resolved once per module:
    the passes of one pipeline that name the same target share one lookup (for `auto`
    one device query, for `device-<name>` one search of this machine's devices), and a
    pipeline string alone still says everything (nothing but the option's value decides
    the profile)."""
    from adreno_mlir.target import get_profile

    resolved = _module_profiles.setdefault(module, {}) if module is not None else {}
    profile = resolved.get(p.target)
    if profile is None:
        try:
            profile = get_profile(p.target)
        except ValueError as e:
            raise PassOptionError(f"{p.name}: option target: {e}") from None
        resolved[p.target] = profile
    return profile


# --------------------------------------------------------------------------- describing


def _option_name(field_name: str) -> str:
    return field_name.replace("_", "-")


def type_text(hint: Any) -> str:
    """An option type in words: "an integer", "true or false", ..."""
    if hint is bool:
        return "true or false"
    if hint is int:
        return "an integer"
    if hint is float:
        return "a number"
    if hint is str:
        return "a string"
    if hint is type(None):
        return "nothing"
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(type_text(a) for a in typing.get_args(hint))
    if origin is tuple:
        args = typing.get_args(hint)
        inner = args[0] if args else Any
        plural = {int: "integers", float: "numbers", str: "strings", bool: "booleans"}.get(inner, "values")
        return f"{plural} separated by commas"
    return getattr(hint, "__name__", str(hint))


def _shown(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return ",".join(_shown(v) for v in value)
    return str(value)


def allowed_values(hint: Any, spec: OptionSpec | None) -> str:
    """What an option of type `hint` accepts, in words (its type and range or choices)."""
    if spec is not None and spec.values:
        return spec.values() if callable(spec.values) else spec.values
    text = type_text(hint)
    if spec is None:
        return text
    if typing.get_origin(hint) is tuple:
        count = f"up to {spec.max_len} " if spec.max_len is not None else ""
        noun = text.split(" separated")[0]
        bound = f" >= {spec.minimum}" if spec.minimum is not None else ""
        return f"{count}{noun}{bound}, separated by commas"
    if spec.choices:
        return f"{text}, one of {', '.join(_shown(c) for c in spec.choices)}"
    if spec.minimum is not None:
        return f"{text} >= {spec.minimum}"
    return text


def _options(cls: type[ModulePass]) -> list[tuple[str, Any, OptionSpec | None]]:
    """(field name, type hint, spec) of every option of a pass class."""
    hints = typing.get_type_hints(cls)
    return [(f.name, hints.get(f.name, Any), f.metadata.get(OPTION_KEY))
            for f in dataclasses.fields(cls) if f.init and f.name != "name"]


def describe_options(cls: type[ModulePass]) -> str:
    """`its options: a (...), b (...)`, or `<pass> has no options`."""
    options = _options(cls)
    if not options:
        return f"{cls.name} has no options"
    return "its options: " + ", ".join(f"{_option_name(n)} ({allowed_values(h, s)})" for n, h, s in options)


# --------------------------------------------------------------------------- checking


def _type_ok(value: Any, hint: Any) -> bool:
    if isinstance(value, bool) and hint is not bool and bool not in typing.get_args(hint):
        return False  # true/false is not an integer option's value
    return isa(value, hint)


def _value_problem(value: Any, hint: Any, spec: OptionSpec | None, default: Any) -> bool:
    """Whether `value` is not one the option accepts."""
    if not _type_ok(value, hint):
        return True
    if spec is None or value == default:
        return False
    if spec.choices and str(value) not in {str(c) for c in spec.choices}:
        return True
    items = value if isinstance(value, tuple) else (value,)
    if spec.minimum is not None and any(isinstance(v, (int, float)) and v < spec.minimum for v in items):
        return True
    if spec.max_len is not None and isinstance(value, tuple) and len(value) > spec.max_len:
        return True
    if spec.check is not None:
        try:
            spec.check(value)
        except ValueError:
            return True
    return False


def _bad_value(pass_name: str, field_name: str, hint: Any, spec: OptionSpec | None, value: Any) -> PassOptionError:
    shown = repr(value) if isinstance(value, str) else _shown(value)
    return PassOptionError(f"{pass_name}: option {_option_name(field_name)} must be "
                           f"{allowed_values(hint, spec)}; got {shown}")


def check_options(p: ModulePass) -> None:
    """Raise a PassOptionError for the first option of pass `p` whose value it does not
    accept (`CheckedPass` calls this when the pass is made)."""
    defaults = {f.name: f.default for f in dataclasses.fields(p)}
    for name, hint, spec in _options(type(p)):
        value = getattr(p, name)
        if _value_problem(value, hint, spec, defaults.get(name)):
            raise _bad_value(p.name, name, hint, spec, value)


@dataclass(frozen=True)
class CheckedPass(ModulePass):
    """A pass whose options are checked against their declarations when it is made."""

    def __post_init__(self) -> None:
        check_options(self)


# --------------------------------------------------------------------------- parsing


def _convert(values: tuple[Any, ...], hint: Any) -> Any:
    """A parsed option value (always a tuple) as the field's type, as xDSL converts it;
    raises ValueError when it does not fit."""
    if len(values) == 1 and _type_ok(values[0], hint):
        return values[0]
    if _type_ok(values, hint):
        return values
    raise ValueError


def _check_spec(cls: type[ModulePass], spec: ArgSpec) -> None:
    """The option names, presence of values and types of `spec` for pass class `cls`."""
    options = {n: (h, s) for n, h, s in _options(cls)}
    for given, values in spec.parameters.items():
        name = given.replace("-", "_")
        if name not in options:
            close = difflib.get_close_matches(_option_name(name), [_option_name(n) for n in options], n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            raise PassOptionError(f"{cls.name}: unknown option '{given}'{hint}; {describe_options(cls)}")
        hint, opt = options[name]
        none_ok = type(None) in typing.get_args(hint)
        if not values and not none_ok and typing.get_origin(hint) is not tuple:
            raise PassOptionError(f"{cls.name}: option {_option_name(name)} needs a value: {_option_name(name)}=V "
                                  f"with V {allowed_values(hint, opt)}")
        if values:
            try:
                _convert(values, hint)
            except ValueError:
                shown = repr(values[0]) if len(values) == 1 and isinstance(values[0], str) else _shown(values)
                raise PassOptionError(f"{cls.name}: option {_option_name(name)} must be "
                                      f"{allowed_values(hint, opt)}; got {shown}") from None


def _syntax_error(spec: str, e: ArgSpecParseError,
                  available: Mapping[str, Callable[[], type[ModulePass]]]) -> PassOptionError:
    """xDSL's multi-line parse error as one line, with the pass and option at its column."""
    text = str(e)
    where = re.search(r"pass-pipeline:\d+:(\d+)", text)
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    reason = lines[-1] if lines else text
    if reason == "Unknown token":
        reason += ' (quote a value with other characters: overrides="/path/file.json")'
    if where is None:
        return PassOptionError(f"cannot parse pass pipeline {spec!r}: {reason}")
    column = int(where.group(1))
    context = ""
    # the pass (and option) whose text holds the column
    start = 0
    for entry in _top_level_entries(spec):
        begin = spec.find(entry, start)
        start = begin + len(entry)
        if not begin <= column - 1 <= begin + len(entry):
            continue
        name = entry.split("{", 1)[0].strip()
        cls = available[name]() if name in available else None
        if cls is None:
            break
        inner = spec[begin:column - 1]
        key = re.search(r"[{\s]([A-Za-z0-9_-]+)=[^{\s]*$", inner)
        options = {n: (h, s) for n, h, s in _options(cls)}
        if key and key.group(1).replace("-", "_") in options:
            h, s = options[key.group(1).replace("-", "_")]
            context = f" (column {column}, in option {key.group(1)} of {name}: {allowed_values(h, s)})"
        else:
            context = f" (column {column}, in {name}: {describe_options(cls)})"
        break
    return PassOptionError(f"cannot parse pass pipeline {spec!r}: {reason}{context or f' (column {column})'}")


def _top_level_entries(spec: str) -> list[str]:
    parts, depth, cur = [], 0, ""
    for ch in spec:
        depth += ch == "{"
        depth -= ch == "}"
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return parts


def parse_passes(available: Mapping[str, Callable[[], type[ModulePass]]], spec: str,
                 unknown_pass_hint: str = "") -> list[ModulePass]:
    """The passes of pipeline string `spec`, every name and option checked (see the
    module's docstring); `available` maps pass names to pass-class factories, as xDSL's
    `PassPipeline.parse_spec` takes them."""
    try:
        specs = list(parse_pipeline(spec))
    except ArgSpecParseError as e:  # a BaseException in xDSL
        raise _syntax_error(spec, e, available) from None
    passes = []
    for s in specs:
        if s.name not in available:
            close = difflib.get_close_matches(s.name, list(available), n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            raise PassOptionError(f"unknown pass '{s.name}'{hint}{unknown_pass_hint}")
        cls = available[s.name]()
        _check_spec(cls, s)
        try:
            passes.append(cls.from_pass_spec(s))
        except PassOptionError:
            raise
        except (ValueError, TypeError) as e:  # what xDSL's own checks still find
            raise PassOptionError(f"{s.name}: {e}; {describe_options(cls)}") from None
    return passes
