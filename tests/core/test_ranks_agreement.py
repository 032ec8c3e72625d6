"""Collectives pair across ranks only when they agree (kind, bytes, group size where recorded), and
bus bandwidth only with a group size the trace records. Shaped from HTA's sampled rank pair (no
process-group names, ``distributedInfo.world_size`` 128 with two files in the folder). Both
engines are checked against the plain-Python reference of test_ranks (``check``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.ranks_synth import rank_events, slow_rank, write_rank

pytest.importorskip("duckdb")
pytest.importorskip("pyarrow")
from tests.core.test_ranks import check  # noqa: E402


def _folder(tmp_path: Path, edit, ranks: int = 2, world: int = 128, group: str | None = None, steps: int = 3) -> Path:
    """``edit(rank, events)`` changes a rank's events in place before they are written."""
    folder = tmp_path / "ranks"
    folder.mkdir(parents=True)
    for r in range(ranks):
        ev = rank_events(r, ranks, steps, slow_rank(1), group=group)
        edit(r, ev)
        write_rank(folder, f"trace_rank{r}.json", ev, r, world)
    return folder


def _comm_args(events: list[dict]) -> list[dict]:
    return [e["args"] for e in events if e.get("name") == "record_param_comms"]


def test_collectives_of_different_sizes_are_not_paired(tmp_path):
    def edit(rank, ev):
        if rank == 1:  # rank 1's second all-reduce moves fewer elements: another collective
            args = _comm_args(ev)[1]
            args["In msg nelems"] = args["Out msg nelems"] = 1_000_000
            next(e for e in ev if e.get("name") == "nccl:all_reduce" and e["ts"] > 1_010_000)["args"]["Input Dims"] = [[1_000_000]]

    got = check(_folder(tmp_path, edit, group="0"))
    assert [c["seq"] for c in got["collectives"]] == [0, 2]  # the mismatched pair is unmatched
    (w,) = got["warnings"]
    assert w.startswith("1 of 3 matches rejected: sizes differ (0 #1: 4,000,000 vs 4,194,304 B)")
    # a rejected pair is no evidence of lateness: the straggler counts only the matched ones
    assert got["straggler"]["collectives_last"] == 2


def test_element_counts_tell_sizes_apart_where_no_dtype_is_recorded(tmp_path):
    def edit(rank, ev):
        for e in ev:  # no dtype anywhere: bytes unknown, elements known
            e.get("args", {}).pop("dtype", None)
            e.get("args", {}).pop("Input type", None)
        if rank == 0:
            args = _comm_args(ev)[2]
            args["In msg nelems"] = args["Out msg nelems"] = 12_345
            next(e for e in ev if e.get("name") == "nccl:all_reduce" and e["ts"] > 1_020_000)["args"]["Input Dims"] = [[12_345]]

    got = check(_folder(tmp_path, edit, group="0"))
    assert [c["seq"] for c in got["collectives"]] == [0, 1] and all(c["bytes"] is None for c in got["collectives"])
    assert got["warnings"][0].startswith("1 of 3 matches rejected: sizes differ (0 #2: 12,345 vs 1,048,576 elements)")


def test_collectives_of_different_kinds_are_not_paired(tmp_path):
    def edit(rank, ev):
        if rank == 0:
            _comm_args(ev)[0]["Collective name"] = "allgather"

    got = check(_folder(tmp_path, edit, group="0"))
    assert len(got["collectives"]) == 2
    assert got["warnings"][0].startswith("1 of 3 matches rejected: kinds differ (0 #0: all_gather vs all_reduce)")


def test_busbw_needs_a_group_size_the_trace_records(tmp_path):
    def no_size(rank, ev):
        for args in _comm_args(ev):
            del args["Group size"], args["Process Group Ranks"]

    # No group recorded: neither the world size (128) nor the 2 files in the folder is the group.
    got = check(_folder(tmp_path / "a", no_size))
    for c in got["collectives"]:
        assert c["group_size"] is None and c["busbw_gbps"] is None and c["algbw_gbps"] == round(4 * (1 << 20) / 200_000, 4)
        assert c["busbw_note"].startswith("group size unknown")
    # The world group (PyTorch names it "0"): distributedInfo.world_size is its size.
    got = check(_folder(tmp_path / "b", no_size, group="0"))
    for c in got["collectives"]:
        assert c["group_size"] == 128 and c["busbw_note"] is None
        assert c["busbw_gbps"] == round(4 * (1 << 20) / 200_000 * 2 * 127 / 128, 4)
    # Process Group Ranks alone give it.
    def ranks_only(rank, ev):
        for args in _comm_args(ev):
            del args["Group size"]
            args["Process Group Ranks"] = "[0, 1, 2, 3]"

    got = check(_folder(tmp_path / "c", ranks_only, group="5"))
    assert {c["group_size"] for c in got["collectives"]} == {4}
