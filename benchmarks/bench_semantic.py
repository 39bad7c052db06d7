"""The ``local`` embedding backend next to the bare WordLlama calls it wraps, in one run.

    .venv/bin/python benchmarks/bench_semantic.py [--rounds 5] [--pairs 1000] [--batch 64]

Pairs: ``--pairs`` (output, expected) answers of one to two sentences, 85 characters on
average, from benchmarks/_evaldata.py. Cases, timed in interleaved rounds (median, with the
min-max over rounds), in wall time and in process CPU time (the tokenizer's batch method
runs on several cores, so the two differ):

- per pair: WordLlama's ``similarity(a, b)`` (the baseline: two ``embed`` calls and a
  cosine), WordLlama's ``embed([a, b], norm=True)`` and a dot product, and tracesim's
  ``local_embedder()([a, b])`` and a dot product: what ``SemanticSimilarity(backend="local")``
  computes per scored call;
- batched: ``--batch`` pairs (twice as many texts) per call, both libraries, row-wise dots;
- two threads calling tracesim per pair, as the scoring pool does (wall time only).

Ratios are against ``similarity()`` measured in the same rounds (lower is better). Then, for
each width the wheel holds (64, 128, 256): pairs/s, the memory the loaded model adds (RSS of
a fresh process), how often a paraphrase scores above a related but different answer on 30
hand-written triples, and the cosine of negated pairs. Goal: >= 2,000 pairs/s on 2 cores.
Prints numbers only; nothing here asserts timings.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))

from _evaldata import fingerprint, make_pairs  # noqa: E402

from tracesim.evaluators._wordllama import local_embedder  # noqa: E402

Pair = tuple[str, str]

# (answer, paraphrase, related answer that says something else): a paraphrase should score higher.
TRIPLES = [
    (
        "Marie Curie was born in Warsaw.",
        "Warsaw is where Marie Curie was born.",
        "Marie Curie died in France.",
    ),
    (
        "The capital of Japan is Tokyo.",
        "Tokyo is Japan's capital city.",
        "The capital of Australia is Canberra.",
    ),
    (
        "World War II ended in 1945.",
        "The Second World War came to an end in 1945.",
        "World War I began in 1914.",
    ),
    (
        "Water boils at 100 degrees at sea level.",
        "At sea level water boils at 100 °C.",
        "Water freezes at 0 degrees.",
    ),
    (
        "To reset your password, open Settings and click Reset password.",
        "You can change a forgotten password from the Settings page.",
        "To delete your account, open Settings and click Delete account.",
    ),
    (
        "Your order ships on Monday.",
        "We will send out your package on Monday.",
        "Your order was cancelled on Monday.",
    ),
    (
        "Refunds are processed within 5 to 7 business days.",
        "It takes about a week of working days for the money to come back.",
        "Refunds are not available for digital purchases.",
    ),
    (
        "The meeting agreed to delay the launch by two weeks.",
        "The launch was postponed by a fortnight at the meeting.",
        "The meeting agreed to launch the product today.",
    ),
    (
        "Use git status to see which files changed.",
        "Run git status to list modified files.",
        "Use git push to upload commits.",
    ),
    (
        "Python lists are mutable, while tuples are immutable.",
        "You can change a list in place but not a tuple.",
        "Python dictionaries map keys to values.",
    ),
    (
        "Our support team is available from 9 a.m. to 5 p.m.",
        "You can reach support during office hours, nine to five.",
        "Our support team is closed on public holidays.",
    ),
    (
        "The invoice total is 1,250 euros including VAT.",
        "With tax, the bill comes to 1250 EUR.",
        "The invoice is due in 30 days.",
    ),
    (
        "The train to Munich leaves at 14:30 from platform 5.",
        "The Munich train departs at half past two from track five.",
        "The train from Munich arrives late tonight.",
    ),
    (
        "The museum is closed on Tuesdays.",
        "On Tuesdays the museum does not open.",
        "The museum is free on Sundays.",
    ),
    (
        "Mount Everest is the highest mountain on Earth.",
        "No peak on the planet is taller than Everest.",
        "Kilimanjaro is the highest mountain in Africa.",
    ),
    (
        "The function returns None when the key is missing.",
        "If the key is absent, the function gives back None.",
        "The function raises KeyError when the key is missing.",
    ),
    (
        "I cannot help with that request.",
        "Sorry, I am unable to assist with that.",
        "I can help with that request right away.",
    ),
    ("The package weighs two kilograms.", "The parcel's weight is 2 kg.", "The package is two metres long."),
    (
        "She bought a new car last week.",
        "Last week she purchased a new automobile.",
        "She sold her old bike last week.",
    ),
    (
        "The server restarts every night at midnight.",
        "Each night at 00:00 the server reboots.",
        "The server crashed last night.",
    ),
    (
        "Photosynthesis turns light into chemical energy.",
        "Plants convert sunlight into stored chemical energy.",
        "Respiration releases energy from glucose.",
    ),
    ("The Eiffel Tower is in Paris.", "Paris is home to the Eiffel Tower.", "The Colosseum is in Rome."),
    (
        "The doctor advised him to rest for three days.",
        "His physician told him to take three days off.",
        "The doctor prescribed him antibiotics for three days.",
    ),
    (
        "The store opens at 8 in the morning.",
        "Opening time for the shop is 8 a.m.",
        "The store closes at 8 in the evening.",
    ),
    (
        "Heavy rain is expected tomorrow.",
        "Tomorrow's forecast calls for a lot of rain.",
        "Tomorrow will be sunny and dry.",
    ),
    (
        "The bug was caused by a missing null check.",
        "A null value that was not checked led to the defect.",
        "The bug was fixed in version 2.3.",
    ),
    (
        "Shipping is free for orders over 50 dollars.",
        "Orders above $50 ship at no cost.",
        "Shipping costs 5 dollars.",
    ),
    (
        "The concert was cancelled because of the storm.",
        "Due to the storm, the concert did not take place.",
        "The concert was sold out before the storm.",
    ),
    (
        "He has lived in Berlin for ten years.",
        "He has been a Berlin resident for a decade.",
        "He moved away from Berlin.",
    ),
    (
        "The battery lasts about twelve hours.",
        "You get roughly 12 hours of use per charge.",
        "The battery charges in two hours.",
    ),
]
NEGATIONS = [
    ("delayed", "not delayed"),
    ("The flight was delayed.", "The flight was not delayed."),
    ("The payment succeeded.", "The payment did not succeed."),
]


@dataclass
class Case:
    label: str
    run: Callable[[], object]  # one pass over every pair
    threaded: bool = False
    wall: list[float] = field(default_factory=list)  # seconds per pass, one per round
    cpu: list[float] = field(default_factory=list)


def time_pass(case: Case, min_s: float) -> None:
    """Time passes of ``case`` until ``min_s`` of wall time; record seconds per pass."""
    passes, wall, cpu = 0, time.perf_counter(), time.process_time()
    while True:
        case.run()
        passes += 1
        spent = time.perf_counter() - wall
        if spent >= min_s:
            case.wall.append(spent / passes)
            case.cpu.append((time.process_time() - cpu) / passes)
            return


def wordllama_model(dims: int) -> Any:
    """WordLlama loaded the way the backend loads it (from the package folder, offline)."""
    local_embedder(dims=dims)(["import wordllama through the backend first"])  # keeps root logging alone
    import wordllama

    trunc = None if dims == 256 else dims
    folder = Path(wordllama.__file__).parent
    return wordllama.WordLlama.load(cache_dir=folder, trunc_dim=trunc, disable_download=True)


def per_pair(embed: Callable[[list[str]], Any], pairs: list[Pair]) -> Callable[[], None]:
    """One pass as SemanticSimilarity(backend="local") makes it: both texts in one call, a dot."""

    def run() -> None:
        for a, b in pairs:
            vectors = embed([a, b])
            float(vectors[0] @ vectors[1])

    return run


def in_two_threads(embed: Callable[[list[str]], Any], pairs: list[Pair]) -> Callable[[], None]:
    """Half the pairs each on two threads, per pair: the scoring pool's two workers."""
    halves = [per_pair(embed, pairs[0::2]), per_pair(embed, pairs[1::2])]

    def run() -> None:
        threads = [threading.Thread(target=half) for half in halves]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    return run


