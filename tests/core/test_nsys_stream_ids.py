"""Nsight Systems' "no stream" id (2**32 - 1) is not shown as a stream number."""

from __future__ import annotations

import sqlite3

from vtui.load.trace import load_trace


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
