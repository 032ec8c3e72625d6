"""Writers: a range of the trace back to trace JSON, and the store as Parquet (both via vtui.atomic)."""
