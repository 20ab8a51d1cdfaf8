-- title: Resolve a suite's newest run
-- description: The newest run of one suite for `evalwh last SUITE`: among the runs started from the config file $path (as stored, resolved), else among the runs whose suite is named $suite (a run stored from another checkout or machine); newest first, a time tie broken by the greater run id. No row when neither matches.
-- params: path, suite
SELECT run_id, suite, config_path, started_at,
       coalesce(config_path = $path, false) AS same_file
FROM runs
WHERE config_path = $path OR suite = $suite
ORDER BY same_file DESC, started_at DESC, run_id DESC
LIMIT 1;
