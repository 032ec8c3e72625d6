"""Which decoder reads Perfetto TrackEvent packets faster: the ``protobuf`` runtime (upb) with the
``perfetto`` package's descriptors, or vtui's hand-written wire decoder (vtui.io.protowire)?

Both read the fields vtui's reader takes from each event packet (timestamp, sequence id, type,
track, interned name and categories, flow ids, each debug annotation's name and value) out of
the same synthetic Kineto-shaped trace (slices with 8 debug annotations each, interned names).

    .venv/bin/python -m benchmarks pftrace_decode [EVENTS]

Needs ``pip install perfetto protobuf`` (the test extra).
"""

from __future__ import annotations

import io
import json
import os
import sys
import time

from vtui.io import protowire as w


def synth(events: int) -> bytes:
    """A trace of ``events`` slices (BEGIN/END pairs), Kineto's args as debug annotations."""
    out = io.BytesIO()
    desc = bytearray()
    w.put_int(desc, 1, 11)
    thread = bytearray()
    w.put_int(thread, 1, 100)
    w.put_int(thread, 2, 101)
    w.put_bytes(desc, 4, thread)
    head = bytearray()
    w.put_bytes(head, 60, desc)
    w.put_int(head, 10, 1)
    interned = bytearray()
    for iid, text in ((1, "aten::mm"), (2, "cudaLaunchKernel"), (3, "void gemm_kernel<float>")):
        entry = bytearray()
        w.put_int(entry, 1, iid)
        w.put_str(entry, 2, text)
        w.put_bytes(interned, 2, entry)
    for iid, text in enumerate(("External id", "correlation", "Sequence number", "Fwd thread id", "Record function id",
                                "Ev Idx", "Input Dims", "grid"), 1):
        entry = bytearray()
        w.put_int(entry, 1, iid)
        w.put_str(entry, 2, text)
        w.put_bytes(interned, 3, entry)
    w.put_bytes(head, 12, interned)
    w.put_int(head, 13, 3)
    w.write_packet(out, head)
    for i in range(events):
        ev = bytearray()
        w.put_int(ev, 9, 1)
        w.put_int(ev, 11, 11)
        w.put_int(ev, 10, 1 + i % 3)
        w.put_str(ev, 22, "cpu_op")
        for k in range(1, 7):
            ann = bytearray()
            w.put_int(ann, 1, k)
            w.put_int(ann, 4, i * 7 + k)
            w.put_bytes(ev, 4, ann)
        ann = bytearray()
        w.put_int(ann, 1, 7)
        w.put_str(ann, 6, "[[4096, 4096], [4096, 4096]]")
        w.put_bytes(ev, 4, ann)
        w.put_fixed64(ev, 47, i)
        pkt = bytearray()
        w.put_int(pkt, 8, 1_000_000 + i * 1000)
        w.put_int(pkt, 10, 1)
        w.put_bytes(pkt, 11, ev)
        w.write_packet(out, pkt)
        end = bytearray()
        w.put_int(end, 9, 2)
        w.put_int(end, 11, 11)
        pkt = bytearray()
        w.put_int(pkt, 8, 1_000_500 + i * 1000)
        w.put_int(pkt, 10, 1)
        w.put_bytes(pkt, 11, end)
        w.write_packet(out, pkt)
    return out.getvalue()


def by_hand(data: bytes) -> int:
    fields, seen = w.fields, 0
    for packet in w.iter_packets(io.BytesIO(data).read, print):
        ts = seq = 0
        event = None
        for f, v in fields(packet):
            if f == 8:
                ts = v
            elif f == 10:
                seq = v
            elif f == 11:
                event = v
        if event is None:
            continue
        kind = track = name = 0
        anns = []
        flows: list[int] = []
        cats: list = []
        for f, v in fields(event):
            if f == 9:
                kind = v
            elif f == 11:
                track = v
            elif f == 10:
                name = v
            elif f == 22:
                cats.append(v)
            elif f == 4:
                key = value = None
                for g, x in fields(v):
                    if g == 1 or g == 10:
                        key = x
                    else:
                        value = x
                anns.append((key, value))
            elif f == 47:
                flows.append(w.fixed(v))
        seen += bool(ts) + bool(seq) + kind + track + name + len(anns) + len(flows) + len(cats)
    return seen


def by_protobuf(data: bytes) -> int:
    from perfetto.protos.perfetto.trace.perfetto_trace_pb2 import TracePacket  # noqa: PLC0415

    parse, seen = TracePacket.FromString, 0
    for packet in w.iter_packets(io.BytesIO(data).read, print):
        p = parse(packet)
        ts, seq = p.timestamp, p.trusted_packet_sequence_id
        if not p.HasField("track_event"):
            continue
        e = p.track_event
        kind, track, name = e.type, e.track_uuid, e.name_iid
        cats = list(e.categories)
        anns = []
        for a in e.debug_annotations:
            which = a.WhichOneof("value")
            anns.append((a.name_iid or a.name, getattr(a, which) if which else None))
        flows = list(e.flow_ids)
        seen += bool(ts) + bool(seq) + kind + track + name + len(anns) + len(flows) + len(cats)
    return seen


def main() -> None:
    events = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    data = synth(events)
    best = {"hand decoder": float("inf"), "protobuf (upb)": float("inf")}
    seen = {}
    for _ in range(5):  # interleaved, CPU time (process_time): a busy machine moves both alike
        for label, fn in (("hand decoder", by_hand), ("protobuf (upb)", by_protobuf)):
            t = time.process_time()
            seen[label] = fn(data)
            best[label] = min(best[label], time.process_time() - t)
    assert seen["hand decoder"] == seen["protobuf (upb)"]  # both read the same fields
    print(json.dumps({"slices": events, "mb": round(len(data) / 1e6, 2),
                      "hand_cpu_s": round(best["hand decoder"], 3), "protobuf_cpu_s": round(best["protobuf (upb)"], 3),
                      "protobuf_speedup": round(best["hand decoder"] / best["protobuf (upb)"], 2),
                      "loadavg": os.getloadavg()}))


if __name__ == "__main__":
    main()
