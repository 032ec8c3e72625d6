"""Soak test (not CI): random key presses against the app on a big trace, sampling memory.

Drives `VtuiApp` headless through Textual's Pilot for ``--seconds`` (default 300) with a
seeded random mix of the keys the app binds — zoom, pan, selection moves, flows, ranges,
panes, marks, search / filter / go-to prompts (with odd text), hide/pin, help, warnings and
insights screens; not the export keys, which write files — and
samples the process RSS every ``--sample`` seconds. It reports whether the app crashed
and RSS first/last/max, plus the slope over the second half (flat memory ≈ 0 MiB/min).

    python benchmarks/soak.py [TRACE] [--seconds 300] [--seed 0] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
BIG = ROOT.parent / "shared" / "traces" / "generated" / "hf_llama_big.json.gz"

from vtui.ui.app import VtuiApp  # noqa: E402

# Plain keys and their weights; prompts ("g", "t") are typed into separately.
KEYS = {
    "w": 6, "s": 6, "a": 5, "d": 5, "f": 3, "0": 2, "h": 6, "l": 6, "left": 4, "right": 4, "j": 6, "k": 6,
    "up": 3, "down": 3, "full_stop": 4, "comma": 4, "right_square_bracket": 3, "left_square_bracket": 3,
    "pageup": 2, "pagedown": 2, "tab": 2, "shift+tab": 1, "space": 1, "p": 1, "enter": 1,
    "r": 2, "R": 1, "shift+left": 1, "shift+right": 1, "escape": 1, "1": 1, "2": 2, "3": 1, "m": 2, "M": 1,
    "n": 1, "N": 1,
}  # not e / x: their prompts write files
MODAL = ["question_mark", "W", "i"]  # opened, then closed with escape
PROMPT_TEXT = ["12.5ms", "300us", "2s", "0", "-5ms", "1e9s", "abc", "[/]", "", "stream", "thread|python", "(", "gpu.*"]


def rss_mib() -> float:
    """Resident set size of this process (Linux /proc)."""
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / (1 << 20)


async def soak(path: Path, seconds: float, seed: int, sample_every: float) -> dict:
    rng = random.Random(seed)
    keys, weights = list(KEYS), list(KEYS.values())
    app = VtuiApp(path)
    result: dict = {"trace": str(path), "seconds": seconds, "seed": seed, "crashed": False, "error": None}
    samples: list[tuple[float, float]] = []
    presses = 0
    t_start = time.perf_counter()
    try:
        async with app.run_test(size=(160, 48)) as pilot:
            await app.workers.wait_for_complete()
            await pilot.pause()
            result["load_s"] = round(time.perf_counter() - t_start, 2)
            if app.store is None:
                raise RuntimeError(f"trace did not load: {app.load_error}")
            result["slices"] = len(app.store.slices)
            t0 = time.perf_counter()
            next_sample = t0
            while (now := time.perf_counter()) - t0 < seconds:
                if now >= next_sample:
                    samples.append((round(now - t0, 1), round(rss_mib(), 1)))
                    next_sample += sample_every
                if not app.is_running:
                    raise RuntimeError(f"app stopped (return code {app.return_code})")
                roll = rng.random()
                if roll < 0.03:
                    await pilot.press(rng.choice(MODAL))
                    await pilot.press("j", "k", "escape")
                    presses += 4
                elif roll < 0.06:
                    await pilot.press(rng.choice(["g", "t", "slash"]), *rng.choice(PROMPT_TEXT), rng.choice(["enter", "escape"]))
                    presses += 3
                else:
                    await pilot.press(*rng.choices(keys, weights, k=4))
                    presses += 4
            samples.append((round(time.perf_counter() - t0, 1), round(rss_mib(), 1)))
    except Exception as exc:
        result["crashed"] = True
        result["error"] = f"{type(exc).__name__}: {exc}"
        result["traceback"] = traceback.format_exc()
    result["key_presses"] = presses
    result["rss_samples"] = samples
    if samples:
        values = [v for _, v in samples]
        result["rss_first_mib"], result["rss_last_mib"], result["rss_max_mib"] = values[0], values[-1], max(values)
        half = samples[len(samples) // 2 :]
        if len(half) >= 2 and half[-1][0] > half[0][0]:
            result["rss_slope_mib_per_min_2nd_half"] = round(_slope(half) * 60, 2)
    return result


def _slope(points: list[tuple[float, float]]) -> float:
    """Least-squares slope of (t, value)."""
    n = len(points)
    mt = sum(t for t, _ in points) / n
    mv = sum(v for _, v in points) / n
    var = sum((t - mt) ** 2 for t, _ in points)
    return sum((t - mt) * (v - mv) for t, v in points) / var if var else 0.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("trace", nargs="?", default=str(BIG))
    parser.add_argument("--seconds", type=float, default=300.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sample", type=float, default=10.0, help="seconds between RSS samples")
    parser.add_argument("--json", action="store_true", help="print the full result as JSON")
    opts = parser.parse_args()
    path = Path(opts.trace)
    if not path.exists():
        print(f"soak: {path}: no such file", file=sys.stderr)
        return 2
    result = asyncio.run(soak(path, opts.seconds, opts.seed, opts.sample))
    if opts.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"{result['trace']}: {result.get('slices', 0):,} slices, loaded in {result.get('load_s', '?')} s")
        print(f"{result['key_presses']:,} key presses in {opts.seconds:.0f} s (seed {opts.seed}); "
              f"crashed: {'YES — ' + str(result['error']) if result['crashed'] else 'no'}")
        if result["rss_samples"]:
            print(f"RSS MiB first {result['rss_first_mib']}, last {result['rss_last_mib']}, max {result['rss_max_mib']}, "
                  f"slope over 2nd half {result.get('rss_slope_mib_per_min_2nd_half', '?')} MiB/min")
        if result["crashed"]:
            print(result.get("traceback", ""), file=sys.stderr)
    return 1 if result["crashed"] else 0


if __name__ == "__main__":
    sys.exit(main())
