"""Seeded evaluator benchmark pairs: mostly short answers, a few multi-thousand-character ones.

Responses are edits of the expected text, as agent outputs tend to be: exact copies, a
filler prefix, synonyms, dropped or inserted words, reordering, typos, truncation, a wrong
answer. Run ``python benchmarks/_evaldata.py`` to print a summary of the set.
"""

from __future__ import annotations

import hashlib
import json
import random

ANSWERS = [
    "Marie Curie was born in Warsaw.",
    "The capital of Japan is Tokyo.",
    "The capital of Australia is Canberra.",
    "World War II ended in 1945.",
    "The Eiffel Tower is located in Paris.",
    "Water boils at 100 degrees Celsius at sea level.",
    "Photosynthesis converts light energy into chemical energy stored in glucose.",
    "The Treaty of Westphalia was signed in 1648.",
    "To reset your password, open Settings, choose Security and click Reset password.",
    "Your order #48213 ships on Monday and should arrive within three business days.",
    "I cannot assist with that request, but I can help you contact support.",
    "There are 3 items in your cart: a lamp, a rug and a chair.",
    "The meeting agreed to delay the launch by two weeks to fix critical bugs.",
    "Use git status to see which files changed since the last commit.",
    "Refunds are processed within 5 to 7 business days after we receive the item.",
    "The quick brown fox jumps over the lazy dog.",
    "Mount Everest is the highest mountain above sea level, at 8,849 metres.",
    "Python lists are mutable, while tuples are immutable.",
    "The function returns None when the key is missing from the dictionary.",
    "Our support team is available from 9 a.m. to 5 p.m., Monday to Friday.",
    "Der Zug nach München fährt um 14:30 von Gleis 5 ab.",
    "Le musée est fermé le mardi et ouvre à 9 h les autres jours.",
    "The invoice total is €1,250.00 including VAT.",
]
FILLERS = [
    "Sure! ",
    "Great question. ",
    "According to my sources, ",
    "As an AI assistant, I can say that ",
    "",
]
SYNONYMS = {
    "big": "large",
    "car": "auto",
    "buy": "purchase",
    "fix": "repair",
    "delay": "postpone",
    "help": "assist",
    "arrive": "get there",
    "open": "go to",
    "highest": "tallest",
}
WRONG = [
    "I don't know.",
    "Lyon",
    "Please try again later.",
    "The answer is 42.",
    "Unfortunately that is not possible.",
]
LONG_TOPICS = ["incident", "release", "onboarding", "billing", "migration", "outage"]


def _typos(text: str, rng: random.Random) -> str:
    chars = list(text)
    for _ in range(max(1, len(chars) // 25)):
        i = rng.randrange(len(chars))
        chars[i] = rng.choice("aeiourstln")
    return "".join(chars)


def _edit(expected: str, rng: random.Random) -> str:
    words = expected.split()
    kind = rng.randrange(8)
    if kind == 0:
        return expected
    if kind == 1:
        return rng.choice(FILLERS) + expected
    if kind == 2:
        return " ".join(SYNONYMS.get(w.lower(), w) for w in words)
    if kind == 3 and len(words) > 3:
        del words[rng.randrange(len(words))]
        return " ".join(words)
    if kind == 4:
        words.insert(rng.randrange(len(words) + 1), rng.choice(["really", "actually", "probably", "also"]))
        return " ".join(words)
    if kind == 5:
        rng.shuffle(words)
        return " ".join(words)
    if kind == 6:
        return _typos(expected, rng)
    return rng.choice(WRONG)


def _long_text(rng: random.Random, chars: int) -> str:
    topic = rng.choice(LONG_TOPICS)
    sentences = []
    while sum(len(s) + 1 for s in sentences) < chars:
        answer = rng.choice(ANSWERS)
        sentences.append(f"In the {topic} review, step {len(sentences) + 1}: {answer}")
    return " ".join(sentences)[:chars]


def make_pairs(seed: int = 20261122, short: int = 194, long: int = 6) -> list[tuple[str, str]]:
    """(output, expected) pairs: ``short`` short answers, then ``long`` 3-4.2k-character ones."""
    rng = random.Random(seed)
    pairs = []
    for _ in range(short):
        expected = rng.choice(ANSWERS)
        if rng.random() < 0.6:
            expected = expected + " " + rng.choice(ANSWERS)
        pairs.append((_edit(expected, rng), expected))
    for _ in range(long):
        expected = _long_text(rng, rng.randint(3000, 4200))
        words = expected.split()
        for _ in range(len(words) // 15):
            words[rng.randrange(len(words))] = rng.choice(["changed", "updated", "different", "also"])
        pairs.append((" ".join(words[: int(len(words) * rng.uniform(0.85, 1.0))]), expected))
    return pairs


def fingerprint(pairs: list[tuple[str, str]]) -> str:
    """A short hash of the pairs, printed with the results so runs can be compared."""
    return hashlib.sha256(json.dumps(pairs).encode()).hexdigest()[:16]


if __name__ == "__main__":
    data = make_pairs()
    lengths = sorted(max(len(a), len(b)) for a, b in data)
    print(
        f"{len(data)} pairs, sha256 {fingerprint(data)}; longer string: min {lengths[0]}, "
        f"median {lengths[len(lengths) // 2]}, max {lengths[-1]} chars"
    )
