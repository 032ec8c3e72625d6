"""Serving traces of producers and versions no shared trace has, shaped like what the tools write
(PyTorch profiler / Kineto JSON): vLLM V1 on CUDA with ProfilerStep#N around each step (vLLM's
profiler wrapper runs a torch schedule, so ``profiler.step()`` opens one per engine step), vLLM's
older ``execute_new_{n}_cached_{m}`` annotation on ROCm with two tensor-parallel worker processes
and HIP graphs, an SGLang decode-only run, a transformers loop profiled after its prefill
(batch and tokens only in ``aten::embedding``'s Input Dims), a transformers loop with
``prof.step()`` per token, and steps that alternate between two threads.

Each case is (trace dict, truth): the truth is what the generator meant per step (kind, requests,
tokens, graph kernels) so a test can check vtui against it and against plain Python over the JSON.
Names follow the real tools (python frames ``path(line): func``, ``gpu_model_runner: forward``,
``## Call CompiledFxGraph <hash> ##``, ``cudaGraphLaunch`` / ``hipGraphLaunch``)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class StepTruth:
    kind: str
    prefill_requests: int = 0
    prefill_tokens: int = 0
    decode_requests: int = 0
    decode_tokens: int = 0
    graph_kernels: int = 0  # kernels replayed by the step's graph launch (0: eager)


@dataclass
class Case:
    name: str
    trace: dict
    steps: list[StepTruth]
    tokens_known: bool = True  # the producer writes token counts
    run_start: bool = True  # the trace starts at the run's first step
    notes: str = ""
    graph_launches: int = 0
    step_name: str = r"^execute_|^step\["  # the raw events that are the steps (for the plain-Python oracle)
    step_pids: tuple = ()  # the processes whose steps may count (parallel ranks: any one of them); (): any

    def write(self, folder: Path) -> Path:
        path = folder / f"{self.name}.json"
        path.write_text(json.dumps(self.trace))
        return path


@dataclass
class _Kineto:
    """Events of one trace: CPU threads, GPU streams, launches paired by correlation and ac2g flows."""

    runtime: str = "cuda"  # "cuda" or "hip"
    events: list[dict] = field(default_factory=list)
    corr: int = 4000
    ext: int = 90000

    def x(self, name, ts, dur, cat, pid, tid, **args):
        e = {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": round(ts, 3), "dur": round(dur, 3)}
        if args:
            e["args"] = args
        self.events.append(e)
        return e

    def frame(self, name, ts, dur, pid, tid):
        return self.x(name, ts, dur, "python_function", pid, tid)

    def launch(self, ts, pid, tid, kernel, k_ts, k_dur, gpu_pid, stream=7, api=None, flow=True):
        """One launch call and the kernel it launched (the kernel starts at k_ts, on the GPU; never
        before the call)."""
        k_ts = max(k_ts, ts + 3.0)
        self.corr += 1
        self.ext += 1
        api = api or ("cudaLaunchKernel" if self.runtime == "cuda" else "hipLaunchKernel")
        self.x(api, ts, 4.5, "cuda_runtime", pid, tid, **{"External id": self.ext, "correlation": self.corr})
        self.x(kernel, k_ts, k_dur, "kernel", gpu_pid, stream, **{"External id": self.ext, "correlation": self.corr,
                                                                   "device": gpu_pid, "stream": stream,
                                                                   "grid": [132, 1, 1], "block": [256, 1, 1]})
        if flow:
            self.events += [{"ph": "s", "id": self.corr, "pid": pid, "tid": tid, "ts": round(ts, 3), "cat": "ac2g",
                             "name": "ac2g"},
                            {"ph": "f", "id": self.corr, "pid": gpu_pid, "tid": stream, "ts": round(k_ts, 3),
                             "cat": "ac2g", "name": "ac2g", "bp": "e"}]
        return k_ts + k_dur

    def graph(self, ts, pid, tid, kernels, k_ts, k_dur, gpu_pid, stream=7):
        """One graph launch: every replayed kernel carries the launch's correlation (no per-kernel flow)."""
        k_ts = max(k_ts, ts + 5.0)
        self.corr += 1
        api = "cudaGraphLaunch" if self.runtime == "cuda" else "hipGraphLaunch"
        self.x(api, ts, 9.0 + 0.2 * len(kernels), "cuda_runtime", pid, tid, correlation=self.corr)
        t = k_ts
        for k in kernels:
            self.x(k, t, k_dur, "kernel", gpu_pid, stream, correlation=self.corr, device=gpu_pid, stream=stream)
            t += k_dur + 1.5
        self.events += [{"ph": "s", "id": self.corr, "pid": pid, "tid": tid, "ts": round(ts, 3), "cat": "ac2g",
                         "name": "ac2g"},
                        {"ph": "f", "id": self.corr, "pid": gpu_pid, "tid": stream, "ts": round(k_ts, 3),
                         "cat": "ac2g", "name": "ac2g", "bp": "e"}]
        return t

    def meta(self, pid, name, labels=None, tid=None, thread=None):
        self.events.append({"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": name}})
        if labels:
            self.events.append({"ph": "M", "name": "process_labels", "pid": pid, "tid": 0, "args": {"labels": labels}})
        if tid is not None:
            self.events.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": thread}})

    def trace(self, device: str, extra: dict | None = None) -> dict:
        head: dict = {"schemaVersion": 1, "record_shapes": 1, "with_stack": 1, "profile_memory": 0,
                      "displayTimeUnit": "ms", "baseTimeNanoseconds": 1785000000000000000}
        if self.runtime == "cuda":
            head.update({"cupti_version": 26, "cuda_runtime_version": 12080, "cuda_driver_version": 12080,
                         "deviceProperties": [{"id": 0, "name": device, "totalGlobalMem": 85029158912,
                                               "computeMajor": 9, "computeMinor": 0, "numSms": 132}]})
        else:
            head.update({"roctracer_version": 4.1, "hip_runtime_version": 70051831,
                         "deviceProperties": [{"id": 0, "name": device, "totalGlobalMem": 206141652992,
                                               "computeMajor": 9, "computeMinor": 4, "numSms": 304}]})
        head.update(extra or {})
        head["traceEvents"] = self.events
        return head


