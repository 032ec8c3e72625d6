"""The roofline where a peer (TraceLens) counts differently, point by point: ``out=`` tensors,
the GEMM timed at the op that launches its kernel, graph replays costed from the capture trace,
the models TraceLens has (convolution, reductions, norms, backward ops, upsampling, serving
GEMMs), datasheet / achievable / file peaks with the ridge point, and rows told apart by their
input types. Every expected figure is worked out by hand from the shapes written here."""

from __future__ import annotations

import json

import pytest

from tests.helpers import X, cli_json, load_events
from vtui.analysis.gpu.flops import op_cost
from vtui.analysis.gpu.roofline import analyse_roofline
from vtui.analysis.gpu.roofline_capture import capture_roofline
from vtui.analysis.report.insights import compute_insights
from vtui.cli import main
from vtui.load.trace import load_trace
from vtui.present.roofline_json import roofline_json

BF, F32 = "c10::BFloat16", "float"
H100 = "NVIDIA H100 80GB HBM3"


def _op(name, ts, dur, dims, types, conc=None):
    args = {"Input Dims": dims, "Input type": types}
    if conc is not None:
        args["Concrete Inputs"] = conc
    return X(name, ts, dur, **args)


def _launch(ts, corr, kernel, k_ts, k_dur):
    """A runtime launch at ``ts`` and the kernel it ran at ``k_ts`` (µs)."""
    return [X("cudaLaunchKernel", ts, 1, cat="cuda_runtime", correlation=corr),
            X(kernel, k_ts, k_dur, cat="kernel", pid=0, tid=7, correlation=corr)]


def _load(tmp_path, events, device=H100, name="t.json"):
    path = tmp_path / name
    path.write_text(json.dumps({"deviceProperties": [{"id": 0, "name": device}], "traceEvents": events}))
    return load_trace(path, cache=False)


def _rows(report, name):
    return [o for o in report.ops if o.name == name]


# ---- 1. out= tensors are the write, not a read ---------------------------------------------------
def test_out_tensor_is_written_not_read(tmp_path):
    ev = [_op("aten::mm", 0, 20, [[64, 32], [32, 16], [64, 16]], [BF, BF, BF]), *_launch(1, 1, "gemm", 5, 10),
          _op("aten::mul", 30, 20, [[8, 8], [8, 8], [8, 8]], [BF, BF, F32]), *_launch(31, 2, "mul", 35, 2),
          _op("aten::addmm", 60, 20, [[16], [64, 32], [32, 16], [], [], [64, 16]], [BF, BF, BF, "Scalar", "Scalar", BF]),
          *_launch(61, 3, "gemm2", 65, 10)]
    r = analyse_roofline(_load(tmp_path, ev))
    mm, mul, addmm = _rows(r, "aten::mm")[0], _rows(r, "aten::mul")[0], _rows(r, "aten::addmm")[0]
    assert mm.bytes == (64 * 32 + 32 * 16 + 64 * 16) * 2  # A, B read, C written once
    assert mul.bytes == 64 * 2 + 64 * 2 + 64 * 4  # two bf16 inputs read, the fp32 out= written
    assert addmm.bytes == (16 + 64 * 32 + 32 * 16 + 64 * 16) * 2
    assert mm.flops == 2 * 64 * 16 * 32 and mul.flops == 64 and addmm.flops == 2 * 64 * 16 * 32 + 64 * 16


