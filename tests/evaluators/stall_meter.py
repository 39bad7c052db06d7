"""Measure how long an evaluator call takes and how long it stalls the other threads.

A *ticker* thread loops ``time.sleep(0.001)`` and records the longest gap between two of
its wake-ups: a call that holds the GIL for 2 s shows up as a ~2 s gap. The stall test
(``test_stalls.py``) uses :class:`Ticker`; run this file to print the measurement table::

    NLTK_DATA=../shared/nltk_data .venv/bin/python tests/evaluators/stall_meter.py --sizes 1,5

Each (evaluator, size, text kind) runs in a fresh interpreter with a time limit, so an
evaluator that runs for minutes is reported as ``>LIMIT`` instead of blocking the table.
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

MB = 1_000_000

_VOCABULARY = (
    "the a of to and in is was for on that with as by at from it an be this which or are have "
    "has had not but were their been one all would there will can more if no out so what up "
    "time about than into only other new some could these two may first then do any like my "
    "now over such our man me even most made after also did many before must through back "
    "years where much your way well down should because each just those people how too little "
    "state good very make world still own see men work long get here between both life being "
    "under never day same another know while last might us great old year off come since "
    "against go came right used take three customer order refund invoice shipping account "
    "password support team meeting release Warsaw Paris Tokyo Curie capital born river city"
)
_WORDS = _VOCABULARY.split()


def english(size: int, seed: int) -> str:
    """``size`` characters of English-like sentences; ``seed`` varies the words and order."""
    rng = random.Random(seed)
    parts: list[str] = []
    total = 0
    while total < size:
        words = rng.choices(_WORDS, k=rng.randint(6, 18))
        sentence = " ".join(words).capitalize() + rng.choice((". ", ". ", "! ", "? ", ", and "))
        parts.append(sentence)
        total += len(sentence)
    return "".join(parts)[:size]


def random_text(size: int, seed: int) -> str:
    """``size`` random lowercase letters and spaces: almost no shared words or n-grams."""
    rng = random.Random(seed)
    return "".join(rng.choices("abcdefghijklmnopqrstuvwxyz     ", k=size))


def random_unicode(size: int, seed: int) -> str:
    """Random words over Latin, accented, Greek, CJK and emoji characters (the non-ASCII paths)."""
    rng = random.Random(seed)
    alphabet = "abcdefghijklmnopqrstuvwxyzéèàüößçñαβγδ東京大阪日本語€£%,.!?0123456789🍕😀" + " " * 12
    return "".join(rng.choices(alphabet, k=size))


KINDS: dict[str, Callable[[int, int], str]] = {
    "english": english,
    "random": random_text,
    "unicode": random_unicode,
}


def pair(kind: str, size: int) -> tuple[str, str]:
    """An (output, expected) pair of ``size`` characters each."""
    make = KINDS[kind]
    return make(size, 1), make(size, 2)


class Ticker:
    """A thread that sleeps 1 ms in a loop and records its longest gap between wake-ups.

    Example:
        >>> with Ticker() as ticker:
        ...     pass
        >>> ticker.max_gap_s < 1.0
        True
    """

    def __init__(self) -> None:
        self.max_gap_s = 0.0
        self._stop = threading.Event()
        self._started = threading.Event()
        self._thread = threading.Thread(target=self._run, name="stall-ticker", daemon=True)

    def _run(self) -> None:
        last = time.perf_counter()
        self._started.set()
        while not self._stop.is_set():
            time.sleep(0.001)
            now = time.perf_counter()
            self.max_gap_s = max(self.max_gap_s, now - last)
            last = now

    def __enter__(self) -> Ticker:
        self._thread.start()
        self._started.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)


class GcPauses:
    """Records the longest garbage collection while active (a full one stops every thread).

    Example:
        >>> with GcPauses() as pauses:
        ...     _ = gc.collect()
        >>> pauses.longest_s >= 0.0
        True
    """

    def __init__(self) -> None:
        self.longest_s = 0.0
        self._started = 0.0

    def _callback(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.longest_s = max(self.longest_s, time.perf_counter() - self._started)

    def __enter__(self) -> GcPauses:
        gc.callbacks.append(self._callback)
        return self

    def __exit__(self, *exc: object) -> None:
        gc.callbacks.remove(self._callback)


def run_while_ticking(work: Callable[[], Any]) -> tuple[Any, float]:
    """Run ``work`` in a new thread while this thread ticks every millisecond.

    Returns what ``work`` returned and the longest gap between two ticks of this thread,
    in seconds: how long the call kept the calling thread (the host) from running. The
    thread is named as the scoring pipeline names its threads (``tracesim-scoring...``), so
    evaluators apply the default caps of a scoring thread in the host's interpreter.
    """
    done = threading.Event()
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["value"] = work()
        except BaseException as exc:  # re-raised below, in the ticking thread
            outcome["error"] = exc
        finally:
            done.set()

    worker = threading.Thread(target=run, name="tracesim-scoring-stall-worker", daemon=True)
    longest = 0.0
    last = time.perf_counter()
    worker.start()
    while not done.wait(0.001):
        now = time.perf_counter()
        longest = max(longest, now - last)
        last = now
    longest = max(longest, time.perf_counter() - last)
    worker.join(10)
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"], longest


def _core(config: dict[str, Any]) -> Callable[[str, str], Any]:
    from tracesim.evaluators import from_config

    return from_config(config).evaluate


def _compat(name: str) -> Callable[[str, str], Any]:
    from tracesim.evaluators.compat import agenta, agenttest, azure, mastra, twosignal

    calls: dict[str, Callable[[], Callable[[str, str], Any]]] = {
        "azure.F1": lambda: lambda r, e: azure.F1ScoreEvaluator()(response=r, ground_truth=e),
        "azure.Bleu": lambda: lambda r, e: azure.BleuScoreEvaluator()(response=r, ground_truth=e),
        "azure.Gleu": lambda: lambda r, e: azure.GleuScoreEvaluator()(response=r, ground_truth=e),
        "azure.Meteor": lambda: lambda r, e: azure.MeteorScoreEvaluator()(response=r, ground_truth=e),
        "azure.RougeL": lambda: lambda r, e: azure.RougeScoreEvaluator("rougeL")(response=r, ground_truth=e),
        "agenta.similarity_match": lambda: agenta.similarity_match,
        "agenta.levenshtein_distance": lambda: agenta.levenshtein_distance,
        "twosignal.Levenshtein": lambda: twosignal.Levenshtein().evaluate,
        "mastra.ContentSimilarity": lambda: lambda r, e: mastra.ContentSimilarityMetric().measure(e, r),
        **{
            f"agenttest.{method}": (lambda m=method: agenttest.StringSimilarity(method=m).evaluate)
            for method in agenttest.METHODS
        },
    }
    return calls[name]()


CORE = {
    "exact": {"type": "exact"},
    "levenshtein": {"type": "levenshtein"},
    "levenshtein_distance": {"type": "levenshtein_distance"},
    "jaccard": {"type": "jaccard"},
    "cosine": {"type": "cosine"},
    "content_similarity": {"type": "content_similarity"},
    "f1": {"type": "f1"},
    "bleu": {"type": "bleu"},
    "gleu": {"type": "gleu"},
    "meteor": {"type": "meteor"},
    **{
        f"rouge:{t}": {"type": "rouge", "rouge_type": t}
        for t in ("rouge1", "rouge2", "rouge3", "rouge4", "rouge5", "rougeL", "rougeLsum")
    },
    "rouge:rougeL+stem": {"type": "rouge", "rouge_type": "rougeL", "use_stemmer": True},
}
COMPAT = [
    "azure.F1",
    "azure.Bleu",
    "azure.Gleu",
    "azure.Meteor",
    "azure.RougeL",
    "agenta.similarity_match",
    "agenta.levenshtein_distance",
    "twosignal.Levenshtein",
    "mastra.ContentSimilarity",
    "agenttest.cosine",
    "agenttest.levenshtein",
    "agenttest.jaccard",
    "agenttest.exact",
]
ALL = [*CORE, *COMPAT]


def call_for(name: str) -> Callable[[str, str], Any]:
    """The scoring call of a benchmark entry (see ``ALL``), built once."""
    return _core(CORE[name]) if name in CORE else _compat(name)


def measure_one(name: str, size: int, kind: str) -> dict[str, Any]:
    """Score one pair with the ticker running; wall time, longest stall and what came back."""
    call = call_for(name)
    call("warm up", "warm up")
    output, expected = pair(kind, size)
    with Ticker() as ticker:
        start = time.perf_counter()
        result = call(output, expected)
        wall_s = time.perf_counter() - start
    details = getattr(result, "details", None)
    if details is None and isinstance(result, dict):  # AgentTest's details, Mastra's info
        details = result.get("details") or result.get("info")
    return {
        "name": name,
        "size": size,
        "kind": kind,
        "wall_s": round(wall_s, 3),
        "stall_s": round(ticker.max_gap_s, 3),
        "status": getattr(result, "status", "n/a"),
        "truncated_to": details.get("truncated_to") if isinstance(details, dict) else None,
    }


def _run_isolated(name: str, size: int, kind: str, limit_s: float) -> dict[str, Any]:
    command = [sys.executable, __file__, "--one", name, str(size), kind]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=limit_s, check=False)
    except subprocess.TimeoutExpired:
        return {"name": name, "size": size, "kind": kind, "wall_s": f">{limit_s:g}", "stall_s": "?"}
    if done.returncode != 0:
        return {"name": name, "size": size, "kind": kind, "error": done.stderr.strip()[-300:]}
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--one", nargs=3, metavar=("NAME", "SIZE", "KIND"))
    parser.add_argument("--sizes", default="1,5", help="sizes in MB (comma-separated)")
    parser.add_argument("--kinds", default=",".join(KINDS))
    parser.add_argument("--limit", type=float, default=60.0, help="seconds per run")
    parser.add_argument("names", nargs="*", default=ALL)
    args = parser.parse_args(argv)
    if args.one:
        name, size, kind = args.one
        print(json.dumps(measure_one(name, int(size), kind)))
        return
    sizes = [int(float(s) * MB) for s in args.sizes.split(",")]
    for name in args.names:
        for kind in args.kinds.split(","):
            too_slow = False
            for size in sizes:
                if too_slow:  # the smaller input already hit the limit
                    row: dict[str, Any] = {"name": name, "size": size, "kind": kind, "wall_s": "skipped"}
                else:
                    row = _run_isolated(name, size, kind, args.limit)
                    too_slow = isinstance(row.get("wall_s"), str)
                print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
