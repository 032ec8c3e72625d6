"""The C helper's read of a Perfetto trace (vtui/io/_pftrace.c) against the reference reader (the
protobuf runtime, ``pure_python=True``): the same columns, args bytes, flows, metadata and warnings,
on vtui's own export of a Kineto trace, on a trace that uses every TrackEvent form the readers know
(and some the helper hands back), across read blocks, and on many damaged copies of both."""

from __future__ import annotations

import random

import numpy as np
import pytest

pb = pytest.importorskip("perfetto.protos.perfetto.trace.perfetto_trace_pb2", reason="the pftrace extra is not installed")
from perfetto.trace_builder.proto_builder import TraceProtoBuilder  # noqa: E402

from tests.helpers import QWEN  # noqa: E402
from vtui.io import pftrace_fast  # noqa: E402
from vtui.io import protowire as w  # noqa: E402
from vtui.io.pftrace import PacketReader, read_pftrace  # noqa: E402
from vtui.load.trace import load_trace  # noqa: E402

if not pftrace_fast.fast_available():
    pytest.skip("the C helper _vtui_pftrace is not built (no compiler at install)", allow_module_level=True)

TE = pb.TrackEvent
CLEARED, NEEDS = 1, 2
_ARRAYS = ("ph", "ts", "dur", "name", "cat", "thread", "args_off", "args_len", "id_kind", "id_val", "scope",
           "bp_enclosing", "ts_ns", "dur_ns")


def _read(path, pure: bool):
    from vtui.errors import TraceLoadError

    try:
        got = read_pftrace(path, pure_python=pure)
    except TraceLoadError as exc:
        return ("error", str(exc))
    c = got.columns
    arrays = {k: getattr(c, k) for k in _ARRAYS}
    return (arrays, c.strings, c.thread_keys, c.ids, c.args_blob, c.by_phase, sorted(map(repr, c.flow_v2)),
            got.metadata, got.warnings)


def _same(path) -> None:
    ref, fast = _read(path, True), _read(path, False)
    if ref[0] == "error" or fast[0] == "error":
        assert fast == ref
        return
    for k in _ARRAYS:
        np.testing.assert_array_equal(fast[0][k], ref[0][k], err_msg=k)
    names = ("strings", "thread_keys", "ids", "args_blob", "by_phase", "flow_v2", "metadata", "warnings")
    for name, a, b in zip(names, fast[1:], ref[1:]):
        assert a == b, name


def _read_by_c(path) -> tuple[int, int]:
    """(packets, of them handed to the reference method) when the helper reads ``path``."""
    reader = PacketReader(path)
    handed = 0
    slow = reader._slow_packet

    def counted(raw: bytes, rows: int) -> int:
        nonlocal handed
        handed += 1
        return slow(raw, rows)

    reader._slow_packet = counted  # type: ignore[method-assign]
    for _ in reader.events(None):
        pass
    return reader.packets, handed