LAYER_KERNELS = ["void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>",
                 "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_64x3_tn",
                 "void vllm::rms_norm_kernel<c10::BFloat16, 16, 4>",
                 "void flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4>>",
                 "void vllm::act_and_mul_kernel<c10::BFloat16, &vllm::silu_kernel<c10::BFloat16>>"]
FX_HASH = "ckx3bqv7h2tqzq5hxybr6o3r4wzqyv5lq6gmnixpl3yfwxf5u2cw"


# ---- vLLM V1, CUDA, ProfilerStep#N around each execute_… annotation ------------------------------
VLLM_V1_STEPS = ([(4, 2048, 0, 0)] + [(0, 0, 4, 4)] * 4 + [(1, 512, 4, 4)] + [(0, 0, 5, 5)] * 6)


def vllm_v1_profilerstep(plan=None, name: str = "vllm_v1_h100_profilerstep", leading: bool = False) -> Case:
    """``leading``: as torch's profiler does on start(), a ProfilerStep#0 from the start to the first
    engine step's profiler.step() (so one ProfilerStep more than engine steps)."""
    plan = VLLM_V1_STEPS if plan is None else plan
    k = _Kineto("cuda")
    pid, tid, gpu = 48213, 48213, 0
    k.meta(pid, "VLLM::EngineCore", "CPU", tid, "VLLM::EngineCore")
    k.meta(gpu, "VLLM::EngineCore", "GPU 0")
    t, truths, gl = 1000.0, [], 0
    prof_steps = []  # ProfilerStep#N spans: from the step() call to the next one
    for n, nt, m, mt in plan:
        prefill = n > 0
        dur = 5200.0 if prefill and not m else 2600.0 if prefill else 1400.0 + 10 * m
        k.frame("vllm/v1/engine/core.py(404): step", t, dur + 420, pid, tid)
        k.x("core step: schedule", t + 5, 60, "user_annotation", pid, tid)
        k.frame("vllm/v1/executor/uniproc_executor.py(96): execute_model", t + 70, dur + 30, pid, tid)
        k.frame("vllm/v1/worker/gpu_worker.py(612): execute_model", t + 75, dur + 20, pid, tid)
        prof_steps.append(t + 80)
        ann = f"execute_context_{n}({nt})_generation_{m}({mt})"
        a0 = t + 82
        k.x(ann, a0, dur, "user_annotation", pid, tid)
        k.frame("vllm/v1/worker/gpu_model_runner.py(3521): execute_model", a0 + 1, dur - 2, pid, tid)
        k.x("gpu_model_runner: preprocess", a0 + 3, 0.2 * dur, "user_annotation", pid, tid)
        k.frame("vllm/v1/worker/gpu_model_runner.py(1622): _prepare_inputs", a0 + 5, 0.18 * dur, pid, tid)
        k.x("aten::copy_", a0 + 8, 30, "cpu_op", pid, tid, **{"Input Dims": [[n + m], [n + m]]})
        k_t = a0 + 900.0  # the GPU runs behind the CPU
        k_t = k.launch(a0 + 20, pid, tid, "Memcpy HtoD (Pinned -> Device)", k_t, 3.0, gpu,
                       api="cudaMemcpyAsync")
        f0 = a0 + 0.22 * dur
        k.x("gpu_model_runner: forward", f0, 0.6 * dur, "user_annotation", pid, tid)
        if m and not n:  # pure decode: replay the captured CUDA graph for this batch size
            kern = [LAYER_KERNELS[j % len(LAYER_KERNELS)] for j in range(24)]
            k_t = k.graph(f0 + 40, pid, tid, kern, k_t + 5, 6.0, gpu)
            truths.append(StepTruth("decode", 0, 0, m, mt, len(kern)))
            gl += 1
        else:  # prefill / mixed: eager, through the torch.compile'd graph
            k.x(f"## Call CompiledFxGraph {FX_HASH} ##", f0 + 10, 0.55 * dur, "user_annotation", pid, tid)
            for j in range(12):
                k_t = k.launch(f0 + 20 + j * 30, pid, tid, LAYER_KERNELS[j % len(LAYER_KERNELS)], k_t + 2,
                               40.0 if prefill else 12.0, gpu)
            truths.append(StepTruth("mixed" if m else "prefill", n, nt, m, mt))
        k.x("gpu_model_runner: postprocess", a0 + 0.85 * dur, 0.1 * dur, "user_annotation", pid, tid)
        k.x("aten::item", a0 + 0.86 * dur, 0.05 * dur, "cpu_op", pid, tid)
        k.x("cudaStreamSynchronize", a0 + 0.87 * dur, 0.03 * dur, "cuda_runtime", pid, tid)
        # sample_tokens runs after execute_model returns: outside the step annotation
        s0 = t + 70 + dur + 40
        k.frame("vllm/v1/worker/gpu_model_runner.py(3702): sample_tokens", s0, 200, pid, tid)
        k.x("gpu_model_runner: sample", s0 + 5, 180, "user_annotation", pid, tid)
        k_t = k.launch(s0 + 20, pid, tid, "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float>",
                       k_t + 3, 8.0, gpu)
        k.x("core step: update_from_output", s0 + 210, 90, "user_annotation", pid, tid)
        t += dur + 420 + 35
    if leading:
        prof_steps = [500.0] + prof_steps
    ends = prof_steps[1:] + [t]
    for i, (a, b) in enumerate(zip(prof_steps, ends)):
        k.x(f"ProfilerStep#{i + (0 if leading else 1)}", a - 1, b - a - 1, "user_annotation", pid, tid)
    return Case(name, k.trace("NVIDIA H100 80GB HBM3"), truths, graph_launches=gl,
                notes="ProfilerStep#N opened by vLLM's profiler.step() around each execute_… annotation")


