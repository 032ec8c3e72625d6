"""One forward pass of a model with an LM head (a scoring / benchmark forward: TraceLens's BERT
LM-head trace) generates nothing: it is no prefill and has no TTFT. Two passes, the second one
token per sequence, are generation (the control)."""

from __future__ import annotations

from pathlib import Path

from tests.core.test_serving_diagnosis import NO_LLM_WORDS, _forward, _frame, load_events
from vtui.analysis.report.insights import compute_insights
from vtui.analysis.steps.detect import analyse_steps
from vtui.analysis.steps.serving import analyse_serving

MODEL = "transformers/models/roberta/modeling_roberta.py(1210): forward"


def _passes(dims: list[list[int]]) -> list[dict]:
    events: list[dict] = []
    for k, d in enumerate(dims):
        t = 100.0 + k * 10_000.0
        _forward(events, MODEL, t, 9_000.0, d)
        events.append(_frame("nn.Module: RobertaForCausalLM_0", t + 1, 8_990.0))
    return events


def test_one_forward_of_an_lm_head_model_is_no_serving_step(tmp_path: Path):
    events = _passes([[1, 141]])
    # the shape: one model forward, an LM-head module inside it, no generate()
    assert sum(e["name"] == MODEL for e in events) == 1 and not any("generate" in e["name"] for e in events)
    store = load_events(tmp_path, events)
    sv = analyse_serving(store, analyse_steps(store))
    assert not sv.kinds_known and sv.ttft_ns is None
    text = " ".join(f.message + " " + f.hint for f in compute_insights(store).findings)
    assert not any(w in text for w in NO_LLM_WORDS)


def test_an_lm_head_model_feeding_one_token_after_the_first_pass_generates(tmp_path: Path):
    store = load_events(tmp_path, _passes([[1, 141], [1, 1], [1, 1]]), "gen.json")
    sv = analyse_serving(store, analyse_steps(store))
    assert sv.present and [s.kind for s in sv.steps] == ["prefill", "decode", "decode"]
    assert sv.ttft_ns is not None
