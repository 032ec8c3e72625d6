"""The trace store: slices, tracks, flows and counters as numpy columns, built once from the readers' columns and cached."""