def vllm_v1_five_steps() -> Case:
    """vLLM's profiler default of 5 active iterations, with torch's ProfilerStep#0 before the first."""
    return vllm_v1_profilerstep([(2, 900, 0, 0)] + [(0, 0, 2, 2)] * 4, "vllm_v1_h100_five_steps", leading=True)


# ---- vLLM (late 2025) execute_new_{n}_cached_{m}, ROCm, TP=2 worker processes, HIP graphs --------
VLLM_TP_STEPS = [(8, 0)] + [(0, 8)] * 5 + [(2, 8)] + [(0, 10)] * 5


def vllm_rocm_tp2_new_cached() -> Case:
    k = _Kineto("hip")
    truths, gl = [], 0
    for rank, (pid, gpu) in enumerate([(61001, 2), (61002, 3)]):
        k.meta(pid, f"VLLM::Worker_TP{rank}", "CPU", pid, f"VLLM::Worker_TP{rank}")
        k.meta(gpu, f"VLLM::Worker_TP{rank}", f"GPU {gpu}")
        t = 2000.0 + rank * 3.0
        for new, cached in VLLM_TP_STEPS:
            dur = 6100.0 if new and not cached else 3000.0 if new else 1700.0
            k.frame("vllm/v1/worker/worker_base.py(267): execute_model", t - 10, dur + 20, pid, pid)
            k.x(f"execute_new_{new}_cached_{cached}", t, dur, "user_annotation", pid, pid)
            k.frame("vllm/v1/worker/gpu_model_runner.py(2219): execute_model", t + 1, dur - 2, pid, pid)
            k.x("gpu_model_runner: preprocess", t + 3, 0.2 * dur, "user_annotation", pid, pid)
            k.x("gpu_model_runner: forward", t + 0.22 * dur, 0.6 * dur, "user_annotation", pid, pid)
            k_t = t + 700.0
            if cached and not new:
                kern = ["Cijk_Alik_Bljk_BBS_BH_MT128x128x64_MI16x16x16x1_SN_1LDSB0", "_fwd_kernel_rmsnorm",
                        "ncclDevKernel_Generic_4(ncclDevKernelArgsStorage<4096ul>)", "paged_attention_ll4mi_QKV_mfma16_kernel"] * 6
                k_t = k.graph(t + 0.3 * dur, pid, pid, kern, k_t, 7.0, gpu)
                if rank == 0:
                    truths.append(StepTruth("decode", 0, 0, cached, 0, len(kern)))
                    gl += 1
            else:
                k.x(f"## Call CompiledFxGraph {FX_HASH} ##", t + 0.23 * dur, 0.5 * dur, "user_annotation", pid, pid)
                for j in range(10):
                    k_t = k.launch(t + 0.25 * dur + j * 40, pid, pid, "Cijk_Alik_Bljk_BBS_BH_MT256x256x64_MI32x32x8x1",
                                   k_t + 2, 50.0, gpu, api="hipExtModuleLaunchKernel" if j % 2 else "hipLaunchKernel")
                if rank == 0:
                    truths.append(StepTruth("mixed" if cached else "prefill", new, 0, cached, 0))
            k.x("gpu_model_runner: postprocess", t + 0.85 * dur, 0.1 * dur, "user_annotation", pid, pid)
            t += dur + 300
    return Case("vllm_rocm_tp2_new_cached", k.trace("AMD Instinct MI300X"), truths, tokens_known=False,
                graph_launches=gl * 2, step_pids=(61001, 61002),
                notes="execute_new_{n}_cached_{m}: requests only, no token counts; two TP ranks in parallel")


