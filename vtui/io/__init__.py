"""Readers of trace files (Chrome/Kineto JSON, Perfetto protobuf, Nsight Systems SQLite) into event columns."""
