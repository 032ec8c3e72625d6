"""What the io layer produced for one source file: the input of the merge and the build."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from vtui.io.columns import Columns


@dataclass
class SourcePart:
    """What the io layer produced for one file."""

    path: str
    label: str
    form: str
    repaired: bool
    metadata: dict[str, Any]
    warnings: list[str]
    columns: Columns | None  # None once merged into the store
    fingerprint: list[Any] = field(default_factory=list)  # see SourceInfo.fingerprint

    def cols(self) -> Columns:
        """The columns, before the merge takes them (after it, an error: a bug, not input)."""
        if self.columns is None:
            raise RuntimeError(f"{self.path}: the columns were already merged into the store")
        return self.columns
