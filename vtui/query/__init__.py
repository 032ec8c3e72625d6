"""SQL over a store: Perfetto's tables (``slice``, ``thread_track``, ``thread``, ``process``,
``track``, ``counter``, ``counter_track``, ``flow``, ``args``) and vtui's (``instant``, ``kernel``,
``launch``, ``step``, Insights' ``finding``, ``op``, ``gpu_busy``) as Arrow views for DuckDB
(``vtui[sql]``), over a trace, a folder of ranks or a folder of vtui's Parquet export; see the README."""
