"""A health item (a stable key, a severity, a count, examples with times, the figures in doubt)
and the report that gathers them."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from vtui.store.store import TraceStore

SEVERITIES = ("info", "warn", "error")
EXAMPLES = 5  # example events kept per item

# The figures an item can put in doubt (the names the Insights JSON and screen use).
LAUNCH_DELAY = "launch_delay"
IDLE_SPLIT = "idle_split"
CRITICAL_PATH = "critical_path"
TTFT = "ttft"
TPOT = "tpot"
GPU_BUSY = "gpu_busy"
KERNEL_TIME = "kernel_time"
ROOFLINE = "roofline"
OPERATOR_GPU_TIME = "operator_gpu_time"
SYNC_POINTS = "sync_points"
COLLECTIVES = "collectives"
MEMORY = "memory"
CALL_STACKS = "python_overhead"


@dataclass(frozen=True)
class Example:
    row: int  # slice row, -1 when the example is not one slice
    t_ns: int  # where it is (relative to the trace origin), so the app can jump there
    text: str  # what it is: name and the figure that shows the defect


@dataclass
class HealthItem:
    key: str  # stable: "clock.device_before_launch", "dur.stream_overlap", ...
    severity: str  # info / warn / error
    message: str  # one line, counts included
    count: int = 0
    examples: list[Example] = field(default_factory=list)
    doubts: tuple[str, ...] = ()
    detail: dict[str, int | float | str] = field(default_factory=dict)


@dataclass
class HealthReport:
    items: list[HealthItem] = field(default_factory=list)

    @property
    def worst(self) -> str | None:
        """The most severe item's severity (None when there is nothing to say)."""
        levels = [SEVERITIES.index(i.severity) for i in self.items]
        return SEVERITIES[max(levels)] if levels else None

    def doubts(self) -> list[str]:
        """The figures put in doubt by a ``warn`` or ``error`` item, in a stable order."""
        seen: dict[str, None] = {}
        for item in self.items:
            if item.severity != "info":
                seen.update(dict.fromkeys(item.doubts))
        return list(seen)

    def at_least(self, severity: str) -> list[HealthItem]:
        level = SEVERITIES.index(severity)
        return [i for i in self.items if SEVERITIES.index(i.severity) >= level]


def examples_of(store: TraceStore, rows: np.ndarray, describe) -> list[Example]:
    """Up to ``EXAMPLES`` rows (the first given first), each with its start and ``describe(row)``."""
    out = []
    for r in np.asarray(rows[:EXAMPLES], dtype=np.int64).tolist():
        out.append(Example(int(r), int(store.slices.start_ns[r]), describe(int(r))))
    return out


def slice_name(store: TraceStore, row: int) -> str:
    return store.strings[int(store.slices.name_id[row])]


def ms(ns: float) -> str:
    return f"{ns / 1e6:,.3f} ms"
