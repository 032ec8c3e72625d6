"""Call tree of a range: slices merged by name along their ancestor chain (the store's
``parent``), top-down or inverted, weighted by CPU time and by the GPU time each call launched.

Top-down: one node per call path, with the count of its slices, their total time clipped to the
range, their self time (clipped duration minus the union of the direct children's clipped
intervals) and the GPU work (kernel / memcpy / memset time inside the range) whose launching
runtime call is one of the node's slices (``gpu_self_ns``) or lies under it (``gpu_ns``).
Inverted (bottom-up): every name with its callers beneath it; a node's ``total_ns`` is the self
time of the call paths that end in that name via that caller chain, ``self_ns`` the part whose
chain ends there (no further caller).

Names that differ only by a counter (``ProfilerStep#12``, ``nn.Module: Linear_3``,
``execute_context_3(...)``) merge into one name (``#*``, ``_*``) unless ``merge_counters`` is off.

All numpy: node ids are made level by level (one ``np.unique`` per depth), never per slice.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from vtui.analysis.base.stats import dense_unique
from vtui.analysis.gpu.activity import launch_pairs
from vtui.safe_text import escape_controls
from vtui.store.containment import depths, self_time
from vtui.store.devices import device_work_kinds
from vtui.store.slicetime import TimeRange, over, range_rows
from vtui.store.store import TraceStore
from vtui.store.tracks import GPU

WEIGHTS = ("total", "self", "gpu")
COUNTER = re.compile(r"#\d+\b|_\d+(?=\(|$)")
INVERT_DEPTH = 256  # callers listed beneath a name in the inverted tree, at most
FOLDED_DEPTH = 512  # frames per folded stack, at most (deeper time goes to a "…" frame at the cut)


def merge_counter(name: str) -> str:
    """``ProfilerStep#12`` -> ``ProfilerStep#*``; ``Linear_3`` -> ``Linear_*``; ``ctx_3(x)`` -> ``ctx_*(x)``."""
    return COUNTER.sub(lambda m: m.group(0)[0] + "*", name)


@dataclass
class GpuShare:
    """GPU work inside the range and how much of it the tree attributes to a call."""

    present: bool = False  # the trace has GPU work at all
    total_ns: int = 0  # kernel + memcpy + memset time clipped to the range
    attributed_ns: int = 0  # launched by a call in the tree
    outside_ns: int = 0  # launched by a call outside the range or the selected tracks
    unknown_ns: int = 0  # no launch known (no flow, no matching correlation id)

    @property
    def unattributed_ns(self) -> int:
        return self.outside_ns + self.unknown_ns


