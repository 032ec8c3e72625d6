"""Analyses of slices as the timeline shows them: aggregation, search, measure, one slice's details,
CPU operators and sync points, cache-like events."""
