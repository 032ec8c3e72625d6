"""The C helper's loop over a Perfetto trace's packets (``_vtui_pftrace``, from vtui/io/_pftrace.c).

The stream is read in blocks; the helper reads each block's whole ``packet`` records itself where
it can (TrackEvent slices, instants, flows, plain debug annotations, interned data) and hands
every other packet to the reader's reference method (the protobuf runtime), on the same state, so
the events are the reference reader's (tests/core/test_pftrace_fast.py). Where the records stop
being records (damage, a file cut short) the Python stream reader takes the rest, so its messages
are the same too. Without a compiler at install the helper is absent and the reader is all Python.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import msgspec

from vtui.io.events import EMPTY_RAW, Event
from vtui.io.pftrace_state import Sequence
from vtui.io.protowire import iter_packets

if TYPE_CHECKING:
    from vtui.io.pftrace import PacketReader
    from vtui.io.pftrace_stream import TraceStream

try:
    import _vtui_pftrace as _helper
except ImportError:  # pragma: no cover - depends on the install
    _helper = None
else:
    _helper.configure(Event, msgspec.Raw, EMPTY_RAW, msgspec.json.encode, msgspec.json.decode, Sequence)

_BLOCK = 2 << 20  # bytes read at a time: the events of one block are handed out before the next is read


def fast_available() -> bool:
    return _helper is not None


def flow_edges() -> Callable[[list], list] | None:
    """The helper's join of sorted flow steps (``FlowSteps.resolve``), or None without it."""
    return _helper.flow_edges if _helper is not None else None


def fast_packets(reader: PacketReader, stream: TraceStream, progress: Callable[[float], None] | None) -> Iterator[None]:
    """Reads the stream into ``reader`` (its ``_out``, rows, packets); yields after each block so the
    caller hands the block's events out."""
    assert _helper is not None
    run = _helper.run
    buf = b""
    pos = 0
    done = 0  # bytes of the stream before ``buf``
    eof = False
    need = 0
    while not eof:
        block = stream.read(max(_BLOCK, need - (len(buf) - pos)))
        eof = not block
        done += pos
        buf, pos = buf[pos:] + block, 0
        state = (reader.seqs, reader.tracks, reader.tracks._keys, reader._stacks, reader._out,
                 reader._flows._steps, reader._slow_packet, reader.rows)
        pos, need, reader.rows, packets = run(state, buf, pos)
        reader.packets += packets
        yield None
        if progress:
            progress(stream.fraction())
        if need < 0:
            break
    if pos < len(buf):  # a record cut short, or damage: the stream reader says which, as it would alone
        for raw in iter_packets(_Rest(buf[pos:], stream.read).read, reader.warnings.append, offset=done + pos):
            reader.packets += 1
            reader._slow_packet(raw, reader.rows)
            yield None


class _Rest:
    """``read(n)`` over the bytes left in a block, then the stream."""

    def __init__(self, head: bytes, read: Callable[[int], bytes]) -> None:
        self.head: Any = head
        self._read = read

    def read(self, n: int) -> bytes:
        if self.head:
            head, self.head = self.head, b""
            return head
        return self._read(n)
