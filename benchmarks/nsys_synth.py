"""Write a synthetic Nsight Systems SQLite export to the documented schema, deterministic for a
given size and seed: runtime calls launching kernels / memcpys / memsets on two GPUs (joined by
correlation id), NVTX step ranges with nested ranges and marks, OS runtime calls on a worker thread.

Three schema flavours, for version drift:
- ``"2022"``: as nsys 2022.2 writes it (``EXPORT_META_DATA``, runtime ``nameId`` and an empty ``name``);
- ``"2024"``: ``META_DATA_EXPORT``, runtime names only by ``nameId``, ``greenContextId`` on kernels,
  ``ENUM_*`` tables, columns in another order;
- ``"old"``: runtime ``name`` holds the StringIds id (no ``nameId``), no ``globalPid`` on GPU
  rows, NVTX text inline only, no session start time.

    python benchmarks/nsys_synth.py out.sqlite --launches 100000 --schema 2024
"""

from __future__ import annotations

import argparse
import sqlite3
from pathlib import Path

import numpy as np

PID, MAIN_TID, WORKER_TID = 4242, 4242, 4250
KERNELS = ["ampere_bf16_s16816gemm_bf16_128x64_ldg8_f2f_tn", "void at::native::vectorized_elementwise_kernel<4>",
           "void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 64>>", "sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n"]
RUNTIME = {"kernel": "cudaLaunchKernel_v7000", "memcpy": "cudaMemcpyAsync_v3020", "memset": "cudaMemsetAsync_v3020"}
OSRT = ["pthread_cond_wait", "ioctl", "read"]


def global_tid(pid: int, tid: int) -> int:
    return (pid << 24) | tid


def global_pid(pid: int) -> int:
    return pid << 24