# ---- 2. the GEMM is timed at the op that launches its kernel -------------------------------------
def test_gemm_timed_at_the_op_that_launches_it_copies_are_rows(tmp_path):
    ev = [_op("aten::matmul", 0, 100, [[4, 64, 32], [4, 32, 16]], [BF, BF]),
          _op("aten::contiguous", 5, 30, [[4, 64, 32], []], [BF, "Scalar"]), *_launch(6, 1, "copy_kernel", 10, 30),
          _op("aten::bmm", 50, 40, [[4, 64, 32], [4, 32, 16]], [BF, BF]), *_launch(51, 2, "gemm_kernel", 60, 10)]
    r = analyse_roofline(_load(tmp_path, ev))
    assert not _rows(r, "aten::matmul")  # the wrapper is not a row: its time would hold the copy
    bmm, copy = _rows(r, "aten::bmm")[0], _rows(r, "aten::contiguous")[0]
    assert bmm.gpu_ns == 10_000 and bmm.flops == 2 * 4 * 64 * 16 * 32
    assert bmm.tflops == pytest.approx(bmm.flops / 10_000 / 1e3)
    assert copy.gpu_ns == 30_000 and copy.bytes == 2 * 4 * 64 * 32 * 2
    assert r.calls == 2


# ---- 3. graph replays costed from the capture trace's shapes -------------------------------------
def _capture_and_replay(tmp_path):
    cap = [X("capture_4_FULL", 0, 100, cat="user_annotation"),
           _op("aten::mm", 10, 20, [[32, 64], [64, 128]], [BF, BF]),
           X("cudaLaunchKernel", 12, 2, cat="cuda_runtime", kernel="gemm_k", correlation=1),
           _op("aten::add", 40, 10, [[32, 128], [32, 128], []], [BF, BF, "Scalar"]),
           X("cudaLaunchKernel", 42, 2, cat="cuda_runtime", kernel="add_k", correlation=2)]
    rep = []
    for i, t in enumerate((0, 100)):
        rep += [X("cudaGraphLaunch", t, 5, cat="cuda_runtime", correlation=9 + i),
                X("gemm_k", t + 10, 8, cat="kernel", pid=0, tid=7, correlation=9 + i),
                X("add_k", t + 20, 2, cat="kernel", pid=0, tid=7, correlation=9 + i)]
    return _load(tmp_path, cap, name="cap.json"), _load(tmp_path, rep, name="rep.json")


def test_graph_replays_get_a_roofline_from_the_capture(tmp_path, capsys):
    cap, rep = _capture_and_replay(tmp_path)
    assert not analyse_roofline(rep).ops  # the replay alone has no shapes
    r = capture_roofline(rep, cap, capture_name="cap.json")
    mm, add = _rows(r, "aten::mm")[0], _rows(r, "aten::add")[0]
    assert mm.from_capture and (mm.count, mm.gpu_ns, mm.flops) == (2, 16_000, 2 * 2 * 32 * 64 * 128)
    assert mm.bytes == 2 * (32 * 64 + 64 * 128 + 32 * 128) * 2 and mm.pct_of_roofline is not None
    assert (add.count, add.gpu_ns, add.flops) == (2, 4_000, 2 * 32 * 128)
    assert r.capture == "cap.json" and r.calls == 4
    ins = compute_insights(rep, capture=cap, capture_name="cap.json")
    assert [o.name for o in ins.roofline.ops if o.from_capture] == ["aten::mm", "aten::add"]
    out = cli_json(capsys, "insights", tmp_path / "rep.json", "--capture", tmp_path / "cap.json", "--json")
    rows = out["roofline"]["ops"]
    assert out["roofline"]["capture"] == "cap.json" and {o["name"] for o in rows if o["from_capture"]} == {
        "aten::mm", "aten::add"}


