"""The call tree against an independent computation over the raw JSON (a plain Python stack loop
per thread), on real traces with Python stacks, plus minimal cases, the inverted tree, folded and
JSON output, and the CLI."""

from __future__ import annotations

import json
import re
from collections import defaultdict

import numpy as np
import pytest

from tests.helpers import (
    FIXTURES,
    SHARED_TRACES,
    X,
    load_events,
    norm,
    raw_events,
    raw_origin,
    union_length,
    write_trace,
)
from vtui.analysis.calltree.tree import build_tree, folded, invert, merge_counter, printable, zoom
from vtui.cli import main
from vtui.load.trace import load_trace
from vtui.present.tree_json import tree_out
from vtui.store.slicetime import time_range
from vtui.store.tracks import GPU

NAME = "hf_llama_stack.json.gz"
QWEN = "tracelens__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"
# The shared copies when present (the same files are in fixtures/, so CI runs the same checks).
STACK = next(p for p in (SHARED_TRACES / "generated" / NAME, FIXTURES / NAME) if p.exists())
QWEN_PATH = next(p for p in (SHARED_TRACES / "public" / QWEN, FIXTURES / QWEN) if p.exists())
GPU_CATS = {"kernel", "gpu_memcpy", "gpu_memset"}
RUNTIME_CATS = {"cuda_runtime", "cuda_driver", "runtime"}


# ---- the independent reference ---------------------------------------------------------------------
def _raw(path):
    """X events per (pid, tid): dicts with ns relative to the smallest ts (the store's rule), in file order."""
    events = raw_events(path)
    origin = raw_origin(events)
    out = []
    for i, e in enumerate(events):
        if e.get("ph") == "X":
            start = (round(e["ts"] * 1000) - round(origin * 1000))
            out.append({"name": e["name"], "thread": (norm(e.get("pid")), norm(e.get("tid"))), "start": start,
                        "end": start + round(e.get("dur", 0) * 1000), "order": i, "cat": e.get("cat", ""),
                        "args": e.get("args") or {}})
    return out


def _contains(top, s, tol):
    """The README's rule: ends at or after it, or within the tolerance when it starts before top's end."""
    return top["end"] >= s["end"] or (top["end"] + tol >= s["end"] and s["start"] < top["end"])


def _nest(items, tol=0):
    """Parent per slice of one thread (None at the top), slices sorted by (start, longer first, file order)."""
    items.sort(key=lambda s: (s["start"], -(s["end"] - s["start"]), s["order"]))
    stack = []  # the latest earlier slice that contains this one: its parent
    for s in items:
        while stack and not _contains(stack[-1], s, tol):
            stack.pop()
        s["parent"] = stack[-1] if stack else None
        stack.append(s)


def _merged(name: str) -> str:
    name = re.sub(r"#\d+\b", "#*", name)
    return re.sub(r"_\d+(?=\(|$)", "_*", name)


def reference(slices, t0, t1, threads, tol=0):
    """Per path (tuple of merged names): count, clipped total, self (clipped minus the union of the
    clipped children), and the GPU time launched by each path (by correlation id)."""
    mine = [s for s in slices if s["thread"] in threads]
    by_thread = defaultdict(list)
    for s in mine:
        by_thread[s["thread"]].append(s)
    for items in by_thread.values():
        _nest(items, tol)

    def clip(s):
        return max(0, min(s["end"], t1) - max(s["start"], t0))

    def inside(s):
        return (s["start"] < t1 and s["end"] > t0) if s["end"] > s["start"] else t0 <= s["start"] <= t1

    kids = defaultdict(list)
    for s in mine:
        s["in"] = inside(s)
        if s["parent"] is not None:
            kids[id(s["parent"])].append(s)
    for s in mine:  # ancestors of a selected slice are in the tree too
        if s["in"]:
            p = s["parent"]
            while p is not None and not p["in"]:
                p["in"] = True
                p = p["parent"]

    def path(s):
        out = []
        while s is not None:
            out.append(_merged(s["name"]))
            s = s["parent"]
        return tuple(reversed(out))

    count, total, self_t = defaultdict(int), defaultdict(int), defaultdict(int)
    for s in mine:
        if not s["in"]:
            continue
        p = path(s)
        s["path"] = p
        count[p] += 1
        total[p] += clip(s)
        spans = sorted((max(c["start"], t0, s["start"]), min(c["end"], t1, s["end"])) for c in kids[id(s)] if clip(c) > 0)
        self_t[p] += max(0, clip(s) - union_length(spans))
    return count, total, self_t