_TABLES = {
    "2022": {
        "EXPORT_META_DATA": "name TEXT, value TEXT",
        "StringIds": "id INTEGER PRIMARY KEY, value TEXT NOT NULL",
        "CUPTI_ACTIVITY_KIND_KERNEL": "start INT NOT NULL, end INT NOT NULL, deviceId INT, contextId INT, streamId INT, "
        "correlationId INT, globalPid INT, demangledName INT, shortName INT, mangledName INT, registersPerThread INT, "
        "gridX INT, gridY INT, gridZ INT, blockX INT, blockY INT, blockZ INT, staticSharedMemory INT, "
        "dynamicSharedMemory INT",
        "CUPTI_ACTIVITY_KIND_MEMCPY": "start INT NOT NULL, end INT NOT NULL, deviceId INT, contextId INT, streamId INT, "
        "correlationId INT, globalPid INT, bytes INT, copyKind INT, srcKind INT, dstKind INT",
        "CUPTI_ACTIVITY_KIND_MEMSET": "start INT NOT NULL, end INT NOT NULL, deviceId INT, contextId INT, streamId INT, "
        "correlationId INT, globalPid INT, value INT, bytes INT, memKind INT",
        "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION": "start INT NOT NULL, end INT NOT NULL, deviceId INT, contextId INT, "
        "streamId INT, correlationId INT, globalPid INT, syncType INT, eventId INT",
        "CUPTI_ACTIVITY_KIND_RUNTIME": "start INT NOT NULL, end INT NOT NULL, eventClass INT, globalTid INT, "
        "correlationId INT, nameId INT, returnValue INT, callchainId INT, name TEXT",
        "NVTX_EVENTS": "start INT NOT NULL, end INT, eventType INT NOT NULL, rangeId INT, category INT, color INT, "
        "text TEXT, globalTid INT, endGlobalTid INT, textId INT, domainId INT",
        "OSRT_API": "start INT NOT NULL, end INT NOT NULL, eventClass INT, globalTid INT, nameId INT, returnValue INT, "
        "nestingLevel INT, callchainId INT",
        "ThreadNames": "nameId INT, priority INT, globalTid INT",
        "PROCESSES": "globalPid INT, pid INT, name TEXT",
        "TARGET_INFO_GPU": "id INT, name TEXT, busLocation TEXT",
        "TARGET_INFO_SESSION_START_TIME": "utcEpochNs INT, utcTime TEXT, localTime TEXT",
    },
}
_TABLES["2024"] = {
    **{k: v for k, v in _TABLES["2022"].items() if k != "EXPORT_META_DATA"},
    "META_DATA_EXPORT": "name TEXT, value TEXT",
    "CUPTI_ACTIVITY_KIND_KERNEL": "greenContextId INT, globalPid INT, correlationId INT, end INT NOT NULL, "
    "start INT NOT NULL, deviceId INT, contextId INT, streamId INT, shortName INT, demangledName INT, "
    "mangledName INT, gridX INT, gridY INT, gridZ INT, blockX INT, blockY INT, blockZ INT, registersPerThread INT, "
    "staticSharedMemory INT, dynamicSharedMemory INT, launchType INT, graphId INT",
    "CUPTI_ACTIVITY_KIND_RUNTIME": "globalTid INT, start INT NOT NULL, end INT NOT NULL, correlationId INT, "
    "nameId INT, eventClass INT, returnValue INT, callchainId INT",
    "ENUM_CUDA_MEMCPY_OPER": "id INT, name TEXT, label TEXT",
    "ENUM_CUDA_MEM_KIND": "id INT, name TEXT, label TEXT",
}
_TABLES["old"] = {
    **{k: v for k, v in _TABLES["2022"].items() if k not in ("TARGET_INFO_SESSION_START_TIME",)},
    "CUPTI_ACTIVITY_KIND_KERNEL": "start INT NOT NULL, end INT NOT NULL, deviceId INT, contextId INT, streamId INT, "
    "correlationId INT, demangledName INT, shortName INT, gridX INT, gridY INT, gridZ INT, blockX INT, blockY INT, "
    "blockZ INT",
    "CUPTI_ACTIVITY_KIND_MEMCPY": "start INT NOT NULL, end INT NOT NULL, deviceId INT, contextId INT, streamId INT, "
    "correlationId INT, bytes INT, copyKind INT, srcKind INT, dstKind INT",
    "CUPTI_ACTIVITY_KIND_MEMSET": "start INT NOT NULL, end INT NOT NULL, deviceId INT, contextId INT, streamId INT, "
    "correlationId INT, value INT, bytes INT, memKind INT",
    "CUPTI_ACTIVITY_KIND_RUNTIME": "start INT NOT NULL, end INT NOT NULL, eventClass INT, globalTid INT, "
    "correlationId INT, name INT, returnValue INT",
    "NVTX_EVENTS": "start INT NOT NULL, end INT, eventType INT NOT NULL, rangeId INT, category INT, color INT, "
    "text TEXT, globalTid INT, endGlobalTid INT, domainId INT",
}


def _inserter(con: sqlite3.Connection, tables: dict[str, str]):
    columns = {name: [c.split()[0] for c in cols.split(",")] for name, cols in tables.items()}

    def insert(table: str, rows: dict[str, list]) -> None:
        """Insert column lists by name, keeping only the tables and columns this schema has."""
        cols = [c for c in rows if c in columns.get(table, ())]
        if cols:
            sql = f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})"
            con.executemany(sql, zip(*(rows[c] for c in cols)))

    return insert


