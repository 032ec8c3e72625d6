"""vtui's roofline and GPU timeline against TraceLens's own reports on the same traces (three
H100 model traces, MANIFEST #21–23): per op row, FLOPs, bytes, kernel time and the compute /
memory verdict; per trace, the GPU timeline. Each figure either equals TraceLens's or differs by
exactly what a listed difference of definition says (README, "Roofline": differences from
TraceLens), worked out here from the row's own shapes."""

from __future__ import annotations

import ast
import csv
import json
from functools import cache
from math import prod
from pathlib import Path

import numpy as np
import pytest

from tests.helpers import SHARED_TRACES
from vtui.analysis.gpu.activity import analyse_gpu
from vtui.analysis.gpu.flops import op_cost
from vtui.analysis.gpu.roofline import analyse_roofline, launched_gpu_ns
from vtui.load.trace import load_trace
from vtui.store.devices import cpu_op_mask

MODELS = ("gaunernst_bert-small-uncased__1016001", "Falconsai_nsfw_image_detection__1016002",
          "facebook_timesformer-base-finetuned-k400__1016002")
SHEETS = ("GEMM", "SDPA_fwd", "CONV_fwd", "BinaryElementwise", "UnaryElementwise", "Normalization", "Reduce_fwd")
MATRIX = {"GEMM", "SDPA_fwd", "CONV_fwd"}
SIZE = {"c10::BFloat16": 2, "c10::Half": 2, "float": 4}
MIB = 2**20


def _reports() -> Path:
    folder = SHARED_TRACES / "public" / "tracelens_reports"
    if not folder.is_dir():
        pytest.skip(f"TraceLens's reports are not present ({folder}): the conformance test needs ../shared")
    return folder


@cache
def _store(model: str):
    _reports()  # skips first where ../shared is absent
    return load_trace(SHARED_TRACES / "public" / f"tracelens__h100_{model}.json.gz")


def _rows(model: str) -> list[tuple[str, dict]]:
    out = []
    for sheet in SHEETS:
        path = _reports() / f"h100_{model}" / f"{sheet}.csv"
        if path.exists():
            with path.open(encoding="utf-8") as f:
                out += [(sheet, r) for r in csv.DictReader(f)]
    assert out, model
    return out


def _args(r: dict) -> tuple:
    return tuple(ast.literal_eval(r[k]) for k in ("Input Dims_first", "Input type_first", "Concrete Inputs_first"))


def _num(text: str) -> float | None:
    return None if text in ("", "nan") else float(text)


# ---- differences of definition: vtui's figure − TraceLens's, from the row's own shapes ----------
def _conv_out(dims: list, conc: list) -> list[int]:
    x, w = dims[0], dims[1]
    stride, pad, dil = (ast.literal_eval(conc[i]) for i in (3, 4, 5))
    return [x[0], w[0]] + [(x[2 + i] + 2 * pad[i] - dil[i] * (w[2 + i] - 1) - 1) // stride[i] + 1
                           for i in range(len(x) - 2)]


def difference(sheet: str, name: str, dims: list, types: list, conc: list) -> tuple[int, int]:
    """(FLOPs, bytes) vtui counts above TraceLens for a row, by the README's listed differences."""
    if sheet == "CONV_fwd" and dims[2]:  # TraceLens's aten::convolution leaves the bias out
        out = _conv_out(dims, conc)
        return prod(out), out[1] * SIZE[types[0]]
    if sheet == "Normalization" and name in ("aten::layer_norm", "aten::native_layer_norm"):
        c = prod(ast.literal_eval(conc[1]))  # TraceLens: four more per-channel tensors (training statistics)
        return 0, -4 * c * SIZE[types[0]]
    if sheet == "Reduce_fwd" and conc[1].startswith("["):  # TraceLens reads a dim given as text as "all dims"
        x, red = dims[0], ast.literal_eval(conc[1])
        keep = conc[2] == "True"
        out = prod(1 if i in red else n for i, n in enumerate(x)) if keep else prod(
            n for i, n in enumerate(x) if i not in red)
        return 0, (out - 1) * SIZE[types[0]]
    return 0, 0


@pytest.mark.parametrize("model", MODELS)
def test_flops_and_bytes_per_row(model):
    checked = 0
    for sheet, r in _rows(model):
        dims, types, conc = _args(r)
        cost = op_cost(r["name"], dims, types, conc)
        assert cost is not None, (sheet, r["name"], dims)
        d_flops, d_bytes = difference(sheet, r["name"], dims, types, conc)
        flops, mb = _num(r["GFLOPS_first"]), _num(r["Data Moved (MB)_first"])
        assert flops is not None and mb is not None, (sheet, r["name"])
        assert cost.flops - d_flops == pytest.approx(flops * 1e9, rel=1e-9, abs=0.5), (sheet, r["name"], dims)
        assert cost.bytes - d_bytes == pytest.approx(mb * MIB, rel=1e-9, abs=0.5), (sheet, r["name"], dims)
        checked += 1
    assert checked >= 5


