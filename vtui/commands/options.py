"""A command's options, declared once: a msgspec Struct whose fields carry their help, metavar,
choices and bounds (``opt``). The command line's argparse flags (``add_options``) and the MCP
tool's typed parameters (``tool_parameters``, with pydantic's ``Field``) are both generated from
it, so a name, default or help text cannot differ between `vtui NAME` and the MCP tool NAME.

A field is positional (``positional=True``), a ``--flag`` named after it (``min_pct`` →
``--min-pct``; ``bool``: a switch; ``list[str]``: repeatable), or hidden from argparse
(``cli=False``). ``mcp=False`` keeps a field off the tool (how the output is printed, the cache);
``mcp_default`` is the tool's own default where an agent's reply needs a tighter one.
"""

from __future__ import annotations

import argparse
import inspect
import types
import typing
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal, Union

import msgspec

_MISSING: Any = msgspec.NODEFAULT


class Options(msgspec.Struct, kw_only=True, frozen=True):
    """The base of every command's options: the fields of the loads (last in ``-h``)."""

    no_cache: Annotated[bool, msgspec.Meta(description="load from the file itself: neither read nor write the index cache",
                                           extra={"mcp": False, "late": True})] = False
    max_inflate: Annotated[float | None, msgspec.Meta(
        description="a .gz may inflate to RATIO x its size (default 200, at least 256 MiB; 0: no limit)",
        extra={"metavar": "RATIO", "mcp": False, "late": True})] = None


def opt(help: str, *, metavar: str | None = None, choices: Sequence[str] | None = None, positional: bool = False,
        cli: bool = True, mcp: bool = True, mcp_default: Any = _MISSING, mcp_help: str | None = None,
        mcp_required: bool = False, flag: str | None = None, several: bool = False, **bounds: float) -> msgspec.Meta:
    """A field's declaration: ``help`` for both (``mcp_help`` where the tool says it otherwise);
    ``several``: a list flag that takes several values at once; ``bounds`` (ge, le, gt) checked on
    the MCP side by pydantic (the command checks its own values, in its own words);
    ``mcp_required``: the tool must be given it (the command line gives it another way)."""
    extra: dict[str, Any] = {"positional": positional, "cli": cli, "mcp": mcp, "bounds": bounds, "several": several}
    if mcp_required:
        extra["mcp_default"] = _MISSING
    if metavar is not None:
        extra["metavar"] = metavar
    if choices is not None:
        extra["choices"] = tuple(choices)
    if mcp_default is not _MISSING:
        extra["mcp_default"] = mcp_default
    if mcp_help is not None:
        extra["mcp_help"] = mcp_help
    if flag is not None:
        extra["flag"] = flag
    return msgspec.Meta(description=help, extra=extra)


class Field(typing.NamedTuple):
    name: str
    type: Any  # the annotation without its Annotated metadata
    default: Any  # _MISSING: required
    help: str
    extra: Mapping[str, Any]


def fields(cls: type[Options]) -> list[Field]:
    """The Struct's fields with their declarations, in definition order."""
    hints = typing.get_type_hints(cls, include_extras=True)
    out = []
    for info in msgspec.structs.fields(cls):
        hint = hints[info.name]
        meta = next((m for m in getattr(hint, "__metadata__", ()) if isinstance(m, msgspec.Meta)), None)
        base = typing.get_args(hint)[0] if meta is not None else hint
        out.append(Field(info.name, base, info.default, (meta.description or "") if meta else "",
                         (meta.extra or {}) if meta else {}))
    return out


