"""Pair begin/end events into slices: B/E per thread, b/e and S/F per async id.

Both are stacks. An end with a name closes the innermost open begin of that name
(Perfetto's rule), closing what was opened inside it too; an end without a name closes
the top. An E whose name nobody opened closes the top too (Catapult's B/E rule), but an
async ``e`` whose name matches no open ``b`` of its id is stray and ends nothing
(``strict_names``; Catapult and Perfetto both match async ends by id *and* name). An end
with nothing open is a warning. A begin never ended runs to the end of the whole trace
(the latest end of any event, in every file) and is a warning: not Catapult's rule, which
ends an unclosed B at its own thread's last event, so that the same slice has the same
end whichever thread or file it sits in. Events at the same time keep their file order.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from vtui.store.sorting import order_by


@dataclass
class Paired:
    begin_rows: list[int] = field(default_factory=list)  # event row of each begin
    end_ns: list[int] = field(default_factory=list)
    end_rows: list[int] = field(default_factory=list)  # event row of the end, -1 if unclosed
    root_rows: list[int] = field(default_factory=list)  # outermost open begin (async track name)
    unmatched_ends: int = 0
    unclosed_begins: int = 0
    instant_roots: dict[int, int] = field(default_factory=dict)  # async instant row -> root row


def pair(
    rows: np.ndarray,
    groups: np.ndarray,
    ts: np.ndarray,
    is_begin: np.ndarray,
    is_end: np.ndarray,
    names: np.ndarray,
    named: np.ndarray,
    trace_end: int,
    strict_names: bool = False,
) -> Paired:
    """Pair events (given as parallel arrays, any order) within each group key.

    Events that are neither begin nor end (async instants, steps) are attached to the
    outermost open begin of their group, if any. With ``strict_names`` a named end that
    matches no open begin is counted as unmatched instead of closing the top.
    """
    out = Paired()
    if not len(rows):
        return out
    order = order_by(groups, ts, (rows,))
    g_l = groups[order].tolist()
    r_l = rows[order].tolist()
    t_l = ts[order].tolist()
    b_l = is_begin[order].tolist()
    e_l = is_end[order].tolist()
    n_l = names[order].tolist()
    named_l = named[order].tolist()
    stack: list[tuple[int, int]] = []  # (index into out, name)
    current = None
    for g, r, t, b, e, nm, has_name in zip(g_l, r_l, t_l, b_l, e_l, n_l, named_l):
        if g != current:
            _close_all(out, stack, trace_end)
            current = g
        if b:
            out.root_rows.append(out.begin_rows[stack[0][0]] if stack else r)
            stack.append((len(out.begin_rows), nm))
            out.begin_rows.append(r)
            out.end_ns.append(-1)
            out.end_rows.append(-1)
        elif e:
            if not stack:
                out.unmatched_ends += 1
                continue
            k = len(stack) - 1
            if has_name:
                k = -1 if strict_names else k
                for j in range(len(stack) - 1, -1, -1):
                    if stack[j][1] == nm:
                        k = j
                        break
                if k < 0:
                    out.unmatched_ends += 1
                    continue
            while len(stack) > k:
                idx, _ = stack.pop()
                out.end_ns[idx] = t
                out.end_rows[idx] = r if len(stack) == k else -1
        elif stack:
            out.instant_roots[r] = out.begin_rows[stack[0][0]]
    _close_all(out, stack, trace_end)
    return out


def _close_all(out: Paired, stack: list[tuple[int, int]], trace_end: int) -> None:
    while stack:
        idx, _ = stack.pop()
        out.unclosed_begins += 1
        out.end_ns[idx] = max(trace_end, out.end_ns[idx])
