"""`vtui search --json`: the `search` Struct of vtui/present/schema.py, whole (``search_report``,
what the MCP tool pages) or written piece by piece (``search_json_parts``, the CLI's: memory stays
flat in the number of matches; the header is checked against the Struct, the matches are encoded
a chunk of rows at a time, one match per line, each distinct name and track encoded once).
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import msgspec
import numpy as np

from vtui.analysis.slices.search import SearchResult
from vtui.present.schema import VERSIONS, Match, Search, builtins, typed
from vtui.safe_text import json_safe
from vtui.store.store import TraceStore

CHUNK = 1 << 15  # matches per piece


def search_json_parts(store: TraceStore, result: SearchResult, chunk: int = CHUNK) -> Iterator[str]:
    head = builtins(typed("search", {"pattern": result.pattern, "in_args": result.in_args, "count": result.count,
                                      "total_ns": result.total_ns, "matches": []}))
    del head["matches"]
    text = msgspec.json.encode(head).decode()
    yield json_safe(text[:-1] + ',"matches":[')  # the header object, opened for the matches
    names: dict[int, str] = {}
    tracks: dict[int, str] = {}
    s = store.slices
    rows = result.rows
    for at in range(0, len(rows), chunk):
        part = rows[at:at + chunk]
        name_ids, track_ids = s.name_id[part].tolist(), s.track[part].tolist()
        for i in set(name_ids) - names.keys():
            names[i] = _string(store.strings[i])
        for t in set(track_ids) - tracks.keys():
            tracks[t] = _string(store.tracks[t].label)
        starts = s.start_ns[part]
        durs = (s.end_ns[part] - starts).tolist()
        lines = [f'{{"name":{names[n]},"track":{tracks[t]},"start_ns":{a},"dur_ns":{d}}}'
                 for n, t, a, d in zip(name_ids, track_ids, starts.tolist(), durs)]
        yield ("\n" if at == 0 else ",\n") + json_safe(",\n".join(lines))
    yield "]}"


def search_report(store: TraceStore, result: SearchResult) -> Search:
    """The whole report as one Struct (every match held at once)."""
    s = store.slices
    rows = result.rows
    names = {int(i): store.strings[int(i)] for i in np.unique(s.name_id[rows])}
    tracks = {int(t): store.tracks[int(t)].label for t in np.unique(s.track[rows])}
    starts = s.start_ns[rows]
    matches = [Match(name=names[n], track=tracks[t], start_ns=a, dur_ns=d)
               for n, t, a, d in zip(s.name_id[rows].tolist(), s.track[rows].tolist(), starts.tolist(),
                                     (s.end_ns[rows] - starts).tolist())]
    return Search(schema_version=VERSIONS["search"], pattern=result.pattern, in_args=result.in_args,
                  count=result.count, total_ns=int(result.total_ns), matches=matches)


def _string(text: str) -> str:
    try:
        return msgspec.json.encode(text).decode()
    except UnicodeEncodeError:  # a lone surrogate (from a \\ud800 escape in the trace): as json writes it
        return json.dumps(text)  # ASCII: the surrogate as an escape, not a byte stdout cannot write