# ---- 4. the models TraceLens has, and elementwise FLOPs ------------------------------------------
def test_convolution_forward_and_backward():
    conc = ["", "", "", "[1, 1]", "[1, 1]", "[1, 1]", "False", "[0, 0]", "1"]
    c = op_cost("aten::convolution", [[8, 16, 32, 32], [64, 16, 3, 3], [64], [], [], [], [], [], []],
                [BF, BF, BF, "ScalarList", "ScalarList", "ScalarList", "Scalar", "ScalarList", "Scalar"], conc)
    out = 8 * 64 * 32 * 32  # stride 1, padding 1, 3x3: same spatial size
    assert c.flops == out * 2 * 16 * 9 + out and c.bytes == (8 * 16 * 32 * 32 + 64 * 16 * 9 + 64 + out) * 2
    strided = op_cost("aten::convolution", [[4, 3, 224, 224], [768, 3, 16, 16], [], [], [], [], [], [], []],
                      [BF, BF, "", "ScalarList", "ScalarList", "ScalarList", "Scalar", "ScalarList", "Scalar"],
                      ["", "", "", "[16, 16]", "[0, 0]", "[1, 1]", "False", "[0, 0]", "1"])
    assert strided.flops == 4 * 768 * 14 * 14 * 2 * 3 * 256
    bwd = op_cost("aten::convolution_backward", [[8, 64, 32, 32], [8, 16, 32, 32], [64, 16, 3, 3], [], [], [], [],
                                                  [], [], [], []],
                  [BF, BF, BF, "ScalarList", "ScalarList", "ScalarList", "ScalarList", "Scalar", "ScalarList",
                   "Scalar", "ScalarList"],
                  ["", "", "", "[64]", "[1, 1]", "[1, 1]", "[1, 1]", "False", "[0, 0]", "1", "[True, True, True]"])
    assert bwd.flops == 2 * (out * 2 * 16 * 9) + out
    no_input_grad = op_cost("aten::convolution_backward", [[8, 64, 32, 32], [8, 16, 32, 32], [64, 16, 3, 3]] + [[]] * 8,
                            [BF] * 3 + ["ScalarList"] * 8,
                            ["", "", "", "[0]", "[1, 1]", "[1, 1]", "[1, 1]", "False", "[0, 0]", "1",
                             "[False, True, False]"])
    assert no_input_grad.flops == out * 2 * 16 * 9


def test_reductions_norms_backward_and_upsample():
    mean = op_cost("aten::mean", [[1, 8, 768], [], [], []], [BF, "ScalarList", "Scalar", ""], ["", "[1]", "True", ""])
    assert (mean.flops, mean.bytes) == (6144, 6144 * 2 + 768 * 2)  # keepdim: [1, 1, 768]
    total = op_cost("aten::sum", [[4, 5]], [F32], [""])
    assert (total.flops, total.bytes) == (20, 20 * 4 + 4)
    cs = op_cost("aten::cumsum", [[4, 5], [], []], [F32, "Scalar", ""], ["", "1", ""])
    assert (cs.flops, cs.bytes) == (20, 2 * 20 * 4)
    norm = op_cost("aten::norm", [[4, 5], [], [], []], [F32, "Scalar", "ScalarList", "Scalar"], ["", "2", "[1]", "False"])
    assert norm.bytes == 20 * 4 + 4 * 4
    mx = op_cost("aten::max", [[4, 5], [], []], [F32, "Scalar", "Scalar"], ["", "1", "False"])
    assert mx.bytes == 20 * 4 + 4 * 4 + 4 * 8  # values and int64 indices
    ln = op_cost("aten::layer_norm", [[2, 10, 512], [], [512], [512], [], []], [BF, "ScalarList", BF, BF, "Scalar", "Scalar"],
                 ["", "[512]", "", "", "1e-05", "True"])
    assert ln.flops == 5 * 10240 + 6 * 512 and ln.bytes == (2 * 10240 + 2 * 512) * 2
    gb = op_cost("aten::gelu_backward", [[4, 8], [4, 8], []], [BF, BF, "str"], ["", "", "none"])
    assert (gb.flops, gb.bytes) == (32, 3 * 32 * 2)
    tb = op_cost("aten::threshold_backward", [[4, 8], [4, 8], []], [BF, BF, "Scalar"], ["", "", "0"])
    assert (tb.flops, tb.bytes) == (32, 3 * 32 * 2)
    bnb = op_cost("aten::native_batch_norm_backward", [[8, 16, 4, 4], [8, 16, 4, 4], [16], [16], [16], [16], [16], [],
                                                        [], []],
                  [F32] * 7 + ["Scalar", "Scalar", "ScalarList"], ["", "", "", "", "", "", "", "True", "1e-05", "[True, True, True]"])
    n = 8 * 16 * 16
    assert bnb.flops == 9 * n and bnb.bytes == (2 * n + 5 * 16) * 4 + n * 4 + 2 * 16 * 4
    up = op_cost("aten::upsample_nearest1d", [[1, 768, 8], [], []], [BF, "ScalarList", ""], ["", "[128]", ""])
    assert (up.flops, up.bytes) == (768 * 128, (768 * 8 + 768 * 128) * 2)
    up2 = op_cost("aten::upsample_bilinear2d", [[2, 3, 8, 8], [], [], []], [F32, "ScalarList", "Scalar", "ScalarList"],
                  ["", "", "False", "[2.0, 2.0]"])
    assert up2.flops == 2 * 3 * 16 * 16


