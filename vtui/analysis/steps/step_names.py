"""What an engine's step annotation says: requests and tokens of the prefill (context) and decode
(generation) parts of the batch.

Forms seen in real traces:
- vLLM ``execute_context_{n}({tok})_generation_{m}({tok})``: n context requests with tok query tokens,
  m generation requests with tok tokens.
- vLLM on B200 ``execute_context_1(888_788544)_generation_0(0)``: the token group is
  ``{tokens}_{Σ tokens²}`` (888² = 788,544: the sum of squared query lengths, for attention cost).
- vLLM detailed ``execute_{T}_context_{n}(sq{q}sk{k}sqsq{..}sqsk{..})_generation_{m}(sq{q}sk{k}…)``:
  T scheduled tokens; sq = query tokens, sk = key (context) tokens, then Σsq² and Σsq·sk.
- vLLM (2025) ``execute_new_{n}_cached_{m}``: n new requests (their prefill), m cached ones (already
  running: decode, or a later chunk of a chunked prefill, which the name does not tell apart); no
  token counts, so the tokens stay 0 (unknown) and the kind follows the requests.
- SGLang ``step[DECODE bs=32]``, ``step[EXTEND bs=15 toks=15360]`` (EXTEND/PREFILL: prefill;
  DECODE: decode, one token per request unless ``toks`` says otherwise; MIXED: both, tokens filed
  as prefill since the split is not written; IDLE: nothing).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

PREFILL, DECODE, MIXED, UNKNOWN = "prefill", "decode", "mixed", "unknown"
KINDS = (PREFILL, DECODE, MIXED, UNKNOWN)

# Engines' step frames (with_stack) where no step annotation is written: SGLang's scheduler
# run_batch (SGLang profiles with_stack=True; versions before its step[…] annotation leave only
# frames), vLLM V1's EngineCore.step (kind not named below it).
ENGINE_FRAME_REGEX = (r"(?:^|/)sglang/srt/managers/scheduler\.py\(\d+\): run_batch$"
                      r"|(?:^|/)vllm/v1/engine/core\.py\(\d+\): step(?:_with_batch_queue)?$")
# Frames below a step frame that name its kind, first match wins (the attention backends' methods of
# the same names are not the model runner's and do not count).
FRAME_KINDS: list[tuple[re.Pattern[str], str]] = []  # filled below, after the kinds are defined

# The step-finder's pattern for every form above (vtui.analysis.steps.detect).
ANNOTATION_REGEX = r"^execute_(?:\d+_)?context_\d+|^execute_new_\d+_cached_\d+|^step\[[A-Za-z_]+\b"

# At most 15 digits: a hostile name cannot make an int beyond int64 sums (or Python's digit limit).
_N = r"(\d{1,15})(?!\d)"
_VLLM = re.compile(rf"^execute_(?:\d{{1,15}}_)?context_{_N}\(([^)]*)\)(?:_generation_{_N}\(([^)]*)\))?")
_NEW_CACHED = re.compile(rf"^execute_new_{_N}_cached_{_N}")
_SGLANG = re.compile(r"^step\[([A-Za-z_]+)\b([^\]]*)\]")
_FIELD = re.compile(rf"\b(bs|toks|tokens)={_N}")
_SQ = re.compile(rf"^sq{_N}")
_LEAD = re.compile(rf"^{_N}")


FRAME_KINDS += [
    # SGLang ForwardMode.EXTEND (prefill; a --enable-mixed-chunk MIXED batch also runs forward_extend)
    (re.compile(r"(?:^|/)sglang/srt/model_executor/model_runner\.py\(\d+\): forward_extend$"), PREFILL),
    (re.compile(r"(?:^|/)sglang/srt/model_executor/model_runner\.py\(\d+\): forward_decode$"), DECODE),
]


def frame_kind(name: str) -> str | None:
    """The step kind a frame's name tells (FRAME_KINDS); None for any other frame."""
    return next((kind for pat, kind in FRAME_KINDS if pat.search(name)), None)


@dataclass(frozen=True)
class StepTokens:
    prefill_requests: int = 0
    prefill_tokens: int = 0
    decode_requests: int = 0
    decode_tokens: int = 0
    known: bool = False  # the name said something (else: no annotation, kind unknown)
    fixed_kind: str = ""  # the engine named the kind outright (SGLang MIXED: the split is not written)

    @property
    def kind(self) -> str:
        if self.fixed_kind:
            return self.fixed_kind
        return kind_of(self.prefill_requests + self.prefill_tokens, self.decode_requests + self.decode_tokens,
                       self.known)


def kind_of(prefill: int, decode: int, known: bool = True) -> str:
    if not known or (prefill <= 0 and decode <= 0):
        return UNKNOWN
    if prefill > 0 and decode > 0:
        return MIXED
    return PREFILL if prefill > 0 else DECODE


def _tokens(group: str | None) -> int:
    """Query tokens of a context/generation group: ``sq{q}…`` (detailed) or ``{tok}[_{Σtok²}]``."""
    if not group:
        return 0
    m = _SQ.match(group) or _LEAD.match(group)
    return int(m.group(1)) if m else 0


def parse_step_name(name: str) -> StepTokens | None:
    """Requests and tokens from a step annotation; None when the name is no known form."""
    m = _VLLM.match(name)
    if m:
        n, m_req = int(m.group(1)), int(m.group(3) or 0)
        return StepTokens(n, _tokens(m.group(2)), m_req, _tokens(m.group(4)), True)
    m = _NEW_CACHED.match(name)
    if m:  # requests only: no token counts in this form
        return StepTokens(int(m.group(1)), 0, int(m.group(2)), 0, True)
    m = _SGLANG.match(name)
    if m:
        mode = m.group(1).upper()
        fields = {k: int(v) for k, v in _FIELD.findall(m.group(2))}
        bs = fields.get("bs", 0)
        toks = fields.get("toks", fields.get("tokens", 0))
        if mode in ("EXTEND", "PREFILL"):
            return StepTokens(bs, toks, 0, 0, True)
        if mode == "DECODE":
            return StepTokens(0, 0, bs, toks or bs, True)
        if mode == "MIXED":
            return StepTokens(bs, toks, 0, 0, True, fixed_kind=MIXED)
        return StepTokens()  # IDLE, speculative-decoding modes: no kind to tell
    return None
