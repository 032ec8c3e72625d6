"""Tables as text, CSV, JSON or Markdown — one table, printed by the CLI and exported by the app."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

FORMATS = ("table", "csv", "json", "md")


@dataclass
class Table:
    columns: list[str]  # machine names (CSV/JSON keys)
    rows: list[list[Any]]  # raw values (ints in ns, floats, strings)
    display: list[list[str]]  # the same cells as people read them (text/Markdown)
    headers: list[str]  # column titles for people
    numeric: Sequence[bool] = ()  # right-align these in text

    def render(self, fmt: str) -> str:
        if fmt == "json":
            return json.dumps([dict(zip(self.columns, r)) for r in self.rows], indent=2, ensure_ascii=False)
        if fmt == "csv":
            buf = io.StringIO()
            writer = csv.writer(buf, lineterminator="\n")
            writer.writerow(self.columns)
            writer.writerows(self.rows)
            return buf.getvalue().rstrip("\n")
        if fmt == "md":
            head = "| " + " | ".join(self.headers) + " |"
            rule = "|" + "|".join("---:" if n else "---" for n in self._numeric()) + "|"
            body = ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in self.display]
            return "\n".join([head, rule, *body])
        widths = [max([len(h), *(len(r[i]) for r in self.display)]) for i, h in enumerate(self.headers)]
        numeric = self._numeric()

        def line(cells: list[str]) -> str:
            return "  ".join(c.rjust(w) if n else c.ljust(w) for c, w, n in zip(cells, widths, numeric)).rstrip()

        return "\n".join([line(self.headers), line(["-" * w for w in widths]), *(line(r) for r in self.display)])

    def _numeric(self) -> list[bool]:
        return list(self.numeric) if self.numeric else [False] * len(self.columns)
