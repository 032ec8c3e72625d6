"""Primitives every analysis shares: summary statistics, ranges and selections, which device work a
CPU slice launched, recorded shapes, and args gathered as JSON."""
