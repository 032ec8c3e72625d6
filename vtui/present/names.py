"""Names cut to the width there is, so that different names never print the same.

A cut from the right keeps the part that names share (``void at::native::vectorized_element…``)
and drops the part that tells them apart (the functor, the template arguments at the end). Here
the middle goes: the head and the distinguishing tail stay. Names that still print alike are cut
again around where they first differ."""

from __future__ import annotations

import os

ELLIPSIS = "…"


def cut_middle(text: str, width: int) -> str:
    """``text`` in at most ``width`` cells: the head, ``…``, and the tail (which gets the larger part)."""
    if len(text) <= width:
        return text
    if width <= 1:
        return ELLIPSIS[:width]
    keep = width - 1
    head = keep * 2 // 5  # the tail tells apart templated names (the functor, the argument types)
    return text[:head] + ELLIPSIS + text[len(text) - (keep - head):]


def _three_piece(text: str, at: int, width: int) -> str:
    """The head, a window from just before ``at`` (where the name differs from those it collided
    with), and the tail: ``void at::na…l::MulFunct…, float*)``."""
    if len(text) <= width:
        return text
    window = max(4, width // 3)
    tail = (width - 2 - window) // 2
    head = width - 2 - window - tail
    start = max(head, min(at - 2, len(text) - tail - window))
    if head < 1 or tail < 1 or start + window >= len(text) - tail:
        return cut_middle(text, width)
    return text[:head] + ELLIPSIS + text[start:start + window] + ELLIPSIS + text[len(text) - tail:]


def _collisions(names: list[str], out: list[str]) -> list[list[int]]:
    groups: dict[str, list[int]] = {}
    for i, cut in enumerate(out):
        groups.setdefault(cut, []).append(i)
    return [m for m in groups.values() if len({names[i] for i in m}) > 1]


def distinct_cuts(names: list[str], width: int) -> list[str]:
    """Each name cut to ``width`` (see ``cut_middle``), no two different names alike.

    Where middle cuts collide, those are cut again to show where they differ from each other;
    what still collides (a width of a few cells) gets a ``#n`` suffix, so rows stay told apart."""
    out = [cut_middle(n, width) for n in names]
    for _ in range(3):
        groups = _collisions(names, out)
        if not groups:
            return out
        for members in groups:
            common = len(os.path.commonprefix(sorted({names[i] for i in members})))
            for i in members:
                out[i] = _three_piece(names[i], common, width)
    seen: dict[str, str] = {}
    for i, cut in enumerate(out):
        if seen.setdefault(cut, names[i]) != names[i]:  # still alike: number it
            n = 2
            while (numbered := f"{cut[: max(width - 1 - len(str(n)), 0)]}#{n}") in seen:
                n += 1
            out[i] = numbered
            seen[numbered] = names[i]
    return out
