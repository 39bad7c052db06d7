"""Evaluator throughput, next to the bare library call each evaluator wraps, in one run.

    NLTK_DATA=../shared/nltk_data .venv/bin/python benchmarks/bench_evaluators.py [--rounds 3]

For each evaluator: pairs/s over a seeded mix of 194 short answers and 6 answers of
3-4.2k characters (benchmarks/_evaldata.py), and the ratio of its time to the baseline's
(process CPU time, median of interleaved rounds, with the min-max over rounds; lower is
better). Goals: Levenshtein <= 1.5x rapidfuzz's ``Levenshtein.distance``; BLEU, GLEU, METEOR
and ROUGE <= 1.5x the NLTK or rouge-score call plus the same tokenization. When
``azure-ai-evaluation`` is installed in a separate venv (``--azure-python``, default
``.venv-bench-azure/bin/python``), its evaluators run on the same pairs in a subprocess per
round, interleaved with tracesim's samples: scores must be identical and tracesim (the
compat facade and the core evaluator) should be at least 10x faster. Prints numbers only;
nothing here asserts timings.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import string
import subprocess
import sys
import tempfile
import time
import zipfile
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SHARED_NLTK_DATA = (REPO / "../shared/nltk_data").resolve()
if "NLTK_DATA" not in os.environ and SHARED_NLTK_DATA.is_dir():
    os.environ["NLTK_DATA"] = str(SHARED_NLTK_DATA)
sys.path.insert(0, str(REPO / "benchmarks"))

from _evaldata import fingerprint, make_pairs  # noqa: E402

Pair = tuple[str, str]
Fn = Callable[[str, str], Any]


@dataclass
class Case:
    name: str
    ours: Fn
    baseline_label: str = ""
    baseline: Fn | None = None
    goal: float | None = None  # max ours/baseline time ratio
    samples_ours: list[float] | None = None
    samples_base: list[float] | None = None


def time_pass(fn: Fn, pairs: list[Pair], min_s: float) -> float:
    """CPU seconds for one pass over ``pairs`` (repeated until ``min_s`` has elapsed)."""
    passes, start = 0, time.process_time()
    while True:
        for a, b in pairs:
            fn(a, b)
        passes += 1
        spent = time.process_time() - start
        if spent >= min_s:
            return spent / passes


# -- baselines -------------------------------------------------------------------------------


def nltk_tokens() -> Callable[[str], list[str]]:
    import nltk
    from nltk.tokenize.nist import NISTTokenizer

    nist = NISTTokenizer()
    return lambda text: (
        list(nltk.word_tokenize(text)) if text.isascii() else nist.international_tokenize(text)
    )


def squad_f1(prediction: str, truth: str) -> float:
    drop = set(string.punctuation)

    def tokens(text: str) -> list[str]:
        text = "".join(ch for ch in text.lower() if ch not in drop)
        return " ".join(re.sub(r"\b(a|an|the)\b", " ", text).split()).split()

    p, t = tokens(prediction), tokens(truth)
    common = sum((Counter(p) & Counter(t)).values())
    if not common:
        return 0.0
    precision, recall = common / len(p), common / len(t)
    return 2 * precision * recall / (precision + recall)


def npm_dice(a: str, b: str) -> float:
    a, b = "".join(a.lower().split()), "".join(b.lower().split())
    if a == b:
        return 1.0
    if len(a) < 2 or len(b) < 2:
        return 0.0
    counts: dict[str, int] = {}
    for i in range(len(a) - 1):
        counts[a[i : i + 2]] = counts.get(a[i : i + 2], 0) + 1
    hits = 0
    for i in range(len(b) - 1):
        if counts.get(b[i : i + 2], 0) > 0:
            counts[b[i : i + 2]] -= 1
            hits += 1
    return 2 * hits / (len(a) + len(b) - 2)


def build_cases() -> list[Case]:
    from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu
    from nltk.translate.gleu_score import sentence_gleu
    from nltk.translate.meteor_score import meteor_score
    from rapidfuzz.distance import Levenshtein as RF
    from rouge_score import rouge_scorer

    from tracesim.evaluators import from_config

    tok = nltk_tokens()
    smooth = SmoothingFunction().method4
    rouge_l, rouge_1 = rouge_scorer.RougeScorer(["rougeL"]), rouge_scorer.RougeScorer(["rouge1"])

    def ev(config: dict[str, Any]) -> Fn:
        return from_config(config).evaluate

    def jaccard(a: str, b: str) -> float:
        sa, sb = set(a.split()), set(b.split())
        return len(sa & sb) / len(sa | sb) if sa | sb else 1.0

    cases = [
        Case("exact", ev({"type": "exact"}), "a == b", lambda a, b: a == b),
        Case("levenshtein", ev({"type": "levenshtein"}), "rapidfuzz Levenshtein.distance", RF.distance, 1.5),
        Case(
            "levenshtein_distance",
            ev({"type": "levenshtein_distance"}),
            "rapidfuzz Levenshtein.distance",
            RF.distance,
            1.5,
        ),
        Case("jaccard", ev({"type": "jaccard"}), "plain Python word sets", jaccard),
        Case("content_similarity", ev({"type": "content_similarity"}), "plain Python npm port", npm_dice),
        Case("f1", ev({"type": "f1"}), "plain Python SQuAD F1 (Azure's code)", squad_f1),
        Case(
            "bleu",
            ev({"type": "bleu"}),
            "nltk tokenize + sentence_bleu",
            lambda a, b: sentence_bleu([tok(b)], tok(a), smoothing_function=smooth),
            1.5,
        ),
        Case(
            "gleu",
            ev({"type": "gleu"}),
            "nltk tokenize + sentence_gleu",
            lambda a, b: sentence_gleu([tok(b)], tok(a)),
            1.5,
        ),
        Case(
            "meteor",
            ev({"type": "meteor"}),
            "nltk tokenize + meteor_score",
            lambda a, b: meteor_score([tok(b)], tok(a)),
            1.5,
        ),
        Case(
            "rouge (rougeL)",
            ev({"type": "rouge"}),
            "rouge_score RougeScorer.score",
            lambda a, b: rouge_l.score(b, a),
            1.5,
        ),
        Case(
            "rouge (rouge1)",
            ev({"type": "rouge", "rouge_type": "rouge1"}),
            "rouge_score RougeScorer.score",
            lambda a, b: rouge_1.score(b, a),
            1.5,
        ),
    ]
    try:
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.metrics.pairwise import cosine_similarity

        def sklearn_cosine(a: str, b: str) -> float:
            try:
                m = TfidfVectorizer().fit_transform([a, b])
            except ValueError:
                return 0.0
            return float(cosine_similarity(m[0:1], m[1:2])[0][0])

        cases.insert(
            4, Case("cosine", ev({"type": "cosine"}), "scikit-learn TfidfVectorizer + cosine", sklearn_cosine)
        )
    except ImportError:
        cases.insert(4, Case("cosine", ev({"type": "cosine"})))
    return cases


def pretokenized_cases(pairs: list[Pair]) -> list[tuple[str, Fn, Fn]]:
    """The bare NLTK metric on tokens computed beforehand (tokenization cost excluded)."""
    from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu
    from nltk.translate.gleu_score import sentence_gleu
    from nltk.translate.meteor_score import meteor_score

    tok = nltk_tokens()
    cache = {text: tok(text) for pair in pairs for text in pair}
    smooth = SmoothingFunction().method4
    return [
        ("bleu", lambda a, b: sentence_bleu([cache[b]], cache[a], smoothing_function=smooth), tok),
        ("gleu", lambda a, b: sentence_gleu([cache[b]], cache[a]), tok),
        ("meteor", lambda a, b: meteor_score([cache[b]], cache[a]), tok),
    ]


# -- azure-ai-evaluation, in its own venv ---------------------------------------------------------

AZURE_SCRIPT = r"""
import json, logging, sys, time
logging.disable(logging.CRITICAL)
from azure.ai.evaluation import (BleuScoreEvaluator, F1ScoreEvaluator, GleuScoreEvaluator,
                                 MeteorScoreEvaluator, RougeScoreEvaluator, RougeType)
