"""Write a synthetic Kineto-like trace of a given size (CPU ops, runtime calls, kernels,
ac2g flows, [memory] instants), deterministic for a given size. Used by the benchmarks."""

from __future__ import annotations

import argparse
import gzip
import random
from pathlib import Path

HEADER = (
    '{"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA H100"}],\n'
    '"distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 1},\n'
    '"baseTimeNanoseconds": 1700000000000000000,\n"traceEvents": [\n'
)
META = (
    '{"ph": "M", "name": "process_name", "pid": 4242, "tid": 0, "args": {"name": "python3"}},\n'
    '{"ph": "M", "name": "thread_name", "pid": 4242, "tid": 4242, "args": {"name": "thread 4242 (python3)"}},\n'
    '{"ph": "M", "name": "process_labels", "pid": 0, "tid": 0, "args": {"labels": "GPU 0"}},\n'
    '{"ph": "M", "name": "thread_name", "pid": 0, "tid": 7, "args": {"name": "stream 7 "}},\n'
)
OPS = ["aten::linear", "aten::addmm", "aten::mm", "aten::softmax", "aten::copy_", "aten::mul", "aten::add"]
KERNELS = ["ampere_bf16_s16816gemm_relu_128x64", "void at::native::vectorized_elementwise_kernel<4>",
           "sm90_xmma_gemm_bf16bf16_bf16f32", "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm>"]


def write_synthetic(path: Path, target_bytes: int, seed: int = 1, step_every: int = 0) -> int:
    """Write about ``target_bytes`` of JSON; returns the number of events. ``step_every`` > 0: a vLLM
    step annotation (``execute_context_…_generation_…``) around every that many operators (the
    serving benchmark); 0 writes the same bytes as before."""
    rng = random.Random(seed)
    events = 4
    ts = 1000.0
    gpu_ts = 1000.0
    corr = 1
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "wt", encoding="utf-8") as out:
        out.write(HEADER)
        out.write(META)
        written = len(HEADER) + len(META)
        parts: list[str] = []
        step_start, step_ops, step_no = ts, 0, 0
        while written < target_bytes:
            if step_every and step_ops == step_every:
                ctx, gen = (4, 0) if step_no == 0 else (0, 32 + step_no % 3)
                parts.append(
                    f'{{"ph": "X", "cat": "user_annotation", "name": "execute_context_{ctx}({ctx * 128})_generation_{gen}({gen})", '
                    f'"pid": 4242, "tid": 4242, "ts": {step_start - 0.2:.3f}, "dur": {ts - step_start:.3f}}},\n'
                )
                events += 1
                step_start, step_ops, step_no = ts, 0, step_no + 1
            step_ops += 1
            op = OPS[rng.randrange(len(OPS))]
            dur = round(rng.uniform(5, 60), 3)
            dims = f"[[{rng.choice((1, 2, 4, 8))}, {rng.choice((128, 256, 4096))}], [{rng.choice((256, 4096))}, 4096]]"
            parts.append(
                f'{{"ph": "X", "cat": "cpu_op", "name": "{op}", "pid": 4242, "tid": 4242, "ts": {ts:.3f}, "dur": {dur}, '
                f'"args": {{"External id": {corr}, "Record function id": 0, "Ev Idx": {events}, "Input Dims": {dims}, '
                f'"Input type": ["c10::BFloat16", "c10::BFloat16"]}}}},\n'
            )
            launch = ts + dur * 0.3
            parts.append(
                f'{{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 4242, "tid": 4242, '
                f'"ts": {launch:.3f}, "dur": 4.100, "args": {{"cbid": 211, "correlation": {corr}, "External id": {corr}}}}},\n'
                f'{{"ph": "s", "id": {corr}, "pid": 4242, "tid": 4242, "ts": {launch:.3f}, "cat": "ac2g", "name": "ac2g"}},\n'
            )
            gpu_ts = max(gpu_ts, launch + 3.0)
            kdur = round(rng.uniform(2, 80), 3)
            kname = KERNELS[rng.randrange(len(KERNELS))]
            parts.append(
                f'{{"ph": "X", "cat": "kernel", "name": "{kname}", "pid": 0, "tid": 7, "ts": {gpu_ts:.3f}, "dur": {kdur}, '
                f'"args": {{"queued": 0, "device": 0, "context": 1, "stream": 7, "correlation": {corr}, '
                f'"registers per thread": 128, "shared memory": 0, "blocks per SM": 1.2, "warps per SM": 4.8, '
                f'"grid": [132, 1, 1], "block": [128, 1, 1], "est. achieved occupancy %": 25}}}},\n'
                f'{{"ph": "f", "id": {corr}, "pid": 0, "tid": 7, "ts": {gpu_ts:.3f}, "cat": "ac2g", "name": "ac2g", "bp": "e"}},\n'
            )
            events += 5
            if corr % 3 == 0:
                parts.append(
                    f'{{"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 4242, "tid": 4242, '
                    f'"ts": {ts + 1:.3f}, "args": {{"Total Reserved": 2097152000, "Total Allocated": {rng.randrange(1 << 30)}, '
                    f'"Bytes": {rng.choice((-1, 1)) * 512 * rng.randrange(1, 4096)}, "Addr": {rng.randrange(1 << 40)}, '
                    f'"Device Id": 0, "Device Type": 1}}}},\n'
                )
                events += 1
            gpu_ts += kdur + 0.5
            ts += dur + round(rng.uniform(0.5, 3), 3)
            corr += 1
            if len(parts) >= 4096:
                chunk = "".join(parts)
                out.write(chunk)
                written += len(chunk)
                parts = []
        chunk = "".join(parts)
        out.write(chunk)
        out.write(
            '{"ph": "X", "cat": "Trace", "name": "PyTorch Profiler (0)", "pid": "Spans", "tid": "PyTorch Profiler", '
            f'"ts": 1000.000, "dur": {ts - 1000:.3f}}}\n],\n"traceName": "synthetic.pt.trace.json"}}\n'
        )
        events += 1
    return events


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("out", type=Path)
    parser.add_argument("--mb", type=float, default=1024)
    parser.add_argument("--step-every", type=int, default=0, help="a vLLM step annotation around every N operators")
    opts = parser.parse_args()
    n = write_synthetic(opts.out, int(opts.mb * 1e6), step_every=opts.step_every)
    print(f"wrote {opts.out} ({n:,} events)")


if __name__ == "__main__":
    main()
