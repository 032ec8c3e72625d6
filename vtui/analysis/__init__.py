"""Analyses over a store, by room: ``base`` (primitives every room shares), ``slices`` (what the
timeline shows), ``gpu`` (device activity, memory, graphs, roofline), ``steps`` (steps and serving
figures), ``calltree``, ``why`` (critical path, findings), ``ranks`` and ``report`` (the façades:
Insights and the comparison of two traces). Nothing here knows Textual, JSON or argparse; the JSON
forms live in `vtui.present`."""
