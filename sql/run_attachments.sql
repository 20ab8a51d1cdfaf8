-- title: Run attachments
-- description: The files a run's cases carried, per files name and media type: distinct files (by SHA-256), their total size, and the case rows that used them. The bytes are in the artifact store beside the warehouse (artifacts/ab/cdef...).
-- params: run_id
WITH used AS (
    SELECT
        f.key                                  AS name,
        f.value ->> 'sha256'                   AS sha256,
        f.value ->> 'media_type'               AS media_type,
        (f.value ->> 'bytes')::BIGINT          AS bytes
    -- the run's rows first: a filter beside the lateral json_each is not pushed into the scan
    FROM (
        SELECT attachments FROM cases
        WHERE run_key = run_key($run_id) AND run_id = $run_id AND attachments IS NOT NULL
    ) c, json_each(c.attachments) f
),
files AS (
    SELECT name, media_type, sha256, any_value(bytes) AS bytes, count(*) AS case_rows
    FROM used
    GROUP BY name, media_type, sha256
)
SELECT
    name,
    media_type,
    count(*)                                   AS files,
    sum(bytes)::BIGINT                         AS bytes,
    sum(case_rows)::BIGINT                     AS case_rows
FROM files
GROUP BY name, media_type
ORDER BY name, media_type;
