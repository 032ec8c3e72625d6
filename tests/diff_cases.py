"""An engine loop written as the PyTorch profiler writes it (vLLM's step annotations
``execute_context_{n}({tok})_generation_{m}({tok})``, aten operators launching kernels, ac2g flows,
a synchronize that waits for the GPU at each step's end), with known edits for the diff tests:
kernels renamed, slowed, dropped or added, noise per kernel and per run.

With ``noise=0`` every decode step is the same, so each edit's effect on the steps and kernels is
known exactly: a kernel slowed by d ns makes each step that runs it k times k·d ns longer."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from pathlib import Path

from tests.serving_cases import _Kineto

LAYERS = 4
GEMM = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas"
NORM = "void vllm::rms_norm_kernel<c10::BFloat16, 16, 4>(c10::BFloat16*, c10::BFloat16 const*, float, int, int)"
ATTN = "void flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4>, true>(Flash_fwd_params)"
ADD = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>>(int, float)"
ACT = "triton_poi_fused_mul_silu_0"
# one decoder layer: (operator, kernel, µs in a decode step, µs in a prefill step)
# Every kernel outlasts the 10 µs between launches: the GPU runs behind, so a step's time is its
# kernels' time plus fixed gaps, and a kernel's Δ is the step's Δ.
LAYER = [("aten::mul", NORM, 12.0, 30.0), ("aten::mm", GEMM, 22.0, 180.0), ("vllm::unified_attention", ATTN, 14.0, 90.0),
         ("aten::mm", GEMM, 18.0, 150.0), ("aten::add", ADD, 12.0, 24.0), ("aten::mm", GEMM, 26.0, 210.0),
         ("aten::silu", ACT, 12.0, 25.0), ("aten::mm", GEMM, 20.0, 160.0)]


@dataclass
class Edit:
    """What B does differently in its decode steps (kernel names as in ``LAYER``)."""

    rename: dict[str, str] = field(default_factory=dict)
    slow_us: dict[str, float] = field(default_factory=dict)  # added to each launch of the kernel
    drop: set[str] = field(default_factory=set)  # the kernel (and its operator) is not run
    add_after: dict[str, tuple[str, str, float]] = field(default_factory=dict)  # kernel -> (op, new kernel, µs)
    step_first_us: dict[int, float] = field(default_factory=dict)  # step index -> µs added to its first kernel


def engine_loop(prefills: int = 2, decodes: int = 40, noise: float = 0.0, run_factor: float = 1.0,
                seed: int = 0, edit: Edit | None = None, hidden: int = 1024, device: str = "NVIDIA H100 80GB HBM3",
                batch: int = 8, batches: list[int] | None = None) -> dict:
    """The trace: ``prefills`` prefill steps, then ``decodes`` decode steps of ``batch`` requests
    (or, per decode step, ``batches``). A decode kernel's time grows with the batch (× batch ÷ 8);
    each kernel's time is scaled by ``run_factor`` and by 1 + ``noise``·N(0, 1) (seeded)."""
    rnd = random.Random(seed)
    edit = edit or Edit()
    k = _Kineto("cuda")
    pid, tid, gpu = 7001, 7001, 0
    k.meta(pid, "VLLM::EngineCore", "CPU", tid, "VLLM::EngineCore")
    k.meta(gpu, "VLLM::EngineCore", "GPU 0")
    t, gpu_t = 1000.0, 1000.0
    for step in range(prefills + decodes):
        prefill = step < prefills
        size = batch if prefill or batches is None else batches[step - prefills]
        name = (f"execute_context_{size}({size * 128})_generation_0(0)" if prefill
                else f"execute_context_0(0)_generation_{size}({size})")
        start = t
        t += 10.0
        gpu_t = max(gpu_t, t)
        plan = []
        for _ in range(LAYERS):
            for op, kern, dec_us, pre_us in LAYER:
                us = pre_us if prefill else dec_us * size / 8
                if not prefill and kern in edit.drop:
                    continue
                plan.append((op, kern, us + (0.0 if prefill else edit.slow_us.get(kern, 0.0))))
                if not prefill and kern in edit.add_after:
                    plan.append(edit.add_after[kern])
        if plan and step in edit.step_first_us:
            op, kern, us = plan[0]
            plan[0] = (op, kern, us + edit.step_first_us[step])
        for op, kern, us in plan:
            if not prefill:
                kern = edit.rename.get(kern, kern)
            dur = us * run_factor * max(0.2, 1.0 + noise * rnd.gauss(0.0, 1.0))
            rows = size * 128 if prefill else size
            k.x(op, t, 8.0, "cpu_op", pid, tid, **{"Input Dims": [[rows, hidden], [hidden, hidden]],
                                                   "Input type": ["c10::BFloat16", "c10::BFloat16"]})
            gpu_t = k.launch(t + 1.0, pid, tid, kern, gpu_t + 1.0, round(dur, 3), gpu)
            t += 10.0
        sync_end = max(t + 2.0, gpu_t + 2.0)  # the step waits for its GPU work
        k.x("cudaDeviceSynchronize", t, sync_end - t, "cuda_runtime", pid, tid)
        k.x(name, start, sync_end - start + 1.0, "user_annotation", pid, tid)
        t = sync_end + 20.0
    return k.trace(device)


def write(folder: Path, name: str, trace: dict) -> Path:
    path = folder / f"{name}.json"
    path.write_text(json.dumps(trace))
    return path
