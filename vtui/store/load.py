"""Open a trace file or a folder of per-rank files into a TraceStore (io → store)."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path

from vtui.errors import TraceLoadError
from vtui.io.columns import ColumnSink
from vtui.io.jsonscan import scan_trace
from vtui.io.reader import read_trace_bytes
from vtui.store.build import SourcePart, build_store
from vtui.store.store import TraceStore

Progress = Callable[[float], None]
TRACE_SUFFIXES = (".json", ".json.gz")
_READ_SHARE = 0.3  # of each file's progress; decoding takes the rest
_BUILD_SHARE = 0.1  # of the whole load, at the end


def trace_files(path: Path) -> list[Path]:
    """The files a path stands for: itself, or every *.json / *.json.gz in a folder."""
    if not path.exists():
        raise TraceLoadError(f"{path}: no such file or directory")
    if not path.is_dir():
        return [path]
    try:
        found = [p for p in path.iterdir() if p.name.endswith(TRACE_SUFFIXES) and p.is_file()]
    except PermissionError:
        raise TraceLoadError(f"{path}: permission denied") from None
    if not found:
        raise TraceLoadError(f"{path}: folder holds no *.json or *.json.gz trace files")
    return sorted(found, key=_natural_key)


def _natural_key(path: Path) -> list:
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", path.name)]


def load_trace(path: str | os.PathLike, progress: Progress | None = None) -> TraceStore:
    """Load a trace (file or folder). Raises TraceLoadError with a one-line message."""
    files = trace_files(Path(path))
    sizes = [max(f.stat().st_size, 1) for f in files]
    total = sum(sizes)
    done = 0
    parts: list[SourcePart] = []
    errors: list[str] = []
    for f, size in zip(files, sizes):
        base, share = done / total, size / total * (1 - _BUILD_SHARE)

        def report(frac: float, phase: float, base=base, share=share) -> None:
            if progress:
                progress(base + share * (phase + frac * (_READ_SHARE if phase == 0 else 1 - _READ_SHARE)))

        try:
            parts.append(_load_part(f, lambda x: report(x, 0.0), lambda x: report(x, _READ_SHARE), len(files) > 1))
        except TraceLoadError as exc:
            if len(files) == 1:
                raise
            errors.append(f"{f.name}: {exc}")
        done += size
    if not parts:
        raise TraceLoadError(f"{path}: no trace could be loaded ({'; '.join(errors)})")
    if not any(len(p.columns) for p in parts):
        raise TraceLoadError(f"{path}: the trace holds no events")
    store = build_store(parts)
    store.warnings[:0] = [f"skipped {e}" for e in errors]
    if progress:
        progress(1.0)
    return store


def _load_part(path: Path, read_progress: Progress, decode_progress: Progress, many: bool) -> SourcePart:
    data, read_warnings = read_trace_bytes(path, read_progress)
    sink = ColumnSink()
    try:
        result = scan_trace(data, sink, decode_progress)
    except TraceLoadError as exc:
        raise TraceLoadError(f"{path}: {exc}") from None
    del data
    label = _label(path, result.metadata) if many else ""
    return SourcePart(
        path=str(path), label=label, form=result.form, repaired=result.repaired or bool(read_warnings),
        metadata=result.metadata, warnings=read_warnings + result.warnings, columns=sink.finish(),
    )


def _label(path: Path, metadata: dict) -> str:
    info = metadata.get("distributedInfo")
    if isinstance(info, dict) and isinstance(info.get("rank"), int):
        return f"rank {info['rank']}"
    name = path.name
    for suffix in (".gz", ".json", ".trace", ".pt"):
        name = name.removesuffix(suffix)
    return name
