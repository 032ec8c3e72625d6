"""The bundled demo trace, opened when vtui runs with no argument."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

DEMO_NAME = "demo_hf_llama_steploop.json.gz"
ATTRIBUTION = (
    "hf_llama_steploop: PyTorch profiler (torch 2.13, CPU) on a randomly initialised Llama run "
    "through Hugging Face transformers — 32 engine_step regions (schedule / execute_model / sample / "
    "update_kv_cache). From the vtui shared trace set (generated/MANIFEST.md)."
)


def demo_trace_path() -> Path:
    return Path(str(resources.files("vtui") / "data" / DEMO_NAME))
