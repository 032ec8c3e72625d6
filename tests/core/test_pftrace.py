"""Perfetto protobuf traces: written with the ``perfetto`` package's TraceProtoBuilder and with
text-format packets (as Perfetto's own parser tests write them), read into the store; each
number checked against the packets the test wrote."""

from __future__ import annotations

import gzip

import msgspec
import numpy as np
import pytest

pb = pytest.importorskip("perfetto.protos.perfetto.trace.perfetto_trace_pb2", reason="the pftrace extra is not installed")
from google.protobuf import text_format  # noqa: E402
from perfetto.trace_builder.proto_builder import TraceProtoBuilder  # noqa: E402

from vtui.errors import TraceLoadError  # noqa: E402
from vtui.io.pftrace import is_pftrace, read_pftrace  # noqa: E402
from vtui.load.trace import load_trace  # noqa: E402

TE = pb.TrackEvent
CLEARED, NEEDS = 1, 2


def _args(store, row: int) -> dict:
    s = store.slices
    off, n = int(s.args_off[row]), int(s.args_len[row])
    return msgspec.json.decode(store.args_blob[off : off + n]) if n else {}


def _slices(store) -> dict[str, tuple[int, int, int]]:
    """name -> (start ns, dur ns, depth)."""
    s = store.slices
    return {store.strings[int(s.name_id[r])]: (int(s.start_ns[r]), int(s.end_ns[r] - s.start_ns[r]), int(s.depth[r]))
            for r in range(len(s))}


def _describe(b: TraceProtoBuilder) -> None:
    p = b.add_packet()
    p.track_descriptor.uuid = 1
    p.track_descriptor.process.pid = 10
    p.track_descriptor.process.process_name = "server"
    p.track_descriptor.process.process_labels.append("GPU 0")
    p = b.add_packet()
    p.track_descriptor.uuid = 2
    p.track_descriptor.parent_uuid = 1
    p.track_descriptor.thread.pid = 10
    p.track_descriptor.thread.tid = 11
    p.track_descriptor.thread.thread_name = "engine"
    p = b.add_packet()  # a custom track in the process: a "thread" named as the track
    p.track_descriptor.uuid = 3
    p.track_descriptor.parent_uuid = 1
    p.track_descriptor.name = "stream 7"
    p = b.add_packet()  # a counter track
    p.track_descriptor.uuid = 4
    p.track_descriptor.parent_uuid = 1
    p.track_descriptor.name = "SM throughput"
    p.track_descriptor.counter.unit_multiplier = 2


def _event(b: TraceProtoBuilder, ts: int, kind: int, track: int, seq_flags: int = NEEDS, **fields):
    p = b.add_packet()
    p.timestamp = ts
    p.trusted_packet_sequence_id = 7
    p.sequence_flags = seq_flags
    p.track_event.type = kind
    p.track_event.track_uuid = track
    for key, value in fields.items():
        if key == "name_iid":
            p.track_event.name_iid = value
        elif key == "name":
            p.track_event.name = value
    return p


