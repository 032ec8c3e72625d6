"""Device peaks for the roofline: ``vtui/data/devices.toml`` (shipped with the package, a source for
every figure), matched against the trace's ``deviceProperties``.

Two columns per device: ``datasheet`` (the vendor's dense peaks, the default) and, where a
measured figure is published, ``achievable`` (``[device.achievable]``, with its own source: e.g.
TraceLens's measured max achievable FLOPs). A user's own TOML file in the same format can
replace the table (``--peaks FILE.toml``)."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from vtui.store.store import TraceStore

PRECISIONS = ("bf16", "fp16", "fp8", "tf32", "fp32")
DATASHEET, ACHIEVABLE = "datasheet", "achievable"


@dataclass(frozen=True)
class DevicePeaks:
    name: str
    tflops: dict[str, float]  # dense TFLOP/s per precision (absent: no peak for it)
    tbps: float  # memory bandwidth, TB/s
    source: str
    match: str = ""
    sms: int | None = None
    mem_gib: float | None = None
    unconfirmed: tuple[str, ...] = ()  # figures a check against the datasheets could not confirm
    kind: str = DATASHEET  # datasheet / achievable / file (a user's table)
    achievable: DevicePeaks | None = None  # the measured column, where one is published

    def ridge(self, precision: str | None) -> float | None:
        """The ridge point in FLOP per byte: above it a kernel is compute bound."""
        peak = self.tflops.get(precision) if precision else None
        return peak / self.tbps if peak and self.tbps > 0 else None

    @property
    def headline_tflops(self) -> float | None:
        """The figure shown as the device's peak: bf16, else fp16, else fp32."""
        for p in ("bf16", "fp16", "fp32"):
            if p in self.tflops:
                return self.tflops[p]
        return None


@dataclass(frozen=True)
class DeviceMatch:
    """What the trace says its device is, and the peaks found for it (None: unknown, ``why`` says)."""

    trace_name: str
    peaks: DevicePeaks | None
    why: str = ""
    names: list[str] = field(default_factory=list)
    note: str = ""  # which column the figures are from where that is not what was asked for


def _table_text() -> str:
    """devices.toml, read as a file beside the package where it is one (importlib.resources costs
    ~3 ms of imports, a tenth of the roofline on a 300 MB trace), else through importlib.resources."""
    path = Path(__file__).resolve().parent.parent / "data" / "devices.toml"
    try:
        return path.read_text(encoding="utf-8")
    except OSError:  # pragma: no cover - a zipped install
        from importlib import resources  # noqa: PLC0415 - only here: its imports are the cost

        return resources.files("vtui").joinpath("data/devices.toml").read_text(encoding="utf-8")


@lru_cache(maxsize=1)
def device_table() -> tuple[DevicePeaks, ...]:
    return _parse_table(tomllib.loads(_table_text()), DATASHEET)


def _parse_table(doc: dict[str, Any], kind: str) -> tuple[DevicePeaks, ...]:
    out = []
    for d in doc["device"]:
        ach = d.get("achievable")
        measured = None
        if isinstance(ach, dict):
            measured = DevicePeaks(name=d["name"], tflops={p: float(ach[p]) for p in PRECISIONS if p in ach},
                                   tbps=float(ach.get("tbps", d["tbps"])), source=str(ach["source"]),
                                   match=d.get("match", ""), sms=d.get("sms"), mem_gib=d.get("mem_gib"),
                                   kind=ACHIEVABLE)
        out.append(DevicePeaks(name=d["name"], tflops={p: float(d[p]) for p in PRECISIONS if p in d},
                               tbps=float(d["tbps"]), source=str(d["source"]), match=d.get("match", ""),
                               sms=d.get("sms"), mem_gib=d.get("mem_gib"),
                               unconfirmed=tuple(d.get("unconfirmed", ())), kind=kind, achievable=measured))
    return tuple(out)