pairs = json.load(open(sys.argv[1], encoding="utf-8"))
rounds, names, min_s = int(sys.argv[2]), json.loads(sys.argv[3]), float(sys.argv[4])
evaluators = {
    "f1": (F1ScoreEvaluator, "f1_score"),
    "bleu": (BleuScoreEvaluator, "bleu_score"),
    "gleu": (GleuScoreEvaluator, "gleu_score"),
    "meteor": (MeteorScoreEvaluator, "meteor_score"),
    "rouge (rougeL)": (lambda: RougeScoreEvaluator(RougeType.ROUGE_L), "rouge_f1_score"),
}
evaluators = {name: (make(), key) for name, (make, key) in evaluators.items() if name in names}
def score(out, key):
    return out[key] if key in out else out.get("rouge_properties", {}).get(key)
def time_pass(ev):  # as the parent's time_pass: CPU seconds per pass, repeated up to min_s
    passes, start = 0, time.process_time()
    while True:
        for a, b in pairs:
            ev(response=a, ground_truth=b)
        passes += 1
        spent = time.process_time() - start
        if spent >= min_s:
            return spent / passes
results = {}
for name, (ev, key) in evaluators.items():  # warm-up pass; its scores are compared
    results[name] = {"times": [], "scores": [score(ev(response=a, ground_truth=b), key) for a, b in pairs]}
