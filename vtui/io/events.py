"""The one typed shape every decoded event takes, and the phase codes used in columns."""

from __future__ import annotations

from typing import Any

import msgspec

EMPTY_RAW = msgspec.Raw(b"")


class Event(msgspec.Struct, gc=False):
    """Only the fields vtui indexes; everything else stays in the source bytes.

    Every field is ``Any`` so a string ``ts`` or a list ``pid`` never fails a whole chunk;
    ``args`` stays encoded (``Raw``) and is decoded only when someone asks. ``ts`` and ``dur`` stay
    their source text (``Raw``), turned into exact ns by vtui.io.exactts (a double would round
    them); an event built in Python (the event-by-event walk) may hold plain values there.
    """

    ph: Any = None
    name: Any = None
    cat: Any = None
    ts: msgspec.Raw = EMPTY_RAW  # the walk (and tests) may put Python values here: no check on init
    dur: msgspec.Raw = EMPTY_RAW
    pid: Any = None
    tid: Any = None
    id: Any = None
    id2: Any = None
    scope: Any = None
    s: Any = None
    bp: Any = None
    bind_id: Any = None
    flow_in: Any = None
    flow_out: Any = None
    args: msgspec.Raw = EMPTY_RAW


EVENT_FIELDS = tuple(f for f in Event.__struct_fields__ if f != "args")

# Phase codes stored in the int8 ``ph`` column. 0 = unknown / missing.
PHASES = "XBEiIRCbneSTpFstfMPNODVvc()"
PH_CODE: dict[str, int] = {p: i + 1 for i, p in enumerate(PHASES)}
UNKNOWN_PH = 0


def phase_code(ph: object) -> int:
    """Code for any ``ph`` value; like Perfetto, only the first character counts."""
    if isinstance(ph, str) and ph:
        return PH_CODE.get(ph[0], UNKNOWN_PH)
    return UNKNOWN_PH

