-- title: Cache holds
-- description: Whether the response cache holds any answer of the given provider models ($models: a list of [provider, model] pairs). A streamed case file's run asks it once at its start: with none stored, its batches are not looked up one query each (a first run would scan the cache it is itself filling, a thousand times for a million lines).
-- params: models
SELECT count(*) > 0 AS holds
FROM (
    SELECT 1 FROM response_cache
    WHERE list_contains($models, [provider, model])
    LIMIT 1
);
