"""Every key binding of the app, as data: the one list that the widgets' BINDINGS, the help
screen, the footer (``footer=True``) and the command palette all read.

Each binding has a stable id (``view.zoom_in``): a user keymap (``keys.toml``, see
``vtui.ui.keymap``) maps ids to other keys; Textual's ``App.set_keymap`` applies it, and the help
and the palette show the keys in use. The same id in two scopes (the main timeline and compare
mode) is the same action to the user, so one keymap line rebinds it in both.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from textual.binding import Binding
from textual.keys import format_key

from vtui.ui.timeline.view import LANE_CAP

_ARROWS = {"left": "←", "right": "→", "up": "↑", "down": "↓", "pageup": "PgUp", "pagedown": "PgDn",
           "escape": "esc", "enter": "enter", "tab": "tab", "space": "space"}


@dataclass(frozen=True)
class Key:
    scope: str  # which screen or widget has it: a key of SCOPES
    id: str  # stable, for keys.toml; the part before the dot groups it in the palette
    keys: str  # Textual key names, comma-separated: "question_mark,f1"
    action: str
    description: str
    footer: bool = False  # shown in the footer
    tooltip: str = ""  # a longer description (footer tooltip, palette help line)
    words: str = ""  # what people type in the palette for an action whose own name says otherwise
    priority: bool = False  # before the focused widget's own binding of the key (Insights' PgDn over a list's)
    # Which node of the scope binds it: "view" the timeline pane (vtui.ui.timeline.pane; its keys
    # act only while the focus is inside it, so never under another screen), "compare" compare
    # mode's tabs, "app" the App (quit and help: there while loading and under every screen).
    on: str = "view"


@dataclass(frozen=True)
class Scope:
    title: str  # the help section
    # Keys the widget handles itself (DataTable's arrows, the mouse): listed in the help after
    # the bindings, not rebindable.
    notes: tuple[tuple[str, str], ...] = ()


SCOPES: dict[str, Scope] = {
    "timeline": Scope("Timeline"),
    "tracks": Scope("Track list (shift+tab to reach it)"),
    "aggregation": Scope("Aggregation table (2)",
                         (("↑ ↓", "Highlight the row's slices in the timeline"),
                          ("enter", "Jump to the row's longest slice"), ("click header", "Sort by that column"))),
    "mouse": Scope("Mouse", (("wheel", "Zoom at the mouse"), ("shift+wheel", "Pan"), ("click", "Select a slice"),
                             ("drag", "Select a time range"))),
    "prompts": Scope("Prompts", (("enter", "Accept"), ("esc", "Cancel"))),
    "everywhere": Scope("Everywhere", (
        ("tab shift+tab", "Move focus between panes (the focused one is outlined in blue)"),
        ("ctrl+p", "Command palette: every action, found by what you type (step, gpu, export…)"))),
    "compare": Scope("Compare: keys act on the focused timeline (both when locked)"),
    "compare.mouse": Scope("Mouse", (("wheel", "Zoom at the mouse"), ("shift+wheel", "Pan"),
                                     ("click", "Select a slice"), ("drag", "Zoom to the dragged times"))),
    "compare.tables": Scope("Tables (2 3 4)", (("↑ ↓", "Move"), ("click header", "Sort by that column"))),
    "bystep": Scope("Step by step (5): A's step above B's on one clock from each step's start",
                    (("colour", "A kernel and its match share a colour; ▓ changed, × removed (A only), + added (B only)"),)),
    "insights": Scope("Insights (i)", (
        ("↑ ↓ enter", "In a list (steps, GPU gaps, outliers): pick one and jump to it in the timeline"),
        ("tab", "Move between the lists"))),
    "tree": Scope("Call tree (F)"),
    "handover": Scope("Hand-overs (H in the call tree)", (("↑ ↓ PgUp PgDn", "Move between hand-overs"),
                                                        ("click header", "Sort by that column"))),
    "treediff": Scope("Differential call tree (F)", (("↑ ↓ PgUp PgDn", "Scroll"),
                                                     ("red / green", "B slower / faster than A on that path"))),
    "query": Scope("SQL query (:)", (("enter", "In the query: run it; on a row: jump to its slice (id) or time (ts)"),
                                     ("↑ ↓", "Move between rows"))),
    "ranks": Scope("Ranks (K)", (("↑ ↓ enter", "Pick a collective: show it on every rank's timeline"),)),
    "results": Scope("Search results (L)", (("↑ ↓ enter", "Pick a name: jump to its longest match"),)),
    "help": Scope("Help"),
    "warnings": Scope("Load warnings", (("↑ ↓", "Move between health examples"),
                                         ("enter", "Show the example on the timeline"))),
    "prompt": Scope("Prompt"),
}

_K = Key
KEYS: tuple[Key, ...] = (
    # ---- the main timeline (the app's own bindings) ----
    _K("timeline", "view.zoom_in", "w", "zoom_in", "Zoom in", footer=True),
    _K("timeline", "view.zoom_out", "s", "zoom_out", "Zoom out", footer=True),
    _K("timeline", "view.pan_left", "a", "pan_left", "Pan left", footer=True),
    _K("timeline", "view.pan_right", "d", "pan_right", "Pan right", footer=True),
    _K("timeline", "view.frame", "f", "frame", "Frame selection", footer=True),
    _K("timeline", "view.all", "0", "show_all", "Whole trace"),
    _K("timeline", "view.goto", "g", "goto", "Go to a time, range or step", words="jump to a time, 12ms:25.5ms, #3"),
    _K("timeline", "select.lane_prev", "left,h", "lane_prev", "Previous slice on lane"),
    _K("timeline", "select.lane_next", "right,l", "lane_next", "Next slice on lane"),
    _K("timeline", "select.up", "up,k", "up", "Parent, else track above"),
    _K("timeline", "select.down", "down,j", "down", "Child, else track below"),
    _K("timeline", "select.track_next", "full_stop", "track_next", "Next slice on track"),
    _K("timeline", "select.track_prev", "comma", "track_prev", "Previous slice on track"),
    _K("timeline", "select.flow_out", "right_square_bracket", "flow_out", "Follow outgoing flow"),
    _K("timeline", "select.flow_in", "left_square_bracket", "flow_in", "Follow incoming flow"),
    _K("timeline", "range.selection", "r", "range_selection", "Range = selected slice", footer=True),
    _K("timeline", "range.start", "shift+left", "range_start", "Range start at selected slice"),
    _K("timeline", "range.end", "shift+right", "range_end", "Range end at selected slice"),
    _K("timeline", "range.window", "R", "range_window", "Range = visible window"),
    _K("timeline", "range.clear", "escape", "clear", "Clear mark / highlight / range (in a pane: back)"),
    _K("timeline", "range.undo", "u", "undo_range", "Undo the last range change"),
    _K("timeline", "search.find", "slash", "search", "Search names (args:RE for args)", footer=True,
       words="find slices by name or args"),
    _K("timeline", "search.next", "n", "match_next", "Next match"),
    _K("timeline", "search.prev", "N", "match_prev", "Previous match"),
    _K("timeline", "search.results", "L", "results", "Search results by name",
       tooltip="Count and time per matching name; enter jumps to the longest"),
    _K("timeline", "measure.mark", "m", "mark", "Measure: mark A, then B", footer=True,
       words="time between two events"),
    _K("timeline", "measure.clear", "M", "clear_measurements", "Clear measurements"),
    _K("timeline", "pane.details", "1", "tab('details')", "Details pane"),
    _K("timeline", "pane.aggregation", "2", "tab('aggregation')", "Aggregation pane", footer=True,
       words="top operators, kernels, table by name/category/track"),
    _K("timeline", "pane.measure", "3", "tab('measure')", "Measure pane"),
    _K("timeline", "export.range", "e", "export_range", "Export range as trace JSON", footer=True,
       words="save a slice of the trace"),
    _K("timeline", "export.table", "x", "export_table", "Export the aggregation table",
       words="save the operator table as CSV/JSON/Markdown"),
    _K("timeline", "tracks.filter", "t,ctrl+f", "filter", "Filter tracks", footer=True,
       words="show only GPU streams / threads"),
    _K("timeline", "tracks.list", "T", "toggle_tracklist", "Show/hide the track list",
       tooltip="Show or hide the track list (hidden by itself below 110 columns)"),
    _K("timeline", "tracks.collapse", "c", "collapse", "Fold/unfold the selected track's rows",
       tooltip=f"Deep stacks show {LANE_CAP} rows and '+N rows' until unfolded"),
    _K("timeline", "view.origin", "z", "time_origin",
       "Relative times: from the range / selected slice (again: trace start)",
       tooltip="Relative time axis: zero at the range's start, else at the selected slice's start",
       words="relative time axis origin offset"),
    _K("timeline", "view.rows_up", "pageup", "rows_up", "Scroll rows up"),
    _K("timeline", "view.rows_down", "pagedown", "rows_down", "Scroll rows down"),
    _K("timeline", "view.insights", "i", "insights", "Insights", tooltip="Steps, operators, GPU, memory: findings with hints",
       words="steps, phases, GPU idle, sync points, memory, operators, outliers"),
    _K("timeline", "view.call_tree", "F", "call_tree", "Call tree / flame graph of the range"),
    _K("timeline", "view.query", "colon", "query", "SQL query (Perfetto's table names)",
       words="sql perfetto trace processor select"),
    _K("timeline", "view.critical_path", "C", "critical_path", "Critical path of the selected step (esc clears)",
       tooltip="Highlight what the step's end waited on (CPU ops, kernels, syncs); the rest is dimmed",
       words="critical path longest path step bound cpu gpu sync comm"),
    _K("timeline", "view.ranks", "K", "ranks", "Ranks: stragglers, collectives, exposed communication",
       words="many ranks, NCCL, all-reduce, skew, straggler, busbw"),
    _K("timeline", "app.help", "question_mark,f1", "help", "Help", footer=True, on="app"),
    _K("timeline", "app.warnings", "W", "warnings", "Load warnings and trace health (what cannot be trusted)"),
    _K("timeline", "app.quit", "q", "quit", "Quit", footer=True, on="app"),
    _K("timeline", "app.share", "S", "share", "Share the view with an agent (again: stop)", on="app",
       tooltip="An agent attaches with vtui mcp --attach; its actions show above the status line, esc interrupts",
       words="mcp agent attach assistant llm"),
    # ---- the track list and the aggregation table (their keys act while they have the focus) ----
    _K("tracks", "tracks.toggle", "space", "toggle_track", "Show/hide", footer=True, tooltip="Show or hide the track"),
    _K("tracks", "tracks.fold", "enter", "fold", "Fold or unfold a process, or a deep track's rows"),
    _K("tracks", "tracks.up", "up,k", "move(-1)", "Move up between processes and tracks"),
    _K("tracks", "tracks.down", "down,j", "move(1)", "Move down between processes and tracks"),
    _K("tracks", "tracks.pin", "p", "pin_track", "Pin", footer=True, tooltip="Pin the track to the top of the timeline"),
    _K("aggregation", "agg.group", "b", "group", "Group by name/cat/track", footer=True),
    _K("aggregation", "agg.sort", "o", "sort", "Sort by next column", footer=True),
    _K("aggregation", "agg.reverse", "O", "reverse", "Reverse sort", footer=True),
    _K("aggregation", "agg.filter", "slash", "focus_filter", "Filter rows", footer=True),
    _K("aggregation", "agg.matches", "M", "matches_only", "Only the search matches", footer=True),
    # ---- compare mode: the same ids as the main timeline where the action is the same ----
    _K("compare", "view.zoom_in", "w", "zoom_in", "Zoom in", footer=True),
    _K("compare", "view.zoom_out", "s", "zoom_out", "Zoom out", footer=True),
    _K("compare", "view.pan_left", "a", "pan_left", "Pan left", footer=True),
    _K("compare", "view.pan_right", "d", "pan_right", "Pan right", footer=True),
    _K("compare", "view.all", "0", "show_all", "Whole trace", footer=True),
    _K("compare", "select.lane_prev", "left,h", "lane_prev", "Previous slice on lane"),
    _K("compare", "select.lane_next", "right", "lane_next", "Next slice on lane"),  # l locks here
    _K("compare", "select.up", "up,k", "up", "Parent, else track above"),
    _K("compare", "select.down", "down,j", "down", "Child, else track below"),
    _K("compare", "view.frame", "f", "frame", "Frame selection"),
    _K("compare", "view.goto", "g", "goto", "Go to a time, range or step", words="jump to a time, 12ms:25.5ms, #3"),
    _K("compare", "search.find", "slash", "search", "Search the focused trace"),
    _K("compare", "search.stop", "escape", "stop_search", "Stop a running search"),
    _K("compare", "search.next", "n", "match_next", "Next match"),
    _K("compare", "search.prev", "N", "match_prev", "Previous match"),
    _K("compare", "view.insights", "i", "insights", "Insights of the focused trace", footer=True,
       tooltip="Steps, operators, GPU idle, sync points, memory of the focused trace",
       words="steps, phases, GPU idle, sync points, memory, operators, outliers"),
    _K("compare", "view.call_tree", "F", "app.tree_diff", "Differential call tree", footer=True, on="compare"),
    _K("compare", "app.help", "question_mark,f1", "help", "Help", footer=True, on="app"),  # also while loading
    _K("compare", "compare.lock", "l", "app.lock", "Lock times", footer=True, on="compare",
       tooltip="Lock the two windows: same times from the first steps, then from the trace starts, then unlocked"),
    _K("compare", "compare.tab_timelines", "1", "app.tab(0)", "Timelines", footer=True, on="compare"),
    _K("compare", "compare.tab_metrics", "2", "app.tab(1)", "Metrics", footer=True, on="compare"),
    _K("compare", "compare.tab_ops", "3", "app.tab(2)", "Operators", footer=True, on="compare"),
    _K("compare", "compare.tab_steps", "4", "app.tab(3)", "Steps", footer=True, on="compare"),
    _K("compare", "compare.tab_bystep", "5", "app.tab(4)", "Step by step", footer=True, on="compare"),
    _K("bystep", "bystep.kind", "c", "kind", "Next step kind", footer=True,
       tooltip="Prefill, decode, mixed, ProfilerStep…: the kinds both traces have"),
    _K("bystep", "bystep.next", "n", "walk(1)", "Next difference", footer=True,
       tooltip="The aligned step pair that differs next most"),
    _K("bystep", "bystep.prev", "N", "walk(-1)", "Previous difference"),
    _K("compare", "app.quit", "q", "quit", "Quit", footer=True, on="app"),
    # ---- screens over the timeline ----
    _K("insights", "insights.close", "escape,i,q", "close", "Back", footer=True, tooltip="Back to the timeline"),
    _K("insights", "insights.step", "r", "step_regex", "Step regex", footer=True, tooltip="Set the regex that finds steps"),
    _K("insights", "insights.whole", "0", "whole", "Whole trace", footer=True, tooltip="Insights over the whole trace"),
    _K("insights", "insights.page_down", "pagedown", "page(1)", "Scroll the findings down", priority=True),
    _K("insights", "insights.page_up", "pageup", "page(-1)", "Scroll the findings up", priority=True),
    _K("insights", "insights.next_section", "right_square_bracket", "section(1)", "Next section", footer=True,
       tooltip="Scroll to the next section (steps, operators, GPU, memory…)"),
    _K("insights", "insights.prev_section", "left_square_bracket", "section(-1)", "Previous section"),
    _K("tree", "tree.back", "escape,backspace", "back", "Back", footer=True, tooltip="Zoom out one level (close at the top)"),
    _K("tree", "tree.close", "q", "close", "Close", footer=True),
    _K("tree", "tree.zoom", "enter", "zoom", "Zoom", footer=True, tooltip="Zoom into the selected node"),
    _K("tree", "tree.view", "f", "toggle_view", "Flame/tree", footer=True, tooltip="Icicle / flame graph or indented tree"),
    _K("tree", "tree.weight", "w", "weight", "Weight", footer=True, tooltip="Total, self or GPU time"),
    _K("tree", "tree.invert", "I", "invert", "Invert", footer=True, tooltip="Top-down or bottom-up (callers beneath)"),
    _K("tree", "tree.find", "slash", "search", "Find", footer=True, tooltip="Mark the nodes whose name matches a regex"),
    _K("tree", "tree.next", "n", "next_match", "Next match"),
    _K("tree", "tree.timeline", "t", "timeline", "In timeline", footer=True, tooltip="Show the node's longest slice"),
    _K("tree", "tree.handover", "H", "handover", "Hand-overs", words="python to c++ handover deep wrappers sync per step",
       tooltip="Where Python hands over to C++, deep wrappers, syncs per step (vtui tree --handover)"),
    _K("tree", "tree.up", "up,k", "move('up')", "Up"),
    _K("tree", "tree.down", "down,j", "move('down')", "Down"),
    _K("tree", "tree.left", "left,h", "move('left')", "Left / collapse"),
    _K("tree", "tree.right", "right,l", "move('right')", "Right / expand"),
    _K("tree", "tree.page_up", "pageup", "move('pageup')", "Page up"),
    _K("tree", "tree.page_down", "pagedown", "move('pagedown')", "Page down"),
    _K("tree", "tree.first", "home", "move('home')", "First"),
    _K("tree", "tree.last", "end", "move('end')", "Last"),
    _K("handover", "handover.close", "escape,q,H", "close", "Back", footer=True, tooltip="Back to the call tree"),
    _K("handover", "handover.total", "t", "sort('total')", "By total", footer=True,
       tooltip="Sort the hand-overs by their total time (again: reverse)"),
    _K("handover", "handover.self", "s", "sort('self')", "By self", footer=True,
       tooltip="Sort the hand-overs by their own self time (again: reverse)"),
    _K("handover", "handover.depth", "d", "sort('depth')", "By depth", footer=True,
       tooltip="Sort the hand-overs by the Python frames above them (again: reverse)"),
    _K("treediff", "treediff.back", "escape,q,F", "dismiss", "Back", footer=True),
    _K("query", "query.close", "escape", "close", "Close", footer=True),
    _K("query", "query.edit", "ctrl+e", "edit", "Edit the query", footer=True),
    _K("ranks", "ranks.close", "escape,q,K", "close", "Back", footer=True, tooltip="Back to the timeline"),
    _K("ranks", "ranks.align", "c", "align", "Clocks: epoch / collective", footer=True,
       tooltip="Align the ranks on their epoch clocks, or on the end of the first common collective"),
    _K("results", "results.close", "escape,q,L", "dismiss_none", "Close", footer=True),
    _K("help", "help.close", "escape,q,question_mark,f1", "dismiss", "Close", footer=True),
    _K("warnings", "warnings.close", "escape,q,W", "dismiss", "Close", footer=True),
    _K("prompt", "prompt.cancel", "escape", "cancel", "Cancel", footer=True),
)

KEY_IDS: frozenset[str] = frozenset(k.id for k in KEYS)

# The help screen's sections, in order, for the main timeline and for compare mode.
MAIN_HELP = ("timeline", "tracks", "aggregation", "mouse", "prompts", "everywhere")
COMPARE_HELP = ("compare", "compare.mouse", "compare.tables", "bystep", "everywhere")

Keymap = Mapping[str, str]  # binding id -> Textual key names, comma-separated
HelpSection = tuple[str, list[tuple[str, str]]]


def keys_in(scope: str) -> list[Key]:
    return [k for k in KEYS if k.scope == scope]


def bindings(scope: str, on: str | None = None) -> list[Binding]:
    """A widget's BINDINGS, from the table: the scope's, or those of it that node ``on`` binds."""
    return [Binding(k.keys, k.action, k.description, show=k.footer, id=k.id, tooltip=k.tooltip or k.description,
                    priority=k.priority)
            for k in keys_in(scope) if on is None or k.on == on]


def key_glyph(key: str) -> str:
    """``"full_stop"`` -> ``"."``; ``"shift+left"`` -> ``"shift+←"``; ``"f1"`` -> ``"F1"``."""
    *mods, last = key.split("+")
    name = _ARROWS.get(last) or (last.upper() if last[:1] == "f" and last[1:].isdigit() else format_key(last))
    return "+".join([*mods, name])


def keys_glyphs(keys: str) -> str:
    """A binding's comma-separated keys: ``"question_mark,f1"`` -> ``"? F1"``."""
    return " ".join(key_glyph(k.strip()) for k in keys.split(","))


