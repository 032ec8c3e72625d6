"""Synthetic per-rank Kineto traces with known answers (the ranks tests and bench_ranks.py).

Each step on each rank: a compute kernel of ``compute_us(rank, step)``, then an all-reduce whose
kernel starts when the rank arrives and ends when the last rank has arrived plus ``transfer_us``
(as NCCL behaves); a second stream runs a short compute kernel ``overlap_us`` into the
collective (hidden communication). The host side is Kineto's: ProfilerStep#N, record_param_comms
(with the collective's args) around nccl:all_reduce around cudaLaunchKernel, correlation ids
on the launch and the kernel, and (``flows``) ac2g flows between them.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from pathlib import Path

NCCL = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"
STEP_US = 10_000


def rank_events(rank: int, ranks: int, steps: int, compute_us: Callable[[int, int], int], transfer_us: int = 200,
                overlap_us: int = 50, nelems: int = 1 << 20, clock_us: int = 0, flows: bool = True,
                filler: int = 0, group: str | None = "0") -> list[dict]:
    """One rank's events; ``clock_us`` shifts every timestamp (a rank whose clock is off);
    ``filler`` small compute kernels per step make the trace bigger (benchmarks)."""
    ev: list[dict] = [
        {"ph": "M", "name": "process_name", "pid": 100 + rank, "args": {"name": f"python {rank}"}},
        {"ph": "M", "name": "process_name", "pid": rank, "args": {"name": f"GPU {rank}"}},
    ]
    corr = 1
    for i in range(steps):
        t0 = 1_000_000 + i * STEP_US  # every rank starts its step at the same true time
        arrive = {r: t0 + compute_us(r, i) for r in range(ranks)}
        end = max(arrive.values()) + transfer_us
        mine = arrive[rank]
        c = clock_us
        ev.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{i + 1}", "pid": 100 + rank, "tid": 1,
                   "ts": t0 + c, "dur": end - t0 + 20 + 10 * rank})
        ev.append({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 100 + rank, "tid": 1, "ts": t0 + 1 + c, "dur": 5})
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 100 + rank, "tid": 1,
                   "ts": t0 + 2 + c, "dur": 2, "args": {"correlation": corr}})
        ev.append({"ph": "X", "cat": "kernel", "name": "sm90_gemm", "pid": rank, "tid": 7, "ts": t0 + c,
                   "dur": mine - t0, "args": {"correlation": corr, "device": rank, "stream": 7}})
        corr += 1
        for k in range(filler):
            at = t0 + 1 + (k * (compute_us(rank, i) - 2)) // max(filler, 1)
            ev.append({"ph": "X", "cat": "kernel", "name": "elementwise", "pid": rank, "tid": 9, "ts": at + c,
                       "dur": 1, "args": {"device": rank, "stream": 9}})
        args = {"Collective name": "allreduce", "In msg nelems": nelems, "Out msg nelems": nelems,
                "Group size": ranks, "dtype": "Float", "Process Group Ranks": str(list(range(ranks)))}
        if group is not None:
            args["Process Group Name"] = group
        host = mine - 30
        ev.append({"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 100 + rank, "tid": 1,
                   "ts": host + c, "dur": 20, "args": args})
        ev.append({"ph": "X", "cat": "cpu_op", "name": "nccl:all_reduce", "pid": 100 + rank, "tid": 1,
                   "ts": host + 1 + c, "dur": 18, "args": {"Input Dims": [[nelems]], "Input type": ["float"]}})
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernelExC", "pid": 100 + rank, "tid": 1,
                   "ts": host + 2 + c, "dur": 10, "args": {"correlation": corr}})
        ev.append({"ph": "X", "cat": "kernel", "name": NCCL, "pid": rank, "tid": 20, "ts": mine + c, "dur": end - mine,
                   "args": {"correlation": corr, "device": rank, "stream": 20}})
        if flows:
            ev.append({"ph": "s", "cat": "ac2g", "name": "ac2g", "id": corr, "pid": 100 + rank, "tid": 1, "ts": host + 2 + c})
            ev.append({"ph": "f", "cat": "ac2g", "name": "ac2g", "id": corr, "pid": rank, "tid": 20, "ts": mine + c,
                       "bp": "e"})
        corr += 1
        ev.append({"ph": "X", "cat": "kernel", "name": "sm90_gemm_side", "pid": rank, "tid": 8, "ts": mine + c,
                   "dur": overlap_us, "args": {"device": rank, "stream": 8}})
    return ev


def write_rank(folder: Path, name: str, events: list[dict], rank: int | None, world: int,
               base_ns: int | None = None) -> Path:
    doc: dict = {"schemaVersion": 1, "traceEvents": events}
    if rank is not None:
        doc["distributedInfo"] = {"backend": "nccl", "rank": rank, "world_size": world}
    if base_ns is not None:
        doc["baseTimeNanoseconds"] = base_ns
    path = folder / name
    data = json.dumps(doc).encode()
    path.write_bytes(gzip.compress(data, 1) if name.endswith(".gz") else data)
    return path


def slow_rank(slow: int, extra_us: int = 500) -> Callable[[int, int], int]:
    """Every rank computes 1000 + 37·rank µs (+ 13·step), ``slow`` computes ``extra_us`` longer."""
    return lambda r, i: 1000 + 37 * r + 13 * i + (extra_us if r == slow else 0)