def _unoptional(tp: Any) -> Any:
    """``X | None`` → ``X``."""
    if typing.get_origin(tp) in (Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return tp


# ---- argparse ------------------------------------------------------------------------------------
def add_options(parser: argparse.ArgumentParser, cls: type[Options]) -> None:
    """One argparse argument per field the command line shows (positionals first, then flags,
    the loads' last), each ``dest`` the field's name."""
    shown = [f for f in fields(cls) if f.extra.get("cli", True)]
    ordered = ([f for f in shown if f.extra.get("positional")]
               + [f for f in shown if not f.extra.get("positional") and not f.extra.get("late")]
               + [f for f in shown if f.extra.get("late")])
    for f in ordered:
        base = _unoptional(f.type)
        kwargs: dict[str, Any] = {"help": f.help if f.help != "SUPPRESS" else argparse.SUPPRESS}
        if "metavar" in f.extra:
            kwargs["metavar"] = f.extra["metavar"]
        if "choices" in f.extra:
            kwargs["choices"] = f.extra["choices"]
        is_list = typing.get_origin(base) is list
        if f.extra.get("positional"):
            if is_list:
                kwargs["nargs"] = "+"
            parser.add_argument(f.name, **kwargs)
            continue
        flag = f.extra.get("flag") or "--" + f.name.replace("_", "-")
        if base is bool:
            parser.add_argument(flag, dest=f.name, action="store_true", **kwargs)
        elif is_list and f.extra.get("several"):  # --flag A B C
            parser.add_argument(flag, dest=f.name, nargs="+", **kwargs)
        elif is_list:  # --flag A --flag B
            parser.add_argument(flag, dest=f.name, action="append", default=[], **kwargs)
        else:
            if base in (int, float):
                kwargs["type"] = base
            parser.add_argument(flag, dest=f.name, default=None if f.default is _MISSING else f.default, **kwargs)


def from_namespace(cls: type[Options], ns: argparse.Namespace) -> Any:
    """The options Struct of the parsed command line (hidden fields: their defaults)."""
    return cls(**{f.name: getattr(ns, f.name) for f in fields(cls) if hasattr(ns, f.name)})


# ---- the MCP tool's parameters ------------------------------------------------------------------------
def tool_parameters(cls: type[Options]) -> list[inspect.Parameter]:
    """The fields an agent may set, as keyword parameters typed ``Annotated[T, Field(...)]`` (the
    SDK derives the input schema from them): same names, the field's default (or its
    ``mcp_default``), its help and bounds."""
    from pydantic import Field as PydanticField

    params = []
    for f in fields(cls):
        if not f.extra.get("mcp", True):
            continue
        default = f.extra.get("mcp_default", f.default)  # _MISSING: required
        text = f.extra.get("mcp_help", f.help).replace("%%", "%")  # argparse's escape, not the agent's
        field = PydanticField(description=text, **f.extra.get("bounds", {}))
        tp = f.type
        if "choices" in f.extra:  # an enum in the input schema, as argparse's choices
            tp = Literal.__getitem__(f.extra["choices"])
            tp = tp | None if f.type is not _unoptional(f.type) else tp
        params.append(inspect.Parameter(f.name, inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                        default=inspect.Parameter.empty if default is _MISSING else default,
                                        annotation=Annotated[tp, field]))
    return params


def from_tool_arguments(cls: type[Options], arguments: Mapping[str, Any], **changes: Any) -> Any:
    """The options Struct of a tool call: the agent's arguments, the fields it cannot set at
    their defaults, then ``changes`` (the tool's own, e.g. a query's row bound from its page)."""
    shown = [f for f in fields(cls) if f.extra.get("mcp", True)]
    for f in shown:  # what argparse's choices refuse on the command line (pydantic does it over the wire)
        value = arguments.get(f.name)
        if value is not None and "choices" in f.extra and value not in f.extra["choices"]:
            from vtui.errors import UsageError

            raise UsageError(f"{f.name} must be one of {', '.join(f.extra['choices'])}, not {value!r}")
    names = {f.name for f in shown}
    return cls(**{k: v for k, v in arguments.items() if k in names}, **changes)


# ---- fields several commands share -------------------------------------------------------------------
Trace = Annotated[str, opt("trace file or folder", positional=True,
                           mcp_help="path of a trace file (.json, .json.gz, nsys .sqlite) or a folder of ranks")]
Range = Annotated[str | None, opt("time range relative to the trace start, e.g. 10ms:25.5ms", metavar="A:B",
                                  mcp_help="time range from the trace start with units, e.g. 10ms:25ms, :5ms, 1s:")]
Track = Annotated[str | None, opt("only tracks whose 'process / thread' name matches", metavar="REGEX",
                                  mcp_help="regex over 'process / thread' track names")]
