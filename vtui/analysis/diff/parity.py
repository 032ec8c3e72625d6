"""Did the two sides run the same work? A fingerprint per run, and what differs between the sides.

A comparison of unlike runs (another model, other shapes, another device, other dtypes, other
profiler settings) still runs, but it is labelled: its differences may be the work's, not the
change's. The fingerprint: the device (``deviceProperties``), the model (the top module's name
where ``with_modules`` / ``with_stack`` recorded it), the main operators (most CPU time) with
their most frequent input shapes and types (``record_shapes``), the median requests and tokens per
step of each kind, and the profiler's flags as the trace shows them.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import msgspec
import numpy as np

from vtui.analysis.base.shapes import decode_shapes
from vtui.analysis.diff.steps import RunSteps
from vtui.analysis.gpu.memory import MEMORY_EVENT
from vtui.analysis.gpu.peaks import device_names
from vtui.store.devices import op_mask, python_mask
from vtui.store.store import TraceStore

MAIN_OPS = 5
SHAPE_SAMPLE = 400  # calls per operator whose shapes are read
_MODEL = re.compile(r"(\w*(?:ForCausalLM|ForConditionalGeneration|LMHeadModel|ForSequenceClassification)\w*)")


@dataclass
class Fingerprint:
    device: str = ""
    model: str = ""
    ops: dict[str, str] = field(default_factory=dict)  # main operator -> its most frequent Input Dims
    dtypes: list[str] = field(default_factory=list)  # tensor types seen in the main operators
    per_step: dict[str, str] = field(default_factory=dict)  # kind -> "requests/tokens" medians
    flags: dict[str, bool] = field(default_factory=dict)
    op_names: set[str] = field(default_factory=set)  # every CPU operator name in the run
    step_pattern: str = ""  # how the steps were found ("" when none)


@dataclass(frozen=True)
class ParityItem:
    what: str
    a: str
    b: str


def _model(store: TraceStore) -> str:
    for text in store.strings:
        if "nn.Module:" in text or "modeling_" in text or "ForCausalLM" in text:
            m = _MODEL.search(text)
            if m:
                return m.group(1)
    return ""


def _decoded(raw: msgspec.Raw) -> Any:
    try:
        return msgspec.json.decode(bytes(raw))
    except (msgspec.DecodeError, RecursionError):
        return None


def _compact(raw: msgspec.Raw) -> str:
    """Recorded JSON as one compact text (the producers indent theirs in many ways)."""
    value = _decoded(raw)
    return "null" if value is None else msgspec.json.encode(value).decode()


def _main_ops(store: TraceStore) -> tuple[dict[str, str], list[str], bool, set[str]]:
    s = store.slices
    rows = np.flatnonzero(op_mask(store))
    if not len(rows):
        return {}, [], False, set()
    names = s.name_id[rows]
    totals = np.bincount(names, weights=s.durations(rows), minlength=len(store.strings))
    top = [int(n) for n in np.argsort(-totals, kind="stable")[:MAIN_OPS] if totals[n] > 0]
    ops: dict[str, str] = {}
    dtypes: set[str] = set()
    shapes_seen = False
    for nid in top:
        mine = rows[np.flatnonzero(names == nid)[:SHAPE_SAMPLE]]
        got = decode_shapes(store, mine)
        raw_dims = Counter(bytes(g.dims) for g in got)  # decoded once per distinct text
        dims: Counter = Counter()
        for text, n in raw_dims.items():
            dims[_compact(msgspec.Raw(text))] += n
        common = dims.most_common(1)[0][0] if dims else "null"
        shapes_seen |= common != "null"
        ops[store.strings[nid]] = common
        for text in {bytes(g.types) for g in got}:
            types = _decoded(msgspec.Raw(text))
            if isinstance(types, list):
                dtypes.update(t for t in types if isinstance(t, str) and t)
    present = {store.strings[n] for n in np.flatnonzero(np.bincount(names, minlength=len(store.strings))).tolist()}
    return ops, sorted(dtypes), shapes_seen, present


def fingerprint(store: TraceStore, steps: RunSteps) -> Fingerprint:
    ops, dtypes, shapes, present = _main_ops(store)
    per_step = {}
    for kind in sorted(set(steps.kinds)):
        pos = steps.of_kind(kind)
        if len(pos) and (steps.batch[pos].any() or steps.tokens[pos].any()):
            per_step[kind] = f"{np.median(steps.batch[pos]):g} requests / {np.median(steps.tokens[pos]):g} tokens"
    flags = {
        "record_shapes": shapes,
        "with_stack": bool(python_mask(store).any()),
        "with_modules": any(t.startswith("nn.Module: ") for t in store.strings),
        "profile_memory": bool(store.string_ids(MEMORY_EVENT)),
    }
    return Fingerprint(", ".join(device_names(store)), _model(store), ops, dtypes, per_step, flags, present,
                       steps.pattern)


def parity(a: Fingerprint, b: Fingerprint) -> list[ParityItem]:
    """What differs between the two sides' fingerprints (empty: like runs)."""
    out = []
    for what, va, vb in (("device", a.device, b.device), ("model", a.model, b.model),
                         ("steps found as", a.step_pattern, b.step_pattern),
                         ("dtypes", ", ".join(a.dtypes), ", ".join(b.dtypes))):
        if va != vb:
            out.append(ParityItem(what, va or "(unknown)", vb or "(unknown)"))
    # a main operator of one side that the other never ran (a reordering of the top is no difference)
    only_a = [op for op in a.ops if op not in b.op_names]
    only_b = [op for op in b.ops if op not in a.op_names]
    if only_a or only_b:
        out.append(ParityItem("main operators run by one side only", ", ".join(only_a) or "-", ", ".join(only_b) or "-"))
    for op in a.ops:  # in A's order (most CPU time first): the same list in every process
        if op in b.ops and a.ops[op] != b.ops[op]:
            out.append(ParityItem(f"shapes of {op}", a.ops[op], b.ops[op]))
    for kind in sorted(a.per_step.keys() | b.per_step.keys()):
        va, vb = a.per_step.get(kind, ""), b.per_step.get(kind, "")
        if va != vb:
            out.append(ParityItem(f"{kind} step size (median)", va or "(not recorded)", vb or "(not recorded)"))
    for flag in sorted(a.flags.keys() | b.flags.keys()):
        if a.flags.get(flag) != b.flags.get(flag):
            out.append(ParityItem(f"profiler {flag}", str(a.flags.get(flag, False)).lower(),
                                  str(b.flags.get(flag, False)).lower()))
    return out