# ---- SGLang decode only (profile started mid-run), HIP graphs -------------------------------------
SGLANG_BS = [32, 32, 31, 32, 33, 32, 30, 32, 32, 31]


def sglang_decode_only() -> Case:
    k = _Kineto("hip")
    pid, gpu = 733, 0
    k.meta(pid, "sglang::scheduler_TP0", "CPU", pid, "sglang::scheduler_TP0")
    k.meta(gpu, "sglang::scheduler_TP0", "GPU 0")
    t, truths = 500.0, []
    base = "/sgl-workspace/sglang/python/sglang/srt"
    for bs in SGLANG_BS:
        dur = 900.0 + 3 * bs
        k.frame(f"{base}/managers/scheduler.py(2890): run_batch", t - 60, dur + 120, pid, pid)
        k.frame(f"{base}/managers/tp_worker.py(445): forward_batch_generation", t - 40, dur + 60, pid, pid)
        k.frame(f"{base}/model_executor/model_runner.py(3123): forward", t - 20, dur + 30, pid, pid)
        k.x(f"step[DECODE bs={bs}]", t, dur, "user_annotation", pid, pid)
        k.frame(f"{base}/model_executor/model_runner.py(3194): _forward_raw", t + 1, dur - 2, pid, pid)
        k.frame(f"{base}/model_executor/cuda_graph_runner.py(801): replay", t + 20, dur - 60, pid, pid)
        kern = ["_gemm_a16_w16_kernel_BLOCK_SIZE_M_32", "aiter::rmsnorm2d_fwd", "pa_decode_kernel"] * 8
        k.graph(t + 40, pid, pid, kern, t + 600.0, 9.0, gpu)
        truths.append(StepTruth("decode", 0, 0, bs, bs, len(kern)))
        t += dur + 200
    return Case("sglang_decode_only_mi300x", k.trace("AMD Instinct MI300X"), truths, run_start=False,
                graph_launches=len(SGLANG_BS), notes="no prefill step: there is no TTFT to give")


