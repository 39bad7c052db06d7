"""Score the same file from Python, with evaluators built in code and from config.

Run: python examples/offline_eval/score.py  (NLTK data for METEOR: python -m tracesim nlp-data)
"""

from __future__ import annotations

import json
from pathlib import Path

from tracesim.evaluators import Levenshtein, evaluator, from_config


@evaluator(threshold=1.0)
def mentions_expected(output: str, expected: str) -> bool:
    """Passes when the output contains the expected answer's last word."""
    return expected.split()[-1].strip(".").lower() in output.lower()


def main() -> None:
    evaluators = [
        Levenshtein(threshold=0.8),
        from_config({"type": "rouge", "rouge_type": "rouge1"}),
        from_config({"type": "meteor"}),
        mentions_expected,
    ]
    for line in (Path(__file__).parent / "answers.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        results = [ev.evaluate(row["output"], row["expected"], input=row["input"]) for ev in evaluators]
        cells = [
            f"{r.name}={'-' if r.score is None else round(r.score, 3)}({r.label or r.status})"
            for r in results
        ]
        print(f"{row['id']:>4}  " + "  ".join(cells))


if __name__ == "__main__":
    main()
