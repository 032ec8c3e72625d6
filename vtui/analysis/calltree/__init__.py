"""Call trees: top-down and inverted trees of a range, the differential tree of two, Python overhead
and the Python -> C hand-over."""
