"""Everything the details panel (and `vtui` scripts) say about one slice, as plain data."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from vtui.analysis.base.launched import launch_of, launch_of_if_known
from vtui.store.devices import device_work_kinds, runtime_mask
from vtui.store.store import TraceStore

_MAX_LINKS = 20


@dataclass
class FlowLink:
    direction: str  # "in" or "out"
    slice_row: int
    name: str
    track_title: str
    ts_ns: int
    # "flow": a flow event joins the two; "correlation": no flow does, but the runtime call and the
    # GPU work carry one correlation id (a graph replay's kernels, a trace written without flows)
    via: str = "flow"


@dataclass
class SliceDetails:
    row: int
    name: str
    category: str
    track_title: str
    start_ns: int
    abs_start_us: float
    dur_ns: int
    self_ns: int
    depth: int
    parents: list[str]
    args: dict[str, Any]
    flows: list[FlowLink] = field(default_factory=list)
    more_links: int = 0  # links left out of flows (a graph launch may have launched hundreds of kernels)


def slice_details(store: TraceStore, row: int, pair: bool = True) -> SliceDetails:
    """``pair``: pair launches by correlation if not done yet (else only a pairing already made is used)."""
    s = store.slices
    chain: list[str] = []
    p = int(s.parent[row])
    while p >= 0 and len(chain) < 64:
        chain.append(store.name(p))
        p = int(s.parent[p])
    track = store.tracks[int(s.track[row])]
    links, total = flow_links_counted(store, row, pair)
    return SliceDetails(
        row=row, name=store.name(row), category=store.strings[int(s.cat_id[row])],
        track_title=f"{track.process_title} › {track.title}", start_ns=int(s.start_ns[row]),
        abs_start_us=store.ts_to_abs_us(int(s.start_ns[row])), dur_ns=int(s.dur_ns[row]),
        self_ns=int(store.self_ns[row]), depth=int(s.depth[row]), parents=chain, args=store.slice_args(row),
        flows=links, more_links=total - len(links),
    )


def flow_links(store: TraceStore, row: int, pair: bool = True) -> list[FlowLink]:
    """See ``flow_links_counted``: the links only."""
    return flow_links_counted(store, row, pair)[0]


def needs_pairing(store: TraceStore, row: int) -> bool:
    """Whether the links of ``row`` may include launches not yet paired by correlation."""
    if launch_of_if_known(store) is not None or row < 0:
        return False
    return bool(device_work_kinds(store)[row] > 0 or runtime_mask(store)[row])


def flow_links_counted(store: TraceStore, row: int, pair: bool = True) -> tuple[list[FlowLink], int]:
    """The slice's flows in and out, then, where no flow does, its launch paired by correlation:
    for GPU work the runtime call that launched it, for a runtime call the work it launched (a
    cudaGraphLaunch / hipGraphLaunch has one correlation for all its kernels and Kineto writes
    at most one flow for them, often none). At most ``_MAX_LINKS`` of each kind, and how many
    there are in all. ``pair``: pair the launches if not done yet; else (a redraw) only a pairing
    already made is used (see ``needs_pairing``)."""
    s, f = store.slices, store.flows
    links: list[FlowLink] = []
    total = 0

    def add(direction: str, other: int, via: str) -> None:
        t = store.tracks[int(s.track[other])]
        links.append(FlowLink(direction, other, store.name(other), f"{t.process_title} › {t.title}",
                              int(s.start_ns[other]), via))

    for direction, here, there in (("in", f.dst_slice, f.src_slice), ("out", f.src_slice, f.dst_slice)):
        hits = np.flatnonzero(here == row)
        hits = hits[there[hits] >= 0]
        total += len(hits)
        for k in hits[:_MAX_LINKS].tolist():
            add(direction, int(there[k]), "flow")
    linked = {link.slice_row for link in links}
    has_in = any(link.direction == "in" for link in links)
    launches = launch_of(store) if pair else launch_of_if_known(store)
    if launches is None:
        return links, total
    if not has_in and device_work_kinds(store)[row] > 0:
        call = int(launches[row])
        if call >= 0 and call not in linked:
            add("in", call, "correlation")
            total += 1
    elif runtime_mask(store)[row]:
        launched = np.flatnonzero(launches == row)
        if len(launched):
            first = launched[np.argsort(s.start_ns[launched], kind="stable")]
            out = [r for r in first.tolist() if r not in linked]
            total += len(out)
            for r in out[:_MAX_LINKS]:
                add("out", r, "correlation")
    return links, total