def gpu_reference(slices, t0, t1, threads):
    """Kernel/memcpy/memset time in range per launching path, paired by the correlation arg; and the rest."""
    launches = {}
    for s in slices:
        if s["cat"] in RUNTIME_CATS and "correlation" in s["args"] and s["thread"] in threads and s.get("in"):
            launches[s["args"]["correlation"]] = s["path"]
    direct, rest, total = defaultdict(int), 0, 0
    for s in slices:
        if s["cat"] in GPU_CATS:
            c = max(0, min(s["end"], t1) - max(s["start"], t0))
            total += c
            p = launches.get(s["args"].get("correlation"))
            if p is None:
                rest += c
            else:
                direct[p] += c
    return direct, rest, total


def _paths(tree):
    return {tuple(tree.path(n)): n for n in range(len(tree))}


def _threads(store, ids):
    return {(store.tracks[t].pid, store.tracks[t].tid) for t in ids}


def _check_against_reference(path, t0=None, t1=None):
    store = load_trace(path)
    slices = _raw(path)
    t0 = 0 if t0 is None else t0
    t1 = int(store.span_ns) if t1 is None else t1
    cpu = [t.id for t in store.tracks if t.kind != GPU and t.slice_count]
    tree = build_tree(store, time_range(store, t0, t1))
    count, total, self_t = reference(slices, t0, t1, _threads(store, cpu), store.nesting_tolerance_ns)
    nodes = _paths(tree)
    assert set(nodes) == set(count)
    for p, n in nodes.items():
        assert (tree.count[n], tree.total_ns[n], tree.self_ns[n]) == (count[p], total[p], self_t[p]), p
    direct, rest, gpu_total = gpu_reference(slices, t0, t1, _threads(store, cpu))
    assert tree.gpu.total_ns == gpu_total
    assert tree.gpu.attributed_ns == sum(direct.values()) and tree.gpu.unattributed_ns == rest
    assert tree.gpu.attributed_ns + tree.gpu.unattributed_ns == tree.gpu.total_ns
    for p, n in nodes.items():
        assert tree.gpu_self_ns[n] == direct.get(p, 0), p
        assert tree.gpu_ns[n] == sum(v for q, v in direct.items() if q[:len(p)] == p), p
    roots = tree.roots()
    assert int(tree.gpu_ns[roots].sum()) == tree.gpu.attributed_ns
    return store, tree


# ---- real traces -----------------------------------------------------------------------------------
@pytest.mark.parametrize("path", [STACK, QWEN_PATH], ids=["hf_llama_stack", "qwen"])
def test_tree_equals_the_stack_loop_on_real_traces(path):
    store, tree = _check_against_reference(path)
    assert len(tree) > 100 and tree.slices > 10_000


