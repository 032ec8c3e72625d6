"""vtui: a terminal explorer for Chrome-trace / PyTorch-profiler traces."""

__version__ = "0.1.0"
