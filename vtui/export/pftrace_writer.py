"""Chrome-trace JSON events turned into Perfetto TrackEvent packets, written as they come.

One writer sequence: event names, categories and annotation names interned; a process track per
pid (a ``ProcessDescriptor`` where the pid is an int32, else a root track named as the pid) and a
thread track per (pid, tid) under it (a ``ThreadDescriptor``, or a track named as the tid), each
described before its first event and again when metadata renames it. A complete (``X``) event is
a begin and an end packet written together (its end is exact to the ns, which the legacy
``duration_us`` is not; vtui's reader and Perfetto pair them per track). Args are debug
annotations with their JSON types (lists and dicts as legacy JSON); flows are ``flow_ids`` /
``terminating_flow_ids`` on the slices they join (given by the caller, from the store's flow
table); async, sample and object events are legacy events with their phase and id.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, BinaryIO

import msgspec

from vtui.io.exactts import NO_NS, value_ns
from vtui.io.protowire import put_bytes, put_double, put_fixed64, put_int, put_str, write_packet

# TracePacket / TrackEvent / descriptor field numbers (perfetto_trace.proto).
_TS, _SEQ, _EVENT, _DESC, _INTERNED, _FLAGS, _CHROME = 8, 10, 11, 60, 12, 13, 5
_E_LEGACY = 6
_E_CAT_IIDS, _E_ANN, _E_TYPE, _E_NAME_IID, _E_TRACK, _E_DOUBLE, _E_FLOW, _E_TERM = 3, 4, 9, 10, 11, 44, 47, 48
BEGIN, END, INSTANT, COUNTER = 1, 2, 3, 4
SEQUENCE = 1
_INT32 = (-(1 << 31), (1 << 31) - 1)
_INT64 = (-(1 << 63), (1 << 63) - 1)
_ASYNC = frozenset("bneSTpF")  # async phases: written as legacy events with their ids
_POINTS = frozenset("PNODVvc()")  # samples, objects, marks...: legacy events vtui keeps as points


class _Event(msgspec.Struct, gc=False):
    ph: Any = None
    name: Any = None
    cat: Any = None
    ts: msgspec.Raw = msgspec.Raw(b"")
    dur: msgspec.Raw = msgspec.Raw(b"")
    pid: Any = None
    tid: Any = None
    s: Any = None
    id: Any = None
    id2: Any = None
    scope: Any = None
    args: Any = None


_DECODE = msgspec.json.Decoder(_Event).decode


def _int32(value: Any) -> bool:
    return type(value) is int and _INT32[0] <= value <= _INT32[1]


@dataclass
class _Process:
    uuid: int
    pid: Any
    name: str = ""
    labels: str = ""
    sort: int | None = None


@dataclass
class _Thread:
    uuid: int
    process: _Process
    tid: Any
    name: str = ""
    sort: int | None = None


@dataclass
class PacketWriter:
    fh: BinaryIO
    flows_out: dict[int, list[int]] = field(default_factory=dict)  # event ordinal -> flow ids it starts
    flows_in: dict[int, list[int]] = field(default_factory=dict)  # event ordinal -> flow ids it ends
    skipped: dict[str, int] = field(default_factory=dict)  # events of kinds not written, by phase
    _processes: dict[Any, _Process] = field(default_factory=dict)
    _threads: dict[tuple[Any, Any], _Thread] = field(default_factory=dict)
    _counters: dict[tuple, int] = field(default_factory=dict)
    _ids: dict[Any, int] = field(default_factory=dict)  # async ids that are not uint64, numbered
    _unended: dict[int, int] = field(default_factory=dict)  # thread track -> its track for X without dur
    _uuid: int = 0
    _names: dict[str, int] = field(default_factory=dict)
    _cats: dict[str, int] = field(default_factory=dict)
    _arg_names: dict[str, int] = field(default_factory=dict)
    _started: bool = False

    def metadata(self, meta: dict[str, Any]) -> None:
        """The trace's metadata (``deviceProperties``...) as Chrome metadata entries."""
        bundle = bytearray()
        for key, value in meta.items():
            entry = bytearray()
            put_str(entry, 1, str(key))
            put_bytes(entry, 5, msgspec.json.encode(value))
            put_bytes(bundle, 2, entry)
        if bundle:
            packet = bytearray()
            put_bytes(packet, _CHROME, bundle)
            put_int(packet, _SEQ, SEQUENCE)
            write_packet(self.fh, packet)

    def event(self, ordinal: int, raw: bytes) -> None:
        """One JSON event (the ``ordinal``-th of its file) as packets."""
        try:
            e = _DECODE(raw)
        except (msgspec.DecodeError, msgspec.ValidationError):
            self._skip("not JSON vtui reads")
            return
        ph = e.ph[:1] if isinstance(e.ph, str) else ""
        if ph == "M":
            self._metadata_event(e)
            return
        ts = value_ns(e.ts)
        if ts == NO_NS:
            self._skip("without a usable ts")
            return
        if ph == "X":
            dur = value_ns(e.dur)
            if dur != NO_NS and dur >= 0:
                self._track_event(BEGIN, ts, e, ordinal)
                self._end(ts + dur, e)
            else:  # no end: a begin on a track of its own, so no later end of the thread pairs with it
                self._track_event(BEGIN, ts, e, ordinal, self._unended_track(e.pid, e.tid))
        elif ph == "B":
            self._track_event(BEGIN, ts, e, ordinal)
        elif ph == "E":
            self._end(ts, e)
        elif ph in ("i", "I", "R"):
            self._track_event(INSTANT, ts, e, ordinal)
        elif ph == "C":
            self._counter(ts, e)
        elif ph in _ASYNC or ph in _POINTS:
            self._async(ts, e)
        elif ph not in ("s", "t", "f"):  # v1 flow events: the flows ride on their slices
            self._skip(ph or "?")

    def _skip(self, what: str) -> None:
        self.skipped[what] = self.skipped.get(what, 0) + 1

    # ---- tracks ----------------------------------------------------------------------
    def _next_uuid(self) -> int:
        self._uuid += 1
        return self._uuid

    def _process(self, pid: Any) -> _Process:
        got = self._processes.get(_key(pid))
        if got is None:
            got = self._processes[_key(pid)] = _Process(self._next_uuid(), pid)
            self._describe_process(got)
        return got

    def _thread(self, pid: Any, tid: Any) -> _Thread:
        got = self._threads.get((_key(pid), _key(tid)))
        if got is None:
            got = self._threads[(_key(pid), _key(tid))] = _Thread(self._next_uuid(), self._process(pid), tid)
            self._describe_thread(got)
        return got

    def _describe_process(self, p: _Process) -> None:
        desc = bytearray()
        put_int(desc, 1, p.uuid)
        if _int32(p.pid):
            proc = bytearray()
            put_int(proc, 1, p.pid)
            if p.sort is not None and _int32(p.sort):
                put_int(proc, 3, p.sort)
            if p.name:
                put_str(proc, 6, p.name)
            for label in filter(None, p.labels.split(",")):
                put_str(proc, 8, label)
            put_bytes(desc, 3, proc)
        else:
            put_str(desc, 2, str(p.pid))
            if p.sort is not None and _int32(p.sort):
                put_int(desc, 12, p.sort)  # sibling_order_rank: the sort index of a track that is no process
        self._descriptor(desc)

    def _describe_thread(self, t: _Thread) -> None:
        desc = bytearray()
        put_int(desc, 1, t.uuid)
        put_int(desc, 5, t.process.uuid)
        if _int32(t.process.pid) and _int32(t.tid):
            thread = bytearray()
            put_int(thread, 1, t.process.pid)
            put_int(thread, 2, t.tid)
            if t.sort is not None and _int32(t.sort):
                put_int(thread, 3, t.sort)
            if t.name:
                put_str(thread, 5, t.name)
            put_bytes(desc, 4, thread)
        else:
            put_str(desc, 2, str(t.tid))
            if t.sort is not None and _int32(t.sort):
                put_int(desc, 12, t.sort)
        self._descriptor(desc)

    def _descriptor(self, desc: bytearray) -> None:
        packet = bytearray()
        put_bytes(packet, _DESC, desc)
        put_int(packet, _SEQ, SEQUENCE)
        write_packet(self.fh, packet)

    def _metadata_event(self, e: _Event) -> None:
        args = e.args if isinstance(e.args, dict) else {}
        name = e.name
        if name in ("process_name", "process_labels", "process_sort_index"):
            p = self._process(e.pid)
            if name == "process_name" and isinstance(args.get("name"), str):
                p.name = args["name"]
            elif name == "process_labels":
                p.labels = str(args.get("labels", ""))
            elif name == "process_sort_index" and type(args.get("sort_index")) is int:
                p.sort = args["sort_index"]
            self._describe_process(p)
        elif name in ("thread_name", "thread_sort_index"):
            t = self._thread(e.pid, e.tid)
            if name == "thread_name" and isinstance(args.get("name"), str):
                t.name = args["name"]
            elif name == "thread_sort_index" and type(args.get("sort_index")) is int:
                t.sort = args["sort_index"]
            self._describe_thread(t)
            if t.uuid in self._unended:  # its second track says the same
                self._describe_thread(_Thread(self._unended[t.uuid], t.process, t.tid, t.name, t.sort))
        else:
            self._skip("M")

    # ---- events ----------------------------------------------------------------------
    def _packet(self, ts: int, event: bytearray, interned: bytearray | None) -> None:
        packet = bytearray()
        put_int(packet, _TS, ts)
        put_int(packet, _SEQ, SEQUENCE)
        if not self._started:
            put_int(packet, _FLAGS, 3)  # incremental state cleared; needs it
            self._started = True
        else:
            put_int(packet, _FLAGS, 2)
        if interned:
            put_bytes(packet, _INTERNED, interned)
        put_bytes(packet, _EVENT, event)
        write_packet(self.fh, packet)

    def _intern(self, table: dict[str, int], field_no: int, text: str, interned: bytearray) -> int:
        iid = table.get(text)
        if iid is None:
            iid = table[text] = len(table) + 1
            entry = bytearray()
            put_int(entry, 1, iid)
            put_str(entry, 2, text)
            put_bytes(interned, field_no, entry)
        return iid

    def _unended_track(self, pid: Any, tid: Any) -> int:
        """A second track of the thread (the same descriptor, another uuid) for complete events
        without a duration: vtui runs them to the trace's end, as Catapult does."""
        thread = self._thread(pid, tid)
        got = self._unended.get(thread.uuid)
        if got is None:
            got = self._unended[thread.uuid] = self._next_uuid()
            self._describe_thread(_Thread(got, thread.process, thread.tid, thread.name, thread.sort))
        return got

    def _track_event(self, kind: int, ts: int, e: _Event, ordinal: int, track: int = 0) -> None:
        track = track or self._thread(e.pid, e.tid).uuid
        interned = bytearray()
        event = bytearray()
        put_int(event, _E_TYPE, kind)
        put_int(event, _E_TRACK, track)
        put_int(event, _E_NAME_IID, self._intern(self._names, 2, _text(e.name), interned))
        if e.cat is not None:
            put_int(event, _E_CAT_IIDS, self._intern(self._cats, 1, _text(e.cat), interned))
        if isinstance(e.args, dict):
            self._annotations(event, e.args, interned)
        for ident in self.flows_out.get(ordinal, ()):
            put_fixed64(event, _E_FLOW, ident)
        for ident in self.flows_in.get(ordinal, ()):
            put_fixed64(event, _E_TERM, ident)
        if kind == INSTANT and e.s in ("p", "g"):  # the scope as Chrome's legacy event says it
            legacy = bytearray()
            put_int(legacy, 14, 2 if e.s == "p" else 1)
            put_bytes(event, _E_LEGACY, legacy)
        self._packet(ts, event, interned)

    def _annotations(self, event: bytearray, args: dict[str, Any], interned: bytearray) -> None:
        for key, value in args.items():
            ann = bytearray()
            put_int(ann, 1, self._intern(self._arg_names, 3, str(key), interned))
            _annotation_value(ann, value)
            put_bytes(event, _E_ANN, ann)

    def _end(self, ts: int, e: _Event) -> None:
        event = bytearray()
        put_int(event, _E_TYPE, END)
        put_int(event, _E_TRACK, self._thread(e.pid, e.tid).uuid)
        self._packet(ts, event, None)

    def _async(self, ts: int, e: _Event) -> None:
        """An async (or sample, object...) event as the legacy event Perfetto and vtui's reader read
        as it: its phase and id (a string id becomes a number of its own per export: the pairing
        needs equality only)."""
        legacy = bytearray()
        put_int(legacy, 2, ord(e.ph[0]))
        kind, ident = 6, e.id  # unscoped_id
        if ident is None and isinstance(e.id2, dict) and e.id2:
            kind, ident = (11, e.id2["global"]) if "global" in e.id2 else (10, e.id2.get("local"))
        if ident is None and e.ph[0] in _ASYNC:
            self._skip(e.ph[0] + " without an id")
            return
        if ident is not None:
            put_int(legacy, kind, self._id_number(ident))
        if isinstance(e.scope, str) and e.scope:
            put_str(legacy, 7, e.scope)
        interned = bytearray()
        event = bytearray()
        put_int(event, _E_TRACK, self._thread(e.pid, e.tid).uuid)
        put_int(event, _E_NAME_IID, self._intern(self._names, 2, _text(e.name), interned))
        if e.cat is not None:
            put_int(event, _E_CAT_IIDS, self._intern(self._cats, 1, _text(e.cat), interned))
        if isinstance(e.args, dict):
            self._annotations(event, e.args, interned)
        put_bytes(event, _E_LEGACY, legacy)
        self._packet(ts, event, interned)

    def _id_number(self, ident: Any) -> int:
        if type(ident) is int and 0 <= ident < 1 << 64:
            return ident
        key = _key(ident)
        got = self._ids.get(key)
        if got is None:
            got = self._ids[key] = (1 << 63) + len(self._ids)  # far from the plain ids
        return got

    def _counter(self, ts: int, e: _Event) -> None:
        if not isinstance(e.args, dict):
            return
        process = self._process(e.pid)
        ident = "" if e.id is None else f"[{e.id}]"
        for key, value in e.args.items():
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                self._skip("C series not a number")
                continue
            name = _text(e.name) + ident + ("" if key == "value" else f" {key}")
            track = self._counters.get((process.uuid, name))
            if track is None:
                track = self._counters[(process.uuid, name)] = self._next_uuid()
                desc = bytearray()
                put_int(desc, 1, track)
                put_int(desc, 5, process.uuid)
                put_str(desc, 2, name)
                put_bytes(desc, 8, b"")  # a CounterDescriptor (its defaults)
                self._descriptor(desc)
            event = bytearray()
            put_int(event, _E_TYPE, COUNTER)
            put_int(event, _E_TRACK, track)
            put_double(event, _E_DOUBLE, float(value))
            self._packet(ts, event, None)


def _key(value: Any) -> Any:
    try:
        hash(value)
    except TypeError:
        return repr(value)
    return (type(value).__name__, value)  # 1 and True, 1 and 1.0 stay apart


def _text(value: Any) -> str:
    return value if isinstance(value, str) else "" if value is None else msgspec.json.encode(value).decode()


def _annotation_value(ann: bytearray, value: Any) -> None:
    """A JSON value as a DebugAnnotation's value (dicts and lists as legacy JSON)."""
    if isinstance(value, bool):
        put_int(ann, 2, int(value))
    elif isinstance(value, int):
        if _INT64[0] <= value <= _INT64[1]:
            put_int(ann, 4, value)
        elif 0 <= value < 1 << 64:
            put_int(ann, 3, value)
        else:
            put_str(ann, 9, str(value))  # legacy JSON: the number's text
    elif isinstance(value, float):
        put_double(ann, 5, value)
    elif isinstance(value, str):
        put_str(ann, 6, value)
    elif isinstance(value, (dict, list)):  # legacy JSON: Perfetto parses it into nested args, and
        put_str(ann, 9, msgspec.json.encode(value).decode())  # it reads ~3x faster than nested annotations
    elif value is not None:
        put_str(ann, 9, msgspec.json.encode(value).decode())
