"""Hostile and broken input: every entry point keeps what it can, warns with counts, or fails in one line.

The corpus (tests/hostile_corpus.py) is generated here, never shipped. Each case goes through
the loader (in process), `vtui info` (a subprocess with a timeout, so a hang fails instead of
blocking), every other CLI subcommand, and the app (Pilot). Big cases (10⁵ unclosed B, depth
10,000, 10⁶ slices in one lane) run in process only. A SIGALRM deadline bounds every test here.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.helpers import FIXTURES, ROOT, deadline, settle
from tests.hostile_corpus import Case, X, build_corpus, corpus, ev
from vtui.cli import main
from vtui.commands import COMMANDS
from vtui.errors import TraceLoadError
from vtui.load.trace import load_trace
from vtui.ui.app import VtuiApp
from vtui.ui.screens.modals import WarningsScreen
from vtui.units import counted

CASES = [c.name for c in corpus()]
CLI_TIMEOUT_S = 60
DEADLINE_S = 120  # per test, in process: a hang becomes a failure


@pytest.fixture(autouse=True)
def bounded():
    with deadline(DEADLINE_S, "test hangs"):
        yield


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, tuple[Case, Path]]:
    return build_corpus(tmp_path_factory.mktemp("hostile"))


def _case(built, name: str) -> tuple[Case, Path]:
    if name not in built:
        pytest.skip(f"{name}: cannot be made here (needs {next(c.needs for c in corpus() if c.name == name)})")
    return built[name]


def check_store(case: Case, store) -> None:
    """Kept events counted, the rest warned about — exactly the expected warnings."""
    assert len(store.slices) == case.slices
    assert len(store.instants) == case.instants
    if case.tracks is not None:
        assert len(store.tracks) == case.tracks
    if case.events is not None:
        assert store.event_count == case.events
    for w in case.warnings:
        assert sum(w in text for text in store.warnings) == 1, (w, store.warnings)
    assert len(store.warnings) == len(case.warnings), store.warnings
    if case.check:
        case.check(store)


def check_one_line(message: str, case: Case) -> None:
    assert case.error in message, message
    assert "\n" not in message and "Traceback" not in message and "internal error" not in message


# ---- the loader --------------------------------------------------------------------------------
@pytest.mark.parametrize("name", CASES)
def test_loader(built, name: str):
    case, path = _case(built, name)
    if case.loads:
        check_store(case, load_trace(path))
    else:
        with pytest.raises(TraceLoadError) as exc:
            load_trace(path)
        check_one_line(str(exc.value), case)


def test_permission_denied_is_one_line_even_as_root(tmp_path, monkeypatch):
    """chmod 000 cannot stop root, so the unreadable-file path is also driven by a failing open()."""
    import vtui.io.reader as reader

    path = tmp_path / "secret.json"
    path.write_text(json.dumps([X()]))
    (tmp_path / "ok.json").write_text(json.dumps([X(), X(ts=2)]))

    def refuse(file, *args, **kwargs):
        if Path(file).name == "secret.json":
            raise PermissionError(13, "Permission denied", str(file))
        return open(file, *args, **kwargs)

    monkeypatch.setattr(reader, "open", refuse, raising=False)
    with pytest.raises(TraceLoadError, match="secret.json: permission denied$"):
        load_trace(path)
    store = load_trace(tmp_path)  # in a folder: the other file loads, the refusal is a warning
    assert len(store.slices) == 2
    assert [w for w in store.warnings if "secret.json" in w and "permission denied" in w]


# ---- the CLI -----------------------------------------------------------------------------------
def _vtui(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "vtui", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=CLI_TIMEOUT_S, env={**os.environ, "PYTHONIOENCODING": "utf-8"})


# What must never reach a terminal (newline may): controls, and the bidi / invisible characters
# and line separators that make one name read as another or forge a line.
INVISIBLE = ("\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u2028-\u202e"
             "\u2060-\u2064\u2066-\u206f\u3164\ufeff\uffa0\ufff9-\ufffb\U000e0000-\U000e007f")
RAW_CONTROL = re.compile(f"[\x00-\x09\x0b-\x1f\x7f-\x9f{INVISIBLE}]")
MAX_LINE = 5000  # characters per printed line: a 100k name is clipped, never padded into every row


def check_terminal_safe(text: str, where: str = "", lossless: bool = False) -> None:
    """No control character but newline (ESC, BEL, NUL, C1 CSI/OSC…); no endless line, unless
    ``lossless`` (JSON keeps a 100k name whole, escaped)."""
    bad = RAW_CONTROL.search(text)
    assert bad is None, (where, repr(text[max(bad.start() - 40, 0) : bad.end() + 40]))
    if not lossless:
        assert max(map(len, text.splitlines()), default=0) <= MAX_LINE, where


def check_cli(result: subprocess.CompletedProcess, case: Case, json_out: bool = False) -> None:
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr, result.stderr
    check_terminal_safe(result.stdout, "stdout", lossless=json_out)
    check_terminal_safe(result.stderr, "stderr")
    if case.loads:
        assert result.returncode == 0, result.stderr
        assert result.stderr == ""
    else:
        assert result.returncode != 0
        assert result.stdout == ""
        lines = result.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("vtui"), result.stderr
        check_one_line(lines[0], case)


@pytest.mark.parametrize("name", CASES)
def test_cli_info_json(built, name: str):
    case, path = _case(built, name)
    result = _vtui("info", str(path), "--json")
    check_cli(result, case, json_out=True)
    if case.loads:
        info = json.loads(result.stdout)
        assert info["slices"] == case.slices and info["instants"] == case.instants
        assert len(info["warnings"]) == len(case.warnings)
        for w in case.warnings:
            assert sum(w in text for text in info["warnings"]) == 1, (w, info["warnings"])


# Extra arguments a subcommand needs besides the trace ({out}: a fresh output path; {trace}: the
# trace again, for `diff A B`). A command not listed here runs as `vtui CMD TRACE`; a usage error
# then still has to be one line. `cache` manages the index cache and `schema` prints a JSON Schema: neither takes a trace.
COMMAND_ARGS = {"info": [], "stats": [], "search": ["."], "export": ["-o", "{out}"], "insights": [],
                "diff": ["{trace}"], "query": ["SELECT name, category, COUNT(*), SUM(dur) FROM slice GROUP BY ALL"]}
# Every output form of `tree` too: its JSON and folded outputs are built apart from the text, so each is checked.
TREE_FORMATS = [["--format", "json"], ["--format", "folded"], ["--format", "json", "--against", "{trace}"],
                ["--format", "json", "--handover"], ["--against", "{trace}"]]
NOT_ON_A_TRACE = {"cache", "schema"}


@pytest.mark.parametrize("command", sorted(set(COMMANDS) - NOT_ON_A_TRACE))
def test_every_subcommand_survives_the_corpus(built, command: str, tmp_path, capsys):
    """Every subcommand on every case: exit 0 when the trace loads, else one line; never a
    traceback. An export re-opens with the same slices (names) as its source.

    In process through `vtui.cli.main` (the same code as the command line, bounded by the
    SIGALRM deadline): a subprocess per case and command would cost a minute of interpreter
    start-ups; `test_cli_info_json` already runs every case as a real subprocess.
    """
    for name, (case, path) in built.items():
        if case.slices and case.slices > 3000:
            continue  # big ones are covered by `info --json`; keep this loop quick
        out = tmp_path / f"{name}.out.json"
        try:
            code = main([command, str(path), *[a.format(out=out, trace=path) for a in COMMAND_ARGS.get(command, [])]])
        except SystemExit as exc:  # argparse: a usage error (exit 2, one line)
            code = exc.code
        captured = capsys.readouterr()
        result = subprocess.CompletedProcess([], code, captured.out, captured.err)
        assert "Traceback" not in result.stderr and "internal error" not in result.stderr, (name, result.stderr)
        check_terminal_safe(result.stdout, f"{name} stdout")
        check_terminal_safe(result.stderr, f"{name} stderr")
        if command not in COMMAND_ARGS:
            assert result.returncode == 0 or len(result.stderr.splitlines()) == 1, (name, result.stderr)
            continue
        if command == "export" and case.loads and "nothing to export" in result.stderr:
            # a trace with no event in time (only metadata, unknown phases) has nothing to write
            assert result.returncode == 1 and len(result.stderr.splitlines()) == 1 and not out.exists()
            assert not case.slices, name
            continue
        check_cli(result, case)
        if command == "info" and case.loads:
            assert f"{case.slices:,} slices" in result.stdout
            assert (f"{len(case.warnings)} warnings:" if case.warnings else "no warnings") in result.stdout
        if command == "export":
            assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temp files left
            if case.loads and case.slices:
                source, again = load_trace(path), load_trace(out)
                assert sorted(map(source.name, range(len(source.slices)))) == sorted(map(again.name, range(len(again.slices))))
            elif not case.loads:
                assert not out.exists()


# ---- the app -----------------------------------------------------------------------------------
KEYS = ["w", "down", "right", "f", "0"]  # per case: a few keys (each press repaints)
ALL_KEYS = ["w", "w", "s", "d", "a", "down", "right", "left", "down", "up", "full_stop", "comma",
            "right_square_bracket", "left_square_bracket", "f", "0", "pagedown", "pageup", "tab", "j", "space", "p", "tab",
            # range, panes, measure, search (a regex that is itself markup, then an invalid one), insights
            "r", "2", "R", "shift+left", "shift+right", "1", "m", "right", "m", "3", "M", "escape",
            "slash", "left_square_bracket", "slash", "right_square_bracket", "enter", "n", "N",
            "slash", "left_square_bracket", "enter", "i", "escape", "2"]
EVERY_KEY_CASES = {"odd_names", "odd_flows", "huge_span", "only_unknown_phase", "unclosed_begins", "mixed_folder"}


@pytest.mark.parametrize("name", CASES)
async def test_app(built, name: str):
    case, path = _case(built, name)
    app = VtuiApp(path)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot, pauses=2)  # the status line is filled after the first refresh
        if not case.loads:
            assert app.store is None and app.load_error is not None
            check_one_line(app.load_error, case)
            await pilot.press("q")
            assert app.return_code == 1
            return
        assert app.load_error is None and app.store is not None
        check_store(case, app.store)
        status = str(app.query_one("#status").render())
        if case.warnings:
            assert counted(len(case.warnings), "load warning") in status
        await pilot.press("W")  # the warnings themselves, word for word
        assert isinstance(app.screen, WarningsScreen)
        shown = str(app.screen.query_one("#warnings-text").render())
        assert all(w in shown for w in app.store.warnings)
        await pilot.press("escape")
        await pilot.press(*(ALL_KEYS if name in EVERY_KEY_CASES else KEYS))
        await pilot.press("q")
        assert app.return_code == 0


async def test_warnings_screen_lists_each_warning_with_its_count(built):
    """A hostile-but-loadable file opens and W shows what was skipped, with counts."""
    case, path = _case(built, "bad_ts")
    app = VtuiApp(path)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot, pauses=2)
        assert "1 load warning (W)" in str(app.query_one("#status").render())
        assert ("W", "Load warnings and trace health (what cannot be trusted)") in app.key_rows()
        await pilot.press("W")
        text = str(app.screen.query_one("#warnings-text").render())
        assert "8 events without a usable ts were skipped" in text
        await pilot.press("W")  # W closes it again
        assert not isinstance(app.screen, WarningsScreen)


async def test_big_trace_loads_in_a_process_inside_the_app(tmp_path, monkeypatch):
    """The spawn path (big files) works while Textual captures stderr (fileno -1)."""
    import vtui.load.background as loading

    path = tmp_path / "t.json"
    path.write_text(json.dumps([X(ts=i) for i in range(10)] + [ev("E", ts=50)]))
    monkeypatch.setattr(loading, "PROCESS_THRESHOLD", 0)
    app = VtuiApp(path)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, pauses=2)
        assert app.load_error is None, app.load_error
        assert len(app.store.slices) == 10 and len(app.store.warnings) == 1


# ---- truncation at every byte ------------------------------------------------------------------
def _small_real_trace() -> tuple[bytes, list[int]]:
    """A few real Kineto events (object form, with top-level keys after traceEvents) and the
    byte offset just past each event's closing brace."""
    doc = json.loads(gzip.decompress((FIXTURES / "tracelens__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz").read_bytes()))
    te = doc["traceEvents"]
    pick = [e for e in te if e["ph"] == "M"][:2] + [e for e in te if e["ph"] == "X"][:6] + [e for e in te if e["ph"] == "i"][:1]
    start = next(e for e in te if e["ph"] == "s")
    pick += [start, next(e for e in te if e["ph"] == "f" and e.get("id") == start.get("id"))] if any(
        e["ph"] == "f" and e.get("id") == start.get("id") for e in te) else [start]
    head = b'{"schemaVersion": 1, "traceEvents": ['
    body, ends = b"", []
    for i, e in enumerate(pick):
        body += (b", " if i else b"") + json.dumps(e).encode()
        ends.append(len(head) + len(body))
    return head + body + b'], "displayTimeUnit": "ms", "deviceProperties": [{"id": 0, "name": "GPU"}]}', ends