def _trace(tmp_path, name: str = "t.pftrace") -> tuple:
    b = TraceProtoBuilder()
    _describe(b)
    first = _event(b, 1000, TE.TYPE_SLICE_BEGIN, 2, CLEARED | NEEDS, name_iid=1)
    first.interned_data.event_names.add(iid=1, name="aten::mm")
    first.interned_data.event_names.add(iid=2, name="cudaLaunchKernel")
    first.interned_data.event_categories.add(iid=1, name="cpu_op")
    first.interned_data.debug_annotation_names.add(iid=1, name="External id")
    first.interned_data.debug_annotation_string_values.add(iid=1, str=b"interned text")
    first.track_event.category_iids.append(1)
    ann = first.track_event.debug_annotations
    ann.add(name_iid=1, int_value=42)
    ann.add(name="uint", uint_value=2**63 + 5)
    ann.add(name="double", double_value=1.5)
    ann.add(name="flag", bool_value=True)
    ann.add(name="text", string_value="a\x1b[31m b")
    ann.add(name="interned", string_value_iid=1)
    ann.add(name="pointer", pointer_value=0xBEEF)
    ann.add(name="json", legacy_json_value='{"k": [1, 2]}')
    nested = ann.add(name="dims")
    nested.array_values.add(int_value=4096)
    nested.array_values.add(int_value=11008)
    entry = ann.add(name="dict")
    entry.dict_entries.add(name="x", int_value=1)
    inner = _event(b, 1200, TE.TYPE_SLICE_BEGIN, 2, name_iid=2)
    inner.track_event.categories.append("cuda_runtime")
    inner.track_event.debug_annotations.add(name="correlation", int_value=99)
    inner.track_event.flow_ids.append(555)
    _event(b, 1300, TE.TYPE_INSTANT, 2, name="mark")
    end = _event(b, 1400, TE.TYPE_SLICE_END, 2)
    end.track_event.debug_annotations.add(name="end arg", int_value=3)
    _event(b, 2000, TE.TYPE_SLICE_END, 2)
    kernel = _event(b, 1500, TE.TYPE_SLICE_BEGIN, 3, name="gemm")
    kernel.track_event.categories.append("kernel")
    kernel.track_event.correlation_id = 99
    kernel.track_event.terminating_flow_ids.append(555)
    _event(b, 1800, TE.TYPE_SLICE_END, 3)
    c = _event(b, 1100, TE.TYPE_COUNTER, 4)
    c.track_event.double_counter_value = 10.25
    c = _event(b, 1900, TE.TYPE_COUNTER, 4)
    c.track_event.counter_value = 7
    legacy = _event(b, 2500, TE.TYPE_UNSPECIFIED, 2, name="complete")
    legacy.track_event.legacy_event.phase = ord("X")
    legacy.track_event.legacy_event.duration_us = 3
    lost = _event(b, 3000, TE.TYPE_SLICE_BEGIN, 2, name_iid=1)  # after a lost packet: skipped
    lost.previous_packet_dropped = 1
    _event(b, 3100, TE.TYPE_SLICE_BEGIN, 2, 0, name="open")  # needs no state; never ended: runs to the end
    _event(b, 3200, TE.TYPE_INSTANT, 2, NEEDS, name="last")  # state still lost: skipped
    data = b.serialize()
    path = tmp_path / name
    path.write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    return path, data


def test_track_events_become_the_slices_they_describe(tmp_path):
    path, _ = _trace(tmp_path)
    store = load_trace(path, cache=False)
    got = _slices(store)
    origin = 1000
    assert got["aten::mm"] == (1000 - origin, 1000, 0)
    assert got["cudaLaunchKernel"] == (200, 200, 1)
    assert got["gemm"] == (500, 300, 0)
    assert got["complete"] == (1500, 3000, 0)
    assert "open" in got and got["open"][0] == 2100
    assert len(store.slices) == 5  # the lost-state packet and its instant were dropped
    assert any("incremental state" in w for w in store.warnings)
    names = {store.strings[int(i)] for i in store.instants.name_id}
    assert names == {"mark"}


def test_debug_annotations_are_the_args_with_their_types(tmp_path):
    path, _ = _trace(tmp_path)
    store = load_trace(path, cache=False)
    rows = {store.strings[int(store.slices.name_id[r])]: r for r in range(len(store.slices))}
    args = _args(store, rows["aten::mm"])
    assert args == {"External id": 42, "uint": 2**63 + 5, "double": 1.5, "flag": True, "text": "a\x1b[31m b",
                    "interned": "interned text", "pointer": "0xbeef", "json": {"k": [1, 2]}, "dims": [4096, 11008],
                    "dict": {"x": 1}}
    assert _args(store, rows["cudaLaunchKernel"]) == {"correlation": 99, "end arg": 3}  # end's args join the begin's
    assert _args(store, rows["gemm"]) == {"correlation": 99}  # from correlation_id
    cats = {store.strings[int(store.slices.cat_id[r])] for r in rows.values()}
    assert {"cpu_op", "cuda_runtime", "kernel"} <= cats


