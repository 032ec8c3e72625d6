"""Load options are one typed value made at the edge: the environment is read there only, and
nothing below writes it (``--max-inflate``, the loader's private cache)."""

from __future__ import annotations

import os
import queue
from pathlib import Path

import pytest

from tests.helpers import FIXTURES, raw_events
from vtui.cli import main
from vtui.load import background
from vtui.options import DEFAULT_CACHE_MAX, LoadOptions, default_cache_dir
from vtui.store import cache
from vtui.units import format_bytes, parse_size

KINETO = FIXTURES / "kineto__before_fix_trace.json"


@pytest.mark.parametrize("text, size", [
    ("4GiB", 4 << 30), ("4G", 4 << 30), ("4gi", 4 << 30), ("4GB", 4_000_000_000), ("500MB", 500_000_000),
    ("1.5KiB", 1536), ("2k", 2048), ("2kB", 2000), ("0", 0), ("123", 123), ("123B", 123), (" 1 TiB ", 1 << 40),
    ("", DEFAULT_CACHE_MAX), ("lots", DEFAULT_CACHE_MAX), ("-1G", DEFAULT_CACHE_MAX),
])
def test_sizes_read_binary_and_decimal_units_apart(text, size):
    assert parse_size(text, DEFAULT_CACHE_MAX) == size


@pytest.mark.parametrize("size", [0, 512, 1 << 10, 3 << 20, 4 << 30, 5 << 40])
def test_a_size_printed_reads_back_as_itself(size):
    """``cache list`` prints with ``format_bytes`` and ``VTUI_CACHE_MAX`` reads with ``parse_size``:
    what one writes, the other reads as the same bytes (binary units on both sides)."""
    assert parse_size(format_bytes(size), -1) == size


def test_xdg_homes_share_one_rule(monkeypatch, tmp_path):
    from vtui.ui.keymap import keymap_path
    from vtui.xdg import xdg_home

    monkeypatch.setenv("XDG_CONFIG_HOME", "relative/config")  # ignored, as the XDG spec says
    assert keymap_path() == Path.home() / ".config" / "vtui" / "keys.toml"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    assert keymap_path() == tmp_path / "vtui" / "keys.toml"
    assert xdg_home("XDG_CACHE_HOME", {"XDG_CACHE_HOME": ""}) == Path.home() / ".cache"


def test_options_come_from_the_environment_given():
    env = {"XDG_CACHE_HOME": "/x/cache", "VTUI_CACHE_MAX": "2GiB", "VTUI_PURE_PYTHON": "1"}
    opts = LoadOptions.from_environ(env, max_inflate=0.0)
    assert opts == LoadOptions(cache=True, cache_dir=Path("/x/cache/vtui"), cache_max=2 << 30, max_inflate=0.0,
                               pure_python=True)
    assert default_cache_dir({"XDG_CACHE_HOME": "relative"}) == Path.home() / ".cache" / "vtui"


def test_cache_limit_is_the_environments(monkeypatch):
    monkeypatch.setenv("VTUI_CACHE_MAX", "3GiB")
    assert cache.cache_limit() == 3 << 30  # was 3e9: "GiB" read as decimal


def test_max_inflate_is_not_written_to_the_environment(capsys):
    before = dict(os.environ)
    assert main(["info", str(KINETO), "--max-inflate", "0", "--no-cache", "--json"]) == 0
    assert dict(os.environ) == before  # the old CLI set VTUI_MAX_INFLATE for the reader to read back
    assert '"events": 75' in capsys.readouterr().out


def test_the_loader_gets_its_private_cache_as_an_option(tmp_path):
    """--no-cache in the app: the loader writes a throw-away entry, told where by its options."""
    before = os.environ.get("XDG_CACHE_HOME")
    out: queue.Queue = queue.Queue()
    background._child_load(str(KINETO), out, LoadOptions.from_environ(cache=False))
    assert os.environ.get("XDG_CACHE_HOME") == before  # the old loader set it for itself
    kinds = []
    while not out.empty():
        kinds.append(out.get())
    kind, private = kinds[-1]
    assert kind == "cached" and Path(private, "vtui").is_dir()
    store = background._open_cached(KINETO, private, LoadOptions.from_environ())
    assert store.event_count == len(raw_events(KINETO))
    assert not Path(private).exists()  # taken over and removed
    assert cache.list_entries() == []  # nothing in the user's cache


def test_the_cache_cap_counts_blocks_on_disk(tmp_path):
    """A big load's args file is sparse (ranges reserved, args written): it costs its blocks."""
    from vtui.tempfiles import disk_bytes

    folder = tmp_path / ("0" * 32)
    folder.mkdir()
    with open(folder / "args.bin", "wb") as fh:
        fh.seek(256 << 20)
        fh.write(b"x")
    st = (folder / "args.bin").stat()
    if st.st_blocks * 512 >= st.st_size:
        pytest.skip("this file system does not keep sparse files")
    assert disk_bytes(folder) == st.st_blocks * 512 < 1 << 20
    assert cache.enforce_limit(limit=2 << 20, root=tmp_path) == (0, 0)  # 256 MiB apparent, fits in 2 MiB