def test_truncated_at_every_byte_offset(tmp_path):
    """Each prefix loads exactly the events that are complete in it, or fails in one line."""
    data, ends = _small_real_trace()
    assert 2000 < len(data) < 8000
    path = tmp_path / "cut.json"
    loaded = failed = 0
    for n in range(len(data) + 1):
        path.write_bytes(data[:n])
        complete = sum(e <= n for e in ends)
        try:
            store = load_trace(path, cache=False)  # the loader, not the index cache (and 2,800 loads)
        except TraceLoadError as exc:
            assert complete == 0, (n, str(exc))
            assert "\n" not in str(exc)
            failed += 1
            continue
        loaded += 1
        assert store.event_count == complete, n
        if n < len(data):
            assert store.repaired and store.warnings, n
    assert loaded == len(data) + 1 - ends[0] and failed == ends[0]
    assert not load_trace(path).repaired  # the whole file


def test_cut_gzip_at_every_byte_offset(tmp_path):
    """Gzip cut anywhere: never more events than are there, more bytes never fewer events."""
    data, ends = _small_real_trace()
    gz = gzip.compress(data, mtime=0)
    path = tmp_path / "cut.json.gz"
    last = 0
    for n in range(len(gz) + 1):
        path.write_bytes(gz[:n])
        try:
            kept = load_trace(path, cache=False).event_count
        except TraceLoadError as exc:
            assert "\n" not in str(exc)
            kept = 0
        assert last <= kept <= len(ends), n
        last = kept
    assert last == len(ends)


