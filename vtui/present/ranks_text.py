"""The ranks report as tables (text, CSV, Markdown): ranks, steps, collectives, exposed time."""

from __future__ import annotations

from vtui.analysis.ranks.analyse import RanksReport
from vtui.present.tabular import Table
from vtui.units import format_duration


def _ns(v: int | None) -> str:
    return "–" if v is None else format_duration(v)


def _bw(v: float | None) -> str:
    return "–" if v is None else f"{v:.2f}"


def ranks_tables(r: RanksReport) -> list[tuple[str, Table]]:
    """(title, table) for each part of the report."""
    ids = [x.rank for x in r.ranks]
    straggler = r.straggler.rank if r.straggler else None
    ranks = Table(
        ["rank", "file", "steps", "collectives", "offset_ns", "comm_ns", "exposed_ns", "exposed_pct"],
        [[x.rank, x.file, x.steps, x.collectives, x.offset_ns, e.comm_ns, e.exposed_ns, e.exposed_pct]
         for x, e in zip(r.ranks, r.exposed)],
        [[f"{x.rank}{' ◀ straggler' if x.rank == straggler else ''}", x.file, str(x.steps), str(x.collectives),
          _ns(x.offset_ns), _ns(e.comm_ns), _ns(e.exposed_ns), f"{e.exposed_pct:.1f} %"]
         for x, e in zip(r.ranks, r.exposed)],
        ["rank", "file", "steps", "collectives", "clock shift", "comm", "exposed", "exposed %"],
        [True, False, True, True, True, True, True, True])
    steps = Table(
        ["index", "name", *(f"rank{i}_ns" for i in ids), "skew_ns", "start_skew_ns", "slowest_rank", "last_rank"],
        [[s.index, s.name, *s.durations_ns, s.skew_ns, s.start_skew_ns, s.slowest_rank, s.last_rank] for s in r.steps],
        [[str(s.index), s.name, *(_ns(d) for d in s.durations_ns), _ns(s.skew_ns), _ns(s.start_skew_ns),
          _slowest(s), "–" if s.last_rank is None else str(s.last_rank)] for s in r.steps],
        ["#", "step", *(f"rank {i}" for i in ids), "skew", "start skew", "slowest", "last in"],
        [True, False, *([True] * len(ids)), True, True, True, True])
    colls = Table(
        ["name", "group", "seq", "ranks", "bytes", "latency_ns", "skew_ns", "last_rank", "algbw_gbps", "busbw_gbps",
         *(f"wait_rank{i}_ns" for i in ids)],
        [[c.name, c.group, c.seq, c.ranks, c.bytes, c.latency_ns, c.skew_ns, c.last_rank, c.algbw_gbps,
          c.busbw_gbps, *c.waits_ns] for c in r.collectives],
        [[c.name, c.group or "?", str(c.seq), str(c.ranks), "–" if c.bytes is None else f"{c.bytes:,}",
          _ns(c.latency_ns), _ns(c.skew_ns), str(c.last_rank), _bw(c.algbw_gbps), _bw(c.busbw_gbps),
          *(_ns(w) for w in c.waits_ns)] for c in r.collectives],
        ["collective", "group", "seq", "ranks", "bytes", "latency", "skew", "last", "algbw GB/s", "busbw GB/s",
         *(f"wait r{i}" for i in ids)],
        [False, False, True, True, True, True, True, True, True, True, *([True] * len(ids))])
    return [("Ranks", ranks), ("Steps", steps), ("Collectives", colls)]


def _slowest(step) -> str:
    """The slowest rank of a step; "tie" when every rank took the same time (no rank is slowest)."""
    durs = [d for d in step.durations_ns if d is not None]
    return "tie" if len(durs) > 1 and len(set(durs)) == 1 else str(step.slowest_rank)


def ranks_text(r: RanksReport, fmt: str = "table") -> str:
    parts = []
    for title, table in ranks_tables(r):
        body = table.render(fmt)
        parts.append(f"# {title.lower()}\n{body}" if fmt == "csv" else f"{title}\n{body}" if fmt == "table"
                     else f"### {title}\n\n{body}")
    if fmt == "csv":
        return "\n\n".join(parts)
    s = r.straggler
    lines = [f"clocks: {r.alignment.method} — {r.alignment.note}; steps aligned by {r.steps_aligned_by}"]
    if s is not None:
        lines.append(f"straggler: rank {s.rank}, last at {s.collectives_last} collectives in {s.steps_last} steps; "
                     f"the others lose {format_duration(s.lost_ns)} waiting for it")
    if r.missing_ranks:
        shown = ", ".join(map(str, r.missing_ranks[:16])) + (" …" if len(r.missing_ranks) > 16 else "")
        lines.append(f"missing ranks ({len(r.missing_ranks)}): {shown}")
    note = next((c.busbw_note for c in r.collectives if c.busbw_note and c.algbw_gbps is not None), None)
    if note:
        lines.append(f"busbw: {note}")
    lines += [f"warning: {w}" for w in r.warnings]
    return "\n\n".join(parts) + "\n\n" + "\n".join(lines)
