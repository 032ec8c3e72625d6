"""One classifier for communication kernels, used by the GPU breakdown, precision, outliers, the
critical path and ranks. Shaped from a vLLM eager TP8 decode on B200: symmetric-memory all-reduce
(``multimem_all_reduce_kernel``) between bf16 GEMMs; the true shares by plain Python over the events."""

from __future__ import annotations

import re._constants as sre_constants
import re._parser as sre_parse
from pathlib import Path

import pytest

from tests.helpers import load_events
from vtui.analysis.base.comm import COMM_FAMILIES, COMM_KERNEL, comm_family, is_comm
from vtui.analysis.gpu.activity import analyse_gpu, precision_of
from vtui.analysis.gpu.jump_lists import kernel_outliers
from vtui.analysis.ranks.tables import collective_kind
from vtui.analysis.why.critical_graph import COLLECTIVE
from vtui.analysis.why.findings import gpu_findings

NAMES = {
    "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevComm*, unsigned long, ncclWork*)": ("nccl", "all_reduce"),
    "rcclGenericKernel<1, false>(ncclDevComm*, unsigned long, ncclWork*)": ("rccl", None),
    "void vllm::cross_device_reduce_1stage<__nv_bfloat16, 8>(vllm::RankData*, vllm::RankSignals, "
    "vllm::Signal*, __nv_bfloat16*, int, int)": ("custom all-reduce", "all_reduce"),
    "void c10d::symmetric_memory::multimem_all_reduce_kernel<c10::BFloat16, 8, 4>(...)": ("symmetric memory", "all_reduce"),
    "void quickreduce::allreduce_prototype_twoshot<quickreduce::CodecFP, false>(...)": ("custom all-reduce", "all_reduce"),
    "void mscclpp::allreduce8<__half>(__half*, ...)": ("msccl++", "all_reduce"),
    "nvshmemi_transfer_rma_kernel": ("nvshmem", None),
    "void deep_ep::intranode::dispatch<8, 768, 8192>(int4*, float*, ...)": ("deepep", "all_to_all"),
    "oneccl_allreduce_kernel": ("oneccl", "all_reduce"),
    "ccl_kernel_allgather": ("oneccl", "all_gather"),
}
COMPUTE = ["sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64", "void at::native::reduce_kernel<512, 1>(...)",
           "void vllm::fused_add_rms_norm_kernel<c10::BFloat16>(...)", "flash_fwd_splitkv_kernel", "void cutlass::Kernel<x>(x)"]


def test_the_classifier_knows_every_library_and_no_compute_kernel():
    for name, (family, kind) in NAMES.items():
        assert is_comm(name) and comm_family(name) == family, name
        assert COLLECTIVE.search(name), name  # the critical path's rule is this one
        assert precision_of(name) == "communication", name
        if kind:
            assert collective_kind(name) == kind, name
    for name in COMPUTE:
        assert not is_comm(name) and comm_family(name) is None and precision_of(name) != "communication", name


def _nested_repeats(parsed) -> list[str]:
    """Repeats (``*``, ``+``, ``{m,n}``) that hold another repeat: the shape that backtracks
    exponentially. Read from the parsed pattern, not timed."""
    found = []

    def walk(items, inside: bool) -> None:
        for op, av in items:
            if op in (sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT, sre_constants.POSSESSIVE_REPEAT):
                if inside:
                    found.append(str(op))
                walk(av[2], True)
            elif op == sre_constants.SUBPATTERN:
                walk(av[3], inside)
            elif op == sre_constants.BRANCH:
                for branch in av[1]:
                    walk(branch, inside)

    walk(parsed, False)
    return found


def test_the_patterns_are_linear_on_hostile_names():
    for _label, pattern in [*COMM_FAMILIES, ("all", COMM_KERNEL.pattern)]:
        assert not _nested_repeats(sre_parse.parse(pattern)), pattern
    assert _nested_repeats(sre_parse.parse(r"(a+)+$"))  # the check sees the classic catastrophic shape
    # and the answers on long hostile names are the plain ones
    assert not is_comm("a" * 100_000 + "!") and comm_family("all_" * 10_000) is None
    assert comm_family("x" * 10_000 + "ncclDevKernel") == "nccl"


def _kernel(name: str, ts: float, dur: float) -> dict:
    return {"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": ts, "dur": dur, "args": {"stream": 7}}


def test_symmetric_memory_all_reduce_is_communication_not_compute_nor_an_outlier(tmp_path: Path):
    ar = "void c10d::symmetric_memory::multimem_all_reduce_kernel<c10::BFloat16, 8, 4>(...)"
    gemm = COMPUTE[0]
    events, t = [], 0.0
    for i in range(6):
        events.append(_kernel(gemm, t, 40.0))
        t += 41.0
        events.append(_kernel(ar, t, 10.0 if i else 90.0))  # the first waits 9× longer for a peer
        t += 91.0 if not i else 11.0
    g = analyse_gpu(load_events(tmp_path, events))
    # plain Python: the all-reduce's share of kernel time
    total = sum(e["dur"] for e in events)
    comm = sum(e["dur"] for e in events if e["name"] == ar)
    assert g.comm_ns == round(comm * 1000) and g.comm_pct == pytest.approx(100 * comm / total)
    assert {p.name: p.total_ns for p in g.precision}["communication"] == round(comm * 1000)
    (f,) = [f for f in gpu_findings(g) if f.kind == "communication"]
    assert f.message.startswith(f"communication kernels take {100 * comm / total:.1f}% of kernel time")
    assert "multimem_all_reduce_kernel" in f.message
    store = load_events(tmp_path, events, "again.json")
    assert [store.name(o.row) for o in kernel_outliers(store)] == []  # a long collective waited: not an outlier