# ---- big cases, in process ---------------------------------------------------------------------
def _write_events(path: Path, lines) -> Path:
    with open(path, "w") as fh:
        fh.write("[")
        fh.write(",\n".join(lines))
        fh.write("]")
    return path


def _lanes_disjoint(store) -> None:
    s = store.slices
    key = s.track.astype(np.int64) * (1 << 32) + s.lane
    same = key[1:] == key[:-1]
    assert (s.end_ns[:-1][same] <= s.start_ns[1:][same]).all()


def test_hundred_thousand_unclosed_begins(tmp_path):
    n = 100_000
    lines = [f'{{"ph":"B","name":"b{i % 10}","pid":1,"tid":1,"ts":{i}}}' for i in range(n)]
    lines.append(f'{{"ph":"i","name":"end","pid":1,"tid":1,"ts":{n}}}')  # so the last B has a length too
    store = load_trace(_write_events(tmp_path / "b.json", lines))
    assert len(store.slices) == n and int(store.slices.depth.max()) == n - 1
    assert store.warnings == [f"{n:,} B events were never closed (they run to the trace end)"]
    assert (store.slices.end_ns == store.span_ns).all()
    _lanes_disjoint(store)


@pytest.mark.parametrize("form", ["X", "BE"])
def test_depth_ten_thousand(tmp_path, form: str):
    n = 10_000
    if form == "X":
        lines = (f'{{"ph":"X","name":"d","pid":1,"tid":1,"ts":{i},"dur":{2 * (n - i)}}}' for i in range(n))
    else:
        lines = [f'{{"ph":"B","name":"d{i}","pid":1,"tid":1,"ts":{i}}}' for i in range(n)]
        lines += [f'{{"ph":"E","pid":1,"tid":1,"ts":{3 * n - i}}}' for i in range(n)]
    store = load_trace(_write_events(tmp_path / "deep.json", lines))
    s = store.slices
    assert len(s) == n and int(s.depth.max()) == n - 1 and store.warnings == []
    assert store.tracks[0].lanes == n
    has = s.parent >= 0
    assert has.sum() == n - 1
    assert (s.start_ns[s.parent[has]] <= s.start_ns[has]).all() and (s.end_ns[has] <= s.end_ns[s.parent[has]]).all()


