#!/usr/bin/env sh
# Score answers.jsonl offline with four evaluators and gate on METEOR's pass rate.
# NLTK data (BLEU/METEOR): `python -m tracesim nlp-data`, or point NLTK_DATA at a copy.
set -e
cd "$(dirname "$0")"
python -m tracesim eval answers.jsonl \
    -e levenshtein:threshold=0.8 \
    -e rouge:rouge_type=rougeL \
    -e meteor \
    -e f1 \
    --fail-under meteor=0.5 \
    -o answers.scores.jsonl
