"""The CLI's tools (``vtui mcp``'s) on an attached app's trace: the same functions, run in the app
with its loaded store, and offered by ``vtui mcp --attach`` without their ``trace`` argument (the
trace is the app's)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from vtui.mcp import DEFAULT_MAX_CHARS, ToolSpec, tool_specs


def attached_specs(loader: Callable[..., Any], max_chars: int = DEFAULT_MAX_CHARS) -> list[ToolSpec]:
    """The tools that read one trace (not ``diff``, which reads two)."""
    return [s for s in tool_specs(loader, max_chars) if "trace" in inspect.signature(s.fn).parameters]


def without_trace(fn: Callable[..., Any]) -> inspect.Signature:
    """``fn``'s signature less its ``trace`` parameter: the input schema of the forwarding tool."""
    sig = inspect.signature(fn)
    return sig.replace(parameters=[p for name, p in sig.parameters.items() if name != "trace"])
