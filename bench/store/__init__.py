"""The SQLite SessionStore benchmark, one module per figure; run it as ``python -m bench.store_bench``."""