def test_million_slices_in_one_lane(tmp_path):
    n = 1_000_000
    path = _write_events(tmp_path / "lane.json",
                         (f'{{"ph":"X","name":"s{i % 50}","pid":1,"tid":1,"ts":{2 * i},"dur":1}}' for i in range(n)))
    store = load_trace(path)
    assert len(store.slices) == n and len(store.tracks) == 1 and store.tracks[0].lanes == 1
    assert store.warnings == []
    assert store.index.lane_window(0, 0, 1_000_000, 1_001_000) == (500, 501)  # ts 1,000 µs = slice 500
    _lanes_disjoint(store)


async def test_focus_changes_do_not_leak_footer_keys(built):
    """Soak finding: each focus change recomposed the Footer and leaked its old keys (Textual 8.2.8)."""
    import gc

    from textual.widgets._footer import FooterKey

    _, path = _case(built, "odd_names")
    app = VtuiApp(path)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot, pauses=2)
        for _ in range(15):
            await pilot.press("tab")
            await pilot.pause()
        gc.collect()
        alive = sum(isinstance(o, FooterKey) for o in gc.get_objects())
        shown = len(app.query(FooterKey))
        assert alive <= 2 * shown + 5, (alive, shown)


# ---- terminal safety and CLI limits ------------------------------------------------------------
def test_escape_controls_makes_every_control_visible():
    from vtui.safe_text import escape_controls, safe_field

    text = "a\x1b]52;c;eA==\x07b\x9b2J\x7f\tc\nd"
    assert escape_controls(text) == "a\\x1b]52;c;eA==\\x07b\\x9b2J\\x7f\\x09c\\x0ad"
    assert escape_controls(text, keep_newlines=True).endswith("\\x09c\nd")
    assert escape_controls("🦙 plain ünïcode") == "🦙 plain ünïcode"
    # Bidi overrides and zero-width characters can make one name read as another.
    assert escape_controls("aten::\u202emm\u200b") == "aten::\\u202emm\\u200b"
    assert safe_field("x" * 10_000, 50) == "x" * 49 + "…"


