"""The small defects of issue 24, each read where the user reads it: the regex error in the
user's own pattern, no "1 steps", nsys's "no stream" id not shown as a stream number."""

from __future__ import annotations

import re
import sqlite3

from tests.app.screen import read_screen
from tests.helpers import X, answer_prompt, load_events, settle, write_trace
from vtui.analysis.report.insights import compute_insights
from vtui.load.trace import load_trace
from vtui.present.insights_text import steps_lines
from vtui.store.slicetime import time_range
from vtui.ui.app import VtuiApp


async def test_a_bad_regex_is_reported_in_the_users_own_terms(tmp_path):
    path = write_trace(tmp_path, [X("engine_step", 0, 10), X("aten::mm", 2, 3)])
    app = VtuiApp(path, store=load_trace(path, cache=False))
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        await pilot.press("slash")
        await answer_prompt(pilot, "(foo")
        await settle(pilot)
        messages = [n.message for n in app._notifications]
        assert any(m.startswith("invalid regex '(foo'") and "missing )" in m for m in messages), messages
        assert not any("(?i)" in m for m in messages)
        assert "searching" not in "\n".join(read_screen(app).text)


def test_one_step_is_one_step_not_one_steps(tmp_path):
    store = load_events(tmp_path, [X("engine_step", i * 100, 90) for i in range(4)])
    rows = sorted(int(store.slices.start_ns[r]) for r in range(len(store.slices)))
    ins = compute_insights(store, time_range(store, rows[1], rows[1] + 95_000))  # a range holding one step start
    text = "\n".join(steps_lines(ins))
    assert "· 1 step\n" in text and not re.search(r"(?<![\d.,])1 steps", text), text


def test_nsys_no_stream_id_is_not_shown_as_a_stream(tmp_path):
    path = tmp_path / "nostream.sqlite"
    con = sqlite3.connect(path)
    con.executescript("""
        CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT);
        INSERT INTO StringIds VALUES (1, 'gemm');
        CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INT, end INT, deviceId INT, streamId INT, demangledName INT);
        INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (100, 200, 0, 7, 1), (300, 400, 0, 4294967295, 1);
    """)
    con.commit()
    con.close()
    store = load_trace(path, cache=False)
    titles = [t.title for t in store.tracks if t.kind == "gpu"]
    assert len(titles) == 2 and not any("4294967295" in t for t in titles), titles


async def test_the_footer_never_cuts_a_key_mid_word(tmp_path):
    from vtui.ui.keys import keys_in

    path = write_trace(tmp_path, [X("engine_step", 0, 10)])
    app = VtuiApp(path, store=load_trace(path, cache=False))
    words = [k.description for k in keys_in("timeline") if k.footer]
    async with app.run_test(size=(80, 24)) as pilot:
        for size in ((80, 24), (123, 30)):
            await pilot.resize_terminal(*size)
            await settle(pilot, 2)
            line = read_screen(app).text[-1]
            assert "palette" in line
            shown = [w for w in words if w in line]
            assert len(shown) >= 3, line
            head = line.split("▏")[0].split("^p")[0].rstrip()  # what comes before the palette key
            assert any(head.endswith(w) for w in words), line  # the last key shown is whole, not "Pa"


def test_top_kernels_with_one_long_head_print_apart(tmp_path):
    from vtui.present.insights_text import gpu_lines

    head = "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT32x32x256_MI16x16x1_SN_LDSB1_AFC1_AFEM1_"
    names = [head + "NTA0_WG32_8_1", head + "NTA4_WG32_8_1"]
    events = [X(n, 10 + 100 * i, 50 + i, cat="kernel", pid=0, tid=7) for i, n in enumerate(names)]
    store = load_events(tmp_path, events)
    text = gpu_lines(compute_insights(store))
    rows = [line for line in text if line.strip().startswith("Cijk")]
    assert len(rows) == 2
    shown = [r.strip().split("  ")[0] for r in rows]
    assert shown[0] != shown[1] and all(s.endswith("_WG32_8_1") for s in shown), shown


async def test_footer_keys_are_born_with_the_footers_style(tmp_path, monkeypatch):
    """Each key bound to the footer's ``compact`` restyled itself on mount (79 style updates before
    the first frame, ~0.1 CPU-s); born with the value, the keys look the same and cost 7."""
    from textual.app import App
    from textual.widgets._footer import FooterKey

    from vtui.ui.widgets.footer import Footer

    calls = []
    real = App.update_styles
    monkeypatch.setattr(App, "update_styles", lambda self, *a, **k: (calls.append(1), real(self, *a, **k))[1])
    path = write_trace(tmp_path, [X("engine_step", 0, 10)])
    app = VtuiApp(path, store=load_trace(path, cache=False))
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot, 2)
        footer = app.query_one(Footer)
        keys = list(app.query(FooterKey))
        palette = [k for k in keys if k.has_class("-command-palette")]
        assert len(keys) >= 4 and len(palette) == 1
        assert all(k.has_class("-compact") == footer.compact for k in keys if k not in palette)
        assert palette[0].has_class("-compact")  # Textual's palette key: compact, not bound
        assert "palette" in read_screen(app).text[-1]
        assert len(calls) < 30, len(calls)
