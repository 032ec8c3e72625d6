"""Bindings as data and the user keymap (keys.toml): remapped keys act, help shows them, a bad
file gives one message and the default keys."""

from __future__ import annotations

import inspect

import pytest
from textual.binding import Binding

import vtui.ui.app as app_module
import vtui.ui.screens.compare as compare_module
import vtui.ui.screens.compare_steps as compare_steps_module
import vtui.ui.screens.handover_view as handover_module
import vtui.ui.screens.insights as insights_module
import vtui.ui.screens.modals as screens_module
import vtui.ui.screens.query as query_module
import vtui.ui.screens.ranks as ranks_module
import vtui.ui.screens.results as results_module
import vtui.ui.screens.tree as tree_module
import vtui.ui.screens.tree_diff as tree_diff_module
import vtui.ui.timeline.main_view as main_view_module
import vtui.ui.timeline.tracklist as tracklist_module
import vtui.ui.widgets.aggregation as aggregation_module
from tests.helpers import STEPLOOP
from vtui.ui.app import VtuiApp
from vtui.ui.keymap import KeymapError, check_key, keymap_path, load_keymap, parse_keymap
from vtui.ui.keys import KEY_IDS, KEYS
from vtui.ui.screens.compare import CompareApp


def _write_keymap(monkeypatch, tmp_path, text: str):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    path = tmp_path / "vtui" / "keys.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    assert keymap_path() == path
    return path


def _record_notes(app) -> list[tuple[str, dict]]:
    notes: list[tuple[str, dict]] = []
    real = app.notify

    def notify(message, **kwargs):
        notes.append((message, kwargs))
        return real(message, **kwargs)

    app.notify = notify
    return notes


def _help_lines(app) -> list[str]:
    return str(app.screen.query_one("#help-text").render()).splitlines()


def test_every_binding_comes_from_the_table():
    """No widget keeps its own key list: each class's BINDINGS are the table's, with ids."""
    seen = set()
    for module in (app_module, main_view_module, compare_module, compare_steps_module, insights_module, query_module, ranks_module, results_module,
                   screens_module, tree_module, tree_diff_module, aggregation_module, tracklist_module,
                   handover_module):
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ == module.__name__ and "BINDINGS" in cls.__dict__:
                for b in cls.__dict__["BINDINGS"]:
                    assert isinstance(b, Binding) and b.id in KEY_IDS, (cls.__name__, b)
                    seen.add((b.id, b.action))
    assert seen == {(k.id, k.action) for k in KEYS}  # and every table row is bound somewhere
    assert len({(k.scope, k.id) for k in KEYS}) == len(KEYS)  # an id once per scope


def test_keys_as_textual_names_them():
    assert check_key("?") == "question_mark"
    assert check_key("F1") == "f1"
    assert check_key("ctrl+F") == "ctrl+F"
    assert check_key("W") == "W"
    assert check_key("pagedown") == "pagedown"
    assert check_key("full_stop") == "full_stop"
    for bad in ("", " w", "no_such_key", "ctl+w", "\x1b"):
        with pytest.raises(ValueError):
            check_key(bad)


def test_parse_keymap_strings_and_lists():
    assert parse_keymap('"view.zoom_in" = "v"\n"view.zoom_out" = ["Z", "F5"]\n"app.help" = ["?", "f2"]\n') == {
        "view.zoom_in": "v", "view.zoom_out": "Z,f5", "app.help": "question_mark,f2"}
    # Rebinding onto a key that its owner gives up is fine; onto one still in use on that screen is not.
    assert parse_keymap('"view.zoom_in" = "s"\n"view.zoom_out" = "w"\n')
    with pytest.raises(KeymapError, match="view.zoom_in"):
        parse_keymap('"view.zoom_in" = "s"\n')
    for text, why in (('"view.zoom_in" = ', "TOML"), ('"view.nope" = "v"', "unknown binding id"), ('"view.zoomin" = "v"', "did you mean 'view.zoom_in'"),
                      ('"view.zoom_in" = "no_such_key"', "unknown key"), ('"view.zoom_in" = 3', "a key or a list"),
                      ('"view.zoom_in" = []', "a key or a list")):
        with pytest.raises(KeymapError, match=why):
            parse_keymap(text)