@lru_cache(maxsize=8)
def peaks_file(path: str) -> tuple[DevicePeaks, ...]:
    """A user's peak table (``--peaks FILE.toml``: ``[[device]]`` entries as in devices.toml, each
    with ``name``, ``tbps``, ``source`` and TFLOP/s per precision; ``match`` optional: an entry
    without it fits any device). ValueError, one line, where the file is not such a table."""
    try:
        doc = tomllib.loads(Path(path).read_text(encoding="utf-8"))
        table = _parse_table(doc, "file")
    except OSError as e:
        raise ValueError(f"cannot read the peaks file {path}: {e.strerror or e}") from None
    except (tomllib.TOMLDecodeError, KeyError, TypeError, ValueError) as e:
        raise ValueError(f"{path} is not a peak table ([[device]] with name, tbps, source, bf16 …): {e}") from None
    if not table:
        raise ValueError(f"{path} has no [[device]] entry")
    for d in table:
        if d.tbps <= 0 or any(v <= 0 for v in d.tflops.values()):
            raise ValueError(f"{path}: device {d.name!r} has a peak that is not positive")
        if d.match:
            try:
                re.compile(d.match)
            except re.error as e:
                raise ValueError(f"{path}: device {d.name!r} has a bad match pattern: {e}") from None
    return table


def check_peaks_choice(choice: str) -> None:
    """ValueError (one line) where ``choice`` is neither a column name nor a readable peak table."""
    if choice not in (DATASHEET, ACHIEVABLE):
        peaks_file(choice)


def match_device(props: dict[str, Any], table: tuple[DevicePeaks, ...] | None = None) -> DevicePeaks | None:
    """The table's entry for one ``deviceProperties`` item: by name, else by SM count and memory."""
    name = props.get("name")
    name = name if isinstance(name, str) else ""
    table = device_table() if table is None else table
    if table and table[0].kind == "file" and not table[0].match:
        return table[0]
    if name.strip():
        for d in table:
            if d.match and re.search(d.match, name, re.IGNORECASE):
                return d
        return None
    sms, mem = props.get("numSms"), props.get("totalGlobalMem")
    if not isinstance(sms, int) or not isinstance(mem, (int, float)) or isinstance(sms, bool):
        return None
    gib = mem / 2**30
    for d in table:
        if d.sms == sms and d.mem_gib and abs(gib - d.mem_gib) <= 0.06 * d.mem_gib:
            return d
    return None


def trace_device(store: TraceStore, choice: str = DATASHEET) -> DeviceMatch:
    """The device of the trace (the first ``deviceProperties`` entry of the first source that has
    one) and its peaks from the column ``choice`` (datasheet / achievable) or a peak table file."""
    got = _trace_device(store, choice)
    p = got.peaks
    if p is None or choice != ACHIEVABLE:
        return got
    if p.achievable is None:
        return DeviceMatch(got.trace_name, p, got.why, got.names,
                           f"no achievable figures for the {p.name} in vtui's table: datasheet peaks used")
    return DeviceMatch(got.trace_name, p.achievable, got.why, got.names)


def _device_props(store: TraceStore) -> list[dict[str, Any]] | None:
    """The items of the first source's ``deviceProperties`` list (None where no source has one)."""
    for src in store.sources:
        props = src.metadata.get("deviceProperties")
        if isinstance(props, list) and props:
            return [p for p in props if isinstance(p, dict)]
    return None


def _names(items: list[dict[str, Any]]) -> list[str]:
    return sorted({str(p.get("name") or "") for p in items})


def device_names(store: TraceStore) -> list[str]:
    """``trace_device(store).names`` without reading the peak table: the trace's device names."""
    items = _device_props(store)
    return [] if items is None else _names(items)


def _trace_device(store: TraceStore, choice: str) -> DeviceMatch:
    table = peaks_file(choice) if choice not in (DATASHEET, ACHIEVABLE) else None
    where = f"the peaks file {choice}" if table is not None else "vtui's peak table (vtui/data/devices.toml)"
    items = _device_props(store)
    if items is None:
        return DeviceMatch("", None, "the trace has no deviceProperties: the device and its peaks are unknown")
    names = _names(items)
    for p in items:
        found = match_device(p, table)
        if found:
            return DeviceMatch(str(p.get("name") or ""), found, names=names)
    label = ", ".join(repr(n) for n in names) or "''"
    return DeviceMatch(names[0] if names else "", None, f"device {label} is not in {where}", names)