@pytest.fixture(scope="module")
def kineto(tmp_path_factory):
    """A Kineto trace loaded, and vtui's own export of its first tenth (slices with Kineto's args,
    instants, flows, metadata)."""
    from vtui.export.pftrace import export_pftrace

    store = load_trace(QWEN, cache=False)
    out = tmp_path_factory.mktemp("fast") / "qwen_part.pftrace"
    export_pftrace(store, out, 0, store.span_ns // 10)
    return store, out


@pytest.fixture(scope="module")
def exported(kineto):
    return kineto[1]


def test_an_exported_kineto_trace_reads_the_same_and_mostly_in_c(exported):
    _same(exported)
    packets, handed = _read_by_c(exported)
    assert packets > 500 and handed < packets * 0.05  # descriptors, metadata, counters: the reference


def test_the_whole_exported_kineto_trace_reads_the_same(kineto, tmp_path):
    from vtui.export.pftrace import export_pftrace

    store = kineto[0]
    out = tmp_path / "qwen.pftrace"
    export_pftrace(store, out, 0, store.span_ns)
    _same(out)


def test_across_read_blocks_and_gzip(exported, tmp_path, monkeypatch):
    import gzip

    monkeypatch.setattr(pftrace_fast, "_BLOCK", 997)  # records cut by the blocks' ends
    _same(exported)
    gz = tmp_path / "qwen.pftrace.gz"
    gz.write_bytes(gzip.compress(exported.read_bytes()))
    _same(gz)


def _packet(b: TraceProtoBuilder, ts: int, seq: int = 7, flags: int = NEEDS):
    p = b.add_packet()
    p.timestamp = ts
    p.trusted_packet_sequence_id = seq
    p.sequence_flags = flags
    return p


def _every_form() -> bytes:
    """Packets of every kind both readers meet: interned and plain names, several categories,
    annotations of each value type, nested / dict / array / legacy-JSON values, correlation ids,
    flows on begins, ends and instants, instants' scopes, a second sequence with a default track,
    a lost packet, interned ids never defined, counters, legacy events, unended slices."""
    b = TraceProtoBuilder()
    for uuid, parent, what in ((1, 0, "process"), (2, 1, "thread"), (3, 1, "custom"), (4, 1, "counter")):
        p = b.add_packet()
        d = p.track_descriptor
        d.uuid = uuid
        if parent:
            d.parent_uuid = parent
        if what == "process":
            d.process.pid, d.process.process_name = 10, "server"
        elif what == "thread":
            d.thread.pid, d.thread.tid, d.thread.thread_name = 10, 11, "engine"
        elif what == "custom":
            d.name = "stream 7"
        else:
            d.name = "SM"
            d.counter.unit_multiplier = 3
    p = _packet(b, 100, flags=CLEARED | NEEDS)
    i = p.interned_data
    for iid, name in ((1, "aten::mm"), (2, "kernel"), (3, "")):
        i.event_names.add(iid=iid, name=name)
    for iid, name in ((1, "cpu_op"), (2, "gpu"), (3, "")):
        i.event_categories.add(iid=iid, name=name)
    for iid, name in ((1, "External id"), (2, "correlation"), (3, "dims")):
        i.debug_annotation_names.add(iid=iid, name=name)
    i.debug_annotation_string_values.add(iid=1, str=b"interned \xff value")
    e = p.track_event
    e.type, e.track_uuid, e.name_iid = TE.TYPE_SLICE_BEGIN, 2, 1
    e.category_iids.extend([1, 2])
    for key, value in ((1, ("int_value", -5)), (2, ("uint_value", 2**64 - 1)), (3, ("legacy_json_value", "[[1, 2], {\"a\": null}]"))):
        a = e.debug_annotations.add(name_iid=key)
        setattr(a, *value)
    e.debug_annotations.add(name="f", double_value=1.5)
    e.debug_annotations.add(name="b", bool_value=True)
    e.debug_annotations.add(name="p", pointer_value=0xABC)
    e.debug_annotations.add(name="s", string_value="text \" \\ \n \x01 \x1f \x7f é \u2028 😀")
    e.debug_annotations.add(name="si", string_value_iid=1)
    e.debug_annotations.add(name="none")
    e.debug_annotations.add(string_value="no name")
    e.debug_annotations.add(name="b", int_value=2)  # a key twice: the last value, in the first place
    e.flow_ids.append(99)
    e.correlation_id = 1234
    for k in range(40):  # nested slices with flows, ends with args, instants of each scope
        p = _packet(b, 200 + 10 * k)
        e = p.track_event
        e.type, e.track_uuid = (TE.TYPE_SLICE_BEGIN, TE.TYPE_SLICE_END, TE.TYPE_INSTANT)[k % 3], (2, 3)[k % 2]
        e.name_iid = (1, 2, 3, 0)[k % 4]
        if k % 5 == 0:
            e.name = f"plain {k}"
        if k % 4 == 1:
            e.categories.extend(["a", "b"])
        elif k % 4 == 2:
            e.category_iids.append(3)
        elif k % 4 == 3:
            e.category_iids.extend([0, 1])
        if k % 3 != 1 or k % 2:
            e.debug_annotations.add(name_iid=1, int_value=k)
        if k % 4 == 0:  # no double, no legacy JSON: args the helper writes as JSON itself
            e.debug_annotations.add(name="s", string_value="text \" \\ \n \x01 \x1f \x7f é \u2028 😀")
            e.debug_annotations.add(name_iid=2, string_value_iid=1)
            e.debug_annotations.add(name="p", pointer_value=0xABC)
            e.debug_annotations.add(name="u", uint_value=2**64 - 1)
            e.debug_annotations.add(name="n", bool_value=False)
            e.debug_annotations.add(name_iid=3)
            if k % 8 == 0:
                e.debug_annotations.add(name="s", int_value=-(2**63))  # a key twice
        if k % 6 == 0:
            e.flow_ids.append(99)
        if k % 7 == 0:
            e.terminating_flow_ids.append(99)
        if k % 11 == 0:
            e.flow_ids_old.append(5)
        if k % 9 == 0:
            e.correlation_id_str = "c"
        if k % 13 == 0:
            e.correlation_id_str_iid = 1
        if e.type == TE.TYPE_INSTANT and k % 2:
            e.legacy_event.instant_event_scope = (1, 2, 3)[k // 3 % 3]
    p = _packet(b, 700)  # what the reference reads (the helper hands these back)
    p.track_event.type, p.track_event.track_uuid = TE.TYPE_COUNTER, 4
    p.track_event.double_counter_value = 2.5
    p = _packet(b, 705)  # the reference reads this one, and renames an iid the helper has read before
    p.interned_data.event_names.add(iid=1, name="renamed by the reference")
    p.track_event.type, p.track_event.track_uuid, p.track_event.counter_value = TE.TYPE_COUNTER, 4, 7
    p = _packet(b, 706)
    p.track_event.type, p.track_event.track_uuid, p.track_event.name_iid = TE.TYPE_INSTANT, 2, 1
    p = _packet(b, 710)
    p.track_event.type, p.track_event.track_uuid, p.track_event.name_iid = TE.TYPE_INSTANT, 2, 77  # never interned
    p = _packet(b, 720)
    p.track_event.type, p.track_event.track_uuid, p.track_event.name_iid = TE.TYPE_INSTANT, 2, 1
    a = p.track_event.debug_annotations.add(name="nested")
    a.dict_entries.add(name="x", int_value=1)
    a.array_values.add(string_value="y")
    p = _packet(b, 730)
    p.track_event.type, p.track_event.track_uuid = TE.TYPE_SLICE_END, 3  # ends on an empty stack: counted
    p.track_event.type = TE.TYPE_SLICE_END
    p = _packet(b, 740)
    p.track_event.type, p.track_event.track_uuid = TE.TYPE_INSTANT, 555  # a track never described
    p.track_event.legacy_event.phase = ord("I")
    p = _packet(b, 750, seq=8, flags=CLEARED | NEEDS)  # a second sequence with a default track
    p.trace_packet_defaults.track_event_defaults.track_uuid = 3
    p.interned_data.event_names.add(iid=1, name="other sequence")
    for k in range(6):
        p = _packet(b, 760 + k, seq=8)
        p.track_event.type = (TE.TYPE_SLICE_BEGIN, TE.TYPE_INSTANT)[k % 2]
        p.track_event.name_iid = 1
    p = _packet(b, 800, seq=7)
    p.previous_packet_dropped = 1  # state lost: what needs it is skipped
    p.track_event.type, p.track_event.track_uuid, p.track_event.name_iid = TE.TYPE_INSTANT, 2, 1
    p = _packet(b, 810, seq=7, flags=0)  # needs no state: read
    p.track_event.type, p.track_event.track_uuid, p.track_event.name = TE.TYPE_INSTANT, 2, "stateless"
    p = _packet(b, 820, seq=7, flags=CLEARED | NEEDS)
    p.interned_data.event_names.add(iid=1, name="after the clear")
    p.track_event.type, p.track_event.track_uuid, p.track_event.name_iid = TE.TYPE_SLICE_BEGIN, 2, 1
    for ts, kind in ((5000, TE.TYPE_SLICE_BEGIN), (1234, TE.TYPE_SLICE_END), (3000, TE.TYPE_SLICE_BEGIN),
                     (0, TE.TYPE_SLICE_END)):  # ends before their begins: negative durations
        p = _packet(b, ts, flags=0)
        p.track_event.type, p.track_event.track_uuid, p.track_event.name = kind, 556, "backwards"
    p = b.add_packet()
    p.chrome_events.metadata.add(name="deviceProperties", json_value="[{\"id\": 0}]")
    data = bytearray(b.serialize())
    event = bytearray()  # by hand: text that is not UTF-8 (the reference reads it with U+FFFD)
    w.put_int(event, 9, 3)
    w.put_int(event, 11, 2)
    w.put_bytes(event, 23, b"bad \xff name")
    packet = bytearray()
    w.put_int(packet, 8, 900)
    w.put_int(packet, 10, 7)
    w.put_bytes(packet, 11, event)
    w.put_bytes(data, 1, packet)
    w.put_int(data, 2, 5)  # a top-level field that is no packet: skipped
    return bytes(data)


def test_every_form_reads_the_same(tmp_path):
    path = tmp_path / "forms.pftrace"
    path.write_bytes(_every_form())
    _same(path)
    packets, handed = _read_by_c(path)
    assert handed < packets / 2


@pytest.mark.parametrize("seed", range(6))
def test_damaged_copies_read_the_same(tmp_path, exported, seed):
    """Bytes changed, removed or cut: whatever each reader makes of them, they make the same."""
    rng = random.Random(seed)
    sources = [_every_form(), exported.read_bytes()[:40_000]]
    for i in range(25):
        data = bytearray(rng.choice(sources))
        for _ in range(rng.choice([1, 2, 8])):
            at = rng.randrange(len(data))
            if rng.random() < 0.8:
                data[at] = rng.randrange(256)
            else:
                del data[at : at + rng.randrange(1, 6)]
        if i % 4 == 0:
            data = data[: rng.randrange(1, len(data))]
        path = tmp_path / f"d{seed}_{i}.pftrace"
        path.write_bytes(bytes(data))
        _same(path)