def test_missing_file_is_no_keymap(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    assert load_keymap() == ({}, None)


async def test_keymap_remaps_a_key_and_help_shows_it(steploop_store, tmp_path, monkeypatch):
    _write_keymap(monkeypatch, tmp_path, '"view.zoom_in" = "v"\n"app.help" = ["H", "f2"]\n')
    app = VtuiApp(STEPLOOP, store=steploop_store)
    notes = _record_notes(app)
    async with app.run_test(size=(140, 50)) as pilot:
        await pilot.pause()
        assert notes == []
        v = app.view
        span = v.span
        await pilot.press("w")  # the old key no longer zooms
        await pilot.pause()
        assert v.span == span
        await pilot.press("v")
        await pilot.pause()
        assert v.span < span
        footer_keys = {b.binding.id: key for key, b in app.screen.active_bindings.items() if b.binding.show}
        assert footer_keys.get("view.zoom_in") == "v"
        await pilot.press("question_mark")  # help moved to H / F2
        await pilot.pause()
        assert app.screen is app.screen_stack[0]
        await pilot.press("f2")
        await pilot.pause()
        lines = _help_lines(app)
        assert any(line.split()[:3] == ["v", "Zoom", "in"] for line in lines)
        assert not any(line.split()[:3] == ["w", "Zoom", "in"] for line in lines)
        assert any(line.startswith("H F2 ") and "This help" in line for line in lines)
        titles = [c.help for c in app.get_system_commands(app.screen)]
        assert any("(key v · id view.zoom_in)" in t for t in titles)


@pytest.mark.parametrize("text", ['"view.zoom_in" = ', '"[bold red]x" = "v"', '"view.zoom_in" = "[b]"'])
async def test_broken_keymap_notifies_and_keeps_defaults(steploop_store, tmp_path, monkeypatch, text):
    _write_keymap(monkeypatch, tmp_path, text)
    app = VtuiApp(STEPLOOP, store=steploop_store)
    notes = _record_notes(app)
    async with app.run_test(size=(140, 50)) as pilot:
        await pilot.pause()
        assert len(notes) == 1
        message, kwargs = notes[0]
        assert "keys.toml" in message and "default keys in use" in message and "\n" not in message
        assert kwargs.get("markup") is False and kwargs.get("severity") == "error"
        if "[" in text:
            assert "[" in message  # shown as written, never parsed as markup
        span = app.view.span
        await pilot.press("w")
        await pilot.pause()
        assert app.view.span < span  # the default key acts


async def test_compare_mode_follows_the_same_ids(steploop_store, tmp_path, monkeypatch):
    _write_keymap(monkeypatch, tmp_path, '"view.zoom_in" = "v"\n')
    app = CompareApp(STEPLOOP, STEPLOOP, stores=(steploop_store, steploop_store))
    async with app.run_test(size=(140, 50)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        pane = app.active_pane()
        span = pane.view.span
        await pilot.press("w")
        await pilot.pause()
        assert pane.view.span == span
        await pilot.press("v")
        await pilot.pause()
        assert pane.view.span < span
        await pilot.press("question_mark")
        await pilot.pause()
        assert any(line.split()[:3] == ["v", "Zoom", "in"] for line in _help_lines(app))


# ---- hostile keymap files: each is one message and the default keys, at once ----------
def _deep_toml(depth: int) -> str:
    return '"view.zoom_in" = ' + "[" * depth + '"v"' + "]" * depth


def _hostile_keymap(kind: str, path):
    import os

    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "nested":
        path.write_text(_deep_toml(2000))
    elif kind == "fifo":
        os.mkfifo(path)  # reading it blocked forever: a blank screen, q ignored
    elif kind == "dev_zero":
        path.symlink_to("/dev/zero")  # endless zeros: MemoryError
    elif kind == "huge":
        path.write_text("# " + "x" * (1 << 20) + "\n")
    elif kind == "folder":
        path.mkdir()
    return {"nested": "nested too deeply", "fifo": "not a regular file", "dev_zero": "not a regular file",
            "huge": "larger than 64 KiB", "folder": "not a regular file"}[kind]


@pytest.fixture
def watchdog():
    import faulthandler

    faulthandler.dump_traceback_later(60, exit=True)  # a blocking read would hang the test run
    yield
    faulthandler.cancel_dump_traceback_later()


@pytest.mark.parametrize("kind", ["nested", "fifo", "dev_zero", "huge", "folder"])
def test_a_hostile_keymap_file_is_one_line(kind, tmp_path, watchdog):
    import os

    if kind == "fifo" and not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs here")
    path = tmp_path / "vtui" / "keys.toml"
    says = _hostile_keymap(kind, path)
    keymap, error = load_keymap(path)
    assert keymap == {} and error is not None and says in error and "\n" not in error and len(error) <= 500


def test_a_symlink_to_a_regular_keymap_still_works(tmp_path):
    real = tmp_path / "dotfiles" / "keys.toml"
    real.parent.mkdir()
    real.write_text('"view.zoom_in" = "v"')
    link = tmp_path / "vtui" / "keys.toml"
    link.parent.mkdir()
    link.symlink_to(real)
    assert load_keymap(link) == ({"view.zoom_in": "v"}, None)


async def test_a_fifo_keymap_gives_one_notification_and_the_app_answers(steploop_store, tmp_path, monkeypatch, watchdog):
    import os

    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs here")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    _hostile_keymap("fifo", keymap_path())
    app = VtuiApp(STEPLOOP, store=steploop_store)
    notes = _record_notes(app)
    async with app.run_test(size=(140, 50)) as pilot:
        await pilot.pause()
        assert [m for m, _ in notes if "keys.toml" in m and "not a regular file" in m] and len(notes) == 1
        span = app.view.span
        await pilot.press("w")
        await pilot.pause()
        assert app.view.span < span
