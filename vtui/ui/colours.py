"""The UI's colours, in one place: the Textual theme that ``vtui.tcss`` reads as variables
($background, $panel, $primary, $error, $vtui-rule…), and the same colours as Rich styles for what
the widgets draw themselves (flame graph, Insights text, the differential tree).

The timeline's and track list's drawing colours are here too; ``render.py`` picks a slice's colour
from ``SLICES`` by a hash of its name.
"""

from __future__ import annotations

from textual.theme import Theme

BACKGROUND = "#1b1d23"  # screens, the timeline
SURFACE = "#20232a"  # panes and dialogs: track list, details, help
PANEL = "#2b3040"  # the title and status lines
BAR = "#262a33"  # lesser title lines, one-line inputs
RULE = "#3a3f4b"  # lines between panes
FOREGROUND = "#e0e0e0"
TEXT = "#c0c4d0"  # body text, a little softer than titles
MUTED = "#6c7080"  # secondary marks (tree guides, dialog borders)
NOTE = "#8fa1b3"  # keys in the details, hints, notes
PRIMARY = "#61afef"  # focus, headings
ERROR = "#ff6b6b"
WARNING = "#f0c674"
SUCCESS = "#98c379"
MATCH = "#ffd166"  # search matches, mark A
FIRST_STEP = "#6fa8dc"  # the first (prefill) step in the step bars
DIMMED_INK = "#9a9ea8"  # names on dimmed flame-graph cells
# Drawn by the timeline and the track list (Rich styles, not CSS).
SLICES = (
    "#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2", "#edc948", "#ff9da7", "#9c755f",
    "#2f6690", "#c05746", "#5c946e", "#7f58af", "#3a7d8c", "#b8860b", "#c4607b", "#6b8e23",
)
SELECTED_BG, SELECTED_INK = "#ffffff", "#000000"
DIMMED_SLICE = "#3a3d46"  # slices outside an active highlight (search matches, an aggregation row)
DARK_INK, LIGHT_INK = "#101216", "#f0f0f0"  # labels on light / dark blocks
COUNTER = "#76b7b2"
LABEL_INK = "#c8c8c8"  # track names
RULER_INK, RULER_BG = "#a0a4b0", "#16181d"
RANGE_BG = "#7fb3d5"  # the selected range on the ruler
HEADING = f"bold {FOREGROUND}"  # headings drawn as Rich text (Insights)
SLOWER, FASTER = "#e06c75", "#98c379"  # B took more / less than A (the timeline's red / green)
SEVERITY = {"high": f"bold {ERROR}", "warning": WARNING, "info": NOTE}  # Insights findings

THEME = Theme(
    name="vtui",
    primary=PRIMARY,
    secondary=NOTE,
    accent="#ffa62b",  # Textual's own (footer keys), kept
    warning=WARNING,
    error=ERROR,
    success=SUCCESS,
    foreground=FOREGROUND,
    background=BACKGROUND,
    surface=SURFACE,
    panel=PANEL,
    dark=True,
)
# vtui's own variables ($vtui-rule…), for every theme (another theme picked with ctrl+p needs them too).
VARIABLES = {"vtui-bar": BAR, "vtui-rule": RULE, "vtui-text": TEXT, "vtui-muted": MUTED}
