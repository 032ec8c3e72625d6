"""Trace health: what in a trace cannot be trusted (clocks that disagree, durations that overlap,
pieces that are missing, what the profiler did not record), each with the figures it puts in
doubt, said before any figure is read."""