def write_nsys_export(path: str | Path, launches: int, schema: str = "2022", seed: int = 1,
                      steps_every: int = 50) -> None:
    """Write an export with ``launches`` GPU activities (and as many runtime calls)."""
    tables = _TABLES[schema]
    path = Path(path)
    path.unlink(missing_ok=True)
    rng = np.random.default_rng(seed)
    con = sqlite3.connect(path)
    for name, cols in tables.items():
        con.execute(f"CREATE TABLE {name} ({cols})")
    insert = _inserter(con, tables)

    strings = [*KERNELS, *RUNTIME.values(), *OSRT, "python3", "pt_main_thread", "dataloader", "forward", "MyDomain"]
    steps = max(1, launches // steps_every)
    strings += [f"step {k}" for k in range(steps)]
    sid = {s: i for i, s in enumerate(strings)}
    insert("StringIds", {"id": list(range(len(strings))), "value": strings})

    # GPU activities: 80% kernels, 15% memcpy, 5% memset; device 0 streams 7/13, device 1 stream 7.
    n = launches
    kind = rng.choice(3, size=n, p=[0.8, 0.15, 0.05])
    cpu_dur = rng.integers(2_000, 9_000, size=n)
    cpu_gap = rng.integers(500, 3_000, size=n)
    cpu_start = 1_000_000 + np.cumsum(cpu_gap + cpu_dur) - cpu_dur
    cpu_end = cpu_start + cpu_dur
    corr = np.arange(1, n + 1)
    dev = (np.arange(n) % 4 == 3).astype(np.int64)
    stream = np.where(dev == 1, 7, np.where(np.arange(n) % 2 == 0, 7, 13))
    gpu_dur = rng.integers(1_000, 40_000, size=n)
    gpu_start = np.zeros(n, dtype=np.int64)
    free: dict[tuple[int, int], int] = {}
    for i, (d, s, st) in enumerate(zip(dev.tolist(), stream.tolist(), (cpu_start + 4_000).tolist())):
        at = max(st, free.get((d, s), 0))  # a stream runs one thing at a time
        gpu_start[i] = at
        free[(d, s)] = at + int(gpu_dur[i])
    gpu_end = gpu_start + gpu_dur
    gpid = global_pid(PID)
    main = global_tid(PID, MAIN_TID)

    def gpu_rows(mask: np.ndarray) -> dict[str, list]:
        return {"start": gpu_start[mask].tolist(), "end": gpu_end[mask].tolist(), "deviceId": dev[mask].tolist(),
                "contextId": (dev[mask] + 1).tolist(), "streamId": stream[mask].tolist(),
                "correlationId": corr[mask].tolist(), "globalPid": [gpid] * int(mask.sum())}

    k = kind == 0
    names = rng.integers(0, len(KERNELS), size=n)[k]
    insert("CUPTI_ACTIVITY_KIND_KERNEL", {
        **gpu_rows(k), "demangledName": names.tolist(), "shortName": names.tolist(), "mangledName": names.tolist(),
        "registersPerThread": [32] * int(k.sum()), "gridX": (names + 1).tolist(), "gridY": [1] * int(k.sum()),
        "gridZ": [1] * int(k.sum()), "blockX": [128] * int(k.sum()), "blockY": [1] * int(k.sum()),
        "blockZ": [1] * int(k.sum()), "staticSharedMemory": [1024] * int(k.sum()),
        "dynamicSharedMemory": [2048] * int(k.sum()), "greenContextId": [0] * int(k.sum()),
        "launchType": [0] * int(k.sum())})
    m = kind == 1
    copy_kind = np.where(rng.random(int(m.sum())) < 0.6, 1, np.where(rng.random(int(m.sum())) < 0.5, 2, 8))
    insert("CUPTI_ACTIVITY_KIND_MEMCPY", {
        **gpu_rows(m), "bytes": rng.integers(1 << 10, 1 << 24, size=int(m.sum())).tolist(),
        "copyKind": copy_kind.tolist(), "srcKind": np.where(copy_kind == 1, 1, 2).tolist(),
        "dstKind": np.where(copy_kind == 2, 1, 2).tolist()})
    s = kind == 2
    insert("CUPTI_ACTIVITY_KIND_MEMSET", {
        **gpu_rows(s), "value": [0] * int(s.sum()), "bytes": rng.integers(1 << 10, 1 << 20, size=int(s.sum())).tolist(),
        "memKind": [2] * int(s.sum())})
    rt_name = np.array([sid[RUNTIME["kernel"]], sid[RUNTIME["memcpy"]], sid[RUNTIME["memset"]]])[kind]
    runtime = {"start": cpu_start.tolist(), "end": cpu_end.tolist(), "eventClass": [1] * n,
               "globalTid": [main] * n, "correlationId": corr.tolist(), "returnValue": [0] * n}
    if schema == "old":
        runtime["name"] = rt_name.tolist()
    else:
        runtime["nameId"] = rt_name.tolist()
        runtime["name"] = [None] * n
    insert("CUPTI_ACTIVITY_KIND_RUNTIME", runtime)
    # One stream sync per step at the end of it.
    ends = np.minimum(np.arange(steps_every - 1, n, steps_every), n - 1)[:steps]
    sync_start = cpu_end[ends] + 100
    insert("CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", {
        "start": sync_start.tolist(), "end": (sync_start + 5_000).tolist(), "deviceId": [0] * len(ends),
        "contextId": [1] * len(ends), "streamId": [7] * len(ends), "correlationId": (n + 1 + np.arange(len(ends))).tolist(),
        "globalPid": [gpid] * len(ends), "syncType": [3] * len(ends), "eventId": [None] * len(ends)})

    # NVTX: a domain, a thread name, per step a push/pop "step k" around its launches with a nested
    # "forward" around the first half (start/end kind), and a mark at its start.
    first = np.arange(0, n, steps_every)[:steps]
    last = np.minimum(first + steps_every - 1, n - 1)
    mid = np.minimum(first + steps_every // 2, n - 1)
    step_text = [f"step {i}" for i in range(steps)]
    nv_start = np.concatenate([cpu_start[first] - 200, cpu_start[first] - 100, cpu_start[first] - 200])
    nv_end = np.concatenate([cpu_end[last] + 200, cpu_end[mid - 1] + 100, np.full(steps, -1)])
    nv_type = [59] * steps + [60] * steps + [34] * steps
    inline = schema == "old"
    nv = {"start": [0, 0] + nv_start.tolist(), "end": [None, None] + [e if e >= 0 else None for e in nv_end.tolist()],
          "eventType": [75, 39] + nv_type,
          "text": ["MyDomain", "pt_main_thread"] + (step_text + ["forward"] * steps if inline else [None] * (2 * steps))
          + ["mark"] * steps,
          "textId": [None, None] + [sid["step 0"] + i for i in range(steps)] + [sid["forward"]] * steps + [None] * steps,
          "globalTid": [None, main] + [main] * (3 * steps), "domainId": [1, 0] + [0] * steps + [1] * steps + [0] * steps}
    insert("NVTX_EVENTS", nv)

    # OS runtime calls on a worker thread: one per step.
    o_start = cpu_start[first] + 1_000
    insert("OSRT_API", {"start": o_start.tolist(), "end": (o_start + rng.integers(1_000, 50_000, size=steps)).tolist(),
                              "eventClass": [27] * steps, "globalTid": [global_tid(PID, WORKER_TID)] * steps,
                              "nameId": [sid[OSRT[i % len(OSRT)]] for i in range(steps)], "returnValue": [0] * steps,
                              "nestingLevel": [0] * steps})
    insert("ThreadNames", {"nameId": [sid["pt_main_thread"], sid["dataloader"]], "priority": [10, 10],
                                 "globalTid": [main, global_tid(PID, WORKER_TID)]})
    insert("PROCESSES", {"globalPid": [gpid, global_pid(1)], "pid": [PID, 1], "name": ["python3", "systemd"]})
    insert("TARGET_INFO_GPU", {"id": [0, 1], "name": ["NVIDIA H100 80GB HBM3"] * 2,
                                     "busLocation": ["0000:18:00.0", "0000:2a:00.0"]})
    insert("TARGET_INFO_SESSION_START_TIME", {"utcEpochNs": [1_700_000_000_000_000_000],
                                                    "utcTime": ["2023-11-14T22:13:20"], "localTime": [""]})
    version = {"2022": "2022.2.1.31", "2024": "2024.5.1.113", "old": "2020.3.1.72"}[schema]
    meta = {"name": ["EXPORT_PRODUCT_NAME", "EXPORT_PRODUCT_VERSION"], "value": ["NVIDIA Nsight Systems", version]}
    insert("EXPORT_META_DATA", meta)
    insert("META_DATA_EXPORT", meta)
    insert("ENUM_CUDA_MEMCPY_OPER", {"id": [1, 2, 8], "name": ["HTOD", "DTOH", "DTOD"],
                                           "label": ["Host-to-Device", "Device-to-Host", "Device-to-Device"]})
    con.commit()
    con.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out")
    parser.add_argument("--launches", type=int, default=10_000)
    parser.add_argument("--schema", choices=sorted(_TABLES), default="2022")
    opts = parser.parse_args()
    write_nsys_export(opts.out, opts.launches, opts.schema)


if __name__ == "__main__":
    main()