def test_elementwise_flops_are_counted(tmp_path):
    ev = [_op("aten::add", 0, 20, [[4, 1, 8], [1, 6, 8], []], [BF, BF, "Scalar"], ["", "", "1"]),
          *_launch(1, 1, "add", 5, 2)]
    o = analyse_roofline(_load(tmp_path, ev)).ops[0]
    assert o.flops == 4 * 6 * 8 and o.tflops == pytest.approx(4 * 6 * 8 / 2_000 / 1e3)
    assert o.bound == "memory"  # a vector op is judged against bandwidth


def test_serving_stack_gemms_with_recorded_shapes(tmp_path):
    ev = [_op("aiter::gemm_a16w16", 0, 20, [[128, 4096], [6144, 4096], [], [], [], [], []],
              [BF, BF, "", "Scalar", "", "", ""]), *_launch(1, 1, "gemm", 5, 10),
          _op("vllm::rocm_unquantized_gemm", 30, 20, [[32, 2880], [5120, 2880], [5120]], [BF, BF, BF]),
          *_launch(31, 2, "gemm2", 35, 10),
          _op("sgl_kernel::fp8_scaled_mm", 60, 20, [[64, 512], [512, 256], [64, 1], [1, 256], [], []],
              ["c10::Float8_e4m3fn", "c10::Float8_e4m3fn", F32, F32, "", ""]), *_launch(61, 3, "gemm3", 65, 10),
          _op("_C::cutlass_scaled_mm", 90, 20, [[64, 256], [64, 512], [512, 256], [64, 1], [1, 256], []],
              [BF, "c10::Float8_e4m3fn", "c10::Float8_e4m3fn", F32, F32, ""]), *_launch(91, 4, "gemm4", 95, 10)]
    r = analyse_roofline(_load(tmp_path, ev))
    a = _rows(r, "aiter::gemm_a16w16")[0]
    assert (a.flops, a.bytes, a.family) == (2 * 128 * 6144 * 4096, (128 * 4096 + 6144 * 4096 + 128 * 6144) * 2, "gemm")
    v = _rows(r, "vllm::rocm_unquantized_gemm")[0]
    assert v.flops == 2 * 32 * 5120 * 2880 + 32 * 5120
    s = _rows(r, "sgl_kernel::fp8_scaled_mm")[0]
    assert s.flops == 2 * 64 * 256 * 512 and s.bytes == 64 * 512 + 512 * 256 + 64 * 4 + 256 * 4 + 64 * 256 * 2
    c = _rows(r, "_C::cutlass_scaled_mm")[0]
    assert c.flops == 2 * 64 * 256 * 512 and c.bytes == 64 * 512 + 512 * 256 + 64 * 4 + 256 * 4 + 64 * 256 * 2


# ---- 5. peaks: datasheet, achievable, a file; the ridge point ------------------------------------
def _mi300x_mm(tmp_path):
    ev = [_op("aten::mm", 0, 20, [[4096, 4096], [4096, 4096]], [BF, BF]), *_launch(1, 1, "gemm", 5, 500)]
    path = tmp_path / "mi.json"
    path.write_text(json.dumps({"deviceProperties": [{"id": 0, "name": "AMD Instinct MI300X"}], "traceEvents": ev}))
    return path


