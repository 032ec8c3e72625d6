"""Only the optional C helper; all metadata is in pyproject.toml."""

from setuptools import Extension, setup

# optional=True: where it cannot be compiled (no compiler, no headers), vtui installs without it
# and vtui.io.columns uses its pure-Python path. A top-level module, so that tests run from a checkout
# (whose vtui package is the source tree) still find the one pip built.
setup(ext_modules=[
    Extension("_vtui_fastcols", ["vtui/io/_fastcols.c"], optional=True),
    # Reads past the end of a mapped trace cut while loading give zeros, not SIGBUS (vtui.io.mapguard).
    Extension("_vtui_mapguard", ["vtui/io/_mapguard.c"], optional=True),
    # The common packets of a Perfetto trace (vtui.io.pftrace_fast); the protobuf runtime reads the rest.
    Extension("_vtui_pftrace", ["vtui/io/_pftrace.c"], optional=True),
])
