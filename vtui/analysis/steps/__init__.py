"""Steps: finding the repeating unit of work, what an engine's step annotation says, serving
figures (TTFT, TPOT, tokens/s) and trends over steps."""
