"""The async matrix runner: limits, retries, cache hits, scoring, streaming to the writer."""
