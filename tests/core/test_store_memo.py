"""``TraceStore.memo`` is the store's one memo: every per-store cache (masks, Arrow tables, memory
series, call-tree parts, reports per range) lives in it and goes with the store."""

from __future__ import annotations

import numpy as np
import pytest

from tests.helpers import FIXTURES, X, load_events
from vtui.analysis.calltree.tree import build_tree
from vtui.analysis.gpu.memory_tracks import memory_series
from vtui.load.trace import load_trace
from vtui.query.tables import words


@pytest.fixture
def store(tmp_path):
    return load_events(tmp_path, [X("a", 0, 10), X("b", 2, 3), X("a", 20, 5)])


def test_each_key_is_computed_once_whatever_its_value(store):
    calls = []

    def compute(value):
        def run():
            calls.append(value)
            return value
        return run

    for value in (None, 0, {"k": 1}, "text"):
        first = store.memo(("probe", repr(value)), compute(value))
        again = store.memo(("probe", repr(value)), compute("other"))
        assert first is again and first == value
    assert calls == [None, 0, {"k": 1}, "text"]  # None and 0 are remembered too, not recomputed


def test_an_array_comes_back_read_only(store):
    got = store.memo("probe-array", lambda: np.arange(3))
    with pytest.raises(ValueError):
        got[0] = 7


def test_the_caches_of_the_analyses_live_in_the_store(store, tmp_path):
    build_tree(store)
    memory_series(store)
    words(store)
    kept = {k if isinstance(k, str) else k[0] for k in store.derived}
    assert {"calltree", "memory_series", "query"} <= kept
    (tmp_path / "b").mkdir()
    other = load_events(tmp_path / "b", [X("c", 0, 1)])
    assert other.derived == {}  # nothing is shared between stores (no module-level cache keyed by id())


def test_string_ids_are_every_id_of_the_text_found_once():
    """``string_ids``: the ids a plain scan of the strings gives (none, one, several where a list
    holds a text twice), looked up once per store and per text; the caller's list is its own."""
    for name in ("hf_llama_stack.json.gz", "tracelens__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"):
        st = load_trace(FIXTURES / name, cache=False)
        for text in ("[memory]", "aten::embedding", "aten::linear", "", "no such name", st.strings[-1]):
            assert st.string_ids(text) == [i for i, s in enumerate(st.strings) if s == text], (name, text)
        assert st.string_ids("[memory]")  # both fixtures have memory events
    st.strings = [*st.strings, "twice", "x", "twice"]  # not a build's list: a text twice is found twice
    n = len(st.strings)
    assert st.string_ids("twice") == [n - 3, n - 1]
    st.strings[n - 1] = "changed"  # found once: the memo answers, the list is not searched again
    got = st.string_ids("twice")
    assert got == [n - 3, n - 1]
    got.append(0)
    assert st.string_ids("twice") == [n - 3, n - 1]
