-- title: What a case asked, in its newest run
-- description: The context of case $case_id in its newest run (at most the newest $limit runs are looked at): that run, the first answer's cell and repeat (by variant, model, repeat), the case's vars, expected answer, metadata and attachments (name -> sha256, media type, bytes; the bytes are in the artifact store), and the messages that answer was sent (the rendered prompt). No row when no run holds the case; NULL fields in a no-look run, which stores none of them.
-- params: case_id, limit
WITH runs_with AS (
    SELECT DISTINCT run_id FROM cases WHERE case_id = $case_id ORDER BY run_id DESC LIMIT $limit
)
SELECT run_id, variant, model, repeat, vars, expected, metadata, attachments, messages
FROM cases
WHERE case_id = $case_id AND run_id IN (SELECT run_id FROM runs_with)
ORDER BY run_id DESC, variant, model, repeat
LIMIT 1;