def test_tracks_processes_threads_counters_and_flows(tmp_path):
    path, _ = _trace(tmp_path)
    store = load_trace(path, cache=False)
    tracks = {store.tracks[t].name: store.tracks[t] for t in range(len(store.tracks))}
    assert {"engine", "stream 7", "SM throughput"} <= set(tracks)
    assert tracks["engine"].pid == 10 and tracks["engine"].tid == 11
    assert tracks["stream 7"].pid == 10  # a custom track sits in its parent's process
    assert tracks["engine"].process_name == "server"
    counter = tracks["SM throughput"]
    assert counter.pid == 10
    rows = np.flatnonzero(store.counters.track == counter.id)
    assert store.counters.value[rows].tolist() == [20.5, 14.0]  # unit_multiplier 2
    assert (store.counters.ts_ns[rows] == np.array([100, 900])).all()
    f = store.flows
    assert len(f) == 1
    names = store.strings
    assert names[int(store.slices.name_id[f.src_slice[0]])] == "cudaLaunchKernel"
    assert names[int(store.slices.name_id[f.dst_slice[0]])] == "gemm"


def test_gzip_and_plain_give_the_same_store(tmp_path):
    plain, _ = _trace(tmp_path)
    packed, _ = _trace(tmp_path, "t.pftrace.gz")
    a, b = load_trace(plain, cache=False), load_trace(packed, cache=False)
    assert _slices(a) == _slices(b)
    assert a.counters.value.tolist() == b.counters.value.tolist()


def test_a_cut_file_keeps_the_packets_before_the_cut(tmp_path):
    _, data = _trace(tmp_path)
    cut = tmp_path / "cut.perfetto-trace"
    cut.write_bytes(data[: len(data) - 5])
    store = load_trace(cut, cache=False)
    assert "aten::mm" in _slices(store)
    assert any("ends inside a packet" in w for w in store.warnings)


