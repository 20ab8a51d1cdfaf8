"""The DuckDB warehouse: connect + migrate, batched writes, named queries, exports."""