# ---- transformers generate() profiled after its prefill: every pass is a decode ------------------
def _hf_pass(k, t, pid, tid, module, batch, seq, gpu, kv_len):
    dur = 4000.0 + 5 * seq
    k.x(f"nn.Module: {module}_0", t, dur, "python_function", pid, tid)
    k.frame("transformers/models/llama/modeling_llama.py(453): forward", t + 2, dur - 4, pid, tid)
    k.x("aten::embedding", t + 10, 40, "cpu_op", pid, tid,
        **{"Input Dims": [[128256, 2048], [batch, seq], [], [], []], "Input type": ["c10::BFloat16", "long int",
                                                                                   "Scalar", "Scalar", "Scalar"]})
    k.x("aten::scaled_dot_product_attention", t + 100, 200, "cpu_op", pid, tid,
        **{"Input Dims": [[batch, 32, seq, 64], [batch, 8, kv_len, 64], [batch, 8, kv_len, 64]]})
    k.launch(t + 120, pid, tid, "void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64>>", t + 300,
             30.0, gpu)
    return dur


def hf_decode_only() -> Case:
    k = _Kineto("cuda")
    pid, tid, gpu = 9120, 9120, 0
    k.meta(pid, "python3", "CPU", tid, "MainThread")
    t, truths = 100.0, []
    for i in range(8):
        d = _hf_pass(k, t, pid, tid, "LlamaForCausalLM", 4, 1, gpu, 129 + i)
        truths.append(StepTruth("decode", 0, 0, 4, 4))
        t += d + 150
    return Case("hf_llama_decode_only", k.trace("NVIDIA L4"), truths, run_start=False, step_name=r"^nn\.Module: ",
                notes="profiler started after the prompt: input_ids are [4, 1] in every pass")


def hf_profilerstep_loop() -> Case:
    """A hand-written token loop with ``prof.step()`` per pass (so ProfilerStep#N == the forward passes)."""
    k = _Kineto("cuda")
    pid, tid, gpu = 9121, 9121, 0
    k.meta(pid, "python3", "CPU", tid, "MainThread")
    t, truths = 100.0, []
    for i in range(7):
        seq = 37 if i == 0 else 1
        k.x(f"ProfilerStep#{i}", t - 5, 0, "user_annotation", pid, tid)  # its length is set below
        d = _hf_pass(k, t, pid, tid, "Qwen2ForCausalLM", 2, seq, gpu, 37 + i)
        truths.append(StepTruth("prefill", 2, 74, 0, 0) if i == 0 else StepTruth("decode", 0, 0, 2, 2))
        t += d + 150
    # ProfilerStep#i covers pass i and the sampling after it
    steps = [e for e in k.events if e["name"].startswith("ProfilerStep#")]
    passes = [e for e in k.events if e["name"].startswith("nn.Module: ")]
    for s, p in zip(steps, passes):
        s["dur"] = round(p["dur"] + 140, 3)
    return Case("hf_qwen2_profilerstep_loop", k.trace("NVIDIA L4"), truths, step_name=r"^nn\.Module: ",
                notes="ProfilerStep#N one per forward pass; kinds from input_ids shapes")