@dataclass
class CallTree:
    """Nodes as parallel arrays (node 0.. in level order: a parent comes before its children)."""

    t0: int
    t1: int
    inverted: bool
    names: list[str]
    parent: np.ndarray  # int64, -1 at the top
    depth: np.ndarray  # int64, 0 at the top
    count: np.ndarray  # int64 slices
    total_ns: np.ndarray  # int64
    self_ns: np.ndarray  # int64
    gpu_ns: np.ndarray  # int64 inclusive (launched under the node)
    gpu_self_ns: np.ndarray  # int64 direct (launched by the node's own slices)
    gpu: GpuShare = field(default_factory=GpuShare)
    slices: int = 0  # slices that went into the tree
    # the slice rows in the tree (sorted), each one's node and clipped time: read by slice_rows and the hand-over
    rows: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64), repr=False)
    row_node: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64), repr=False)
    row_clip: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64), repr=False)
    _members: list[tuple[np.ndarray, np.ndarray]] = field(default_factory=list, repr=False)  # inverted only
    _kids: tuple[np.ndarray, np.ndarray] | None = field(default=None, repr=False)

    def __len__(self) -> int:
        return len(self.names)

    @property
    def range_ns(self) -> int:
        return self.t1 - self.t0

    def weight(self, kind: str) -> np.ndarray:
        """Per node, what it is ranked and pruned by: total, self or gpu (inclusive) time.
        Inverted, total and self both mean the self time of the name through the node's caller
        chain (``total_ns``)."""
        if self.inverted and kind == "self":
            return self.total_ns
        return {"total": self.total_ns, "self": self.self_ns, "gpu": self.gpu_ns}[kind]

    def width(self, kind: str) -> np.ndarray:
        """Per node, the room it takes in a flame graph under weight ``kind``: the sum of that
        weight over its subtree, so a parent holds its children. For ``self`` that sum is the
        total time (self times add up to it), so only ``gpu`` differs from ``total_ns``."""
        return self.gpu_ns if kind == "gpu" else self.total_ns

    def roots(self) -> np.ndarray:
        return self.children(-1)

    def children(self, node: int) -> np.ndarray:
        """Child node ids (all roots for -1), in node order."""
        if self._kids is None:
            order = np.argsort(self.parent, kind="stable")
            self._kids = order, np.searchsorted(self.parent[order], np.arange(-1, len(self) + 1))
        order, bounds = self._kids
        return order[bounds[node + 1]: bounds[node + 2]]

    def sorted_children(self, node: int, weight: str = "total") -> np.ndarray:
        kids = self.children(node)
        w = self.weight(weight)[kids]
        return kids[np.lexsort((kids, -w))]  # heaviest first, ties in node order

    def kept_children(self, weight: str = "total", min_pct: float = 0.0):
        """A ``children(node)`` for output: heaviest first, only nodes of at least ``min_pct`` of the range."""
        keep = 100.0 * self.weight(weight) / max(self.range_ns, 1) >= min_pct

        def children(n: int) -> list[int]:
            kids = self.sorted_children(n, weight)
            return [int(k) for k in kids[keep[kids]]]

        return children

    def path(self, node: int) -> list[str]:
        out = []
        while node >= 0:
            out.append(self.names[node])
            node = int(self.parent[node])
        return out[::-1]

    def slice_rows(self, node: int) -> np.ndarray:
        """The slices that make up a node, longest (clipped) first. Inverted: the slices of the
        call paths that end in the node's chain (the innermost frame's slices)."""
        if not self.inverted:
            mine = np.flatnonzero(self.row_node == node)
        else:
            level = int(self.depth[node])
            td, inv = self._members[level]
            paths = td[inv == node]
            mine = np.flatnonzero(np.isin(self.row_node, paths))
        return self.rows[mine[np.argsort(-self.row_clip[mine], kind="stable")]]

    def longest_slice(self, node: int) -> int:
        rows = self.slice_rows(node)
        return int(rows[0]) if len(rows) else -1


# ---- per-store cache (range-independent work) -------------------------------------------------
def _cached(store: TraceStore) -> dict:
    """The call tree's part of the store's own memo (``TraceStore.memo``): it lives and goes
    with the store, like every other per-store array, instead of a module dict keyed by id()."""
    return store.memo("calltree", dict)


def _canonical_names(store: TraceStore, merge: bool) -> tuple[np.ndarray, list[str]]:
    """Per string id: the id of its display name, and those names."""
    cache = _cached(store)
    if not merge:
        return np.arange(len(store.strings), dtype=np.int64), store.strings
    if "canon" not in cache:
        merged = [merge_counter(s) for s in store.strings]
        uniq: dict[str, int] = {}
        ids = np.fromiter((uniq.setdefault(m, len(uniq)) for m in merged), dtype=np.int64, count=len(merged))
        cache["canon"] = (ids, list(uniq))
    return cache["canon"]


def _gpu_launches(store: TraceStore) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """GPU work rows sorted by start, their starts, per row the slice row of the CPU call that
    launched it (-1 unknown), and the longest duration (a range finds its rows by binary search)."""
    cache = _cached(store)
    if "gpu" not in cache:
        rows = np.flatnonzero(device_work_kinds(store) > 0)
        launch = launch_pairs(store, rows) if len(rows) else np.zeros(0, dtype=np.int64)
        order = np.argsort(store.slices.start_ns[rows], kind="stable")
        longest = int(store.slices.dur_ns[rows].max()) if len(rows) else 0
        rows = rows[order]
        cache["gpu"] = (rows, store.slices.start_ns[rows], launch[order].astype(np.int64), longest)
    return cache["gpu"]


