-- title: Cache info
-- description: The response cache per provider and model: entries, stored text size, oldest and newest entry.
-- params:
SELECT
    provider,
    model,
    count(*)                          AS entries,
    sum(strlen(output))::BIGINT       AS text_bytes,
    min(created_at)                   AS oldest,
    max(created_at)                   AS newest
FROM response_cache
GROUP BY provider, model
ORDER BY provider, model;
