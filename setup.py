"""Only the optional C helper; all metadata is in pyproject.toml."""

from setuptools import Extension, setup

# optional=True: where it cannot be compiled (no compiler, no headers), vtui installs without it
# and vtui.io.columns uses its pure-Python path.
setup(ext_modules=[Extension("vtui.io._fastcols", ["vtui/io/_fastcols.c"], optional=True)])