# ---- steps that alternate between two threads of one process --------------------------------------
def steps_two_threads() -> Case:
    k = _Kineto("cuda")
    pid, gpu = 30500, 0
    threads = [30500, 30611]
    k.meta(pid, "VLLM::EngineCore", "CPU", threads[0], "VLLM::EngineCore")
    k.events.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": threads[1], "args": {"name": "WorkerAsyncOutput_0"}})
    loop = [(2, 300, 0, 0)] + [(0, 0, 2, 2)] * 9
    t, truths = 1000.0, []
    for i, (n, nt, m, mt) in enumerate(loop):
        tid = threads[i % 2]
        dur = 3000.0 if n else 1200.0
        k.x(f"execute_context_{n}({nt})_generation_{m}({mt})", t, dur, "user_annotation", pid, tid)
        k.x("gpu_model_runner: forward", t + 100, dur * 0.6, "user_annotation", pid, tid)
        k.launch(t + 200, pid, tid, LAYER_KERNELS[1], t + 700, 60.0, gpu)
        truths.append(StepTruth("prefill" if n else "decode", n, nt, m, mt))
        t += dur + 80
    return Case("vllm_steps_two_threads", k.trace("NVIDIA H100 80GB HBM3"), truths,
                notes="consecutive steps run on two threads (a thread pool): one sequence, not two")


# ---- vLLM V1 FULL_AND_PIECEWISE graphs, detailed annotation, Triton kernels by cuLaunchKernelEx -------
VLLM_PW_STEPS = [(2, 700, 0, 0), (0, 0, 2, 2), (0, 0, 2, 2), (1, 96, 2, 2), (0, 0, 3, 3), (0, 0, 3, 3), (0, 0, 3, 3)]
PIECES = 4  # piecewise: one graph per stretch of layers between the (eager) attention calls


def vllm_piecewise_graphs() -> Case:
    """Decode steps replay one FULL graph; prefill / mixed steps replay PIECES piecewise graphs with
    eager attention between them; torch.compile's Triton kernels go through the driver API."""
    k = _Kineto("cuda")
    pid, gpu = 77120, 0
    k.meta(pid, "VLLM::EngineCore", "CPU", pid, "VLLM::EngineCore")
    k.meta(gpu, "VLLM::EngineCore", "GPU 0")
    t, truths, gl = 800.0, [], 0
    for n, nt, m, mt in VLLM_PW_STEPS:
        dur = 4200.0 if n else 1300.0
        total = nt + mt
        name = (f"execute_{total}_context_{n}(sq{nt}sk{nt}sqsq{nt * nt // max(n, 1)}sqsk{nt * nt // max(n, 1)})"
                f"_generation_{m}(sq{mt}sk{mt * 300}sqsq{mt}sqsk{mt * 300})")
        k.x(name, t, dur, "user_annotation", pid, pid)
        k.x("gpu_model_runner: forward", t + 0.2 * dur, 0.6 * dur, "user_annotation", pid, pid)
        k_t = t + 650.0
        if n == 0:
            kern = [LAYER_KERNELS[j % len(LAYER_KERNELS)] for j in range(30)]
            k_t = k.graph(t + 0.25 * dur, pid, pid, kern, k_t, 4.0, gpu)
            truths.append(StepTruth("decode", 0, 0, m, mt, len(kern)))
            gl += 1
        else:
            pieces = 0
            for p in range(PIECES):
                kern = ["triton_red_fused__to_copy_add_mean_mul_pow_rsqrt_0", LAYER_KERNELS[1], "triton_poi_fused_mul_silu_1"]
                k_t = k.graph(t + 0.25 * dur + p * 300, pid, pid, kern, k_t + 2, 20.0, gpu)
                pieces += len(kern)
                gl += 1
                if p < PIECES - 1:  # attention between the pieces, eager; a Triton kernel by the driver API
                    k_t = k.launch(t + 0.25 * dur + p * 300 + 120, pid, pid, LAYER_KERNELS[3], k_t + 2, 35.0, gpu)
                    k.corr += 1
                    k.x("cuLaunchKernelEx", t + 0.25 * dur + p * 300 + 160, 6.0, "cuda_driver", pid, pid,
                        correlation=k.corr)
                    k_t = max(k_t, t + 0.25 * dur + p * 300 + 163)
                    k.x("triton_poi_fused_cat_2", k_t + 2, 8.0, "kernel", gpu, 7, correlation=k.corr, device=gpu, stream=7)
                    k_t += 10
            truths.append(StepTruth("mixed" if m else "prefill", n, nt, m, mt, pieces))
        k.x("gpu_model_runner: postprocess", t + 0.85 * dur, 0.1 * dur, "user_annotation", pid, pid)
        t += dur + 250
    return Case("vllm_piecewise_graphs_h200", k.trace("NVIDIA H200"), truths, graph_launches=gl,
                notes="FULL graph per decode step; 4 piecewise graphs per prefill/mixed step; cuLaunchKernelEx")