def evaluated(dims: int, pairs: list[Pair]) -> Callable[[], None]:
    """The evaluator as the pipeline calls it: text conversion, checks, the result object.

    Its embedding cache is off (``cache_size=0``): every text is embedded, as the other rows do.
    """
    from tracesim.evaluators import SemanticSimilarity

    semantic = SemanticSimilarity(backend="local", dimensions=dims, cache_size=0)

    def run() -> None:
        for a, b in pairs:
            semantic.evaluate(a, b)

    return run


def build_cases(pairs: list[Pair], batch: int, dims: int) -> list[Case]:
    wl, embed = wordllama_model(dims), local_embedder(dims=dims)
    chunks = [[text for pair in pairs[i : i + batch] for text in pair] for i in range(0, len(pairs), batch)]

    def theirs_embed() -> None:
        for a, b in pairs:
            vectors = wl.embed([a, b], norm=True)
            float(vectors[0] @ vectors[1])

    def batched(fn: Callable[[list[str]], Any]) -> Callable[[], None]:
        def run() -> None:
            for texts in chunks:
                vectors = fn(texts)
                (vectors[0::2] * vectors[1::2]).sum(axis=1)

        return run

    return [
        Case("wordllama similarity(a, b)", lambda: [wl.similarity(a, b) for a, b in pairs]),
        Case("wordllama embed([a, b]) + dot", theirs_embed),
        Case("tracesim local_embedder()([a, b]) + dot", per_pair(embed, pairs)),
        Case("SemanticSimilarity(backend='local').evaluate", evaluated(dims, pairs)),
        Case(f"wordllama embed({batch} pairs) + dots", batched(lambda texts: wl.embed(texts, norm=True))),
        Case(f"tracesim embedder({batch} pairs) + dots", batched(embed)),
        Case("tracesim per pair, 2 threads", in_two_threads(embed, pairs), threaded=True),
    ]