def test_peak_columns_and_files(tmp_path, capsys):
    path = _mi300x_mm(tmp_path)
    store = load_trace(path, cache=False)
    flops = 2 * 4096**3
    ds = analyse_roofline(store)
    ach = analyse_roofline(store, peaks="achievable")
    assert ds.device.peaks.kind == "datasheet" and ach.device.peaks.kind == "achievable"
    assert ds.ops[0].pct_of_roofline == pytest.approx(100 * flops / 1307.4e3 / 500_000)
    assert ach.ops[0].pct_of_roofline == pytest.approx(100 * flops / 708e3 / 500_000)
    assert "TraceLens" in ach.device.peaks.source
    j = roofline_json(ach)
    assert j.device.peaks == "achievable" and j.device.ridge_flops_per_byte["bf16"] == pytest.approx(708 / 5.3, abs=0.01)
    mine = tmp_path / "peaks.toml"
    mine.write_text('[[device]]\nname = "my MI300X"\nbf16 = 500.0\ntbps = 4.0\nsource = "measured here"\n')
    own = analyse_roofline(store, peaks=str(mine))
    assert own.device.peaks.name == "my MI300X" and own.ops[0].pct_of_roofline == pytest.approx(
        100 * flops / 500e3 / 500_000)
    h100 = analyse_roofline(_load(tmp_path, [_op("aten::mm", 0, 20, [[64, 64], [64, 64]], [BF, BF]),
                                             *_launch(1, 1, "g", 5, 5)]), peaks="achievable")
    assert h100.device.peaks.kind == "datasheet" and "no achievable figures" in h100.device.note
    out = cli_json(capsys, "insights", path, "--peaks", "achievable", "--json")
    assert out["roofline"]["device"]["peaks"] == "achievable" and out["roofline"]["device"]["peak_tflops"] == 708.0
    bad = tmp_path / "bad.toml"
    bad.write_text("[[device]]\nname = 'x'\n")
    assert main(["insights", str(path), "--peaks", str(bad)]) != 0
    err = capsys.readouterr().err
    assert "not a peak table" in err and "Traceback" not in err


def test_ridge_point_in_the_text(tmp_path, capsys):
    path = _mi300x_mm(tmp_path)
    assert main(["insights", str(path), "--peaks", "achievable"]) == 0
    text = capsys.readouterr().out
    assert "achievable peaks" in text and f"ridge bf16 {708 / 5.3:.0f} FLOP/byte" in text


# ---- 6. rows told apart by their input types -----------------------------------------------------
def test_rows_differing_only_in_input_types_say_so(tmp_path):
    ev = [_op("aten::copy_", 0, 20, [[64, 64], [64, 64], []], [BF, F32, "Scalar"]), *_launch(1, 1, "c1", 5, 4),
          _op("aten::copy_", 30, 20, [[64, 64], [64, 64], []], [BF, BF, "Scalar"]), *_launch(31, 2, "c2", 35, 2),
          _op("aten::mm", 60, 20, [[64, 64], [64, 64]], [BF, BF]), *_launch(61, 3, "g", 65, 2)]
    r = analyse_roofline(_load(tmp_path, ev))
    copies = sorted((o.dtype, o.bytes) for o in _rows(r, "aten::copy_"))
    assert copies == [("bf16←bf16", 64 * 64 * 4), ("bf16←fp32", 64 * 64 * 6)]
    assert _rows(r, "aten::mm")[0].dtype == BF  # no twin: the compute type as before
    j = roofline_json(r)
    assert {tuple(o.input_types) for o in j.ops if o.name == "aten::copy_"} == {(BF, F32), (BF, BF)}


def test_elementwise_rates_without_device_properties(tmp_path):
    """No deviceProperties: FLOPs and rates for a vector op too, no percentage."""
    store = load_events(tmp_path, [_op("aten::mul", 0, 20, [[8, 8], [8, 8]], [BF, BF]), *_launch(1, 1, "m", 5, 2)])
    o = analyse_roofline(store).ops[0]
    assert o.flops == 64 and o.tflops == pytest.approx(64 / 2_000 / 1e3) and o.pct_of_roofline is None
