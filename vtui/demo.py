"""The bundled demo trace, opened when vtui runs with no argument: one vLLM decode step replayed
through a FULL CUDA/HIP graph, with the graph's capture beside it (``capture_traces/``, found
as for any trace) so that Insights names the replayed kernels' operators."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

DEMO_NAME = "demo_vllm_decode_graph_replay.json.gz"
ATTRIBUTION = (
    "vLLM decode step (batch 32) replayed through a FULL HIP graph on an AMD MI300X, PyTorch profiler; "
    "from AMD-AGI/TraceLens (MIT) tests/traces/inference/vllm_decode_full/ — see vtui/data/LICENSE-TraceLens.md."
)


def demo_trace_path() -> Path:
    return Path(str(resources.files("vtui") / "data" / DEMO_NAME))
