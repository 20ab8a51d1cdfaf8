#!/bin/sh
# The tutorial's CI step (docs/tutorial.md): store the run, write the report, then let the
# gate decide. Exit 0: every threshold passed; 1: one failed, or the pass rate dropped below
# the pinned baseline by more than allowed; 2: a bad config; 4: over the cost cap.
status=0
evalwh run eval.yaml --label "${GITHUB_SHA:-local}" --max-cost 1 --quiet || status=$?
if [ "$status" -gt 1 ]; then exit "$status"; fi    # nothing was stored to judge
evalwh export latest --format md --out evalwh-report.md
evalwh gate latest
