"""A query's result as the CLI prints it: a text table, CSV, JSON or Markdown (vtui's one table
renderer, so trace text is escaped and clipped as everywhere else)."""

from __future__ import annotations

import re

from vtui.present.tabular import Table
from vtui.query.engine import QueryResult

NUMERIC = ("INT", "BIGINT", "HUGEINT", "DOUBLE", "FLOAT", "DECIMAL", "SMALLINT", "TINYINT", "UBIGINT", "UINTEGER",
           "INTEGER", "REAL", "USMALLINT", "UTINYINT", "UHUGEINT")


_ID = re.compile(r"(^|_)(id|utid|upid|pid|tid|rank|depth|step)$", re.IGNORECASE)  # printed without separators


def _cell(value, grouped: bool) -> str:
    if value is None:
        return "NULL"
    if grouped and isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return str(value)


def result_table(result: QueryResult) -> Table:
    numeric = [t.split("(")[0] in NUMERIC for t in result.types]
    grouped = [_ID.search(c) is None for c in result.columns]
    display = [[_cell(v, g) for v, g in zip(row, grouped)] for row in result.rows]
    return Table(columns=list(result.columns), rows=[list(r) for r in result.rows], display=display,
                 headers=list(result.columns), numeric=numeric)