# ---- the tree -----------------------------------------------------------------------------------
class _Locator:
    """Slice row -> position in a sorted subset of rows (-1 when not in it): a full-size table
    for big subsets, a binary search for small ones (a 1 % range must not pay for every slice)."""

    def __init__(self, rows: np.ndarray, n: int, table: bool = True) -> None:
        self.rows = rows
        self.table: np.ndarray | None = None
        if table and len(rows) * 16 >= n:
            self.table = np.full(n, -1, dtype=np.int64)
            self.table[rows] = np.arange(len(rows))

    def __call__(self, query: np.ndarray) -> np.ndarray:
        """Positions of ``query`` rows (any may be -1)."""
        q = np.asarray(query, dtype=np.int64)
        if self.table is not None:
            return np.where(q >= 0, self.table[np.maximum(q, 0)], -1)
        at = np.minimum(np.searchsorted(self.rows, q), max(len(self.rows) - 1, 0))
        found = (q >= 0) & (len(self.rows) > 0)
        if len(self.rows):
            found &= self.rows[at] == q
        return np.where(found, at, -1)


def tree_rows(store: TraceStore, t0: int, t1: int, tracks: np.ndarray | None = None) -> np.ndarray:
    """Slice rows of the tree: the range's slices on ``tracks``, GPU streams left out (their work
    is the GPU weight) unless only GPU tracks are selected. (`build_tree` adds any ancestor that
    is not selected itself, e.g. the parent of a zero-length child at the range's edge.)"""
    ids = np.arange(len(store.tracks)) if tracks is None else np.asarray(tracks, dtype=np.int64)
    cpu = ~store.tracks.kind_is(GPU)[ids]
    if cpu.any():
        ids = ids[cpu]
    return range_rows(store, t0, t1, ids).astype(np.int64)


def _with_ancestors(store: TraceStore, rows: np.ndarray) -> np.ndarray:
    parent = store.slices.parent
    todo = rows
    while len(todo):
        par = parent[todo].astype(np.int64)
        par = np.unique(par[par >= 0])
        todo = par[_Locator(rows, 0, table=False)(par) < 0]  # a rare, small case
        rows = np.union1d(rows, todo)
    return rows


def build_tree(store: TraceStore, rng: TimeRange | None = None, tracks: np.ndarray | None = None,
               merge_counters: bool = True) -> CallTree:
    """Top-down call tree of the slices in ``rng`` (the whole trace when None) on ``tracks`` (all
    when None)."""
    rng = over(store, rng)
    t0, t1 = rng.t0, rng.t1
    s = store.slices
    rows = tree_rows(store, t0, t1, tracks)
    pos = _Locator(rows, len(s))
    lp = pos(s.parent[rows])
    if ((lp < 0) & (s.parent[rows] >= 0)).any():  # a parent outside the selection: complete the paths
        rows = _with_ancestors(store, rows)
        pos = _Locator(rows, len(s))
        lp = pos(s.parent[rows])
    k = len(rows)
    start, end = np.asarray(s.start_ns[rows]), np.asarray(s.end_ns[rows])
    if k and (int(start.min()) < t0 or int(end.max()) > t1):
        start = np.clip(start, t0, t1)
        end = np.maximum(np.clip(end, t0, t1), start)
    clip = end - start
    self_clip = self_time(lp, start, end)

    canon, display = _canonical_names(store, merge_counters)
    n_names = max(len(display), 1)
    name = canon[s.name_id[rows]]
    level = _levels(lp, s.depth[rows].astype(np.int64))
    row_node = np.empty(k, dtype=np.int64)
    node_parent: list[np.ndarray] = []
    node_name: list[np.ndarray] = []
    node_depth: list[np.ndarray] = []
    order = np.argsort(level, kind="stable")
    cuts = np.searchsorted(level[order], np.arange(int(level.max()) + 2 if k else 1))
    base = 0
    for lv in range(len(cuts) - 1):
        idx = order[cuts[lv]: cuts[lv + 1]]
        if not len(idx):
            continue
        pn = row_node[lp[idx]] if lv else np.full(len(idx), -1, dtype=np.int64)
        keys, inv = dense_unique((pn + 1) * n_names + name[idx], (int(pn.max()) + 2) * n_names)
        row_node[idx] = base + inv
        node_parent.append(keys // n_names - 1)
        node_name.append(keys % n_names)
        node_depth.append(np.full(len(keys), lv, dtype=np.int64))
        base += len(keys)
    m = base

    def joined(parts: list[np.ndarray]) -> np.ndarray:
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)

    parent, names_id, depth = joined(node_parent), joined(node_name), joined(node_depth)
    count = np.bincount(row_node, minlength=m).astype(np.int64)
    total = _sum_by(row_node, clip, m)
    self_ns = _sum_by(row_node, self_clip, m)

    share, gpu_self = _gpu_weights(store, t0, t1, pos, row_node, m)
    names = [display[i] for i in names_id.tolist()]
    parent, depth, count, total, self_ns, gpu_self = _graph_replay_nodes(
        store, t0, t1, rows, row_node, names, parent, depth, count, total, self_ns, gpu_self)
    gpu_incl = _inclusive(gpu_self, parent, depth)
    return CallTree(t0, t1, False, names, parent, depth, count, total, self_ns, gpu_incl, gpu_self, share, k,
                    rows=rows, row_node=row_node, row_clip=clip)