def test_not_a_trace_is_one_line(tmp_path):
    bad = tmp_path / "bad.pftrace"
    bad.write_bytes(b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff not protobuf")
    with pytest.raises(TraceLoadError) as err:
        load_trace(bad, cache=False)
    assert "\n" not in str(err.value) and "bad.pftrace" in str(err.value)


def test_sniffed_without_its_suffix(tmp_path):
    path, data = _trace(tmp_path)
    other = tmp_path / "trace.bin"
    other.write_bytes(data)
    assert is_pftrace(other)
    json_like = tmp_path / "x.trace"
    json_like.write_bytes(b'\n{"traceEvents": []}')
    assert not is_pftrace(json_like)


def test_without_the_protobuf_runtime_it_says_what_to_install(tmp_path, monkeypatch):
    import builtins

    path, _ = _trace(tmp_path)
    real = builtins.__import__

    def no_perfetto(name, *args, **kwargs):
        if name.startswith(("perfetto", "google.protobuf")):
            raise ImportError(name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_perfetto)
    with pytest.raises(TraceLoadError, match=r"vtui\[pftrace\]"):
        read_pftrace(path)


TEXT_PACKETS = """
packet { trusted_packet_sequence_id: 1 incremental_state_cleared: true
  track_descriptor { uuid: 100 thread { pid: 5 tid: 6 thread_name: "t1" } } }
packet { trusted_packet_sequence_id: 1 timestamp: 1000
  interned_data { event_names { iid: 1 name: "A" } event_categories { iid: 1 name: "cat" } }
  track_event { track_uuid: 100 type: TYPE_SLICE_BEGIN name_iid: 1 category_iids: 1 } }
packet { trusted_packet_sequence_id: 1 timestamp: 1100 sequence_flags: 1
  interned_data { event_names { iid: 1 name: "B" } }
  track_event { track_uuid: 100 type: TYPE_SLICE_BEGIN name_iid: 1 } }
packet { trusted_packet_sequence_id: 1 timestamp: 1200 track_event { track_uuid: 100 type: TYPE_SLICE_END } }
packet { trusted_packet_sequence_id: 1 timestamp: 1300 track_event { track_uuid: 100 type: TYPE_SLICE_END } }
packet { trusted_packet_sequence_id: 2
  thread_descriptor { pid: 5 tid: 9 thread_name: "legacy thread" reference_timestamp_us: 1 } }
packet { trusted_packet_sequence_id: 2 timestamp: 1400
  track_event { type: TYPE_INSTANT name: "on the sequence's thread" } }
packet { process_tree { processes { pid: 5 cmdline: "/usr/bin/python3" cmdline: "-m" }
  threads { tid: 6 tgid: 5 name: "renamed" } } }
"""


def test_text_format_packets_converted_to_binary(tmp_path):
    trace = text_format.Parse(TEXT_PACKETS, pb.Trace())
    path = tmp_path / "text.pftrace"
    path.write_bytes(trace.SerializeToString())
    store = load_trace(path, cache=False)
    # Interned name 1 is "A" until the sequence clears its state; then it is "B".
    assert _slices(store) == {"A": (0, 300, 0), "B": (100, 100, 1)}
    tracks = {(store.tracks[t].pid, store.tracks[t].tid): store.tracks[t] for t in range(len(store.tracks))}
    assert tracks[(5, 9)].name == "legacy thread"
    assert tracks[(5, 6)].name == "renamed"  # the process tree's name comes later: the last one wins
    assert tracks[(5, 6)].process_name == "/usr/bin/python3"
    assert store.strings[int(store.instants.name_id[0])] == "on the sequence's thread"


def _load_text(tmp_path, text: str):
    path = tmp_path / "t.pftrace"
    path.write_bytes(text_format.Parse(text, pb.Trace()).SerializeToString())
    return load_trace(path, cache=False)


def _flow_names(store) -> list[tuple[str, str]]:
    s, f, names = store.slices, store.flows, store.strings
    return sorted((names[int(s.name_id[a])], names[int(s.name_id[b])]) for a, b in zip(f.src_slice, f.dst_slice))


def _x(ts: int, name: str, track: int, extra: str = "", dur_us: int = 1) -> str:
    return (f'packet {{ trusted_packet_sequence_id: 1 timestamp: {ts} track_event {{ name: "{name}" track_uuid: {track} '
            f'{extra} legacy_event {{ phase: 88 duration_us: {dur_us} }} }} }}\n')


THREADS = """
packet { trusted_packet_sequence_id: 1 track_descriptor { uuid: 1 thread { pid: 1 tid: 1 } } }
packet { trusted_packet_sequence_id: 1 track_descriptor { uuid: 2 thread { pid: 1 tid: 2 } } }
"""


def test_flow_ids_follow_perfettos_flow_tracker_in_time_order(tmp_path):
    text = THREADS + "".join([
        _x(30000, "end1", 2, "terminating_flow_ids: 1"),  # written first, happens after its start
        _x(10000, "start1", 1, "flow_ids: 1"),
        _x(50000, "start1again", 1, "flow_ids: 1 flow_ids: 2"),  # id 1 ended: a new flow
        _x(55000, "step1", 2, "flow_ids: 1"),
        _x(59000, "end2", 2, "terminating_flow_ids: 2"),
        _x(60000, "late", 2, "terminating_flow_ids: 2"),  # flow 2 was closed: no edge
    ])
    text += ('packet { trusted_packet_sequence_id: 1 timestamp: 70000 track_event { name: "mark" track_uuid: 1 '
             'type: TYPE_INSTANT terminating_flow_ids: 1 } }\n')
    store = _load_text(tmp_path, text)
    assert _flow_names(store) == sorted([("start1", "end1"), ("start1again", "step1"), ("start1again", "end2"),
                                         ("step1", "mark")])
    mark = [r for r in range(len(store.slices)) if store.strings[int(store.slices.name_id[r])] == "mark"]
    assert len(mark) == 1 and store.slices.end_ns[mark[0]] == store.slices.start_ns[mark[0]]  # a zero-length slice


def test_legacy_flow_events_bind_as_chrome_flows(tmp_path):
    def legacy(ts, name, track, phase, ident, enclosing=""):
        return (f'packet {{ trusted_packet_sequence_id: 1 timestamp: {ts} track_event {{ name: "{name}" '
                f'track_uuid: {track} legacy_event {{ phase: {ord(phase)} unscoped_id: {ident} {enclosing} }} }} }}\n')

    text = THREADS + _x(10000, "begin", 1, dur_us=10) + legacy(10000, "f330", 1, "s", 330)
    text += legacy(29999, "f330", 2, "f", 330) + _x(30000, "next slice", 2, dur_us=10)
    text += _x(50000, "enclosing", 2, dur_us=10) + legacy(55000, "f331", 1, "s", 331)
    text += _x(54000, "source", 1, dur_us=10) + legacy(55100, "f331", 2, "f", 331, "bind_to_enclosing: true")
    store = _load_text(tmp_path, text)
    assert _flow_names(store) == sorted([("begin", "next slice"), ("source", "enclosing")])


def test_incremental_counters_sum_per_sequence_and_restart_when_state_clears(tmp_path):
    text = """
packet { trusted_packet_sequence_id: 1 incremental_state_cleared: true
  track_descriptor { uuid: 10 name: "bytes" counter { is_incremental: true unit_multiplier: 2 } } }
packet { trusted_packet_sequence_id: 2 incremental_state_cleared: true
  track_descriptor { uuid: 10 name: "bytes" counter { is_incremental: true unit_multiplier: 2 } } }
packet { trusted_packet_sequence_id: 1 sequence_flags: 2 timestamp: 100 track_event { type: TYPE_COUNTER track_uuid: 10 counter_value: 100 } }
packet { trusted_packet_sequence_id: 2 sequence_flags: 2 timestamp: 150 track_event { type: TYPE_COUNTER track_uuid: 10 counter_value: 50 } }
packet { trusted_packet_sequence_id: 1 sequence_flags: 2 timestamp: 200 track_event { type: TYPE_COUNTER track_uuid: 10 counter_value: 10 } }
packet { trusted_packet_sequence_id: 2 sequence_flags: 3 timestamp: 250 track_event { type: TYPE_COUNTER track_uuid: 10 counter_value: 5 } }
packet { trusted_packet_sequence_id: 1 timestamp: 300
  track_event { type: TYPE_SLICE_BEGIN name: "x" thread_time_absolute_us: 7 } }
"""
    store = _load_text(tmp_path, text)
    c = store.counters
    byname = {store.tracks[int(t)].name for t in c.track}
    rows = np.flatnonzero(c.track == next(t for t in range(len(store.tracks)) if store.tracks[t].name == "bytes"))
    assert c.value[rows].tolist() == [200.0, 100.0, 220.0, 10.0]  # ×2, summed per sequence; 2 cleared at 250
    assert "thread_time" in byname and 7000.0 in c.value.tolist()


def test_damaged_bytes_load_or_fail_in_one_line(tmp_path):
    """Random bytes changed or the file cut: the load keeps what it can or says why, never a traceback."""
    import random

    _, data = _trace(tmp_path)
    rng = random.Random(11)
    loaded = 0
    for i in range(40):
        damaged = bytearray(data)
        for _ in range(rng.choice([1, 3, 20])):
            damaged[rng.randrange(len(damaged))] = rng.randrange(256)
        if i % 3 == 0:
            damaged = damaged[: rng.randrange(1, len(damaged))]
        path = tmp_path / f"damaged{i}.pftrace"
        path.write_bytes(bytes(damaged))
        try:
            load_trace(path, cache=False)
            loaded += 1
        except TraceLoadError as exc:
            assert "\n" not in str(exc)
    assert loaded  # most damage leaves packets to read


def test_strings_that_are_not_utf8_are_read_with_replacement_characters(tmp_path):
    from vtui.io import protowire as w

    event = bytearray()
    w.put_int(event, 9, 3)  # TYPE_INSTANT
    w.put_bytes(event, 23, b"bad \xff name")
    w.put_bytes(event, 22, b"cat\xfe")
    ann = bytearray()
    w.put_bytes(ann, 10, b"key\xff")
    w.put_bytes(ann, 6, b"value\xff")
    w.put_bytes(event, 4, ann)
    packet = bytearray()
    w.put_int(packet, 8, 5)
    w.put_bytes(packet, 11, event)
    path = tmp_path / "utf8.pftrace"
    with open(path, "wb") as fh:
        w.write_packet(fh, packet)
    store = load_trace(path, cache=False)
    i = store.instants
    assert store.strings[int(i.name_id[0])] == "bad \ufffd name"
    assert store.strings[int(i.cat_id[0])] == "cat\ufffd"
    off, n = int(i.args_off[0]), int(i.args_len[0])
    assert msgspec.json.decode(store.args_blob[off : off + n]) == {"key\ufffd": "value\ufffd"}
