"""What the store build skipped or repaired, as data: one rule, a count and an example.

The build's steps return these; the text the user reads is made from them here, in one place.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class BuildWarning:
    rule: str  # a key of RULES
    count: int  # events (or values, slices) the rule hit
    example: str = ""  # what the hit looks like, where the text names it ("" : none)

    @property
    def text(self) -> str:
        head, tail = RULES[self.rule]
        return head.format(count=self.count, example=self.example) + (tail.format(example=self.example)
                                                                        if self.example else "")


# rule -> (the text, from the count and the example; a suffix added only when there is an example)
RULES: dict[str, tuple[str, str]] = {
    "unusable_ts": ("{count:,} events without a usable ts were skipped",
                    " ({example} of them more than 126 years away from most others)"),
    "metadata_conflict": ("{count:,} process/thread names or sort indices were given again with a different "
                          "value (the last one wins)", ""),
    "bad_dur": ("{count:,} X events had a negative or huge dur (skipped, as Perfetto skips them)", ""),
    "open_x": ("{count:,} X events had no dur (still open when tracing stopped?): they run to the trace end", ""),
    "unmatched_end": ("{count:,} E events had no open B on their thread (ignored)", ""),
    "unclosed_begin": ("{count:,} B events were never closed (they run to the trace end)", ""),
    "async_unmatched_end": ("{count:,} async {example} ends had no open begin (ignored)", ""),
    "async_unclosed_begin": ("{count:,} async {example} begins were never ended (they run to the trace end)", ""),
    "async_anonymous": ("{count:,} async events without an id or a pid were skipped (as Perfetto skips them)", ""),
    "counter_not_number": ("{count:,} counter values were not numbers (or past the float range; skipped)", ""),
    "unknown_phase": ("{count:,} events with unknown phases were skipped", ": {example}"),
    "flow_without_id": ("{count:,} flow events without an id were skipped (as Perfetto skips them)", ""),
    "flow_end_without_start": ("{count:,} flow ends had no start (launched before the trace?)", ""),
    "flow_end_after_end": ("{count:,} flow ends reuse the id of a flow already ended (one start, many ends: a "
                           "CUDA/HIP graph's kernels); the first end takes the arrow", ""),
    "flow_start_without_end": ("{count:,} flow starts had no end", ""),
    "flow_rebound": ("{count:,} flows joined slices with different correlation ids (moved to the slice at the "
                     "same point with the matching id)", ""),
    "flow_correlation_disagree": ("{count:,} flows join slices with different correlation ids (kept as the flow "
                                  "events say: no slice there has the matching id)", ""),
    "overlapping_slices": ("{count:,} slices partly overlap a neighbour (shown on extra lanes)", ""),
}


def warning_if(rule: str, count: int, example: str = "") -> list[BuildWarning]:
    """The warning as a list of one, or none when the rule hit nothing (steps extend with it)."""
    return [BuildWarning(rule, count, example)] if count else []
