"""What redacting an experiment's report files costs: a 10,000-case run to JSON, HTML and text.

    .venv/bin/python benchmarks/bench_outputs.py [--cases 10000] [--repeat 3]

Builds a report of ``--cases`` rows (a question of about 200 characters, an answer of about
400, a reference, two evaluators with a label and an explanation; one row in a hundred with a
key, an e-mail or a URL password in its output or error) without running a task, then times,
in this process, each file written the way tracesim writes it (`ExperimentReport.to_json`,
`to_html`, `table`: the data redacted before it is rendered, the text redacted as written)
against the same file rendered from the unredacted report and written raw (what tracesim did
before issue 23). Prints the best of ``--repeat`` runs of each and the ratio; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from collections.abc import Callable
from dataclasses import fields
from pathlib import Path

from tracesim.evaluators import EvalResult
from tracesim.experiments import CaseResult, EvaluatorInfo, ExperimentReport
from tracesim.experiments._html_view import render_html
from tracesim.experiments._text_view import render_text

WORDS = ["the", "quick", "brown", "fox", "Paris", "is", "capital", "of", "France", "Warsaw", "café", "東京"]
SECRETS = [
    "sk-proj-Abc123Def456Ghi789Jkl012Mno345",
    "marie.curie@sorbonne.fr",
    "postgres://admin:hunter2pass@localhost/db",
]


def _text(rng: random.Random, chars: int) -> str:
    words: list[str] = []
    while sum(len(w) + 1 for w in words) < chars:
        words.append(rng.choice(WORDS))
    return " ".join(words)


def build(cases: int, seed: int = 7) -> ExperimentReport:
    """A report of ``cases`` rows, one in a hundred holding a secret."""
    rng = random.Random(seed)
    rows = []
    for i in range(cases):
        output = _text(rng, 400)
        error = None
        if i % 100 == 0:
            output += " " + SECRETS[(i // 100) % len(SECRETS)]
        if i % 300 == 150:
            error = f"PermissionError: denied for {SECRETS[0]}"
        score = rng.random()
        scores = {
            name: EvalResult(
                name=name,
                score=score,
                passed=score >= 0.5,
                threshold=0.5,
                label="pass" if score >= 0.5 else "fail",
                explanation=f"{name} compared the answer with the reference: {score:.3f}",
            )
            for name in ("rouge", "judge")
        }
        rows.append(
            CaseResult(
                f"case-{i}", 0, _text(rng, 200), _text(rng, 100), output, scores, 0.01, error=error,
                metadata={"topic": rng.choice(WORDS)},
            )
        )  # fmt: skip
    evaluators = (EvaluatorInfo("rouge", "rouge", 0.5), EvaluatorInfo("judge", "llm_judge", 0.5))
    return ExperimentReport("bench", "bench", tuple(rows), evaluators, run_id="r1", started_at="now")


def fresh(report: ExperimentReport) -> ExperimentReport:
    """The same report without its cached summaries: each timed run computes them, as a new run does."""
    return ExperimentReport(**{f.name: getattr(report, f.name) for f in fields(report)})


def best(run: Callable[[ExperimentReport], object], report: ExperimentReport, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        copy = fresh(report)
        started = time.perf_counter()
        run(copy)
        times.append(time.perf_counter() - started)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    report = build(args.cases)
    folder = Path(tempfile.mkdtemp(prefix="bench-outputs-"))
    raw_json, raw_html = folder / "raw.json", folder / "raw.html"

    def json_raw(run: ExperimentReport) -> None:  # before issue 23: the data as it is, written raw
        text = json.dumps(run.to_dict(), ensure_ascii=False, allow_nan=False, indent=1)
        raw_json.write_text(text + "\n", encoding="utf-8")

    def html_raw(run: ExperimentReport) -> None:
        raw_html.write_text(render_html(run), encoding="utf-8")

    pairs: dict[str, tuple[Callable[[ExperimentReport], object], Callable[[ExperimentReport], object]]] = {
        "to_json": (json_raw, lambda run: run.to_json(folder / "run.json")),
        "to_html": (html_raw, lambda run: run.to_html(folder / "run.html")),
        "table": (render_text, ExperimentReport.table),
    }
    print(f"{args.cases:,} cases, best of {args.repeat}; unredacted baseline measured in this run")
    print(f"{'file':8} {'raw s':>8} {'redacted s':>11} {'ratio':>6}")
    for name, (raw, redacted) in pairs.items():
        base, cost = best(raw, report, args.repeat), best(redacted, report, args.repeat)
        print(f"{name:8} {base:8.3f} {cost:11.3f} {cost / base:5.2f}x")
    clean = best(ExperimentReport.redacted, report, args.repeat)
    print(f"of which redacted() (every string of every row), once per html or table: {clean:.3f} s")
    leaks = [s for s in SECRETS if s in (folder / "run.json").read_text() + (folder / "run.html").read_text()]
    in_raw = sum(raw_json.read_text().count(s) for s in SECRETS)
    print(f"secrets in the redacted files: {len(leaks)}; in the raw JSON: {in_raw}")


if __name__ == "__main__":
    main()