@pytest.mark.parametrize("path", [STACK, QWEN_PATH], ids=["hf_llama_stack", "qwen"])
def test_tree_of_a_range_equals_the_stack_loop(path):
    span = int(load_trace(path).span_ns)
    _check_against_reference(path, span // 3, span // 3 + span // 7)


def test_gpu_weights_are_attributed_on_qwen():
    store, tree = _check_against_reference(QWEN_PATH)
    assert tree.gpu.present and tree.gpu.attributed_ns > 0.5 * tree.gpu.total_ns
    # the launch calls carry the direct weight; a module frame above them carries it inclusively
    launch = [n for n in range(len(tree)) if tree.names[n] == "cudaLaunchKernel"]
    assert launch and sum(int(tree.gpu_self_ns[n]) for n in launch) > 0
    modules = [n for n in range(len(tree)) if tree.names[n].startswith("nn.Module: Qwen2DecoderLayer")]
    assert modules and all(tree.gpu_self_ns[n] == 0 for n in modules) and max(tree.gpu_ns[modules]) > 0


@pytest.mark.parametrize("path", [STACK, QWEN_PATH], ids=["hf_llama_stack", "qwen"])
def test_self_sums_to_busy_time_on_properly_nested_threads(path):
    """Per thread whose slices nest properly: Σ self of its tree == the union of its slices (the busy time)."""
    store = load_trace(path)
    slices = _raw(path)
    span = int(store.span_ns)
    checked = 0
    for t in store.tracks:
        if t.kind == GPU or not t.slice_count:
            continue
        items = sorted((s for s in slices if s["thread"] == (t.pid, t.tid)), key=lambda s: (s["start"], -s["end"]))
        stack, proper = [], True
        for s in items:
            while stack and stack[-1] <= s["start"]:
                stack.pop()
            if stack and s["end"] > stack[-1]:
                proper = False
                break
            stack.append(s["end"])
        if not proper:
            continue
        for t0, t1 in ((0, span), (span // 4, span // 2)):
            busy, reach = 0, None
            for s in items:
                a, b = max(s["start"], t0), min(s["end"], t1)
                if b <= a:
                    continue
                if reach is None or a >= reach:
                    busy, reach = busy + b - a, b
                elif b > reach:
                    busy, reach = busy + b - reach, b
            tree = build_tree(store, time_range(store, t0, t1), np.array([t.id]))
            assert int(tree.self_ns.sum()) == busy, t.label
            checked += 1
    assert checked >= 1


# ---- minimal cases ---------------------------------------------------------------------------------
def test_paths_merge_by_name_along_the_chain(tmp_path):
    events = [X("step", 0, 100), X("mm", 10, 20), X("mm", 40, 10), X("add", 60, 10),
              X("step", 200, 100), X("mm", 210, 30), X("other", 400, 50), X("mm", 410, 5)]
    tree = build_tree(load_events(tmp_path, events))
    nodes = _paths(tree)
    assert set(nodes) == {("step",), ("step", "mm"), ("step", "add"), ("other",), ("other", "mm")}
    n = nodes[("step", "mm")]
    assert (tree.count[n], tree.total_ns[n], tree.self_ns[n]) == (3, 60_000, 60_000)
    n = nodes[("step",)]
    assert (tree.count[n], tree.total_ns[n], tree.self_ns[n]) == (2, 200_000, 200_000 - 70_000)
    inv = invert(tree)
    ipaths = _paths(inv)
    m = ipaths[("mm",)]
    assert (inv.count[m], inv.total_ns[m], inv.self_ns[m]) == (4, 65_000, 0)
    assert inv.total_ns[ipaths[("mm", "step")]] == 60_000 and inv.self_ns[ipaths[("mm", "step")]] == 60_000
    assert int(inv.total_ns[inv.roots()].sum()) == int(tree.self_ns.sum())


def test_counters_merge_unless_kept_apart(tmp_path):
    events = [X("ProfilerStep#1", 0, 100), X("nn.Module: Linear_0", 10, 20), X("nn.Module: Linear_1", 40, 20),
              X("ProfilerStep#2", 200, 100), X("execute_context_3(7)", 210, 10), X("aten::conv2d", 230, 5)]
    store = load_events(tmp_path, events)
    tree = build_tree(store)
    assert set(_paths(tree)) == {("ProfilerStep#*",), ("ProfilerStep#*", "nn.Module: Linear_*"),
                                 ("ProfilerStep#*", "execute_context_*(7)"), ("ProfilerStep#*", "aten::conv2d")}
    assert tree.count[_paths(tree)[("ProfilerStep#*", "nn.Module: Linear_*")]] == 2
    apart = build_tree(store, merge_counters=False)
    assert len(apart) == 6 and ("ProfilerStep#2", "execute_context_3(7)") in _paths(apart)
    assert merge_counter("uint32") == "uint32" and merge_counter("a_12") == "a_*"


def test_self_time_subtracts_the_union_of_children(tmp_path):
    """Children that partly overlap each other count once."""
    events = [X("outer", 0, 100), X("a", 10, 40), X("b", 30, 40), X("c", 80, 10)]
    store = load_events(tmp_path, events)
    tree = build_tree(store)
    n = _paths(tree)[("outer",)]
    # a [10,50] and b [30,70] overlap: with c the children cover 70 µs
    assert tree.total_ns[n] == 100_000
    assert tree.self_ns[n] == 30_000
    assert tree.self_ns.min() >= 0


def test_range_clips_total_and_self(tmp_path):
    events = [X("outer", 0, 100), X("inner", 40, 40)]
    store = load_events(tmp_path, events)
    tree = build_tree(store, time_range(store, 50_000, 90_000))
    nodes = _paths(tree)
    assert tree.total_ns[nodes[("outer",)]] == 40_000 and tree.self_ns[nodes[("outer",)]] == 10_000
    assert tree.total_ns[nodes[("outer", "inner")]] == 30_000


def _gpu_events():
    ev = [X("step", 0, 100), X("linear", 10, 30), X("cudaLaunchKernel", 12, 4, cat="cuda_runtime", correlation=1),
          X("cudaLaunchKernel", 20, 4, cat="cuda_runtime", correlation=2),
          X("cudaMemcpyAsync", 50, 4, cat="cuda_runtime", correlation=3),
          X("gemm", 20, 30, pid=0, tid=7, cat="kernel", correlation=1),
          X("gemm", 60, 10, pid=0, tid=7, cat="kernel", correlation=2),
          X("Memcpy HtoD", 80, 5, pid=0, tid=7, cat="gpu_memcpy", correlation=3),
          X("orphan", 90, 7, pid=0, tid=7, cat="kernel", correlation=99)]
    # one launch by an ac2g flow (the kernel's correlation arg is left out), the rest by correlation
    ev[5]["args"].pop("correlation")
    ev += [{"ph": "s", "id": 1, "pid": 1, "tid": 1, "ts": 12, "cat": "ac2g", "name": "ac2g"},
           {"ph": "f", "id": 1, "pid": 0, "tid": 7, "ts": 20, "cat": "ac2g", "name": "ac2g", "bp": "e"}]
    return ev


def test_gpu_time_goes_to_the_launching_call(tmp_path):
    store = load_events(tmp_path, _gpu_events())
    tree = build_tree(store)
    nodes = _paths(tree)
    assert ("gemm",) not in nodes  # GPU streams are the weight, not nodes
    launch = nodes[("step", "linear", "cudaLaunchKernel")]
    assert tree.gpu_self_ns[launch] == 40_000 and tree.gpu_ns[launch] == 40_000
    assert tree.gpu_self_ns[nodes[("step", "linear")]] == 0 and tree.gpu_ns[nodes[("step", "linear")]] == 40_000
    assert tree.gpu_ns[nodes[("step",)]] == 45_000
    assert (tree.gpu.total_ns, tree.gpu.attributed_ns, tree.gpu.unknown_ns, tree.gpu.outside_ns) == \
        (52_000, 45_000, 7_000, 0)
    # launched by a call outside the range: counted apart
    late = build_tree(store, time_range(store, 30_000, 100_000))
    assert late.gpu.outside_ns == 20_000 + 10_000 and late.gpu.attributed_ns == 5_000  # gemm 30–50 and 60–70
    inv = invert(tree)
    assert inv.gpu_ns[_paths(inv)[("cudaLaunchKernel",)]] == 40_000
    only_gpu = build_tree(store, tracks=np.array([t.id for t in store.tracks if t.kind == GPU]))
    assert ("gemm",) in _paths(only_gpu)  # only streams selected: their slices make the tree


def test_zoom_and_longest_slice(tmp_path):
    events = [X("step", 0, 100), X("mm", 10, 20), X("mm", 40, 25), X("add", 70, 10), X("step", 200, 50)]
    store = load_events(tmp_path, events)
    tree = build_tree(store)
    step = _paths(tree)[("step",)]
    sub = zoom(tree, step)
    assert list(sub.roots()) == [0] and set(_paths(sub)) == {("step",), ("step", "mm"), ("step", "add")}
    mm = _paths(sub)[("step", "mm")]
    row = sub.longest_slice(mm)
    assert store.name(row) == "mm" and store.slices.end_ns[row] - store.slices.start_ns[row] == 25_000
    assert tree.longest_slice(step) == sub.longest_slice(0)
    assert store.slices.end_ns[tree.longest_slice(step)] == 100_000
    inv = invert(tree)
    inv_mm = _paths(inv)[("mm",)]
    assert store.name(inv.longest_slice(inv_mm)) == "mm"
    sub_inv = zoom(inv, inv_mm)
    assert store.name(sub_inv.longest_slice(_paths(sub_inv)[("mm", "step")])) == "mm"


def test_empty_range_and_empty_trace(tmp_path):
    store = load_events(tmp_path, [X("a", 0, 10), X("b", 100, 10)])
    tree = build_tree(store, time_range(store, 20_000, 90_000))
    assert len(tree) == 0 and tree_out(tree).roots == [] and folded(tree) == [] and len(invert(tree)) == 0


# ---- outputs ---------------------------------------------------------------------------------------
def test_folded_loads_back_with_the_same_sums(capsys):
    assert main(["tree", str(STACK), "--format", "folded"]) == 0
    lines = capsys.readouterr().out.splitlines()
    store = load_trace(STACK)
    tree = build_tree(store)
    sums: dict[tuple, int] = defaultdict(int)
    for line in lines:
        stack, weight = line.rsplit(" ", 1)
        frames = tuple(stack.split(";"))
        for i in range(1, len(frames) + 1):
            sums[frames[:i]] += int(weight)
    assert sum(int(line.rsplit(" ", 1)[1]) for line in lines) == int(tree.self_ns.sum())
    # per prefix the lines add up to the self time of the node's whole subtree, and that is its total
    # wherever no children overlap each other below it (the flame graph tools' reading of the sums)
    below = tree.self_ns.astype(np.int64).copy()
    exact = np.ones(len(tree), dtype=bool)
    for n in range(len(tree) - 1, -1, -1):  # level order reversed: children before parents
        kids = tree.children(n)
        exact[n] = exact[kids].all() and tree.total_ns[n] == tree.self_ns[n] + tree.total_ns[kids].sum()
        p = int(tree.parent[n])
        if p >= 0:
            below[p] += below[n]
    for p, n in _paths(tree).items():
        assert sums[p] == below[n], p
        if exact[n]:
            assert sums[p] == tree.total_ns[n], p
    assert exact.mean() > 0.9


def test_folded_gpu_weights_sum_to_the_attributed_time(capsys):
    assert main(["tree", str(QWEN_PATH), "--format", "folded", "--weight", "gpu"]) == 0
    lines = capsys.readouterr().out.splitlines()
    tree = build_tree(load_trace(QWEN_PATH))
    assert sum(int(x.rsplit(" ", 1)[1]) for x in lines) == tree.gpu.attributed_ns > 0


def test_json_output(capsys):
    assert main(["tree", str(QWEN_PATH), "--format", "json", "--depth", "3"]) == 0
    doc = json.loads(capsys.readouterr().out)
    tree = build_tree(load_trace(QWEN_PATH))
    assert doc["gpu"]["total_ns"] == tree.gpu.total_ns and doc["gpu"]["attributed_ns"] == tree.gpu.attributed_ns
    assert sum(r["total_ns"] for r in doc["roots"]) == int(tree.total_ns[tree.roots()].sum())

    def walk(node, depth):
        assert depth < 3 and set(node) >= {"path", "name", "count", "total_ns", "self_ns", "gpu_ns", "children"}
        assert node["path"][-1] == node["name"]
        n = _paths(tree)[tuple(node["path"])]
        assert (node["count"], node["total_ns"], node["gpu_ns"]) == (tree.count[n], tree.total_ns[n], tree.gpu_ns[n])
        for c in node["children"]:
            walk(c, depth + 1)

    for r in doc["roots"]:
        walk(r, 0)


def test_table_output_inverted_and_pruned(capsys):
    assert main(["tree", str(STACK), "--inverted", "--weight", "self", "--min-pct", "5"]) == 0
    out = capsys.readouterr().out
    tree = invert(build_tree(load_trace(STACK)))
    top = tree.sorted_children(-1, "self")[0]
    assert printable(tree.names[top]) in out.splitlines()[2]
    assert "bottom-up" in out


def test_cli_errors_are_one_line(capsys, tmp_path):
    assert main(["tree", str(STACK), "--range", "10s:20s"]) == 1
    assert main(["tree", str(STACK), "--min-pct", "-1"]) == 1
    assert main(["tree", str(STACK), "--depth", "0"]) == 1
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 3 and all(e.startswith("vtui: error:") for e in err)


def test_hostile_names_print_escaped(tmp_path, capsys):
    events = [X("evil\x1b[31m;red\nline", 0, 10), X("[bold]x[/]", 20, 5)]
    path = write_trace(tmp_path, events)
    for fmt in ("table", "folded"):
        assert main(["tree", str(path), "--format", fmt]) == 0
        out = capsys.readouterr().out
        assert "\x1b" not in out and "\\x1b[31m" in out and "line" in out
    assert main(["tree", str(path), "--format", "folded"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == "evil\\x1b[31m:red\\x0aline 10000"


def test_diff_of_two_trees(capsys):
    assert main(["tree", str(QWEN_PATH), "--against", str(STACK), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    a, b = build_tree(load_trace(QWEN_PATH)), build_tree(load_trace(STACK))
    pa, pb = _paths(a), _paths(b)
    seen = set()

    def walk(node):
        p = tuple(node["path"])
        seen.add(p)
        assert node["status"] == ("both" if p in pa and p in pb else "removed" if p in pa else "added")
        assert node["a_total_ns"] == (a.total_ns[pa[p]] if p in pa else 0)
        assert node["b_total_ns"] == (b.total_ns[pb[p]] if p in pb else 0)
        assert node["delta_total_ns"] == node["b_total_ns"] - node["a_total_ns"]
        for c in node["children"]:
            walk(c)

    for r in doc["roots"]:
        walk(r)
    assert seen == set(pa) | set(pb)
    assert any(r["status"] == "both" for r in doc["roots"])


def test_deep_chains_are_cut_with_their_sums_kept(tmp_path, monkeypatch):
    """Folded stacks stop at FOLDED_DEPTH frames and inverted caller chains at INVERT_DEPTH (a chain of
    D frames has D² reversed paths); the cut-off time goes to the cut, so every sum stays."""
    import vtui.analysis.calltree.tree as ct

    monkeypatch.setattr(ct, "FOLDED_DEPTH", 5)
    monkeypatch.setattr(ct, "INVERT_DEPTH", 4)
    events = [X(f"f{i}", i, 2 * (30 - i) + 1) for i in range(30)]  # one chain, 30 deep: 2 µs self each, 3 at the leaf
    tree = build_tree(load_events(tmp_path, events))
    assert int(tree.depth.max()) == 29
    lines = folded(tree)
    assert len(lines) == 6 and lines[-1] == "f0;f1;f2;f3;f4;… 51000"
    assert sum(int(x.rsplit(" ", 1)[1]) for x in lines) == int(tree.self_ns.sum()) == 61_000
    inv = invert(tree)
    assert int(inv.depth.max()) == 3 and int(inv.total_ns[inv.roots()].sum()) == 61_000
    assert int(inv.self_ns.sum()) == 61_000  # every path ends somewhere, at the cut at the latest


def test_a_selected_zero_length_child_brings_its_parent(tmp_path):
    """[0, 5 µs] selects a zero-length child at 5 µs but not its parent starting there: the path
    stays complete (the parent joins the tree, with nothing of it inside the range)."""
    events = [X("a", 0, 3), X("outer", 5, 5), X("mark", 5, 0)]
    store = load_events(tmp_path, events)
    tree = build_tree(store, time_range(store, 0, 5_000))
    nodes = _paths(tree)
    assert set(nodes) == {("a",), ("outer",), ("outer", "mark")}
    assert tree.total_ns[nodes[("outer",)]] == 0 and tree.count[nodes[("outer", "mark")]] == 1


def test_self_time_fast_path_equals_the_store_rule():
    """Rows already in start order (one sort by parent) give what unordered rows (a sort by both
    keys) give, with disjoint and with overlapping siblings."""
    from vtui.store.containment import self_time

    rng = np.random.default_rng(5)
    for overlap in (False, True):
        starts, ends, parent = [0], [10_000], [-1]
        for p in range(1, 200):
            a = int(rng.integers(0, 9_000))
            starts.append(a)
            ends.append(a + int(rng.integers(0, 40 if not overlap else 400)))
            parent.append(0 if overlap or p % 2 else -1)
        s, e, par = (np.array(x, dtype=np.int64) for x in (starts, ends, parent))
        if not overlap:  # children of 0 laid end to end, in start order
            kids = np.flatnonzero(par == 0)
            s[kids] = np.arange(len(kids)) * 50
            e[kids] = s[kids] + 40
        perm = np.random.default_rng(1).permutation(len(s))  # unordered: the two-key sort
        inverse = np.empty_like(perm)
        inverse[perm] = np.arange(len(perm))
        moved = np.where(par[perm] >= 0, inverse[np.maximum(par[perm], 0)], -1)
        assert np.array_equal(self_time(moved, s[perm], e[perm])[inverse], self_time(par, s, e))


def test_table_leads_with_the_weight(capsys):
    assert main(["tree", str(QWEN_PATH), "--weight", "gpu", "--depth", "2"]) == 0
    head = capsys.readouterr().out.splitlines()[0].split()
    assert head[:3] == ["GPU", "%", "range"] and head[3:6] == ["total", "self", "count"]
    assert main(["tree", str(QWEN_PATH), "--inverted", "--depth", "2"]) == 0
    head = capsys.readouterr().out.splitlines()[0]
    assert head.split()[:2] == ["self", "time"] and head.count("self") == 1  # inverted: no chain-end column
    inv = invert(build_tree(load_trace(QWEN_PATH)))
    assert np.array_equal(inv.weight("self"), inv.total_ns)


def test_vtui_diff_prints_the_differential_tree_of_two_ranges(capsys):
    span = int(load_trace(QWEN_PATH).span_ns)
    half = f"0ns:{span // 2}ns"
    assert main(["diff", str(QWEN_PATH), str(QWEN_PATH), "--range-b", half, "--table", "tree", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    store = load_trace(QWEN_PATH)
    a, b = build_tree(store), build_tree(store, time_range(store, 0, span // 2))
    pa, pb = _paths(a), _paths(b)

    def walk(node):
        p = tuple(node["path"])
        assert node["a_total_ns"] == (a.total_ns[pa[p]] if p in pa else 0)
        assert node["b_total_ns"] == (b.total_ns[pb[p]] if p in pb else 0)
        for c in node["children"]:
            walk(c)

    for r in doc["roots"]:
        walk(r)
    assert any(r["delta_total_ns"] < 0 for r in doc["roots"])  # B is half the run
    assert main(["diff", str(QWEN_PATH), str(QWEN_PATH), "--table", "tree", "--format", "csv"]) == 1  # usage error


def test_self_ranks_by_self_time_but_a_flame_box_is_its_subtree(tmp_path):
    """``weight("self")`` (what the tree sorts and prunes by) is a node's own self time;
    ``width("self")`` (a flame graph box) must hold its children, so it is the sum of self time
    over the node's subtree, which for properly nested slices is the node's total time."""
    events = [X("a", 0, 10), X("b", 1, 3), X("c", 2, 1), X("d", 5, 2), X("a", 20, 5), X("d", 21, 1)]
    tree = build_tree(load_events(tmp_path, events))
    by_path = {"/".join(tree.path(n)): n for n in range(len(tree))}
    assert np.array_equal(tree.weight("self"), tree.self_ns) and np.array_equal(tree.weight("total"), tree.total_ns)
    a, b = by_path["a"], by_path["a/b"]
    assert tree.self_ns[a] == (10 - 3 - 2 + 5 - 1) * 1000 and tree.total_ns[a] == 15_000  # µs in the file
    subtree_self = np.zeros(len(tree), dtype=np.int64)
    for n in np.argsort(-tree.depth, kind="stable"):  # deepest first: a child adds into its parent
        subtree_self[n] += tree.self_ns[n]
        if tree.parent[n] >= 0:
            subtree_self[tree.parent[n]] += subtree_self[n]
    assert np.array_equal(tree.width("self"), subtree_self) and np.array_equal(tree.width("self"), tree.total_ns)
    assert tree.width("self")[a] > tree.weight("self")[a] and tree.width("self")[b] == 3000 > tree.weight("self")[b]
    assert np.array_equal(tree.width("gpu"), tree.gpu_ns)
