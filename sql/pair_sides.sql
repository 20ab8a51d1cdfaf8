-- title: Pairwise sides
-- description: Every answered or failed cell of a run with what pairwise judging needs: output, error, exec check, rendered messages, metadata and the criteria it passed.
-- params: run_id
WITH passed AS (
    SELECT variant, model, case_id, repeat, list(criterion) FILTER (WHERE passed) AS criteria_passed
    FROM scores
    WHERE run_key = run_key($run_id) AND run_id = $run_id
    GROUP BY ALL
)
SELECT c.variant, c.model, c.case_id, c.repeat, c.output, c.error, c.check_passed,
       c.messages, c.metadata, coalesce(p.criteria_passed, []) AS criteria_passed
FROM cases c
LEFT JOIN passed p USING (variant, model, case_id, repeat)
WHERE c.run_key = run_key($run_id) AND c.run_id = $run_id;
