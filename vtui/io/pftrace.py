"""Read a Perfetto protobuf trace (``.pftrace``, ``.perfetto-trace``, gzipped too) into the same
columns the JSON decoder fills, so nothing above the io layer knows where a trace came from.

Packets stream from the file (``vtui.io.protowire``); the common ones (slices, instants, flows,
plain annotations, interned data) are read by a C helper where one was built (``pftrace_fast``),
the rest, and all of them without it, by the ``protobuf`` runtime with the ``perfetto`` package's
descriptors (the ``pftrace`` extra): the reference. What becomes what:

- TrackEvent slices (``TYPE_SLICE_BEGIN``/``END``, paired per track as Perfetto does; and legacy
  ``X`` complete events): ``X`` events; a begin never ended: a ``B``;
- instants: ``i`` (process scope on a process track); counters, and the extra counter values
  riding on other events: ``C`` events named as their counter track;
- ``flow_ids`` / ``terminating_flow_ids`` (and the older uint64 ones): flow bindings on the slices
  (a flow id seen for the first time starts a flow, seen again continues it; a terminating id
  ends it), as Perfetto's FlowTracker;
- debug annotations: the event's args (plain names, so Kineto's ``correlation`` and ``External
  id`` keep their meaning); ``correlation_id`` becomes ``correlation`` where no arg has it;
- track, process and thread descriptors and ``ProcessTree``: the (pid, tid) of each event and
  ``process_name`` / ``process_labels`` / ``thread_name`` / sort-index metadata events;
- interned names, categories, annotation names and string values per sequence, dropped when the
  sequence clears its incremental state; packets that need that state while it is unknown (after
  a lost packet, before the first clear) are skipped and counted, as Perfetto does;
- Chrome metadata (``chrome_events.metadata``): the trace's metadata (``deviceProperties``...).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from vtui.errors import TraceLoadError
from vtui.gcpause import gc_paused
from vtui.io.columns import ArgsWriter, Columns, ColumnSink
from vtui.io.events import EMPTY_RAW, Event
from vtui.io.pftrace_args import event_args
from vtui.io.pftrace_fast import fast_available, fast_packets, flow_edges
from vtui.io.pftrace_flows import Cell, FlowSteps
from vtui.io.pftrace_state import Sequence, Track, Tracks, text
from vtui.io.pftrace_stream import looks_like_packets, open_stream
from vtui.io.protowire import iter_packets
from vtui.io.reader import GZIP_MAGIC, MAX_INFLATE_RATIO, read_error

FORM = "perfetto-protobuf"
SUFFIXES = (".pftrace", ".perfetto-trace", ".pftrace.gz", ".perfetto-trace.gz")
INSTALL_HINT = "reading Perfetto protobuf traces needs the protobuf runtime: pip install 'vtui[pftrace]'"
Progress = Callable[[float], None]
_CHUNK = 8192  # events per ColumnSink.add
BEGIN, END, INSTANT, COUNTER = 1, 2, 3, 4
SEQ_CLEARED, SEQ_NEEDS_STATE = 1, 2
_ENCODE = msgspec.json.encode
DEFAULT_TRACK = "Default Track"  # events with no track and no thread on their sequence
LEGACY_OTHER = -2  # a legacy phase read as the Chrome-trace event it stands for
_LEGACY_AS_JSON = frozenset("stfbneSTpFPNODVvc()")


def is_pftrace(path: str | Path) -> bool:
    """A Perfetto protobuf trace: by its name, or (any other name but JSON's) by its first record."""
    name = str(path).lower()
    if name.endswith(SUFFIXES):
        return True
    if name.endswith((".json", ".json.gz", ".sqlite")):
        return False
    try:
        with open(path, "rb") as fh:
            head = fh.read(64)
    except OSError:
        return False
    if head[:2] == GZIP_MAGIC:
        return False  # a gzip named otherwise is read as JSON (its name says nothing)
    return looks_like_packets(head)


@dataclass
class PftraceResult:
    columns: Columns
    metadata: dict[str, Any]
    warnings: list[str]


def read_pftrace(path: str | Path, args: ArgsWriter | None = None, progress: Progress | None = None,
                 max_inflate: float = MAX_INFLATE_RATIO, pure_python: bool = False) -> PftraceResult:
    """Read a Perfetto trace. Raises TraceLoadError (one line) for a file that is not one, or
    when the protobuf runtime is not installed."""
    reader = PacketReader(Path(path), max_inflate, pure_python=pure_python)
    sink = ColumnSink(args=args, pure_python=pure_python)
    with gc_paused():  # small objects per event, none in a cycle (load_trace pauses too, through the build)
        for block in reader.blocks(progress):
            for at in range(0, len(block), _CHUNK):
                sink.add(block[at : at + _CHUNK])
    columns = sink.finish()
    columns.flow_v2.extend(reader.flows)
    if reader.packets == 0 and not reader.warnings:
        raise TraceLoadError(f"{path}: not a Perfetto trace (no packets)")
    return PftraceResult(columns=columns, metadata=reader.metadata, warnings=reader.notes())


def pftrace_events(path: str | Path, ordinals: Any) -> list[msgspec.Raw]:
    """The events at ``ordinals`` (as the loader numbered them) as Chrome-trace JSON objects, so a
    range of a Perfetto trace can be written out again; a slice's flow rides on it as a
    ``bind_id`` (the first, where a slice has several). The file is read again."""
    import numpy as np  # noqa: PLC0415

    wanted = set(np.asarray(ordinals, dtype=np.int64).tolist())
    reader = PacketReader(Path(path))
    picked = [(row, event) for row, event in enumerate(reader.events(None)) if row in wanted]
    bound: dict[int, tuple[Any, bool, bool]] = {}
    for row, key, flow_in, flow_out in reader.flows:
        bound.setdefault(row, (key, flow_in, flow_out))
    out: list[msgspec.Raw] = []
    for row, event in picked:
        if row in bound:
            key, flow_in, flow_out = bound[row]
            event.bind_id, event.flow_in, event.flow_out = _id_text(key), flow_in, flow_out
        out.append(msgspec.Raw(event_json(event)))
    return out


def _id_text(key: Any) -> str:
    """A flow key as a JSON bind id that is not hex (so it stays text, one id per key)."""
    return "flow " + ":".join(map(str, key)) if isinstance(key, tuple) else f"flow {key}"


def event_json(event: Event) -> bytes:
    """One event as a Chrome-trace JSON object."""
    obj: dict[str, Any] = {"ph": event.ph, "name": event.name, "cat": event.cat, "pid": event.pid, "tid": event.tid,
                           "ts": msgspec.Raw(bytes(event.ts) or b"0")}
    if event.ph == "X":
        obj["dur"] = msgspec.Raw(bytes(event.dur))
    if event.s is not None:
        obj["s"] = event.s
    if event.bind_id is not None:
        obj.update(bind_id=event.bind_id, flow_in=event.flow_in is True, flow_out=event.flow_out is True)
    if len(event.args):
        obj["args"] = event.args
    return _ENCODE(obj)


def _us_text(ns: int) -> msgspec.Raw:
    """ns as the µs text a Chrome trace writes (exact: vtui.io.exactts reads it back to the ns)."""
    q, r = divmod(ns, 1000)
    if ns < 0 and r:
        return msgspec.Raw(f"-{(-ns) // 1000}.{(-ns) % 1000:03d}".rstrip("0").encode())
    return msgspec.Raw(f"{q}.{r:03d}".rstrip("0").encode() if r else str(q).encode())


# A slice begun and not yet ended: [ts, name, cat, pid, tid, args, cell] (a list, so that the C
# helper makes and reads them too; cell: where its flows learn its row, None when it has none).
TS, NAME, CAT, PID, TID, ARGS, CELL = range(7)


@dataclass
class PacketReader:
    path: Path
    max_inflate: float = MAX_INFLATE_RATIO
    tracks: Tracks = field(default_factory=Tracks)
    seqs: dict[int, Sequence] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)
    flows: list[tuple[int, Any, bool, bool]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    packets: int = 0
    rows: int = 0  # events handed out so far: the next one's ordinal
    _stacks: dict[Any, list[list[Any]]] = field(default_factory=dict)
    _flows: FlowSteps = field(default_factory=FlowSteps)
    _out: list[Event] = field(default_factory=list)
    _described: dict[int, bytes] = field(default_factory=dict)  # each track's last descriptor
    pure_python: bool = False  # never the C helper (the reference path)
    _parse: Any = None
    _decode_error: Any = None

    def events(self, progress: Progress | None) -> Iterator[Event]:
        """Every event, in file order (a slice when it ends), metadata as it is described."""
        for block in self.blocks(progress):
            yield from block

    def blocks(self, progress: Progress | None) -> Iterator[list[Event]]:
        """The events in lists, as they are read."""
        try:
            from google.protobuf.message import DecodeError  # noqa: PLC0415
            from perfetto.protos.perfetto.trace.perfetto_trace_pb2 import TracePacket  # noqa: PLC0415
        except ImportError:
            raise TraceLoadError(f"{self.path}: {INSTALL_HINT}") from None
        try:
            fh, stream = open_stream(self.path, self.max_inflate)
        except OSError as exc:
            raise read_error(self.path, exc) from None
        self._parse, self._decode_error = TracePacket.FromString, DecodeError
        with fh:
            try:
                if self.pure_python or not fast_available():
                    for n, raw in enumerate(iter_packets(stream.read, self.warnings.append)):
                        self.packets += 1
                        self._slow_packet(raw, self.rows)
                        yield self._handed_out()
                        if progress and not n % 4096:
                            progress(stream.fraction())
                else:
                    for _ in fast_packets(self, stream, progress):
                        yield self._handed_out()
            except OSError as exc:
                raise read_error(self.path, exc) from None
            except TraceLoadError as exc:
                raise TraceLoadError(f"{self.path}: {exc}") from None
        self.warnings.extend(stream.warnings)
        self._finish_open()
        yield self._handed_out()
        if progress:
            progress(1.0)

    def _handed_out(self) -> list[Event]:
        out, self._out = self._out, []
        return out

    def _slow_packet(self, raw: bytes, rows: int) -> int:
        """One packet read by the protobuf runtime (the reference; the C helper hands over each
        packet it does not read itself, with the rows handed out so far): the rows after it."""
        self.rows = rows
        try:
            self._packet(self._parse(raw))
        except self._decode_error:
            self._count("packets that do not decode (skipped)")
        return self.rows

    def notes(self) -> list[str]:
        out = list(self.warnings)
        out += [f"{n:,} {what}" for what, n in self.counts.items()]
        if self.tracks.unknown:
            out.append(f"events on {self.tracks.unknown:,} track uuid(s) never described (each drawn as its own process)")
        return out

    def _count(self, what: str, n: int = 1) -> None:
        self.counts[what] = self.counts.get(what, 0) + n

    # ---- packets ---------------------------------------------------------------------
    def _packet(self, p: Any) -> None:
        seq = self.seqs.get(p.trusted_packet_sequence_id)
        if seq is None:
            seq = self.seqs[p.trusted_packet_sequence_id] = Sequence()
        flags = p.sequence_flags
        if p.incremental_state_cleared or flags & SEQ_CLEARED:
            seq.clear()
        elif p.previous_packet_dropped:
            seq.valid = False
        if flags & SEQ_NEEDS_STATE and not seq.valid:
            self._count("packets needing incremental state the sequence had lost (skipped, as Perfetto does)")
            return
        if p.HasField("trace_packet_defaults"):
            d = p.trace_packet_defaults.track_event_defaults
            seq.default_track = d.track_uuid if d.HasField("track_uuid") else None
            seq.extra_counters = list(d.extra_counter_track_uuids)
            seq.extra_double_counters = list(d.extra_double_counter_track_uuids)
        if p.HasField("interned_data"):
            self._intern(seq, p.interned_data)
        which = p.WhichOneof("data")  # at most one of these per packet (a oneof)
        if which == "track_event":
            self._event(seq, p, p.track_event)
        elif which == "track_descriptor":
            self._track(p.track_descriptor)
        elif which == "process_tree":
            self._process_tree(p.process_tree)
        elif which == "process_descriptor":
            self._process(p.process_descriptor)
        elif which == "thread_descriptor":
            t = p.thread_descriptor
            seq.thread = (t.pid, t.tid)
            seq.last_us = t.reference_timestamp_us
            self._thread(t, "")
        elif which == "chrome_events":
            self._chrome_metadata(p.chrome_events)

    @staticmethod
    def _intern(seq: Sequence, data: Any) -> None:
        for entry in data.event_names:
            seq.names[entry.iid] = text(entry.name)
        for entry in data.event_categories:
            seq.cats[entry.iid] = text(entry.name)
        for entry in data.debug_annotation_names:
            seq.arg_names[entry.iid] = text(entry.name)
        for entry in data.debug_annotation_string_values:
            seq.arg_strings[entry.iid] = entry.str.decode("utf-8", "replace")

    def _track(self, d: Any) -> None:
        name = text(d.name or d.static_name or d.atrace_name)
        track = Track(uuid=d.uuid, parent=d.parent_uuid, name=name, counter=d.HasField("counter"))
        if d.HasField("thread"):
            track.pid, track.tid = d.thread.pid, d.thread.tid
        elif d.HasField("process"):
            track.pid = d.process.pid
        if d.HasField("counter"):
            c = d.counter
            track.scale, track.incremental = c.unit_multiplier or 1, c.is_incremental
            if not name:  # Perfetto's names for its built-in counters
                track.name = {1: "thread_time", 2: "thread_instruction_count"}.get(c.type, "")
        self.tracks.add(track)
        described = d.SerializeToString()
        if self._described.get(d.uuid) == described:
            return  # the same again: its names are known
        self._described[d.uuid] = described
        if d.HasField("thread"):
            self._thread(d.thread, name)
        elif d.HasField("process"):
            self._process(d.process, name)
        elif d.HasField("sibling_order_rank") and not track.counter:  # a custom track's place: its sort index
            pid, tid = self.tracks.key(d.uuid)
            if track.parent and track.parent in self.tracks.by_uuid:
                self._meta("thread_sort_index", pid, tid, {"sort_index": d.sibling_order_rank})
            else:
                self._meta("process_sort_index", pid, 0, {"sort_index": d.sibling_order_rank})

    def _process(self, p: Any, track_name: str = "") -> None:
        name = text(p.process_name) or track_name or (text(p.cmdline[0]) if len(p.cmdline) else "")
        if name:
            self._meta("process_name", p.pid, 0, {"name": name})
        if len(p.process_labels):
            self._meta("process_labels", p.pid, 0, {"labels": ",".join(map(text, p.process_labels))})
        if p.HasField("legacy_sort_index"):
            self._meta("process_sort_index", p.pid, 0, {"sort_index": p.legacy_sort_index})

    def _thread(self, t: Any, track_name: str) -> None:
        name = text(t.thread_name) or track_name
        if name:
            self._meta("thread_name", t.pid, t.tid, {"name": name})
        if t.HasField("legacy_sort_index"):
            self._meta("thread_sort_index", t.pid, t.tid, {"sort_index": t.legacy_sort_index})

    def _process_tree(self, tree: Any) -> None:
        for proc in tree.processes:
            if len(proc.cmdline):
                self._meta("process_name", proc.pid, 0, {"name": text(proc.cmdline[0])})
        for thread in tree.threads:
            if thread.name:
                self._meta("thread_name", thread.tgid or thread.tid, thread.tid, {"name": text(thread.name)})

    def _chrome_metadata(self, bundle: Any) -> None:
        for entry in bundle.metadata:
            which = entry.WhichOneof("value")
            if which == "json_value":
                try:
                    self.metadata[text(entry.name)] = json.loads(text(entry.json_value))
                except (ValueError, RecursionError):
                    self.metadata[text(entry.name)] = text(entry.json_value)
            elif which:
                value = getattr(entry, which)
                self.metadata[text(entry.name)] = text(value) if isinstance(value, (str, bytes)) else value

    def _meta(self, name: str, pid: Any, tid: Any, args: dict[str, Any]) -> None:
        self._emit(Event(ph="M", name=name, cat="__metadata", pid=pid, tid=tid, args=msgspec.Raw(_ENCODE(args))))

    def _emit(self, event: Event) -> int:
        self._out.append(event)
        self.rows += 1
        return self.rows - 1

    # ---- track events ----------------------------------------------------------------
    def _event(self, seq: Sequence, p: Any, e: Any) -> None:
        legacy_ts = e.WhichOneof("timestamp")  # the packet's timestamp wins over these (Perfetto's order)
        if legacy_ts is None or p.HasField("timestamp"):
            ts = p.timestamp  # (0 where the packet has none)
        elif legacy_ts == "timestamp_absolute_us":
            ts = e.timestamp_absolute_us * 1000
            seq.last_us = e.timestamp_absolute_us
        else:
            seq.last_us += e.timestamp_delta_us
            ts = seq.last_us * 1000
        legacy = e.legacy_event if e.HasField("legacy_event") else None
        if e.HasField("track_uuid"):
            uuid: Any = e.track_uuid
            pid, tid = self.tracks.key(uuid)
        elif seq.default_track is not None:
            uuid = seq.default_track
            pid, tid = self.tracks.key(uuid)
        elif seq.thread is not None:
            pid, tid = seq.thread
            uuid = ("thread", pid, tid)
        else:
            pid = tid = uuid = DEFAULT_TRACK
        if legacy is not None and (legacy.HasField("pid_override") or legacy.HasField("tid_override")):
            pid = legacy.pid_override if legacy.HasField("pid_override") else pid
            tid = legacy.tid_override if legacy.HasField("tid_override") else tid
            uuid = ("thread", pid, tid)
        kind = e.type
        if kind == 0 and legacy is not None:
            kind = self._legacy_kind(legacy)
        if kind == COUNTER:
            self._counter(seq, uuid, ts, e.double_counter_value if e.HasField("double_counter_value") else e.counter_value)
        elif kind == END:
            self._end(uuid, ts, e, seq)
        elif kind in (BEGIN, INSTANT, -1):
            named = e.WhichOneof("name_field")
            if named == "name":
                name = text(e.name)
            else:
                iid = e.name_iid if named else legacy.name_iid if legacy is not None else 0
                name = seq.names.get(iid) or self._interned(seq.names, iid, "event names")
            cat = self._categories(seq, e)
            args = self._args(seq, e)
            cell = self._flow_cell(ts, e, legacy)
            if kind == BEGIN:
                self._stacks.setdefault(uuid, []).append([ts, name, cat, pid, tid, args, cell])
            elif kind == -1 and legacy is not None:  # legacy complete event
                self._slice([ts, name, cat, pid, tid, args, cell], ts + legacy.duration_us * 1000)
            elif cell is not None:  # an instant with flows: a zero-length slice (flows join slices)
                self._slice([ts, name, cat, pid, tid, args, cell], ts)
            else:
                scope = "p" if isinstance(uuid, int) and self.tracks.is_process(uuid) else "t"
                if legacy is not None and legacy.instant_event_scope:
                    scope = {1: "g", 2: "p", 3: "t"}.get(legacy.instant_event_scope, scope)
                self._emit(Event(ph="i", name=name, cat=cat, ts=_us_text(ts), pid=pid, tid=tid, s=scope,
                                 args=self._raw_args(args)))
        elif kind == LEGACY_OTHER and legacy is not None:
            self._legacy_event(seq, e, legacy, ts, pid, tid)
        else:
            self._count("track events of a type vtui does not read (skipped)")
        self._extra_counters(seq, e, ts)
        if e.WhichOneof("thread_time") or e.WhichOneof("thread_instruction_count"):
            self._thread_counters(seq, e, ts, pid, tid)

    def _categories(self, seq: Sequence, e: Any) -> str:
        """The event's categories as a Chrome trace writes several: joined by commas."""
        if e.categories:
            return ",".join(map(text, e.categories))
        iids = e.category_iids
        if len(iids) == 1:
            return seq.cats.get(iids[0]) or self._interned(seq.cats, iids[0], "categories")
        return ",".join(self._interned(seq.cats, i, "categories") for i in iids)

    def _legacy_kind(self, legacy: Any) -> int:
        phase = chr(legacy.phase) if 0 < legacy.phase < 128 else ""
        if phase == "X":
            return -1
        if phase in _LEGACY_AS_JSON:
            return LEGACY_OTHER
        return {"B": BEGIN, "E": END, "I": INSTANT, "i": INSTANT, "R": INSTANT}.get(phase, 0)

    def _legacy_event(self, seq: Sequence, e: Any, legacy: Any, ts: int, pid: Any, tid: Any) -> None:
        """A legacy flow (s/t/f) or async (b/n/e, S/T/p/F) event: the Chrome-trace event it stands for,
        with its id, so the store pairs and binds it as it does JSON's."""
        named = e.WhichOneof("name_field")
        name = text(e.name) if named == "name" else self._interned(seq.names, e.name_iid or legacy.name_iid, "event names")
        which = legacy.WhichOneof("id")
        ident: Any = getattr(legacy, which) if which else None
        id2 = None
        if which == "local_id":
            ident, id2 = None, {"local": legacy.local_id}
        elif which == "global_id":
            ident, id2 = None, {"global": legacy.global_id}
        self._emit(Event(ph=chr(legacy.phase), name=name, cat=self._categories(seq, e), ts=_us_text(ts), pid=pid,
                         tid=tid, id=ident, id2=id2, scope=legacy.id_scope or None,
                         bp="e" if legacy.bind_to_enclosing else None, args=self._raw_args(self._args(seq, e))))

    def _interned(self, table: dict[int, str], iid: int, what: str) -> str:
        if not iid:
            return ""
        got = table.get(iid)
        if got is None:
            self._count(f"interned {what} not found (left empty)")
            return ""
        return got

    def _end(self, uuid: Any, ts: int, e: Any, seq: Sequence) -> None:
        stack = self._stacks.get(uuid)
        if not stack:
            self._count("slice ends without a begin (skipped)")
            return
        begun = stack.pop()
        if len(e.debug_annotations):
            if isinstance(begun[ARGS], bytes):  # the C helper wrote its args as JSON
                begun[ARGS] = msgspec.json.decode(begun[ARGS]) if begun[ARGS] else {}
            begun[ARGS].update(self._args(seq, e))
        if _has_flows(e):  # flows on an end event belong to the slice it ends
            if begun[CELL] is None:
                begun[CELL] = [-1]
            self._flows.add(ts, begun[CELL], (*e.flow_ids, *e.flow_ids_old),
                            (*e.terminating_flow_ids, *e.terminating_flow_ids_old))
        self._slice(begun, ts)

    def _slice(self, s: list[Any], end: int) -> None:
        dur = end - s[TS]
        row = self._emit(Event(ph="X", name=s[NAME], cat=s[CAT], ts=_us_text(s[TS]), dur=_us_text(dur), pid=s[PID],
                               tid=s[TID], args=self._raw_args(s[ARGS])))
        if s[CELL] is not None:
            s[CELL][0] = row

    def _finish_open(self) -> None:
        """Slices begun and never ended: ``B`` events (the store runs them to the trace's end)."""
        for stack in self._stacks.values():
            for s in stack:
                row = self._emit(Event(ph="B", name=s[NAME], cat=s[CAT], ts=_us_text(s[TS]), pid=s[PID], tid=s[TID],
                                       args=self._raw_args(s[ARGS])))
                if s[CELL] is not None:
                    s[CELL][0] = row
        self._stacks.clear()
        self.flows = self._flows.resolve(None if self.pure_python else flow_edges())

    def _flow_cell(self, ts: int, e: Any, legacy: Any) -> Cell | None:
        """The cell for the row of the event's slice, its flows noted; None when it has none."""
        bound = legacy is not None and legacy.HasField("bind_id")
        if not bound and not _has_flows(e):
            return None
        cell: Cell = [-1]
        self._flows.add(ts, cell, (*e.flow_ids, *e.flow_ids_old), (*e.terminating_flow_ids, *e.terminating_flow_ids_old))
        if bound:
            direction = legacy.flow_direction  # 1 in, 2 out, 3 in and out
            self._flows.bind(cell, ("legacy", legacy.bind_id), direction in (1, 3), direction in (2, 3))
        return cell

    # ---- counters --------------------------------------------------------------------
    def _counter(self, seq: Sequence, uuid: Any, ts: int, value: float) -> None:
        track = self.tracks.by_uuid.get(uuid) if isinstance(uuid, int) else None
        if track is not None:
            value = value * track.scale
            if track.incremental:
                value = seq.totals[track.uuid] = seq.totals.get(track.uuid, 0) + value
            pid, name = self.tracks.process_of(track), track.name or f"track {track.uuid}"
        else:
            pid, name = self.tracks.key(uuid) if isinstance(uuid, int) else (uuid, "counter")
        self._emit(Event(ph="C", name=name, cat="", ts=_us_text(ts), pid=pid, tid=0,
                         args=msgspec.Raw(_ENCODE({"value": value}))))

    def _thread_counters(self, seq: Sequence, e: Any, ts: int, pid: Any, tid: Any) -> None:
        """The legacy thread time / instruction count fields: counters of the event's thread's
        process (vtui's counter tracks are per process), named as Perfetto names them."""
        timed = True
        if e.HasField("thread_time_absolute_us"):
            seq.thread_time_us = e.thread_time_absolute_us
        elif e.HasField("thread_time_delta_us"):
            seq.thread_time_us += e.thread_time_delta_us
        else:
            timed = False
        if timed:
            self._emit(Event(ph="C", name="thread_time", cat="", ts=_us_text(ts), pid=pid, tid=tid,
                             args=msgspec.Raw(_ENCODE({"value": seq.thread_time_us * 1000}))))
        if e.HasField("thread_instruction_count_absolute"):
            seq.instructions = e.thread_instruction_count_absolute
        elif e.HasField("thread_instruction_count_delta"):
            seq.instructions += e.thread_instruction_count_delta
        else:
            return
        self._emit(Event(ph="C", name="thread_instruction_count", cat="", ts=_us_text(ts), pid=pid, tid=tid,
                         args=msgspec.Raw(_ENCODE({"value": seq.instructions}))))

    def _extra_counters(self, seq: Sequence, e: Any, ts: int) -> None:
        if e.extra_counter_values:
            uuids = list(e.extra_counter_track_uuids) or seq.extra_counters
            for uuid, value in zip(uuids, e.extra_counter_values):
                self._counter(seq, uuid, ts, value)
        if e.extra_double_counter_values:
            uuids = list(e.extra_double_counter_track_uuids) or seq.extra_double_counters
            for uuid, value in zip(uuids, e.extra_double_counter_values):
                self._counter(seq, uuid, ts, value)

    def _args(self, seq: Sequence, e: Any) -> dict[str, Any]:
        return event_args(seq, e, self._interned)

    @staticmethod
    def _raw_args(args: dict[str, Any] | bytes) -> msgspec.Raw:
        """The args as stored: from a dict, or the JSON the C helper wrote of one."""
        if not args:
            return EMPTY_RAW
        return msgspec.Raw(args if isinstance(args, bytes) else _ENCODE(args))


def _has_flows(e: Any) -> bool:
    return bool(e.flow_ids or e.terminating_flow_ids or e.flow_ids_old or e.terminating_flow_ids_old)