def keys_of(key: Key, keymap: Keymap) -> str:
    """The keys in use for a binding: the user's, else the default."""
    return keymap.get(key.id) or key.keys


def help_rows(scope: str, keymap: Keymap) -> list[tuple[str, str]]:
    rows = [(keys_glyphs(keys_of(k, keymap)), k.description) for k in keys_in(scope)]
    if scope == "everywhere":
        help_key = next(k for k in KEYS if k.id == "app.help")
        rows.append((keys_glyphs(keys_of(help_key, keymap)), "This help (esc closes; ↑ ↓ PgUp PgDn scroll)"))
    return rows + list(SCOPES[scope].notes)


def help_sections(scopes: tuple[str, ...], keymap: Keymap) -> list[HelpSection]:
    return [(SCOPES[s].title, help_rows(s, keymap)) for s in scopes]


def palette_entries(scope: str, keymap: Keymap) -> list[tuple[str, str, str, str]]:
    """(title, help line, action, the node that binds it) of every binding of a scope, for the command palette."""
    out = []
    for k in keys_in(scope):
        group = "compare" if scope == "compare" else k.id.split(".")[0]
        title = f"{group}: {k.description}" + (f" — {k.words}" if k.words else "")
        # The id is shown so that keys.toml can name it.
        out.append((title, f"{k.tooltip or k.description} (key {keys_glyphs(keys_of(k, keymap))} · id {k.id})",
                    k.action, k.on))
    return out
