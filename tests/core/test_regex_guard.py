"""The one guarded regex engine (vtui/regex_guard.py): no user pattern can hang a command or
the app, a bad one is one line naming the pattern as typed, and matching agrees with Python's
``re`` on the patterns both accept.

Hangs are bounded by a SIGALRM deadline in the test (Python's ``re`` checks signals while it
backtracks, so the old code fails here instead of running for hours)."""

from __future__ import annotations

import json
import re
import threading

import numpy as np
import pytest

from tests.helpers import QWEN, deadline
from vtui.analysis.slices.search import search
from vtui.cli import main
from vtui.regex_guard import Budget, RegexError, RegexStopped, compile_user
from vtui.ui.timeline.view import ViewState

EVIL = "(a+)+$"
VICTIM = "a" * 40 + "!"  # 2^40 backtracking steps for Python's re
DEADLINE_S = 20


@pytest.fixture
def bounded():
    with deadline(DEADLINE_S, "the regex backtracks without end"):
        yield


@pytest.fixture
def redos_trace(tmp_path):
    """Names, a thread and a process all built to make (a+)+$ backtrack."""
    events = [{"ph": "X", "name": VICTIM, "pid": 1, "tid": 1, "ts": i * 10, "dur": 5, "args": {"k": VICTIM}}
              for i in range(3)]
    events += [{"ph": "X", "name": "aaa", "pid": 1, "tid": 1, "ts": 40, "dur": 5},
               {"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": VICTIM}},
               {"ph": "M", "name": "process_name", "pid": 1, "args": {"name": VICTIM}}]
    path = tmp_path / "redos.json"
    path.write_text(json.dumps({"traceEvents": events}))
    return path


@pytest.mark.parametrize("argv", [
    ["stats", "{p}", "--track", EVIL], ["tree", "{p}", "--track", EVIL], ["search", "{p}", EVIL],
    ["search", "{p}", "args:" + EVIL], ["insights", "{p}", "--step", EVIL],
    ["export", "{p}", "-o", "{out}", "--track", EVIL], ["diff", "{p}", "{p}", "--step", EVIL]])
def test_a_backtracking_pattern_ends_at_once_everywhere_in_the_cli(argv, redos_trace, tmp_path, bounded, capsys):
    code = main([a.format(p=redos_trace, out=tmp_path / "o.json") for a in argv] + ["--no-cache"])
    out, err = capsys.readouterr()
    assert "Traceback" not in err and "internal error" not in err
    if argv[0] == "search":
        # the independent count: names (or args texts) that end in "a"
        assert code == 0 and out.startswith("0 matches" if "args:" in argv[2] else "1 matches"), out + err
    else:  # --track: no track label ends in "a" ("… !"), so a one-line usage error; --step: no step found
        assert code in (0, 1) and len(err.splitlines()) <= 1, err


def test_the_track_filter_and_tree_marks_use_the_guarded_engine(redos_trace, bounded):
    from vtui.load.trace import load_trace

    store = load_trace(redos_trace, cache=False)
    view = ViewState(store)
    view.filter_text = EVIL
    assert view.visible_tracks() == []  # no label ends in "a": Python's re says the same on short inputs
    view.filter_text = "(A+)+!"  # the track filter ignores case; plain Python: "a!" somewhere in the row's text
    expect = [t.id for t in store.tracks if "a!" in f"{t.process_title} {t.title} {t.kind}".lower()]
    assert [t.id for t in view.visible_tracks()] == expect and expect
    view.filter_text = "a("  # not a regex: a plain substring, as before
    assert view.visible_tracks() == []
    names = [VICTIM, "aaa", "b"]
    assert compile_user(EVIL).mask(names).tolist() == [False, True, False]


@pytest.mark.parametrize("pattern", ["aten::.*mm", "^cuda", "Linear_[0-9]+$", "(?i)NCCL", "mm|conv", r"\bmm\b",
                                     "[A-Z]{3}", "x*", "", "::(add|mul)", r"\d+\.\d+"])
def test_matching_agrees_with_python_re_on_a_real_trace(pattern, qwen_store):
    strings = qwen_store.strings
    assert compile_user(pattern).mask(strings).tolist() == [re.search(pattern, s, re.ASCII) is not None for s in strings]
    found = search(qwen_store, pattern)
    expect = {i for i, s in enumerate(strings) if re.search(pattern, s, re.ASCII)}
    assert found.count == int(np.isin(qwen_store.slices.name_id, list(expect)).sum())


def test_ignore_case_is_an_option_never_a_prefix_in_the_message(qwen_store):
    with pytest.raises(RegexError) as exc:
        search(qwen_store, "aten(", ignore_case=True)
    assert str(exc.value) == "invalid regex 'aten(': missing )"
    lower = search(qwen_store, "aten::mm", ignore_case=True).count
    assert lower == sum("aten::mm" in qwen_store.name(r).lower() for r in range(len(qwen_store.slices)))


@pytest.mark.parametrize(("pattern", "says"), [
    ("(?<=a)b", "no lookahead, lookbehind or backreferences"), (r"(a)\1", "backreferences"),
    ("((((a{50}){50}){50}){50})", "counted repetitions go up to 1000"), ("a{2000}", "up to 1000"),
    ("[z-a]", "invalid character class range"), ("x" * 20_000, "longer than 16,384 characters"),
    ("\x1b]0;t\x07(", "\\x1b]0;t\\x07(")])
def test_a_pattern_the_engine_refuses_is_one_line(pattern, says, capsys, bounded):
    with pytest.raises(RegexError) as exc:
        compile_user(pattern)
    message = str(exc.value)
    assert says in message and "\n" not in message and "\x1b" not in message and len(message) < 300
    assert main(["search", str(QWEN), pattern]) == 1  # before the load, one line
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and says in err


def test_a_budget_stops_a_long_match_by_time_and_by_cancel():
    texts = [b"x" * 1000] * 50_000
    rx = compile_user("y")
    with pytest.raises(RegexStopped, match="ran past 1e-09 s"):
        rx.mask_bytes(texts, Budget(1e-9))
    cancel = threading.Event()
    cancel.set()
    with pytest.raises(RegexStopped, match="cancelled"):
        rx.mask_bytes(texts, Budget(None, cancel))
    assert not rx.mask_bytes(texts[:10], Budget(None)).any()


def test_search_time_limit_reaches_the_args_search(qwen_store):
    with pytest.raises(RegexStopped):
        search(qwen_store, "args:zzz_not_there", budget=Budget(1e-9))
    got = search(qwen_store, "args:External id", budget=Budget(60))
    s = qwen_store.slices
    expect = sum(b"External id" in bytes(qwen_store.args_blob[o:o + n])
                 for o, n in zip(s.args_off.tolist(), s.args_len.tolist()) if n > 0)
    assert got.count == expect > 0