def test_json_output_stays_lossless_but_has_no_raw_c1(capsys, built):
    _, path = _case(built, "escape_sequences")
    assert main(["search", str(path), ".", "--json"]) == 0
    out = capsys.readouterr().out
    check_terminal_safe(out, lossless=True)
    from tests.hostile_corpus import ESCAPES

    assert sorted(m["name"] for m in json.loads(out)["matches"]) == sorted(ESCAPES)  # the data round-trips


@pytest.mark.parametrize("extra", TREE_FORMATS)
def test_tree_outputs_escape_controls_bidi_and_invisible_characters(extra, capsys, built):
    """`tree --format json` (also --against, --handover) printed raw C1, bidi and invisible
    characters; `--format folded` let U+2028 split a stack line. Now: escaped, and JSON lossless."""
    from tests.hostile_corpus import INVISIBLE_NAMES

    _, path = _case(built, "invisible_names")
    assert main(["tree", str(path), *[a.format(trace=path) for a in extra]]) == 0
    out = capsys.readouterr().out
    check_terminal_safe(out, "tree " + " ".join(extra), lossless="json" in extra)
    if extra == ["--format", "json"]:
        doc = json.loads(out)  # lossless: the names as written, every one apart
        assert sorted(r["name"] for r in doc["roots"]) == sorted(INVISIBLE_NAMES)
    if "folded" in extra:  # one line per stack: nothing forged by a separator inside a name
        lines = out.splitlines()
        assert len(lines) == len(INVISIBLE_NAMES) and all(re.fullmatch(r".+ 5000", line) for line in lines)
        assert len(set(line.rsplit(" ", 1)[0] for line in lines)) == len(INVISIBLE_NAMES)  # five "aten::mm" apart