def _sum_by(groups: np.ndarray, values: np.ndarray, size: int) -> np.ndarray:
    # float64 sums are exact up to 2^53 ns (104 days): far beyond any trace
    return np.rint(np.bincount(groups, weights=values, minlength=size)).astype(np.int64)


def _levels(lp: np.ndarray, depth: np.ndarray) -> np.ndarray:
    """Depth within the tree: the store's depth where it agrees with the parents, else counted."""
    level = np.where(lp < 0, 0, depth)
    has = np.flatnonzero(lp >= 0)
    if not len(has) or (level[has] == level[lp[has]] + 1).all():
        return level
    return depths(lp).astype(np.int64)


def _gpu_weights(store: TraceStore, t0: int, t1: int, pos: _Locator, row_node: np.ndarray,
                 m: int) -> tuple[GpuShare, np.ndarray]:
    """GPU work in range per launching node, and what could not be attributed."""
    g_rows, starts, launch, longest = _gpu_launches(store)
    share = GpuShare(present=bool(len(g_rows)))
    gpu_self = np.zeros(m, dtype=np.int64)
    if not len(g_rows):
        return share, gpu_self
    s = store.slices
    lo, hi = np.searchsorted(starts, [t0 - longest, t1], side="left")
    g_rows, launch = g_rows[lo:hi], launch[lo:hi]
    clip = np.maximum(np.minimum(s.end_ns[g_rows], t1) - np.maximum(s.start_ns[g_rows], t0), 0)
    inside = clip > 0
    clip, launch = clip[inside], launch[inside]
    share.total_ns = int(clip.sum())
    known = launch >= 0
    local = pos(launch)
    mine = local >= 0
    share.unknown_ns = int(clip[~known].sum())
    share.outside_ns = int(clip[known & ~mine].sum())
    share.attributed_ns = int(clip[mine].sum())
    gpu_self = _sum_by(row_node[local[mine]], clip[mine], m)
    return share, gpu_self


GRAPH_REPLAY = "graph replay"


