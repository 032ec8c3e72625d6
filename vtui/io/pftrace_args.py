"""A TrackEvent's debug annotations as the args of its vtui event: plain names (Kineto's
``correlation``, ``External id`` keep their meaning), values with their JSON types, nested dicts
and arrays, interned names and strings resolved on the event's sequence."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import msgspec

from vtui.io.pftrace_state import Sequence, text

Interned = Callable[[dict[int, str], int, str], str]  # (table, iid, what) -> text ("" and counted if missing)
_JSON = msgspec.json.decode
_PLAIN_VALUES = frozenset({"int_value", "uint_value", "double_value", "bool_value"})


def event_args(seq: Sequence, e: Any, interned: Interned) -> dict[str, Any]:
    """The event's debug annotations as args (and its ``correlation_id`` as ``correlation``)."""
    out: dict[str, Any] = {}
    names = seq.arg_names
    for a in e.debug_annotations:
        named = a.WhichOneof("name_field")
        if named == "name_iid":
            key = names.get(a.name_iid)
            if key is None:
                key = interned(names, a.name_iid, "annotation names") or "[no name]"
        else:
            key = text(a.name) if named else "[no name]"
        which = a.WhichOneof("value")
        if which in _PLAIN_VALUES:
            out[key] = getattr(a, which)
        else:
            out[key] = _value(seq, a, which, interned)
    which = e.WhichOneof("correlation_id_field")
    if which and "correlation" not in out:
        out["correlation"] = (seq.arg_strings.get(e.correlation_id_str_iid, "")
                              if which == "correlation_id_str_iid" else getattr(e, which))
    return out


def _arg_name(seq: Sequence, a: Any, interned: Interned) -> str:
    if a.HasField("name"):
        return text(a.name)
    return interned(seq.arg_names, a.name_iid, "annotation names") or "[no name]"


def _value(seq: Sequence, a: Any, which: str | None, interned: Interned) -> Any:
    if which is None:
        if len(a.dict_entries):
            return {_arg_name(seq, d, interned): _value(seq, d, d.WhichOneof("value"), interned) for d in a.dict_entries}
        if len(a.array_values):
            return [_value(seq, v, v.WhichOneof("value"), interned) for v in a.array_values]
        return None
    if which == "string_value":
        return text(a.string_value)
    if which == "string_value_iid":
        return interned(seq.arg_strings, a.string_value_iid, "annotation strings")
    if which == "pointer_value":
        return f"0x{a.pointer_value:x}"
    if which == "legacy_json_value":
        try:
            return _JSON(a.legacy_json_value)
        except (msgspec.DecodeError, RecursionError):
            pass
        try:  # what msgspec refuses but the standard library reads (integers past 64 bits...)
            return json.loads(text(a.legacy_json_value))
        except (ValueError, RecursionError):
            return text(a.legacy_json_value)
    if which == "nested_value":
        return _nested(a.nested_value)
    return getattr(a, which)


def _nested(v: Any, depth: int = 0) -> Any:
    if depth > 64:
        return None
    if v.nested_type == 1:
        return {text(k): _nested(x, depth + 1) for k, x in zip(v.dict_keys, v.dict_values)}
    if v.nested_type == 2:
        return [_nested(x, depth + 1) for x in v.array_values]
    if v.HasField("string_value"):
        return text(v.string_value)
    for name in ("int_value", "double_value", "bool_value"):
        if v.HasField(name):
            return getattr(v, name)
    return None
