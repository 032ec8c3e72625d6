"""``vtui insights --json``: the Insights output's Struct and its parts (registered in
`vtui.present.schema`)."""

from __future__ import annotations

from vtui.present.critical_json import CriticalJson
from vtui.present.roofline_json import RooflineJson
from vtui.present.schema_base import Out, Strict
from vtui.present.serving_json import GraphsOut, ServingOut

# ---- vtui insights --json ----------------------------------------------------------------------

class Range(Strict):
    t0_ns: int
    t1_ns: int
    span_ns: int


class Steps(Strict):
    present: bool
    pattern: str
    source: str
    count: int
    in_trace: int
    track: int
    starts_ns: list[int]
    durations_ns: list[int]  # own time: from the start (or the previous steps' end, when their device work still ran) to the later of the annotation's end and its device work's end
    cpu_durations_ns: list[int]  # the annotations alone
    first_ns: int | None
    ttft_ns: int | None
    run_start: bool
    mean_ns: float | None
    median_ns: float | None
    p90_ns: float | None
    max_ns: float | None
    steps_per_s: float | None
    trend: str
    slope_ns_per_step: float
    slope_r: float
    rise_pct: float
    spikes: list[int]
    spike_threshold_ns: float
    slow_first: bool
    first_ratio: float
    gap_total_ns: int
    gap_max_ns: int
    gap_pct: float
    unattributed_ns: int
    not_steps: str  # with no steps: what looked like steps and why it is not


class PhaseRow(Strict):
    name: str
    total_ns: int
    pct: float
    count: int
    first_ns: int
    rest_mean_ns: float


class Op(Strict):
    name: str
    self_ns: int
    total_ns: int
    count: int
    pct: float
    total_pct: float
    hint: str | None


class OpsPctOf(Strict):
    range_ns: int
    cpu_threads: int
    denominator_ns: int


class NameCountTime(Strict):
    name: str
    count: int
    total_ns: int


class NameCount(Strict):
    name: str
    count: int


class SyncName(Strict):
    name: str
    count: int
    total_ns: int
    blocking: bool  # holds the host until the device drains (not an event record / stream wait)


class Sync(Strict):
    count: int
    total_ns: int
    blocking_count: int
    blocking_ns: int
    by_name: list[SyncName]
    callers: list[NameCount]


class Busy(Strict):
    label: str
    busy_ns: int
    busy_pct: float
    kernel_ns: int
    active_span_ns: int
    busy_pct_of_active_span: float


class DurationStats(Strict):
    count: int
    total_ns: float
    mean_ns: float
    median_ns: float
    p90_ns: float
    min_ns: float
    max_ns: float


class IdleDependency(Strict):
    call: str
    ns: int


class Idle(Strict):
    cpu_launch_ns: int
    queued_ns: int
    dependency_ns: int
    dependencies: list[IdleDependency]
    clock_offset_ns: int
    waiting_on_cpu: int
    between_kernels: int
    unknown: int
    before_first_or_after_last: int


class PrecisionShare(Strict, rename={"class_": "class"}):
    class_: str
    total_ns: int
    count: int
    pct: float


class KernelShare(Strict):
    name: str
    total_ns: int
    count: int
    pct: float


class Gpu(Strict):
    present: bool
    busy_ns: int
    busy_pct: float | None
    any_busy_pct: float | None
    busy_pct_of_active_span: float | None
    active_span_ns: int
    kernel_busy_pct: float | None
    devices: list[Busy]
    streams: list[Busy]
    kernel_ns: int
    comm_ns: int
    comm_pct: float | None
    memcpy_ns: int
    memset_ns: int
    memcpy_pct: float | None
    memset_pct: float | None
    memcpy_by_direction_ns: dict[str, int]
    memcpy_bytes_by_direction: dict[str, int]
    launch_delay_from_call_start: DurationStats | None
    launch_delay_from_call_end: DurationStats | None
    # The keys of schema 1 (before the two above were renamed), kept so scripts reading them work:
    # the same values, from call start and from call end ("after return").
    launch_delay: DurationStats | None
    launch_delay_after_return: DurationStats | None
    launches_paired: int
    gpu_ops: int
    worst_launch_kernel: str
    idle_ns: Idle
    precision: list[PrecisionShare]
    top_kernels: list[KernelShare]


class DeviceMemory(Strict):
    device: str
    events: int
    allocs: int
    frees: int
    alloc_bytes: int
    free_bytes: int
    peak_allocated: int
    peak_reserved: int | None
    start_allocated: int
    end_allocated: int
    absolute: bool
    repeated_size_share: float
    verdict: str


class Memory(Strict):
    present: bool
    skipped_events: int
    device: str | None
    peak_allocated: int | None
    peak_reserved: int | None
    devices: list[DeviceMemory]


class Caches(Strict):
    present: bool
    events: int
    slice_time_ns: int
    hits: int
    misses: int
    evictions: int
    hit_rate_pct: float | None
    by_name: list[NameCount]


class PythonFrame(Strict):
    name: str
    self_ns: int
    count: int


class Python(Strict):
    present: bool
    frames: int
    max_depth: int
    mean_depth: float
    python_self_ns: int
    op_self_ns: int
    python_pct: float
    hottest: list[PythonFrame]


class FindingOut(Strict):
    kind: str
    severity: str
    message: str
    hint: str


class InsightsHealth(Strict):
    worst: str | None  # the most severe trace-health item (info / warn / error), None: nothing found
    problems: list[str]  # keys of the warn and error items (`vtui info` lists them in full)
    doubt: list[str]  # the figures those put in doubt


class Insights(Out):
    trace: str
    range: Range
    health: InsightsHealth
    steps: Steps
    phases: list[PhaseRow]
    phases_below_python_frames: list[PhaseRow]
    ops: list[Op]
    ops_by_total: list[Op]
    annotations: list[Op]
    cpu_self_ns: int
    ops_pct_of: OpsPctOf
    sync: Sync
    gpu: Gpu
    memory: Memory
    caches: Caches
    python: Python
    findings: list[FindingOut]
    # Sections whose analysis returns a msgspec Struct go here, one line each (see the module doc).
    serving: ServingOut
    graphs: GraphsOut
    roofline: RooflineJson | None = None
    critical_path: CriticalJson | None = None
