"""Device peaks for the roofline: ``vtui/data/devices.toml`` (shipped with the package, a source for
every figure), matched against the trace's ``deviceProperties``."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from vtui.store.store import TraceStore

PRECISIONS = ("bf16", "fp16", "fp8", "tf32", "fp32")


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
    text = _table_text()
    out = []
    for d in tomllib.loads(text)["device"]:
        out.append(DevicePeaks(name=d["name"], tflops={p: float(d[p]) for p in PRECISIONS if p in d},
                               tbps=float(d["tbps"]), source=d["source"], match=d.get("match", ""),
                               sms=d.get("sms"), mem_gib=d.get("mem_gib"),
                               unconfirmed=tuple(d.get("unconfirmed", ()))))
    return tuple(out)


def match_device(props: dict[str, Any]) -> DevicePeaks | None:
    """The table's entry for one ``deviceProperties`` item: by name, else by SM count and memory."""
    name = props.get("name")
    name = name if isinstance(name, str) else ""
    table = device_table()
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


def trace_device(store: TraceStore) -> DeviceMatch:
    """The device of the trace (the first ``deviceProperties`` entry of the first source that has one)."""
    for src in store.sources:
        props = src.metadata.get("deviceProperties")
        if not isinstance(props, list) or not props:
            continue
        items = [p for p in props if isinstance(p, dict)]
        names = sorted({str(p.get("name") or "") for p in items})
        for p in items:
            found = match_device(p)
            if found:
                return DeviceMatch(str(p.get("name") or ""), found, names=names)
        label = ", ".join(repr(n) for n in names) or "''"
        return DeviceMatch(names[0] if names else "", None,
                           f"device {label} is not in vtui's peak table (vtui/data/devices.toml)", names)
    return DeviceMatch("", None, "the trace has no deviceProperties: the device and its peaks are unknown")
