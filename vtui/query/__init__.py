"""SQL over a store: Perfetto's tables (``slice``, ``thread_track``, ``thread``, ``process``,
``track``, ``counter``, ``counter_track``, ``flow``, ``args``) and vtui's (``instant``, ``kernel``,
``launch``, ``step``, ``finding``) as Arrow views for DuckDB (``vtui[sql]``); see the README."""
