"""The ``critical_path`` part of ``vtui insights --json``: the critical-path report as typed msgspec Structs."""

from __future__ import annotations

import msgspec

from vtui.analysis.why.critical import CriticalReport


# ---- JSON --------------------------------------------------------------------------------------
class PathOp(msgspec.Struct):
    name: str
    kind: str  # cpu / gpu / comm
    ns: int


class CriticalStep(msgspec.Struct):
    index: int
    start_ns: int
    dur_ns: int  # the step
    path_ns: int  # its critical path: cpu + gpu + wait (longer than the step where its device work ran on)
    bound: str
    cpu_ns: int
    gpu_ns: int  # device work on the path, collectives included (comm_ns of it)
    comm_ns: int
    wait_ns: int  # queue_ns included
    queue_ns: int  # waiting behind device work launched before the step (counts for a gpu verdict)
    sync_serialised_ns: int
    top: list[PathOp]


class CriticalJson(msgspec.Struct):
    present: bool
    bound: str | None
    by_bound_ns: dict[str, int]
    steps_total: int  # steps in the range; ``steps`` lists an even sample when there are more than 2000
    steps: list[CriticalStep]


def critical_json(r: CriticalReport) -> CriticalJson:
    return CriticalJson(r.present, r.bound or None, dict(r.by_bound_ns), r.steps_total, [
        CriticalStep(st.index, st.start, st.step_end - st.start, st.end - st.start, st.bound, st.cpu_ns, st.gpu_ns + st.comm_ns, st.comm_ns,
                     st.wait_ns, st.queue_ns, st.sync_ns, [PathOp(n, k, v) for k, n, v in st.top]) for st in r.steps])