def rate(seconds: list[float], n: int) -> str:
    return f"{n / statistics.median(seconds):,.0f}"


def spread(seconds: list[float], n: int) -> str:
    return f"{n / max(seconds):,.0f}-{n / min(seconds):,.0f}"


def report(cases: list[Case], n: int) -> None:
    header = f"{'case':42} {'pairs/s wall':>12} {'min-max':>15} {'pairs/s CPU':>12} {'x baseline':>11}"
    print(header)
    print("-" * len(header))
    base = statistics.median(cases[0].wall)
    for case in cases:
        ratio = statistics.median(case.wall) / base
        cpu = "" if case.threaded else rate(case.cpu, n)
        line = (
            f"{case.label:42} {rate(case.wall, n):>12} {spread(case.wall, n):>15} {cpu:>12} {ratio:>10.2f}x"
        )
        print(line)
    print("(x baseline: wall time per pair over wordllama similarity()'s, same rounds; lower is better)")


RSS_SCRIPT = """
import sys
def rss():
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:")) / 1024
from tracesim.evaluators._wordllama import local_embedder
import numpy
embed, before = local_embedder(dims=int(sys.argv[1])), rss()
embed(["load"])
print(f"{rss() - before:.0f}")
"""


def widths(pairs: list[Pair], rounds: int, min_s: float) -> None:
    """Speed (interleaved rounds), memory and quality of each width the wheel holds."""
    import numpy as np

    cases = {dims: Case(str(dims), per_pair(local_embedder(dims=dims), pairs)) for dims in (64, 128, 256)}
    for round_index in range(rounds):
        for case in cases.values() if round_index % 2 == 0 else reversed(cases.values()):
            time_pass(case, min_s)
    header = f"{'dims':>4} {'pairs/s wall':>12} {'model RSS MB':>13} {'paraphrase > related':>21}"
    print(f"\n{header}  negation cosines")
    for dims, case in cases.items():
        embed = local_embedder(dims=dims)
        rss = subprocess.run(
            [sys.executable, "-c", RSS_SCRIPT, str(dims)],
            capture_output=True,
            text=True,
            check=True,
            cwd=REPO,
        ).stdout.strip()
        anchor, paraphrase, related = (embed([t[i] for t in TRIPLES]) for i in range(3))
        wins = float(np.mean(np.sum(anchor * paraphrase, 1) > np.sum(anchor * related, 1)))
        negation = " ".join(f"{float(v[0] @ v[1]):.3f}" for v in (embed(list(pair)) for pair in NEGATIONS))
        print(f"{dims:>4} {rate(case.wall, len(pairs)):>12} {rss:>13} {wins:>20.0%}  {negation}")
    print("negation pairs: " + "; ".join(f"{a!r} / {b!r}" for a, b in NEGATIONS))
    print("model RSS: what the first call adds to a fresh process (import wordllama, tokenizer, vectors)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds (median reported)")
    parser.add_argument("--min-time", type=float, default=0.5, help="min wall seconds per sample")
    parser.add_argument("--pairs", type=int, default=1000, help="answer pairs per pass")
    parser.add_argument("--batch", type=int, default=64, help="pairs per call in the batched cases")
    parser.add_argument("--dims", type=int, default=256, choices=(64, 128, 256), help="width for the table")
    args = parser.parse_args(argv)

    pairs = make_pairs(short=args.pairs, long=0)
    n, chars = len(pairs), sum(len(a) + len(b) for a, b in pairs) / (2 * len(pairs))
    print(
        f"{n} pairs (sha256 {fingerprint(pairs)}, {chars:.0f} characters a text), {args.rounds} rounds, "
        f"dims {args.dims}, median; Python {sys.version.split()[0]}, {os.cpu_count()} CPUs, "
        f"load {os.getloadavg()[0]:.1f}\n"
    )
    cases = build_cases(pairs, args.batch, args.dims)
    for case in cases:  # warm up
        case.run()
    for round_index in range(args.rounds):
        for case in cases if round_index % 2 == 0 else reversed(cases):
            time_pass(case, args.min_time)
    report(cases, n)
    widths(pairs, args.rounds, args.min_time)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
