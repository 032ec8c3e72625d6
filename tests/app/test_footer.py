"""The footer's keys: never a key cut mid-word at any width, and the keys born with the footer's style."""

from __future__ import annotations

from tests.app.screen import read_screen
from tests.helpers import X, settle, write_trace
from vtui.load.trace import load_trace
from vtui.ui.app import VtuiApp


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
