"""Run against run: steps aligned by kind, kernels aligned inside matched steps, several runs per
side, a parity check, and thresholds for CI (``engine.diff_runs`` is the one entry point)."""