def _graph_replay_nodes(store: TraceStore, t0: int, t1: int, rows: np.ndarray, row_node: np.ndarray,
                        names: list[str], parent: np.ndarray, depth: np.ndarray, count: np.ndarray,
                        total: np.ndarray, self_ns: np.ndarray, gpu_self: np.ndarray) -> tuple[np.ndarray, ...]:
    """A ``graph replay`` child under each node whose slices launched CUDA/HIP graphs: the kernels
    the graphs replayed (their GPU time in the range moves from the launch call to it; its count:
    the launches). No CPU time of its own. Appended after the other nodes (parents stay first)."""
    from vtui.analysis.gpu.graphs import graph_kernels  # here: calltree loads before graphs is needed

    k_rows, k_launch = graph_kernels(store)
    if not len(k_rows):
        return parent, depth, count, total, self_ns, gpu_self
    s = store.slices
    clip = np.maximum(np.minimum(s.end_ns[k_rows], t1) - np.maximum(s.start_ns[k_rows], t0), 0)
    at = np.searchsorted(rows, k_launch)
    ok = (at < len(rows)) & (clip > 0)
    ok[ok] &= rows[at[ok]] == k_launch[ok]
    if not ok.any():
        return parent, depth, count, total, self_ns, gpu_self
    owner = row_node[at[ok]]
    hosts, inv = np.unique(owner, return_inverse=True)
    moved = np.bincount(inv, weights=clip[ok]).round().astype(np.int64)
    launches = np.array([len(np.unique(k_launch[ok][inv == i])) for i in range(len(hosts))], dtype=np.int64)
    gpu_self = gpu_self.copy()
    gpu_self[hosts] -= moved
    names.extend([GRAPH_REPLAY] * len(hosts))
    zeros = np.zeros(len(hosts), dtype=np.int64)
    return (np.concatenate([parent, hosts]), np.concatenate([depth, depth[hosts] + 1]),
            np.concatenate([count, launches]), np.concatenate([total, zeros]), np.concatenate([self_ns, zeros]),
            np.concatenate([gpu_self, moved]))


def by_level(depth: np.ndarray) -> list[np.ndarray]:
    """Node ids per depth (0, 1, …), one sort for all levels (not a scan per level: trees can be deep)."""
    if not len(depth):
        return []
    order = np.argsort(depth, kind="stable")
    return np.split(order, np.searchsorted(depth[order], np.arange(1, int(depth.max()) + 1)))


def _inclusive(values: np.ndarray, parent: np.ndarray, depth: np.ndarray) -> np.ndarray:
    """Per node: its value plus its descendants' (deepest level first)."""
    out = values.copy()
    for idx in reversed(by_level(depth)[1:]):
        np.add.at(out, parent[idx], out[idx])
    return out


