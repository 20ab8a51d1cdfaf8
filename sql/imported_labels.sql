-- title: Labels stored after a run
-- description: The labels stored with a run by `evalwh labels import` or the viewer (labelled_by set; a config's own labels are not): those of run $run_id when given, else of the newest run of suite $suite that has any (the runs of `evalwh calibrate` itself, labelled 'calibrate:...', left out); `evalwh calibrate` adds them to the config's labels.
-- params: suite, run_id
WITH chosen AS (
    SELECT coalesce($run_id, (
        SELECT r.run_id FROM runs r
        WHERE r.suite = $suite AND coalesce(r.label, '') NOT LIKE 'calibrate:%'
            AND EXISTS (
                SELECT 1 FROM labels l WHERE l.run_id = r.run_id AND l.labelled_by IS NOT NULL
            )
        ORDER BY r.run_id DESC
        LIMIT 1
    )) AS run_id
)
SELECT l.run_id, l.kind, l.comparison, l.case_id, l.prefer, l.label, l.note,
       l.variant, l.model, l.repeat, l.labelled_by
FROM labels l
JOIN chosen USING (run_id)
WHERE l.labelled_by IS NOT NULL
ORDER BY l.kind, l.comparison, l.case_id, l.variant, l.model, l.repeat;
