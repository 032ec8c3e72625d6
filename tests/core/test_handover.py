"""Python → C++ hand-over and the call-tree findings, on a minimal trace with known answers."""

from __future__ import annotations

import json

from tests.helpers import FIXTURES, X
from vtui.analysis.calltree.handover import analyse_handover
from vtui.analysis.calltree.tree import build_tree
from vtui.cli import main
from vtui.load.trace import load_trace


def _events():
    ev = []
    for k, base in enumerate((0, 200)):
        ev += [X(f"ProfilerStep#{k + 1}", base, 100, cat="user_annotation"),
               X("model.py(1): forward", base + 5, 85, cat="python_function"),
               X("wrap.py(2): w", base + 6, 30, cat="python_function"),
               X("aten::linear", base + 10, 20),
               X("cudaLaunchKernel", base + 12, 2, cat="cuda_runtime", correlation=k + 1),
               X("gemm", base + 15, 10, cat="kernel", pid=0, tid=7, correlation=k + 1),
               X("aten::validate", base + 40, 20),
               X("cudaStreamSynchronize", base + 85, 3, cat="cuda_runtime")]
    # one op under ten more Python frames, in the first step only
    ev += [X(f"deep.py({i}): f", 61 + i, 20 - 2 * i, cat="python_function") for i in range(10)]
    ev.append(X("aten::deep", 71, 1))
    return ev


def test_handover_depths_and_findings(tmp_path):
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": _events()}))
    store = load_trace(path, cache=False)
    tree = build_tree(store)
    r = analyse_handover(store, tree)
    depth = {h.name: h.python_depth for h in r.handovers}
    assert depth == {"aten::linear": 2, "aten::validate": 1, "cudaStreamSynchronize": 1, "aten::deep": 11}
    assert r.median_depth == 1 and r.steps == 2
    # Python self above the ops: forward (85 - 30 - 20 - 3 - 20 of deep.py(0) in step 1) + w (30 - 20) per step
    assert r.op_total_ns == (20 + 20 + 3) * 2_000 + 1_000
    assert r.python_self_ns == (85 - 30 - 20 - 3) * 2_000 - 20_000 + 10_000 * 2 + 10 * 2_000 - 1_000
    kinds = {(f.kind, f.path[-1]) for f in r.findings}
    assert kinds == {("deep wrapper", "aten::deep"), ("repeated without GPU work", "aten::validate"),
                     ("sync per step", "cudaStreamSynchronize")}
    sync = next(f for f in r.findings if f.kind == "sync per step")
    assert "1.0× per step" in sync.message and "model.py(1): forward" in sync.message


def test_handover_cli_and_traces_without_python(capsys):
    assert main(["tree", str(FIXTURES / "tracelens__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"), "--handover",
                 "--format", "json", "--depth", "1"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["handover"]["present"] and doc["handover"]["median_depth"] > 5
    assert any(h["name"] == "aten::linear" for h in doc["handover"]["handovers"])
    assert main(["tree", str(FIXTURES / "kineto__before_fix_trace.json"), "--handover"]) == 0
    assert "no Python frames" in capsys.readouterr().out
    assert main(["tree", str(FIXTURES / "kineto__before_fix_trace.json"), "--handover", "--inverted"]) == 1