def _calls(store, name: str, args: tuple) -> np.ndarray:
    """The rows of ``name`` calls whose dims, types, strides and concrete inputs are ``args``
    (TraceLens's unique-args grouping), read from the raw args of each call."""
    s = store.slices
    ids = store.string_ids(name)
    rows = np.flatnonzero(np.isin(s.name_id, ids) & cpu_op_mask(store)) if ids else np.zeros(0, dtype=np.int64)
    keep = []
    for row in rows.tolist():
        a = store.slice_args(row)
        if tuple(json.dumps(a.get(k)) for k in ("Input Dims", "Input type", "Input Strides", "Concrete Inputs")) == args:
            keep.append(row)
    return np.array(keep, dtype=np.int64)


@pytest.mark.parametrize("model", MODELS)
def test_kernel_time_per_row(model):
    store = _store(model)
    for sheet, r in _rows(model):
        key = tuple(json.dumps(ast.literal_eval(r[k])) for k in (
            "Input Dims_first", "Input type_first", "Input Strides_first", "Concrete Inputs_first"))
        rows = _calls(store, r["name"], key)
        assert len(rows) == int(r["name_count"]), (sheet, r["name"], key)
        # one call at a time: TraceLens counts a call nested in a call of the same op
        # (upsample_nearest1d.vec → upsample_nearest1d) with its kernels, again
        got = sum(int(launched_gpu_ns(store, rows[i:i + 1])[0]) for i in range(len(rows)))
        want = float(r["Kernel Time (µs)_sum"]) * 1e3
        assert got == pytest.approx(want, abs=2 * len(rows) + 2), (sheet, r["name"], key)


def _verdict(sheet: str, intensity: float, ridge: float) -> str:
    """TraceLens's FLOPs per byte against the ridge point: vector ops (elementwise, norms,
    reductions) are judged against bandwidth alone, as vtui judges them."""
    return "compute" if sheet in MATRIX and intensity >= ridge else "memory"


@pytest.mark.parametrize("model", MODELS)
def test_roofline_rows_time_and_verdict(model):
    store = _store(model)
    report = analyse_roofline(store)
    peaks = report.device.peaks
    assert peaks is not None and peaks.name == "NVIDIA H100 SXM"
    mine = {(o.name, o.shape, o.types): o for o in report.ops}
    groups: dict = {}
    for sheet, r in _rows(model):
        dims, types, _conc = _args(r)
        shape = " · ".join("x".join(map(str, d)) for d, t in zip(dims, types)
                           if isinstance(d, list) and d and t not in ("Scalar", "ScalarList", ""))
        tensor_types = tuple(t for d, t in zip(dims, types) if isinstance(d, list) and t not in ("Scalar", "ScalarList", ""))
        g = groups.setdefault((r["name"], shape, tensor_types), [sheet, 0, 0.0, float(r["FLOPS/Byte_first"])])
        g[1] += int(r["name_count"])
        g[2] += float(r["Kernel Time (µs)_sum"]) * 1e3
        # a call nested in a call of the same op is one call to vtui (TraceLens: two, the kernels twice)
        key = tuple(json.dumps(ast.literal_eval(r[k])) for k in (
            "Input Dims_first", "Input type_first", "Input Strides_first", "Concrete Inputs_first"))
        rows = _calls(store, r["name"], key)
        inner = rows[np.isin(store.slices.parent[rows], rows)]
        g[1] -= len(inner)
        g[2] -= float(launched_gpu_ns(store, inner).sum()) if len(inner) else 0.0
    compared = 0
    for key, (sheet, count, kernel_ns, intensity) in groups.items():
        o = mine.get(key)
        if o is None:
            # vtui costs the outermost op only (a nested copy_ or native_layer_norm is inside its
            # caller's row); every matrix op is a row of its own
            assert sheet not in MATRIX, key
            continue
        assert o.count == count and o.gpu_ns == pytest.approx(kernel_ns, abs=2 * count + 2), key
        ridge = peaks.ridge(o.dtype if o.dtype in ("bf16", "fp16") else {"c10::BFloat16": "bf16", "c10::Half": "fp16",
                                                                            "float": "fp32"}.get(o.dtype))
        assert o.bound == _verdict(sheet, intensity, ridge), (key, intensity, ridge)
        compared += 1
    assert compared >= 5


@pytest.mark.parametrize("model", MODELS)
def test_gpu_timeline(model):
    path = _reports() / f"h100_{model}" / "gpu_timeline.csv"
    with path.open(encoding="utf-8") as f:
        tl = {r["type"]: float(r["time ms"]) * 1e6 for r in csv.DictReader(f)}
    store = _store(model)
    g = analyse_gpu(store)
    assert g.busy_ns == pytest.approx(tl["busy_time"], abs=2)
    assert g.active_ns == pytest.approx(tl["total_time"], abs=2)
    assert g.active_ns - g.busy_ns == pytest.approx(tl["idle_time"], abs=4)
    assert g.memcpy_ns == pytest.approx(tl["total_memcpy_time"], abs=2)
    # one stream: kernels and memsets do not overlap, so their sum is TraceLens's computation union
    assert g.kernel_ns + g.memset_ns == pytest.approx(tl["computation_time"], abs=2)
    assert tl["exposed_comm_time"] == 0 and tl["exposed_memcpy_time"] == pytest.approx(tl["total_memcpy_time"])