# ---- SGLang before its step[…] annotation: the with_stack frames are all there is ----------------
SGLANG_OLD_LOOP = [("extend", 4)] + [("decode", 4)] * 5 + [("extend", 1)] + [("decode", 5)] * 5


def sglang_frames_only() -> Case:
    """SGLang's profiler runs with_stack=True; versions before the step[…] annotation leave the
    scheduler's run_batch frames and model_runner's forward_extend / forward_decode below them."""
    k = _Kineto("cuda")
    pid, gpu = 2816, 0
    k.meta(pid, "sglang::scheduler", "CPU", pid, "sglang::scheduler")
    base = "/usr/local/lib/python3.10/dist-packages/sglang/srt"
    t, truths, gl = 300.0, [], 0
    t0 = t
    for mode, bs in SGLANG_OLD_LOOP:
        dur = 5200.0 if mode == "extend" else 1100.0 + 20 * bs
        k.frame(f"{base}/managers/scheduler.py(559): recv_requests", t, 40, pid, pid)
        k.frame(f"{base}/managers/scheduler.py(1006): get_next_batch_to_run", t + 50, 60, pid, pid)
        r0 = t + 120
        k.frame(f"{base}/managers/scheduler.py(1175): run_batch", r0, dur, pid, pid)
        k.frame(f"{base}/managers/tp_worker.py(171): forward_batch_generation", r0 + 5, dur - 10, pid, pid)
        k.frame(f"{base}/model_executor/model_runner.py(1012): forward", r0 + 10, dur - 20, pid, pid)
        k.frame(f"{base}/model_executor/model_runner.py(9{'85' if mode == 'extend' else '70'}): forward_{mode}",
                r0 + 15, dur - 30, pid, pid)
        k.frame(f"{base}/layers/attention/flashinfer_backend.py(4{'12' if mode == 'extend' else '80'}): forward_{mode}",
                r0 + 200, 300, pid, pid)  # the attention backend's method of the same name: not the step's kind
        k_t = r0 + 500.0
        if mode == "decode":
            k.frame(f"{base}/model_executor/cuda_graph_runner.py(434): replay", r0 + 20, dur - 60, pid, pid)
            kern = [LAYER_KERNELS[j % len(LAYER_KERNELS)] for j in range(20)]
            k.graph(r0 + 40, pid, pid, kern, k_t, 5.0, gpu)
            truths.append(StepTruth("decode", 0, 0, 0, 0, len(kern)))
            gl += 1
        else:
            for j in range(8):
                k_t = k.launch(r0 + 600 + j * 50, pid, pid, LAYER_KERNELS[j % len(LAYER_KERNELS)], k_t + 2, 60.0, gpu)
            truths.append(StepTruth("prefill"))
        k.frame(f"{base}/managers/scheduler.py(1226): process_batch_result", r0 + dur + 10, 150, pid, pid)
        t = r0 + dur + 200
    k.frame(f"{base}/managers/scheduler.py(502): event_loop_normal", t0 - 5, t - t0 + 10, pid, pid)
    return Case("sglang_frames_only_h100", k.trace("NVIDIA H100 80GB HBM3"), truths, tokens_known=False,
                graph_launches=gl, step_name=r"scheduler\.py\(\d+\): run_batch$",
                notes="no step annotations: run_batch frames are the steps, forward_extend/forward_decode the kind")


