-- title: Resolve a run by git commit
-- description: The newest run whose recorded git_commit is the nearest of $commits (a list: a ref's commit first, then its ancestors, as `git rev-list` prints them): 'git:REF'.
-- params: commits
SELECT run_id, git_commit, list_position($commits::VARCHAR[], git_commit) AS distance, started_at
FROM runs
WHERE list_contains($commits::VARCHAR[], git_commit)
ORDER BY distance, started_at DESC, run_id DESC
LIMIT 1;
