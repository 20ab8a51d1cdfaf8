-- title: Errors of a run
-- description: Failed requests grouped by their error message: how many cases, and a few examples (case, variant x model), most frequent first.
-- params: run_id
SELECT
    error,
    any_value(error_kind)                                          AS error_kind,
    count(*)                                                       AS n,
    list(case_id || ' ' || variant || ' × ' || model ORDER BY case_id, variant, model)[1:5] AS examples
FROM cases
WHERE run_key = run_key($run_id) AND run_id = $run_id AND error IS NOT NULL
GROUP BY error
ORDER BY n DESC, error;
