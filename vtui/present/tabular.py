"""Tables as text, CSV, JSON or Markdown — one table, printed by the CLI and exported by the app."""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from vtui.safe_text import csv_cell, json_text, safe_field

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
            return json_text([dict(zip(self.columns, r)) for r in self.rows])
        if fmt == "csv":
            buf = io.StringIO()
            writer = csv.writer(buf, lineterminator="\n")
            writer.writerow(self.columns)
            writer.writerows([csv_cell(c) for c in row] for row in self.rows)
            return buf.getvalue().rstrip("\n")
        display = [[safe_field(c) for c in row] for row in self.display]  # one line each, clipped
        headers = [safe_field(h) for h in self.headers]
        if fmt == "md":
            head = "| " + " | ".join(headers) + " |"
            rule = "|" + "|".join("---:" if n else "---" for n in self.numeric_flags()) + "|"
            body = ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in display]
            return "\n".join([head, rule, *body])
        widths = [max([len(h), *(len(r[i]) for r in display)]) for i, h in enumerate(headers)]
        numeric = self.numeric_flags()

        def line(cells: list[str]) -> str:
            return "  ".join(c.rjust(w) if n else c.ljust(w) for c, w, n in zip(cells, widths, numeric)).rstrip()

        return "\n".join([line(headers), line(["-" * w for w in widths]), *(line(r) for r in display)])

    def numeric_flags(self) -> list[bool]:
        return list(self.numeric) if self.numeric else [False] * len(self.columns)
