#!/usr/bin/env sh
# The same experiment from the command line, as a CI job runs it:
# the first run saves a baseline; later runs exit 1 when a case or a score got worse.
set -e
cd "$(dirname "$0")"
[ -f baseline.json ] || tracesim experiment run agent:answer --dataset cases.jsonl --input question \
    -e levenshtein:threshold=0.8 -e rouge:threshold=0.5 --out baseline.json
tracesim experiment run agent:answer --dataset cases.jsonl --input question \
    -e levenshtein:threshold=0.8 -e rouge:threshold=0.5 \
    --out run.json --html report.html --baseline baseline.json --tolerance 0.02
