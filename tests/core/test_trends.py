"""Step trends on hand-made durations whose verdicts and figures are known by hand, edges included."""

from __future__ import annotations

import numpy as np
import pytest

from vtui.analysis.steps.trends import analyse_trend, fit_slope, spike_threshold


def _run(durations: list[int], gap: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Back-to-back steps (``gap`` ns apart, negative: overlapping) from their durations."""
    starts, t = [], 0
    for d in durations:
        starts.append(t)
        t += d + gap
    starts_a = np.array(starts, dtype=np.int64)
    return starts_a, starts_a + np.array(durations, dtype=np.int64)


def test_fit_slope_on_few_and_flat_values():
    assert fit_slope(np.array([5.0])) == (0.0, 0.0)
    assert fit_slope(np.array([1, 3])) == (2.0, pytest.approx(1.0))  # two points: a line through both
    assert fit_slope(np.array([7, 7, 7])) == (0.0, 0.0)  # no spread: r is 0, not a division by zero
    slope, r = fit_slope(np.array([1, 2, 4]))
    assert slope == pytest.approx(1.5) and r == pytest.approx(np.corrcoef([0, 1, 2], [1, 2, 4])[0, 1])


def test_spike_threshold_is_five_robust_sigmas_or_one_and_a_half_medians():
    assert spike_threshold(np.array([10.0, 10, 10, 11, 12])) == 15.0  # MAD 0: 1.5 × the median
    # median 14, MAD 2: 14 + 5 × 1.4826 × 2
    assert spike_threshold(np.array([10.0, 12, 14, 16, 18])) == pytest.approx(14 + 5 * 1.4826 * 2)


def test_one_step_has_no_trend_and_two_have_gaps_only():
    one = analyse_trend(*_run([100]))
    assert (one.trend, one.slope_ns_per_step, one.r, one.rise_pct, one.gap_total_ns, one.first_ratio) == ("n/a", 0.0, 0.0, 0.0, 0, 0.0)
    two = analyse_trend(*_run([300, 100], gap=50))
    assert (two.trend, two.gap_total_ns, two.gap_max_ns, two.slow_first) == ("n/a", 50, 50, True)
    assert two.gap_pct == pytest.approx(100 * 50 / 450) and two.first_ratio == 3.0


def test_gaps_sum_the_idle_time_between_steps_never_their_overlap():
    t = analyse_trend(*_run([10, 10, 10, 10], gap=-2))  # overlapping steps: no gap, not a negative one
    assert (t.gap_total_ns, t.gap_max_ns, t.gap_pct) == (0, 0, 0.0)
    starts = np.array([100, 120, 150, 160])  # not from 0: the span is first start to last end
    t = analyse_trend(starts, starts + 10)
    assert (t.gap_total_ns, t.gap_max_ns) == (10 + 20 + 0, 20) and t.gap_pct == pytest.approx(100 * 30 / 70)


def test_zero_length_steps_give_no_ratio_and_no_slow_first():
    t = analyse_trend(*_run([5, 0, 0, 0], gap=1))
    assert (t.first_ratio, t.slow_first, t.rise_pct, t.trend) == (0.0, False, 0.0, "flat")


def test_slow_first_from_three_times_the_median_of_the_others():
    assert analyse_trend(*_run([30, 10, 10, 10])).slow_first
    t = analyse_trend(*_run([29, 10, 10, 10]))
    assert not t.slow_first and t.first_ratio == pytest.approx(2.9)


def test_a_value_on_the_threshold_is_not_a_spike():
    rest = [10] * 9
    t = analyse_trend(*_run([10, *rest, 15]))  # threshold 15 (MAD 0): 15 is not above it
    assert t.spikes == [] and t.spike_threshold_ns == 15.0 and t.trend == "flat"
    t = analyse_trend(*_run([10, *rest, 16]))
    assert t.spikes == [10] and t.trend == "spiky"


@pytest.mark.parametrize("rest, trend", [
    ([14, 15, 16, 17, 18], "staircase"),  # rise 4 = 25% of the median 16, r = 1: on the edge, in
    ([18, 17, 16, 15, 14], "decreasing"),
    ([140, 150, 160, 170, 179], "flat"),  # rise 39 < 25% of 160
    ([179, 170, 160, 150, 140], "flat"),
])
def test_staircase_and_decreasing_from_a_quarter_of_the_median(rest, trend):
    t = analyse_trend(*_run([100, *rest]))
    assert t.trend == trend
    slope, r = fit_slope(np.array(rest, dtype=float))
    assert t.slope_ns_per_step == slope and t.r == r
    assert t.rise_pct == pytest.approx(100 * slope * 4 / np.median(rest))


def test_a_weak_fit_is_not_a_staircase():
    t = analyse_trend(*_run([100, 10, 30, 10, 30, 10, 30, 10, 31, 14, 32]))  # rises, but r is low
    assert t.rise_pct > 25 and t.r < 0.6 and t.trend == "flat"