# ---- TensorRT-LLM PyTorch backend: packed token ids, generation steps replayed as CUDA graphs ----
TRTLLM_LOOP = [("ctx", 3, 1536), ("gen", 3, 3), ("gen", 3, 3), ("mix", 1, 512 + 3), ("gen", 4, 4), ("gen", 4, 4),
               ("ctx", 2, 800)]


def trtllm_packed() -> Case:
    """TLLM_TORCH_PROFILE_TRACE: record_shapes and with_modules, no stack. Eager iterations run the
    model's modules (``nn.Module: LlamaForCausalLM_0``) on packed 1-D input_ids, which say the token
    count, not the kind; generation-only iterations replay a CUDA graph and leave no module event."""
    k = _Kineto("cuda")
    pid, gpu = 5127, 0
    k.meta(pid, "python3", "CPU", pid, "python3")
    t, truths, gl = 400.0, [], 0
    for mode, reqs, toks in TRTLLM_LOOP:
        if mode == "gen":  # graph replay: the module tree is not run in Python
            k.x("aten::copy_", t, 20, "cpu_op", pid, pid, **{"Input Dims": [[reqs], [reqs]]})
            kern = [LAYER_KERNELS[j % len(LAYER_KERNELS)] for j in range(16)]
            k.graph(t + 40, pid, pid, kern, t + 300, 6.0, gpu)
            gl += 1
            t += 1500
            continue
        dur = 3000.0 + toks
        k.x("nn.Module: LlamaForCausalLM_0", t, dur, "python_function", pid, pid)
        k.x("nn.Module: LlamaModel_0", t + 5, dur - 300, "python_function", pid, pid)
        k.x("aten::embedding", t + 10, 30, "cpu_op", pid, pid,
            **{"Input Dims": [[128256, 4096], [toks], [], [], []],
               "Input type": ["c10::BFloat16", "int", "Scalar", "Scalar", "Scalar"]})
        k.x("trtllm::attention", t + 100, 200, "cpu_op", pid, pid, **{"Input Dims": [[toks, 6144]]})
        for j in range(4):
            k.launch(t + 150 + 40 * j, pid, pid, LAYER_KERNELS[j], t + 400 + 70 * j, 60.0, gpu)
        truths.append(StepTruth("unknown"))
        t += dur + 300
    return Case("trtllm_pytorch_packed_h100", k.trace("NVIDIA H100 80GB HBM3", {"with_stack": 0, "with_modules": 1}),
                truths, tokens_known=False, graph_launches=gl, step_name=r"^nn\.Module: LlamaForCausalLM", run_start=False,
                notes="eager iterations only are module forwards; 1-D input_ids do not tell prefill from decode")


CASES = [vllm_v1_profilerstep, vllm_rocm_tp2_new_cached, sglang_decode_only, hf_decode_only,
         hf_profilerstep_loop, steps_two_threads, vllm_piecewise_graphs, sglang_frames_only,
         trtllm_packed, vllm_v1_five_steps]


def main(folder: str = "/work/bench/hserve") -> None:
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    for make in CASES:
        c = make()
        p = c.write(out)
        (out / f"{c.name}.truth.json").write_text(json.dumps({"steps": [s.__dict__ for s in c.steps],
                                                               "graph_launches": c.graph_launches,
                                                               "tokens_known": c.tokens_known,
                                                               "run_start": c.run_start, "notes": c.notes}))
        print(p, p.stat().st_size)


if __name__ == "__main__":
    main()
