"""Long answers for the long-text tests, and a call on a thread named as the scoring pipeline's.

The texts are built here, from a seeded generator, so the repository holds all test data.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from tracesim.evaluators._long_texts import HOST_SCORING_THREAD

_T = TypeVar("_T")

_SOURCE = (
    "the report shows that revenue grew in the third quarter while costs fell as the team "
    "moved support to the new platform and customers asked for faster refunds on orders "
    "shipped from Warsaw Paris and Tokyo because the invoice system was slow during the "
    "release week so engineers added a queue retried failed payments and wrote a summary "
    "for the board which approved the plan to hire two analysts next year"
)
_WORDS = _SOURCE.split()
# Edits a model makes when it paraphrases: synonyms (METEOR's stems and WordNet see some).
_SWAPS = {
    "grew": "rose",
    "fell": "dropped",
    "faster": "quicker",
    "slow": "sluggish",
    "plan": "proposal",
    "customers": "clients",
    "added": "introduced",
    "wrote": "drafted",
    "hire": "recruit",
}


def answer_pair(size: int, seed: int = 11) -> tuple[str, str]:
    """(output, expected): a reference of about ``size`` characters, one sentence a line, and
    a paraphrase of it (some words swapped for synonyms, about one in sixteen dropped).

    Example:
        >>> output, expected = answer_pair(500)
        >>> 500 <= len(expected) < 700, expected.count("\\n") > 2
        (True, True)
    """
    rng = random.Random(seed)
    reference: list[str] = []
    paraphrase: list[str] = []
    total = 0
    while total < size:
        words = [rng.choice(_WORDS) for _ in range(rng.randint(12, 30))]
        edited = [_SWAPS.get(w, w) if rng.random() < 0.5 else w for w in words if rng.random() > 0.06]
        sentence = " ".join(words).capitalize() + "."
        reference.append(sentence)
        paraphrase.append(" ".join(edited).capitalize() + ".")
        total += len(sentence) + 1
    return "\n".join(paraphrase), "\n".join(reference)


def on_scoring_thread(call: Callable[[], _T]) -> _T:
    """``call()`` on a thread named as the scoring pipeline names its threads (the host's)."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = call()
        except BaseException as exc:  # re-raised in the caller's thread
            box["error"] = exc

    thread = threading.Thread(target=run, name=f"{HOST_SCORING_THREAD}-test")
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]  # type: ignore[no-any-return]
