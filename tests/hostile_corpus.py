"""The hostile-input corpus: broken, odd and adversarial traces, generated into a folder.

Each case says what a correct load gives: the slices/instants/tracks kept and one substring
per expected warning (a load must give exactly those warnings), or the substring of the one
line that says why nothing could be loaded. tests/cli/test_hostile.py runs every case through
the loader, the CLI and the app.
"""

from __future__ import annotations

import gzip
import json
import os
import random
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"


@dataclass(frozen=True)
class Case:
    name: str
    build: Callable[[Path], Path]  # writes the input under a folder, returns the path to open
    slices: int | None = None  # None: nothing can be loaded
    instants: int = 0
    tracks: int | None = None
    warnings: tuple[str, ...] = ()  # one substring per warning, in any order
    error: str = ""  # substring of the one-line error when nothing loads
    events: int | None = None  # event objects read, when the case knows it
    needs: str = ""  # "fifo" / "non-root": skipped where the platform cannot make it
    check: Callable | None = field(default=None, compare=False)  # extra assertions on the store

    @property
    def loads(self) -> bool:
        return self.slices is not None


def X(ts=0, dur=1, name="n", pid=1, tid=1, **kw) -> dict:  # noqa: N802 — the phase letter
    return {"ph": "X", "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, **kw}


def ev(ph: str, ts=0, name="n", pid=1, tid=1, **kw) -> dict:
    return {"ph": ph, "name": name, "pid": pid, "tid": tid, "ts": ts, **kw}


def _file(name: str, data: bytes | str | list | dict) -> Callable[[Path], Path]:
    def build(folder: Path) -> Path:
        path = folder / name
        if isinstance(data, bytes):
            path.write_bytes(data)
        elif isinstance(data, str):
            path.write_text(data, encoding="utf-8")
        else:
            path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
        return path

    return build


def _drop(event: dict, key: str) -> dict:
    event = dict(event)
    event.pop(key)
    return event


# ---- gzip ------------------------------------------------------------------------------------
_MANY = json.dumps([X(ts=i, name=f"e{i % 50}") for i in range(3000)]).encode()
_GZ = gzip.compress(_MANY, mtime=0)
_GZ_CUT = _GZ[: len(_GZ) // 2]


def _complete_events_in_cut_gzip() -> int:
    """Independent count: inflate what is there with zlib, count closed event objects."""
    text = zlib.decompressobj(31).decompress(_GZ_CUT)
    return text.count(b"}")  # the events have no nested objects


def _two_members() -> bytes:
    half = len(_MANY) // 2
    return gzip.compress(_MANY[:half], mtime=0) + gzip.compress(_MANY[half:], mtime=0)


# ---- odd values ------------------------------------------------------------------------------
_BAD_TS = [X(ts=v) for v in (None, -5, "12", "abc", 1e300, [1], True, 10**30, 3, {"a": 1})] + [_drop(X(), "ts")]
_BAD_DUR = [X(dur=v) for v in (None, -5, "12", "x", 1e300, 10**30, [1], True, 0.5)] + [_drop(X(), "dur")]
_NAN = (b'[{"ph":"X","name":"a","pid":1,"tid":1,"ts":NaN,"dur":1},'
        b'{"ph":"X","name":"b","pid":1,"tid":1,"ts":1,"dur":Infinity},'
        b'{"ph":"X","name":"c","pid":1,"tid":1,"ts":2,"dur":-Infinity}]')
_UNKNOWN_PH = [X(ph=p) for p in ("Z", 5, "", None, "XYZ", ["X"])] + [_drop(X(), "ph"), X()]
ODD_NAMES = ["a\x00b", "🦙 llama", "שלום RTL \u202e reversed", "[/]", "[@click=app.quit]boom[/]", "e\u0301 combining",
             "tab\there\nnewline", ""]
_ODD_NAME_EVENTS = (
    [X(ts=i, name=n) for i, n in enumerate(ODD_NAMES)]
    + [ev("M", name="process_name", args={"name": "[/] proc \x00 🦙"}), ev("M", name="thread_name", args={"name": "[bold"})]
)
# Terminal attacks: retitle (OSC 0), clipboard write (OSC 52), clear screen (CSI 2J), bell, 8-bit CSI (C1).
ESCAPES = ["\x1b]0;pwned\x07title", "\x1b]52;c;ZXZpbA==\x07clip", "\x1b[2J\x1b[Hclear", "\x9b31mcsi8", "del\x7f",
           "bell\x07"]
_ESCAPE_EVENTS = (
    [X(ts=i, name=n, cat=f"cat\x1b[5m{i}") for i, n in enumerate(ESCAPES)]
    + [ev("M", name="process_name", args={"name": "proc\x1b]0;p\x07"}),
       ev("M", name="thread_name", args={"name": "thr\x9d0;t\x9c"})]
)
# Five names that all read "aten::mm" on a terminal (invisible characters), one with a C1 CSI and
# a bidi override, and a line separator that a line-splitting reader of `--format folded` takes
# for a new stack line.
INVISIBLE_NAMES = ["aten::mm", "aten::\u2060mm", "aten::mm\ufeff", "aten\u061c::mm", "at\u00aden::mm",
                   "x\x9b31m\u202eevil", "forged\u2028main;fake 999999", "para\u2029graph", "tag\U000e0041"]
_INVISIBLE_EVENTS = [X(ts=10 * i, dur=5, name=n) for i, n in enumerate(INVISIBLE_NAMES)]
_MEMORY_ARGS = '"Device Type":1,"Device Id":0'
_MEMORY_HUGE = ("[" + json.dumps(X(ts=0, dur=100)) + "".join(
    f',{{"ph":"i","name":"[memory]","pid":1,"tid":1,"ts":{i + 1},"s":"t","args":{{"Bytes":{v},{_MEMORY_ARGS}}}}}'
    for i, v in enumerate(["100", "-100", str(2**63), str(2**64 + 5), "1e300", "-1e300", "Infinity"]))
    + f',{{"ph":"i","name":"[memory]","pid":1,"tid":1,"ts":9,"s":"t","args":{{"Bytes":5,"Total Allocated":1e300,'
    f'{_MEMORY_ARGS}}}}}]')


def _check_memory_huge(store) -> None:
    from vtui.analysis.gpu.memory import analyse_memory

    m = analyse_memory(store)  # Infinity is no JSON: those args do not decode, so no Bytes to count
    assert m.skipped == 5 and [(d.allocs, d.frees, d.peak_allocated) for d in m.devices] == [(1, 1, 100)]


_INVALID_UTF8 = (b'[{"ph":"X","name":"\xff\xfe bad bytes","pid":1,"tid":1,"ts":1,"dur":1},'
                 b'{"ph":"X","name":"lone \\ud800 surrogate","pid":1,"tid":1,"ts":2,"dur":1}]')
_LONG = "x" * 100_000
_ARGS = [X(ts=1, args=[1, 2]), X(ts=2, args="text"), X(ts=3, args=3), X(ts=4, args=None),
         ev("C", ts=5, name="c", args=[1]), ev("C", ts=6, name="c", args="x"),
         ev("M", name="process_name", args="not an object"), ev("i", ts=7, args=5)]
_SAME_TS = ([X(ts=5, dur=0, name=f"n{i % 7}") for i in range(2000)] + [ev("B", ts=5) for _ in range(100)]
            + [ev("E", ts=5) for _ in range(100)] + [ev("i", ts=5) for _ in range(50)])
_META = [ev("M", name="process_name", args={"name": "first"}), ev("M", name="process_name", args={"name": "last"}),
         ev("M", name="thread_name", args={"name": "t-first"}), ev("M", name="thread_name", args={"name": "t-last"}),
         ev("M", name="thread_name", args={"name": "t-last"}),  # a plain duplicate is no conflict
         ev("M", name="process_sort_index", args={"sort_index": "a"}),
         ev("M", name="process_sort_index", args={"sort_index": 1}), ev("M", name="process_sort_index", args={"sort_index": 2}),
         ev("M", name="thread_name", pid=9, tid=9, args={"name": None}), X()]
_IDS = [X(pid=[1]), X(pid={"a": 1}), X(pid=1.5), X(pid=None), X(pid="p"), X(pid=True), X(tid=[2]), X(tid=-1)]
_FLOWS = [X(ts=0, dur=10), ev("s", ts=1, id=[1], cat="f"), ev("f", ts=5, id=[1], cat="f", bp="e"),
          ev("s", ts=2, id="0xzz", cat="f"), ev("t", ts=3, id=1.5, cat="f"), ev("f", ts=4, id={"a": 2}, cat="f"),
          X(ts=20, dur=1, bind_id=[7], flow_out=True), X(ts=30, dur=1, bind_id=[7], flow_in=True)]
_BIG_VALUES = [X(ts=0, dur=1), X(ts=1e15, dur=1e15)]  # 31 years apart: still kept
# Another array in place of the events: only the top-level traceEvents counts.
_REAL = [X(ts=i, name=f"real{i % 7}") for i in range(1000)]
_FAKE = [X(ts=0, name="FAKE")]
_EMBEDDED = {"otherData": {"embedded": {"traceEvents": _FAKE}, "note": '"traceEvents": [{"ph":"X"}]'},
             "traceEvents": _REAL, "after": [{"traceEvents": _FAKE}]}
_TWO_ARRAYS = ('{"schemaVersion": 1, "traceEvents": ' + json.dumps(_REAL[:10]) + ', "mid": {"traceEvents": []}, '
               '"traceEvents": ' + json.dumps(_FAKE) + ', "tail": 3}')


# Numbers past the float range: the one event (or value) is rejected and counted, the rest loads.
_HUGE_NUMBERS = ("[" + ",".join(json.dumps(X(ts=i)) for i in range(5))
                 + ',{"ph":"X","name":"far","pid":1,"tid":1,"ts":1e999999,"dur":1}'
                 + ',{"ph":"C","name":"ctr","pid":1,"tid":1,"ts":3,"args":{"v":' + "9" * 400 + "}}"
                 + ',{"ph":"X","name":"Memcpy HtoD","cat":"gpu_memcpy","pid":1,"tid":7,"ts":3,"dur":2,'
                 '"args":{"bytes":' + "9" * 400 + "}}]")


def _check_huge_numbers(store) -> None:
    from vtui.analysis.report.insights import compute_insights
    from vtui.present.insights_text import gpu_lines

    assert sorted(store.name(r) for r in range(len(store.slices))) == ["Memcpy HtoD"] + ["n"] * 5
    gpu = compute_insights(store).gpu
    assert gpu.memcpy_bytes_by_direction == {}  # 10^400 bytes is no size
    assert any("memcpy by direction" in line for line in gpu_lines(compute_insights(store)))


def _check_real_events(store) -> None:
    names = {store.name(r) for r in range(len(store.slices))}
    assert "FAKE" not in names and names == {f"real{i}" for i in range(7)}


def _check_both_arrays(store) -> None:
    names = sorted(store.name(r) for r in range(len(store.slices)))
    assert names == sorted([e["name"] for e in _REAL[:10]] + ["FAKE"])  # Perfetto's reading: both, in file order


def _check_odd_names(store) -> None:
    names = {store.name(r) for r in range(len(store.slices))}
    assert set(ODD_NAMES) <= names
    assert store.tracks[0].process_name == "[/] proc \x00 🦙" and store.tracks[0].name == "[bold"


def _check_long(store) -> None:
    assert {len(store.name(r)) for r in range(len(store.slices))} == {100_000}
    assert store.tracks[0].name == _LONG


def _check_meta(store) -> None:
    named = [t for t in store.tracks if t.slice_count]
    assert [(t.process_name, t.name) for t in named] == [("last", "t-last")]


def _check_args(store) -> None:
    got = sorted(repr(store.slice_args(r)) for r in range(len(store.slices)))
    assert got == sorted(repr(a) for a in ({"<args>": [1, 2]}, {"<args>": "text"}, {"<args>": 3}, {"<args>": None}))


def _check_span(store) -> None:
    assert store.span_ns == 2 * 10**18


def _deep_args_event() -> bytes:
    return (b'[{"ph":"X","name":"deep","pid":1,"tid":1,"ts":1,"dur":1,"args":' + b"[" * 100_000 + b"]" * 100_000
            + b'},{"ph":"X","name":"ok","pid":1,"tid":1,"ts":2,"dur":1}]')


# ---- paths -----------------------------------------------------------------------------------
def _missing(folder: Path) -> Path:
    return folder / "missing.json"


def _missing_escaped(folder: Path) -> Path:
    return folder / "gone\x1b]52;c;ZXZpbA==\x07.json"


def _symlink_loop(folder: Path) -> Path:
    (folder / "loop_a.json").symlink_to("loop_b.json")
    (folder / "loop_b.json").symlink_to("loop_a.json")
    return folder / "loop_a.json"


def _fifo(folder: Path) -> Path:
    os.mkfifo(folder / "pipe.json")  # opening it would block forever
    return folder / "pipe.json"


def _unreadable(folder: Path) -> Path:
    path = folder / "secret.json"
    path.write_text(json.dumps([X()]))
    path.chmod(0)
    return path


def _folder(name: str, files: dict[str, bytes | list | None]) -> Callable[[Path], Path]:
    def build(folder: Path) -> Path:
        root = folder / name
        root.mkdir()
        for fname, data in files.items():
            if data is None:
                (root / fname).mkdir()
            else:
                _file(fname, data)(root)
        return root

    return build


def _mixed_folder(folder: Path) -> Path:
    root = _folder("mixed", {
        "rank0.json": [X(ts=i) for i in range(3)],
        "rank1.json.gz": gzip.compress(json.dumps([X(ts=i) for i in range(2)]).encode()),
        "readme.txt": b"not a trace",
        "config.json": {"lr": 0.1},
        "broken.json.gz": GZIP_HEADER + b"\xff" * 64,
        "sub.json": None,  # a folder named like a trace
    })(folder)
    _file("inner.json", [X()])(root / "sub.json")  # not recursed into
    (root / "loop.json").symlink_to("loop.json")
    (root / "dangling.json").symlink_to("nowhere.json")
    if hasattr(os, "mkfifo"):
        os.mkfifo(root / "pipe.json")
    return root


def _bytes_noise() -> bytes:
    return b"\x00" + random.Random(7).randbytes(4095)


def corpus() -> list[Case]:
    fifo_warning = ("pipe.json: not a regular file",) if hasattr(os, "mkfifo") else ()
    return [
        # -- nothing can be loaded: one line --
        Case("empty", _file("empty.json", b""), error="file is empty"),
        Case("whitespace", _file("ws.json", b" \n\t\r\n "), error="file is empty"),
        Case("empty_array", _file("empty_array.json", b"[]"), error="holds no events"),
        Case("empty_object", _file("empty_object.json", b"{}"), error="no traceEvents array"),
        Case("trace_events_number", _file("te5.json", b'{"traceEvents": 5}'), error="traceEvents is not an array"),
        Case("top_number", _file("number.json", b"42"), error="the JSON is a number"),
        Case("top_string", _file("string.json", b'"trace"'), error="the JSON is a string"),
        Case("top_null", _file("null.json", b"null"), error="the JSON is null"),
        Case("top_bool", _file("bool.json", b"true"), error="the JSON is a boolean"),
        Case("binary_noise", _file("noise.json", _bytes_noise()), error="not a JSON trace"),
        Case("gzip_garbage", _file("garbage.json.gz", GZIP_HEADER + b"\xff" * 64), error="corrupt gzip data"),
        Case("gzip_header_only", _file("header.json.gz", _GZ[:10]), error="file is empty"),
        Case("utf16", _file("utf16.json", json.dumps([X()]).encode("utf-16")), error="not a JSON trace"),
        Case("deep_array_top", _file("deep_open.json", b"[" * 100_000), error="holds no events"),
        Case("nested_array_top", _file("deep_nest.json", b"[" * 100_000 + b"]" * 100_000), error="holds no events"),
        Case("deep_object_top", _file("deep_obj.json", b'{"a":' * 100_000), error="without a traceEvents array"),
        Case("missing", _missing, error="no such file"),
        Case("symlink_loop", _symlink_loop, error="link loop"),
        Case("fifo", _fifo, error="not a regular file", needs="fifo"),
        Case("unreadable", _unreadable, error="permission denied", needs="non-root"),
        Case("folder_without_traces", _folder("notraces", {"readme.txt": b"hello", "data.csv": b"a,b"}),
             error="holds no *.json"),
        Case("folder_of_non_traces", _folder("nontraces", {"a.json": b"[]", "b.json": {"x": 1}}),
             error="holds no events (skipped b.json"),
        # -- something loads: kept events counted, the rest warned about --
        Case("gzip_cut", _file("cut.json.gz", _GZ_CUT), slices=_complete_events_in_cut_gzip(), tracks=1,
             warnings=("gzip stream ends early", "event array is not closed")),
        Case("gzip_trailing_garbage", _file("trail.json.gz", _GZ + b"not gzip at all"), slices=3000,
             warnings=("gzip data is corrupt after",)),
        Case("gzip_two_members", _file("members.json.gz", _two_members()), slices=3000, events=3000),
        Case("bad_ts", _file("bad_ts.json", _BAD_TS), slices=3, events=11,
             warnings=("8 events without a usable ts",)),
        Case("nan_literals", _file("nan.json", _NAN), slices=0, events=3,
             warnings=("1 events without a usable ts", "2 X events had a negative or huge dur")),
        Case("bad_dur", _file("bad_dur.json", _BAD_DUR), slices=7, events=10,
             warnings=("3 X events had a negative or huge dur", "5 X events had no dur")),
        Case("unknown_phases", _file("phases.json", _UNKNOWN_PH), slices=2, events=8,
             warnings=("6 events with unknown phases",)),
        Case("only_unknown_phase", _file("only_z.json", [{"ph": "Z"}]), slices=0, tracks=0, events=1,
             warnings=("1 events with unknown phases",)),
        Case("lone_end", _file("lone_e.json", [ev("E"), ev("E", ts=5), ev("B", ts=6), ev("E", ts=7)]), slices=1,
             warnings=("2 E events had no open B",)),
        Case("unclosed_begins", _file("unclosed.json", [ev("B", ts=i, name=f"b{i % 10}") for i in range(1000)]),
             slices=1000, warnings=("1,000 B events were never closed",)),
        Case("long_names", _file("long.json", [X(name=_LONG), X(ts=5, name=_LONG),
                                               ev("M", name="thread_name", args={"name": _LONG})]),
             slices=2, check=_check_long),
        Case("odd_names", _file("names.json", _ODD_NAME_EVENTS), slices=len(ODD_NAMES), tracks=1, check=_check_odd_names),
        Case("escape_sequences", _file("esc\x1b]0;file\x07.json", _ESCAPE_EVENTS), slices=len(ESCAPES), tracks=1),
        Case("escape_in_missing_name", _missing_escaped, error="no such file"),
        Case("memory_huge_bytes", _file("memory.json", _MEMORY_HUGE), slices=1, instants=8, check=_check_memory_huge),
        Case("invalid_utf8", _file("utf8.json", _INVALID_UTF8), slices=2),
        Case("args_not_objects", _file("args.json", _ARGS), slices=4, instants=1,
             warnings=("2 counter values were not numbers",), check=_check_args),
        Case("same_timestamp", _file("same_ts.json", _SAME_TS), slices=2100, instants=50, tracks=1),
        Case("metadata_conflicts", _file("meta.json", _META), slices=1,
             warnings=("3 process/thread names or sort indices were given again",), check=_check_meta),
        Case("odd_ids", _file("ids.json", _IDS), slices=8, tracks=8),
        Case("odd_flows", _file("flows.json", _FLOWS), slices=3,
             warnings=("flow ends had no start", "flow starts had no end")),
        Case("huge_span", _file("span.json", _BIG_VALUES), slices=2, check=_check_span),
        Case("non_objects_in_array", _file("nonobj.json", b'[1, "a", null, [1], ' + json.dumps(X()).encode() + b", true]"),
             slices=1, warnings=("skipped 5 array elements that are not objects",)),
        Case("corrupt_events", _file("corrupt.json", b"[" + json.dumps(X()).encode() + b', {"ph":"X" "name":}, {garbage}, '
                                     + json.dumps(X(ts=2)).encode() + b"]"),
             slices=2, warnings=("skipped 2 regions of invalid",)),
        Case("deep_args", _file("deep_args.json", _deep_args_event()), slices=1,
             warnings=("skipped 1 regions of invalid (or too deeply nested) JSON",)),
        Case("trailing_junk", _file("junk.json", json.dumps([X()]) + " trailing junk"), slices=1,
             warnings=("ignored data after the closing ]",)),
        Case("object_cut", _file("obj_cut.json", '{"traceEvents": [' + json.dumps(X()) + ", " + json.dumps(X(ts=3))
                                 + ', {"ph": "X", "na'), slices=2, warnings=("event array is not closed",)),
        Case("embedded_trace_events", _file("embedded.json", _EMBEDDED), slices=1000, tracks=1, check=_check_real_events),
        Case("two_trace_events_keys", _file("two_arrays.json", _TWO_ARRAYS), slices=11, tracks=1,
             warnings=("2 top-level traceEvents arrays",), check=_check_both_arrays),
        Case("trace_events_only_nested", _file("nested_only.json", {"otherData": {"traceEvents": _FAKE}}),
             error="no traceEvents array"),
        Case("numbers_past_float_range", _file("huge_numbers.json", _HUGE_NUMBERS), slices=6, events=8,
             warnings=("1 events without a usable ts", "1 counter values were not numbers"), check=_check_huge_numbers),
        Case("invisible_names", _file("invisible.json", _INVISIBLE_EVENTS), slices=len(INVISIBLE_NAMES), tracks=1),
        Case("bom", _file("bom.json", b"\xef\xbb\xbf \n" + json.dumps([X()]).encode()), slices=1),
        Case("ten_thousand_tracks", _file("tracks.json", [X(pid=i // 100, tid=i) for i in range(10_000)]),
             slices=10_000, tracks=10_000),
        Case("comments_gzip", _file("comments.json.gz", gzip.compress(b"[\n// first\n" + json.dumps(X()).encode() + b"]",
                                                                     mtime=0)), error="// comment lines"),
        Case("comment_after_events", _file("comment_mid.json", "[" + json.dumps(X()) + ",\n// the rest\n" + json.dumps(X())
                                           + "]"), slices=1, warnings=("not closed (it has // comment lines",)),
        Case("utf32", _file("utf32.json", json.dumps([X()]).encode("utf-32-le")), error="UTF-16 or UTF-32"),
        Case("named_threads", _file("named.json", _NAMED_THREADS), slices=2_000, tracks=2_000, check=_check_named_threads),
        Case("mixed_folder", _mixed_folder, slices=5, tracks=2,
             warnings=("skipped config.json", "skipped broken.json.gz", "skipped dangling.json: not a regular file",
                       "skipped loop.json: not a regular file", *("skipped " + w for w in fifo_warning))),
    ]


_NAMED_THREADS = [X(ts=i, pid=i % 3, tid=i) for i in range(2_000)] + [
    ev("M", name="thread_name", pid=i % 3, tid=i, args={"name": f"worker {i}"}) for i in range(0, 2_000, 7)]


def _check_named_threads(store) -> None:
    """Every track's title from its thread_name, else from its tid (the track table's texts)."""
    got = sorted((t.pid, t.tid, t.name) for t in store.tracks)
    assert got == sorted((i % 3, i, f"worker {i}" if i % 7 == 0 else f"thread {i}") for i in range(2_000))


def build_corpus(folder: Path) -> dict[str, tuple[Case, Path]]:
    """Every case written under ``folder``; a case the platform cannot make is left out."""
    out: dict[str, tuple[Case, Path]] = {}
    for case in corpus():
        if case.needs == "fifo" and not hasattr(os, "mkfifo"):
            continue
        if case.needs == "non-root" and hasattr(os, "geteuid") and os.geteuid() == 0:
            continue  # root reads a chmod 000 file anyway
        sub = folder / case.name
        sub.mkdir()
        out[case.name] = (case, case.build(sub))
    return out