for _ in range(rounds):
    for name, (ev, key) in evaluators.items():
        results[name]["times"].append(time_pass(ev))
import azure.ai.evaluation as pkg
print("RESULT " + json.dumps({"version": getattr(pkg, "__version__", "?"), "results": results}))
"""


def run_azure(
    python: Path, pairs: list[Pair], rounds: int, names: list[str], min_s: float
) -> dict[str, Any] | None:
    with tempfile.TemporaryDirectory() as tmp:
        # azure checks for the legacy "punkt" package on every call and tries to download it
        # when absent; an empty placeholder keeps it off the network (its per-call floor).
        placeholder = Path(tmp) / "nltk_placeholder" / "tokenizers"
        placeholder.mkdir(parents=True)
        with zipfile.ZipFile(placeholder / "punkt.zip", "w") as archive:
            archive.writestr("punkt/README", "placeholder")
        data_file = Path(tmp) / "pairs.json"
        data_file.write_text(json.dumps(pairs), encoding="utf-8")
        nltk_data = os.pathsep.join([os.environ.get("NLTK_DATA", ""), str(placeholder.parent)])
        done = subprocess.run(
            [str(python), "-c", AZURE_SCRIPT, str(data_file), str(rounds), json.dumps(names), str(min_s)],
            env={**os.environ, "NLTK_DATA": nltk_data},
            capture_output=True,
            text=True,
            timeout=3600,
            check=False,
        )
    for line in done.stdout.splitlines():
        if line.startswith("RESULT "):
            result: dict[str, Any] = json.loads(line[len("RESULT ") :])
            result["download_attempts"] = done.stderr.count("Error loading")
            return result
    print(f"azure-ai-evaluation run failed (exit {done.returncode}):\n{done.stderr[-2000:]}")
    return None


def compat_callables() -> dict[str, Callable[[str, str], Any]]:
    from tracesim.evaluators.compat import azure

    f1, bleu, gleu = azure.F1ScoreEvaluator(), azure.BleuScoreEvaluator(), azure.GleuScoreEvaluator()
    meteor, rouge = azure.MeteorScoreEvaluator(), azure.RougeScoreEvaluator(azure.RougeType.ROUGE_L)
    return {
        "f1": lambda a, b: f1(response=a, ground_truth=b)["f1_score"],
        "bleu": lambda a, b: bleu(response=a, ground_truth=b)["bleu_score"],
        "gleu": lambda a, b: gleu(response=a, ground_truth=b)["gleu_score"],
        "meteor": lambda a, b: meteor(response=a, ground_truth=b)["meteor_score"],
        "rouge (rougeL)": lambda a, b: rouge(response=a, ground_truth=b)["rouge_score"],
    }


def core_callables() -> dict[str, Callable[[str, str], Any]]:
    """The core evaluators behind the facades, called as the main table calls them."""
    from tracesim.evaluators import from_config

    types = {"f1": "f1", "bleu": "bleu", "gleu": "gleu", "meteor": "meteor", "rouge (rougeL)": "rouge"}
    return {name: from_config({"type": kind}).evaluate for name, kind in types.items()}


# -- report -------------------------------------------------------------------------------------


def fmt_rate(seconds: float, n: int) -> str:
    return f"{n / seconds:,.0f}"


def fmt_range(samples: list[float], n: int) -> str:
    """min-max pairs/s of per-round seconds."""
    return f"{n / max(samples):,.0f}-{n / min(samples):,.0f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (median reported)")
    parser.add_argument("--min-time", type=float, default=0.3, help="min CPU seconds per sample")
    parser.add_argument("--azure-python", type=Path, default=REPO / ".venv-bench-azure/bin/python")
    parser.add_argument("--no-azure", action="store_true")
    parser.add_argument("--only", help="run only the evaluators whose name contains this text")
    args = parser.parse_args(argv)

    pairs = make_pairs()
    n = len(pairs)
    print(
        f"{n} pairs (sha256 {fingerprint(pairs)}), {args.rounds} rounds, process CPU time, median; "
        f"Python {sys.version.split()[0]}, load {os.getloadavg()[0]:.1f}"
    )
    cases = [case for case in build_cases() if not args.only or args.only in case.name]
    for case in cases:  # warm up: loads WordNet, Punkt, scorers
        for a, b in pairs:
            case.ours(a, b)
            if case.baseline:
                case.baseline(a, b)
    pretok = pretokenized_cases(pairs)
    pretok_samples: dict[str, list[float]] = {name: [] for name, _, _ in pretok}
    for round_index in range(args.rounds):
        order = cases if round_index % 2 == 0 else list(reversed(cases))
        for case in order:
            case.samples_ours = (case.samples_ours or []) + [time_pass(case.ours, pairs, args.min_time)]
            if case.baseline:
                case.samples_base = (case.samples_base or []) + [
                    time_pass(case.baseline, pairs, args.min_time)
                ]
        for name, fn, _ in pretok:
            pretok_samples[name].append(time_pass(fn, pairs, args.min_time))

    print()
    header = f"{'evaluator':22} {'pairs/s':>10} {'min-max':>17}  {'baseline':40} {'pairs/s':>10}"
    header += f" {'x baseline':>10}  goal"
    print(header)
    print("-" * len(header))
    for case in cases:
        ours = statistics.median(case.samples_ours or [])
        line = f"{case.name:22} {fmt_rate(ours, n):>10} {fmt_range(case.samples_ours or [], n):>17}"
        if case.baseline and case.samples_base:
            base = statistics.median(case.samples_base)
            ratio = ours / base
            goal = "" if case.goal is None else f"<= {case.goal}x {'ok' if ratio <= case.goal else 'MISSED'}"
            line += f"  {case.baseline_label:40} {fmt_rate(base, n):>10} {ratio:>9.2f}x  {goal}"
        print(line)
    print()
    print("bare NLTK metric on pre-tokenized input (tokenization excluded), for reference:")
    by_name = {case.name: case for case in cases}
    for name, samples in pretok_samples.items():
        if name not in by_name:
            continue
        bare = statistics.median(samples)
        ours = statistics.median(by_name[name].samples_ours or [])
        print(f"  {name:8} {fmt_rate(bare, n):>10} pairs/s; tracesim {name} is {ours / bare:.2f}x its time")

    if args.no_azure or not args.azure_python.exists():
        print(f"\nazure-ai-evaluation: skipped ({args.azure_python} not found; see the module docstring)")
        return 0
    compat, core = compat_callables(), core_callables()
    names = [name for name in compat if not args.only or args.only in name]
    if not names:
        return 0
    print(
        f"\nazure-ai-evaluation ({args.azure_python}), same pairs, {args.rounds} rounds: "
        "one azure process per round, interleaved with tracesim's samples"
    )
    azure_times: dict[str, list[float]] = {name: [] for name in names}
    compat_times: dict[str, list[float]] = {name: [] for name in names}
    core_times: dict[str, list[float]] = {name: [] for name in names}
    ours_scores = {name: [compat[name](a, b) for a, b in pairs] for name in names}  # also warms up
    for name in names:
        for a, b in pairs:
            core[name](a, b)
    azure: dict[str, Any] | None = None
    for round_index in range(args.rounds):
        azure = run_azure(args.azure_python, pairs, 1, names, args.min_time)
        if azure is None:
            return 1
        for name in names if round_index % 2 == 0 else reversed(names):
            azure_times[name] += azure["results"][name]["times"]
            for fn, samples in [(compat[name], compat_times[name]), (core[name], core_times[name])]:
                samples.append(time_pass(fn, pairs, args.min_time))
    assert azure is not None
    print(f"  version {azure['version']}; network download attempts seen: {azure['download_attempts']}")
    print(
        "  pairs/s are medians (min-max over rounds); speed-up = median azure time / median tracesim "
        "time (min-max of the per-round ratios)"
    )
    header = (
        f"  {'evaluator':16} {'azure pairs/s':>24} {'tracesim compat pairs/s':>26} {'speed-up':>18}"
        f" {'core evaluate() pairs/s':>26} {'speed-up':>18}  scores"
    )
    print(header)
    for name in names:
        theirs_scores = azure["results"][name]["scores"]
        same = sum(1 for x, y in zip(ours_scores[name], theirs_scores, strict=True) if x == y)
        verdict = "identical" if same == n else f"{n - same} DIFFER"
        theirs = azure_times[name]
        cells = [f"{fmt_rate(statistics.median(theirs), n)} ({fmt_range(theirs, n)})"]
        for samples in (compat_times[name], core_times[name]):
            ratios = [t / o for t, o in zip(theirs, samples, strict=True)]
            speedup = statistics.median(theirs) / statistics.median(samples)
            cells.append(f"{fmt_rate(statistics.median(samples), n)} ({fmt_range(samples, n)})")
            cells.append(f"{speedup:.1f}x ({min(ratios):.1f}-{max(ratios):.1f})")
        print(
            f"  {name:16} {cells[0]:>24} {cells[1]:>26} {cells[2]:>18} {cells[3]:>26} {cells[4]:>18}"
            f"  {same}/{n} {verdict}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
