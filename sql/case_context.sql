-- title: Cases in context
-- description: What a run's cases asked, to show an answer beside its question: per variant and case, from its first answer (models by name, then repeats), the rendered messages (a file part names its file: name, sha256, media type and bytes), the case's vars, its expected value and its attachments (files name -> sha256, media type, bytes; the bytes are in the artifact store beside the warehouse). $case_ids limits the cases (NULL: every case).
-- params: run_id, case_ids
SELECT
    variant,
    case_id,
    first(messages ORDER BY model, repeat)     AS messages,
    first(vars ORDER BY model, repeat)         AS vars,
    first(expected ORDER BY model, repeat)     AS expected,
    first(attachments ORDER BY model, repeat)  AS attachments
FROM cases
WHERE run_key = run_key($run_id) AND run_id = $run_id
    AND ($case_ids IS NULL OR list_contains($case_ids::VARCHAR[], case_id))
GROUP BY variant, case_id
ORDER BY case_id, variant;
