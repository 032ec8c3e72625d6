"""Everything the details panel (and `vtui` scripts) say about one slice, as plain data."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from vtui.store.store import TraceStore


@dataclass
class FlowLink:
    direction: str  # "in" or "out"
    slice_row: int
    name: str
    track_title: str
    ts_ns: int


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


def slice_details(store: TraceStore, row: int) -> SliceDetails:
    s = store.slices
    chain: list[str] = []
    p = int(s.parent[row])
    while p >= 0 and len(chain) < 64:
        chain.append(store.name(p))
        p = int(s.parent[p])
    track = store.tracks[int(s.track[row])]
    links = []
    f = store.flows
    for direction, here, there in (("in", f.dst_slice, f.src_slice), ("out", f.src_slice, f.dst_slice)):
        for k in np.flatnonzero(here == row)[:20].tolist():
            other = int(there[k])
            if other < 0:
                continue
            t = store.tracks[int(s.track[other])]
            links.append(FlowLink(direction, other, store.name(other), f"{t.process_title} › {t.title}",
                                  int(s.start_ns[other])))
    return SliceDetails(
        row=row, name=store.name(row), category=store.strings[int(s.cat_id[row])],
        track_title=f"{track.process_title} › {track.title}", start_ns=int(s.start_ns[row]),
        abs_start_us=store.ts_to_abs_us(int(s.start_ns[row])), dur_ns=int(s.dur_ns[row]),
        self_ns=int(store.self_ns[row]), depth=int(s.depth[row]), parents=chain, args=store.slice_args(row),
        flows=links,
    )