def test_csv_cells_cannot_run_as_spreadsheet_formulas(tmp_path, capsys):
    names = ["=HYPERLINK(\"http://x\")", "+1+1", "-2", "@SUM(A1)", "plain"]
    path = tmp_path / "formula.json"
    path.write_text(json.dumps([X(ts=i, name=n) for i, n in enumerate(names)]))
    assert main(["stats", str(path), "--format", "csv"]) == 0
    import csv
    import io

    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert sorted(r["name"] for r in rows) == sorted(["'" + n for n in names[:4]] + ["plain"])
    assert all(r["count"] == "1" for r in rows)  # numbers stay numbers (a negative one too: not text)


def test_a_stats_table_of_a_huge_name_stays_small(tmp_path, capsys):
    path = tmp_path / "huge.json"
    path.write_text(json.dumps([X(ts=i, name=("n" * 1_000_000 if i == 0 else f"s{i}")) for i in range(300)]))
    assert main(["stats", str(path)]) == 0
    out = capsys.readouterr().out
    assert len(out) < 100_000  # was every row padded to the 1 MB name: 300 MB
    check_terminal_safe(out)


def test_a_backtracking_regex_ends_at_once_and_the_time_limit_holds(tmp_path, capsys):
    path = tmp_path / "redos.json"
    path.write_text(json.dumps([X(ts=1, name="a" * 64 + "b"), X(ts=2, name="ok")]))
    assert main(["search", str(path), "(a+)+$", "--time-limit", "30"]) == 0  # RE2: linear, no backtracking
    assert capsys.readouterr().out.startswith("0 matches")  # no name ends in "a"
    assert main(["search", str(path), "o", "--time-limit", "1e-9"]) == 1
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and "ran past 1e-09 s" in err[0]
    assert main(["search", str(path), "^ok$", "--time-limit", "0.5"]) == 0
    assert capsys.readouterr().out.startswith("1 matches")


def test_a_range_without_units_is_a_usage_error_with_a_hint(capsys):
    code = main(["stats", str(FIXTURES / "hf_llama_stack.json.gz"), "--range", "10:20", "--no-cache"])
    err = capsys.readouterr().err.strip()
    assert code == 1 and err == "vtui: error: a time needs a unit: '10' (try 10ms, 10us or 10ns)"
    assert main(["stats", str(FIXTURES / "hf_llama_stack.json.gz"), "--range", "0:20ms", "--top", "1"]) == 0


def test_version_and_top_level_usage_list_every_command(capsys):
    from vtui import __version__

    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0 and capsys.readouterr().out.strip() == f"vtui {__version__}"
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    for name in COMMANDS:
        assert f"  vtui {name} " in out, name


