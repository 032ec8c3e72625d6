"""The user's keymap: ``$XDG_CONFIG_HOME/vtui/keys.toml`` (default ``~/.config/vtui/keys.toml``)
maps binding ids (``vtui.ui.keys``) to keys::

    "view.zoom_in" = "W"            # one key
    "view.zoom_out" = ["S", "minus"]  # or several

A file that does not parse, names an unknown id or a key Textual does not know is reported in
one line and the defaults stay: half a keymap would be harder to understand than none.
"""

from __future__ import annotations

import difflib
import os
import stat
import tomllib
from collections import defaultdict
from pathlib import Path

from textual.app import App
from textual.keys import Keys, _character_to_key, key_to_character

from vtui.safe_text import safe_field
from vtui.ui.keys import KEY_IDS, KEYS
from vtui.xdg import xdg_home

MODIFIERS = frozenset({"ctrl", "shift", "alt", "meta", "super", "hyper"})
_NAMED = frozenset(k.value for k in Keys)


class KeymapError(ValueError):
    """A keymap file that cannot be used, with the one line that says why."""


def keymap_path() -> Path:
    return xdg_home("XDG_CONFIG_HOME") / "vtui" / "keys.toml"


def check_key(key: str) -> str:
    """One key as Textual names it (``"?"`` -> ``"question_mark"``, ``"F1"`` -> ``"f1"``); raises
    ValueError for a key Textual would never deliver."""
    if not key or key != key.strip():
        raise ValueError(f"bad key {key!r}")
    *mods, base = key.split("+") if key != "+" else ["+"]
    if any(m.lower() not in MODIFIERS for m in mods):
        raise ValueError(f"bad modifier in key {key!r}")
    if len(base) == 1:
        if not base.isprintable():
            raise ValueError(f"bad key {key!r}")
        name = _character_to_key(base)
    else:
        name = base.lower()
        if name not in _NAMED and key_to_character(name) is None:
            raise ValueError(f"unknown key {key!r}")
    return "+".join([*(m.lower() for m in mods), name])


def parse_keymap(text: str) -> dict[str, str]:
    """id -> comma-separated Textual key names. Raises KeymapError."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise KeymapError(f"not valid TOML ({exc})") from None
    keymap: dict[str, str] = {}
    for binding_id, value in data.items():
        if binding_id not in KEY_IDS:
            close = difflib.get_close_matches(binding_id, KEY_IDS, n=1)
            hint = f"did you mean {close[0]!r}?" if close else "ctrl+p shows each action's id"
            raise KeymapError(f"unknown binding id {binding_id!r} ({hint})")
        keys = [value] if isinstance(value, str) else value
        if not isinstance(keys, list) or not keys or not all(isinstance(k, str) for k in keys):
            raise KeymapError(f"{binding_id!r}: give a key or a list of keys")
        try:
            keymap[binding_id] = ",".join(check_key(k) for k in keys)
        except ValueError as exc:
            raise KeymapError(f"{binding_id!r}: {exc}") from None
    _check_clashes(keymap)
    return keymap


def _check_clashes(keymap: dict[str, str]) -> None:
    """Two actions of one screen on one key: the keymap would silently take one away."""
    for scope in {k.scope for k in KEYS}:
        owners: dict[str, set[str]] = defaultdict(set)
        for k in KEYS:
            if k.scope == scope:
                for key in (keymap.get(k.id) or k.keys).split(","):
                    owners[key].add(k.id)
        for key, ids in owners.items():
            if len(ids) > 1 and ids & keymap.keys():
                raise KeymapError(f"key {key!r} would do both {' and '.join(sorted(ids))}")


def load_keymap(path: Path | None = None) -> tuple[dict[str, str], str | None]:
    """(keymap, None), or ({}, the one-line message) for a file that cannot be used; no file: ({}, None)."""
    path = path or keymap_path()
    try:
        text = read_small_file(path, MAX_KEYMAP_BYTES).decode("utf-8")
    except FileNotFoundError:
        return {}, None
    except KeymapError as exc:
        return {}, safe_field(f"{path}: {exc}; default keys in use", 500)
    except (OSError, UnicodeDecodeError) as exc:
        return {}, safe_field(f"{path}: cannot read the keymap ({exc}); default keys in use", 500)
    try:
        return parse_keymap(text), None
    except KeymapError as exc:
        return {}, safe_field(f"{path}: {exc}; default keys in use", 500)
    except RecursionError:  # tomllib recurses into nested arrays and tables
        return {}, safe_field(f"{path}: nested too deeply to be a keymap; default keys in use", 500)


MAX_KEYMAP_BYTES = 64 << 10  # a keymap is a few lines; more is not one


def read_small_file(path: Path, limit: int) -> bytes:
    """At most ``limit`` bytes of a regular file (a link to one is fine). A FIFO, a device
    (``/dev/zero``) or a folder is refused without blocking (opened non-blocking, checked
    before any read), and so is a file over ``limit``: KeymapError with the reason."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise KeymapError("not a regular file")
        data = os.read(fd, limit + 1)
    finally:
        os.close(fd)
    if len(data) > limit:
        raise KeymapError(f"larger than {limit // 1024} KiB: not a keymap")
    return data


def apply_user_keymap(app: App) -> dict[str, str]:
    """Rebind the app's keys from the user's file; a bad file: a notification and the defaults."""
    keymap, error = load_keymap()
    if keymap:
        app.set_keymap(keymap)
    if error:
        app.notify(error, severity="error", timeout=10, markup=False)
    return keymap
