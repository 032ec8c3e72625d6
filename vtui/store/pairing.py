"""Pair begin/end events into slices: B/E per thread, b/e and S/F per async id.

Both are stacks. B/E follow Perfetto's SliceTracker: an ``E`` closes the innermost open ``B``
whose name matches (when both have one) and whose category matches (when the ``E`` has one);
an ``E`` that matches nothing open is stray: it ends nothing and is a warning. When the ``B`` it
closes is not the innermost open one, the ones opened inside it stay open; the next B/E on the
thread after the closed one's end closes them at that end (Perfetto's ``MaybeCloseStack``),
else they run to the trace end. (Catapult pops the top whatever its name; Perfetto's rule wins.)
Async ``b``/``e`` (``strict_names``): an end closes the innermost open begin of its id and name,
closing what was opened inside it too; one whose name matches no open ``b`` of its id is stray
(Catapult and Perfetto both match async ends by id *and* name); an end without a name closes
the top. An end with nothing open is a warning. A begin never ended runs to the end of the whole trace
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
    cats: np.ndarray | None = None,
    has_cat: np.ndarray | None = None,
) -> Paired:
    """Pair events (given as parallel arrays, any order) within each group key.

    Events that are neither begin nor end (async instants, steps) are attached to the
    outermost open begin of their group, if any. Without ``strict_names`` (B/E), Perfetto's
    slice-stack rule (module docstring), with ``cats``/``has_cat`` the ends' categories.
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
    c_l = cats[order].tolist() if cats is not None else [0] * len(r_l)
    hc_l = has_cat[order].tolist() if has_cat is not None else [False] * len(r_l)
    # (index into out, name, cat); ``done`` marks B/E entries closed while ones inside stay open.
    stack: list[tuple[int, int, int]] = []
    done: dict[int, int] = {}  # index -> its end (B/E: closed, still on the stack)
    current = None
    for g, r, t, b, e, nm, has_name, ct, has_ct in zip(g_l, r_l, t_l, b_l, e_l, n_l, named_l, c_l, hc_l):
        if g != current:
            _close_all(out, stack, done, trace_end)
            current = g
        if done and not strict_names and (b or e):
            _maybe_close(out, stack, done, t)
        if b:
            out.root_rows.append(out.begin_rows[stack[0][0]] if stack else r)
            stack.append((len(out.begin_rows), nm, ct))
            out.begin_rows.append(r)
            out.end_ns.append(-1)
            out.end_rows.append(-1)
        elif e:
            if not strict_names:
                k = _perfetto_match(stack, done, nm if has_name else None, ct if has_ct else None)
                if k < 0:
                    out.unmatched_ends += 1
                    continue
                idx = stack[k][0]
                out.end_ns[idx], out.end_rows[idx] = t, r
                if k == len(stack) - 1:
                    stack.pop()
                    while stack and stack[-1][0] in done:  # closed earlier, waiting for this one
                        done.pop(stack.pop()[0])
                else:
                    done[idx] = t
                continue
            if not stack:
                out.unmatched_ends += 1
                continue
            k = len(stack) - 1
            if has_name:
                k = -1
                for j in range(len(stack) - 1, -1, -1):
                    if stack[j][1] == nm:
                        k = j
                        break
                if k < 0:
                    out.unmatched_ends += 1
                    continue
            while len(stack) > k:
                idx = stack.pop()[0]
                out.end_ns[idx] = t
                out.end_rows[idx] = r if len(stack) == k else -1
        elif stack:
            out.instant_roots[r] = out.begin_rows[stack[0][0]]
    _close_all(out, stack, done, trace_end)
    return out


def _perfetto_match(stack: list[tuple[int, int, int]], done: dict[int, int], name: int | None, cat: int | None) -> int:
    """Perfetto's MatchingIncompleteSliceIndex: the innermost open entry whose name matches (an
    end without one matches any) and whose category matches (when the end has one); -1: none."""
    for j in range(len(stack) - 1, -1, -1):
        idx, nm, ct = stack[j]
        if idx in done or (cat is not None and ct != cat) or (name is not None and nm != name):
            continue
        return j
    return -1


def _maybe_close(out: Paired, stack: list[tuple[int, int, int]], done: dict[int, int], t: int) -> None:
    """Perfetto's MaybeCloseStack before an event at ``t``: a closed entry that still has open
    ones inside it, once ``t`` is past its end, ends them at its end and leaves the stack."""
    open_inside = False
    i = len(stack) - 1
    while i >= 0:
        idx = stack[i][0]
        end = done.get(idx)
        if end is None:
            open_inside = True
        elif open_inside and t > end:
            for j in range(len(stack) - 1, i, -1):
                child = stack[j][0]
                out.end_ns[child] = end  # end_rows stays -1: no E of its own
                done.pop(child, None)
            del stack[i:]
            done.pop(idx)
            open_inside = False
        i -= 1


def _close_all(out: Paired, stack: list[tuple[int, int, int]], done: dict[int, int], trace_end: int) -> None:
    while stack:
        idx = stack.pop()[0]
        if done.pop(idx, None) is not None:
            continue  # closed by its E; only the ones inside it were left open
        out.unclosed_begins += 1
        out.end_ns[idx] = max(trace_end, out.end_ns[idx])