# ---- gzip bombs --------------------------------------------------------------------------------
def _bomb(path: Path, members: int = 24) -> tuple[Path, int]:
    """Gzip members of 1 MiB of identical events each (~1000x): small on disk, big inflated."""
    event = json.dumps(X(ts=1)).encode() + b","
    body = event * ((1 << 20) // len(event))
    member = gzip.compress(body, mtime=0)
    path.write_bytes(gzip.compress(b"[", mtime=0) + member * members
                     + gzip.compress(json.dumps(X(ts=2)).encode() + b"]", mtime=0))
    return path, members * body.count(b"{") + 1


@pytest.mark.parametrize("spill", [False, True])
def test_a_gzip_bomb_stops_with_one_line_and_the_override_loads_it(tmp_path, monkeypatch, capsys, spill):
    import vtui.io.reader as reader

    monkeypatch.setattr(reader, "INFLATE_FLOOR", 4 << 20)  # the test's bomb is 24 MiB, not gigabytes
    if spill:
        monkeypatch.setattr(reader, "SPILL_GZIP", 0)
    path, events = _bomb(tmp_path / "bomb.json.gz")
    assert path.stat().st_size * 300 < 24 << 20  # inflates over 300x
    with pytest.raises(TraceLoadError, match="gzip bomb") as exc:
        load_trace(path, cache=False)
    assert "\n" not in str(exc.value) and "--max-inflate" in str(exc.value)
    assert main(["info", str(path)]) == 1
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and "gzip bomb" in err[0]
    assert [p.name for p in tmp_path.iterdir()] == ["bomb.json.gz"]  # no spill left behind
    assert main(["info", str(path), "--max-inflate", "0", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["slices"] == events


def test_slice_durations_are_computed_once_not_per_access():
    """`s.dur_ns[r]` in a loop recomputed every slice's duration per access (search ~55 min)."""
    store = load_trace(FIXTURES / "hf_llama_stack.json.gz")
    s = store.slices
    assert s.dur_ns is s.dur_ns and not s.dur_ns.flags.writeable
    rows = np.array([0, 5, len(s) - 1])
    assert (s.durations(rows) == s.dur_ns[rows]).all() and (s.dur_ns == s.end_ns - s.start_ns).all()


# ---- signals -----------------------------------------------------------------------------------
@pytest.mark.parametrize("signame", ["SIGTERM", "SIGHUP"])
def test_a_signal_during_a_load_removes_every_temp_file(tmp_path, monkeypatch, capsys, signame):
    """SIGTERM / SIGHUP mid-load: exit 128+N, nothing on stderr, no spill or args temp left."""
    import vtui.io.reader as reader
    import vtui.load.trace as load_mod
    from vtui.store import cache

    sig = getattr(signal, signame)
    monkeypatch.setattr(reader, "SPILL_GZIP", 0)  # the gzip is inflated to a temp file too
    path = tmp_path / "t.json.gz"
    path.write_bytes(gzip.compress(json.dumps([X(ts=i, args={"k": i}) for i in range(2000)]).encode()))
    real = load_mod.scan_trace
    seen: list[list[str]] = []

    def signalled(*args, **kwargs):
        seen.append(sorted(p.name for p in cache.cache_root().iterdir()))
        os.kill(os.getpid(), sig)  # delivered here, in the middle of the load
        return real(*args, **kwargs)

    monkeypatch.setattr(load_mod, "scan_trace", signalled)
    old = signal.getsignal(sig)
    assert main(["info", str(path)]) == 128 + sig
    assert signal.getsignal(sig) == old  # the CLI's handler is gone again
    captured = capsys.readouterr()
    assert captured.err == "" and captured.out == ""
    assert any(n.startswith(".vtui-gunzip-") for n in seen[0]) and any(n.startswith(".vtui-args-") for n in seen[0])
    assert list(cache.cache_root().iterdir()) == []


def test_decoder_workers_leave_ctrl_c_to_the_parent():
    """A ctrl-c reaches every process of the group; a worker handling it would print a traceback."""
    import concurrent.futures as cf
    import multiprocessing as mp

    from vtui.load import parallel

    ctx = mp.get_context("spawn")
    with cf.ProcessPoolExecutor(1, mp_context=ctx, initializer=parallel._init,
                                initargs=(None, None, None)) as pool, parallel._sigint_blocked():
        assert pool.submit(signal.getsignal, signal.SIGINT).result() == signal.SIG_IGN
        assert signal.SIGINT not in pool.submit(signal.pthread_sigmask, signal.SIG_BLOCK, set()).result()
    assert signal.SIGINT not in signal.pthread_sigmask(signal.SIG_BLOCK, set())  # the parent's mask is back


def test_a_trace_that_changes_while_loading_is_refused_in_one_line(tmp_path, monkeypatch, capsys):
    import vtui.load.trace as load_mod

    path = tmp_path / "growing.json"
    path.write_text(json.dumps([X(ts=i) for i in range(100)]))
    real = load_mod.scan_trace

    def appended_meanwhile(*args, **kwargs):
        out = real(*args, **kwargs)
        with open(path, "ab") as fh:  # a profiler still writing the file
            fh.write(b"\n")
        return out

    monkeypatch.setattr(load_mod, "scan_trace", appended_meanwhile)
    assert main(["info", str(path)]) == 1
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and "changed while it was being loaded" in err[0]
    from vtui.store import cache

    assert cache.list_entries() == [] and not [p for p in cache.cache_root().iterdir()]  # nothing cached, no temp