# ---- inverted -----------------------------------------------------------------------------------
def invert(tree: CallTree) -> CallTree:
    """Bottom-up tree: each top-down node's self time (and direct GPU time) along its reversed path."""
    if tree.inverted:
        raise ValueError("already inverted")
    m = len(tree)
    name_ids: dict[str, int] = {}
    name = np.fromiter((name_ids.setdefault(n, len(name_ids)) for n in tree.names), dtype=np.int64, count=m)
    display = list(name_ids)
    n_names = max(len(display), 1)
    anc = np.arange(m, dtype=np.int64)  # ancestor of each top-down node at the current distance
    live = np.arange(m, dtype=np.int64)  # top-down nodes whose path is still this long
    prev = np.full(m, -1, dtype=np.int64)  # inverted node reached by each top-down node so far
    parts: dict[str, list[np.ndarray]] = {k: [] for k in ("parent", "name", "depth", "count", "total", "self",
                                                           "gpu", "gpu_self")}
    members: list[tuple[np.ndarray, np.ndarray]] = []
    base, lv = 0, 0
    while len(live):
        keys, inv = np.unique((prev[live] + 1) * n_names + name[anc[live]], return_inverse=True)
        inv = inv.reshape(-1)
        ids = base + inv
        size = len(keys)
        # a chain of D frames has D reversed paths of every length: callers stop at INVERT_DEPTH
        ends_here = (tree.parent[anc[live]] < 0) | (lv + 1 >= INVERT_DEPTH)
        parts["parent"].append(keys // n_names - 1)
        parts["name"].append(keys % n_names)
        parts["depth"].append(np.full(size, lv, dtype=np.int64))
        parts["count"].append(_sum_by(inv, tree.count[live], size))
        parts["total"].append(_sum_by(inv, tree.self_ns[live], size))
        parts["self"].append(_sum_by(inv[ends_here], tree.self_ns[live][ends_here], size))
        parts["gpu"].append(_sum_by(inv, tree.gpu_self_ns[live], size))
        parts["gpu_self"].append(_sum_by(inv[ends_here], tree.gpu_self_ns[live][ends_here], size))
        members.append((live.copy(), ids))
        prev[live] = ids
        anc[live] = tree.parent[anc[live]]
        live = live[~ends_here]
        base += size
        lv += 1

    def joined(key: str) -> np.ndarray:
        return np.concatenate(parts[key]) if parts[key] else np.zeros(0, dtype=np.int64)

    names = [display[i] for i in joined("name").tolist()]
    return CallTree(tree.t0, tree.t1, True, names, joined("parent"), joined("depth"), joined("count"),
                    joined("total"), joined("self"), joined("gpu"), joined("gpu_self"), tree.gpu, tree.slices,
                    rows=tree.rows, row_node=tree.row_node, row_clip=tree.row_clip, _members=members)


# ---- views and outputs --------------------------------------------------------------------------
def zoom(tree: CallTree, node: int) -> CallTree:
    """The subtree under ``node`` as a tree of its own (``node`` its only root)."""
    keep = np.zeros(len(tree), dtype=bool)
    keep[node] = True
    for idx in by_level(tree.depth)[int(tree.depth[node]) + 1:]:
        keep[idx] = keep[tree.parent[idx]]
    old = np.flatnonzero(keep)
    new_of = np.full(len(tree), -1, dtype=np.int64)
    new_of[old] = np.arange(len(old))
    parent = np.where(old == node, -1, new_of[np.maximum(tree.parent[old], 0)])
    row_node = np.where(keep[tree.row_node], new_of[tree.row_node], -1) if len(tree.row_node) else tree.row_node
    members = []
    if tree.inverted:
        for td, inv in tree._members:
            sel = keep[inv]
            members.append((td[sel], new_of[inv[sel]]))
        row_node = tree.row_node
    depth = tree.depth[old] - int(tree.depth[node])
    if tree.inverted:  # members are indexed by depth: drop the levels above the new root
        members = members[int(tree.depth[node]):]
    return CallTree(tree.t0, tree.t1, tree.inverted, [tree.names[i] for i in old.tolist()], parent, depth,
                    tree.count[old], tree.total_ns[old], tree.self_ns[old], tree.gpu_ns[old], tree.gpu_self_ns[old],
                    tree.gpu, tree.slices, rows=tree.rows, row_node=row_node, row_clip=tree.row_clip,
                    _members=members)


def folded(tree: CallTree, weight: str = "self") -> list[str]:
    """Collapsed stacks (``a;b;c 1234``, integer ns) as flamegraph.pl, inferno and speedscope read
    them: one line per path with its own weight (self time, or direct GPU time for ``gpu``), so
    the tools' sums give back every node's total. ``;`` in a name becomes ``:``."""
    w = tree.gpu_self_ns if weight == "gpu" else tree.self_ns
    frames = [_folded_frame(n) for n in tree.names]
    paths: dict[int, str] = {}
    # beyond FOLDED_DEPTH frames a stack is cut: its weight joins a "…" frame under the cut (sums kept)
    cut = np.arange(len(tree), dtype=np.int64)
    for idx in by_level(tree.depth)[FOLDED_DEPTH:]:
        cut[idx] = cut[tree.parent[idx]]
    deep = np.zeros(len(tree), dtype=np.int64)
    over = tree.depth >= FOLDED_DEPTH
    np.add.at(deep, cut[over], w[over])
    lines = []
    for node in range(len(tree)):  # level order: the parent's path is ready
        if tree.depth[node] >= FOLDED_DEPTH:
            continue
        p = int(tree.parent[node])
        paths[node] = frames[node] if p < 0 else paths[p] + ";" + frames[node]
        if w[node] > 0:
            lines.append(f"{paths[node]} {int(w[node])}")
        if deep[node] > 0:
            lines.append(f"{paths[node]};… {int(deep[node])}")
    return lines


def _folded_frame(name: str) -> str:
    return printable(name).replace(";", ":") or "?"


def printable(name: str) -> str:
    """A name safe to print on one line: control and bidi characters escaped."""
    return escape_controls(name)


JSON_DEPTH = 200  # deeper nodes are cut from JSON (the encoder recurses; a hostile trace nests 10,000 deep)
