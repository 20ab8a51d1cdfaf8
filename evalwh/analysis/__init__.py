"""Analysis over the warehouse: compare, baselines, the gate, slices, repeats, exports.

Every number is computed by a named query in ``sql/`` (compare.sql, slice.sql, repeats.sql,
gate_regression.sql ...); these modules pick the queries' parameters, resolve run references
and shape the Arrow results. Nothing here imports the CLI, and heavy libraries load lazily.
"""
