"""NLTK's improved Treebank word tokenizer (``NLTKWordTokenizer``) with its patterns on ``re``.

``nltk.word_tokenize`` splits sentences with Punkt, then runs ``NLTKWordTokenizer`` on each.
NLTK 3.10 sends each of that tokenizer's ~30 substitutions through the ``regex`` engine
under a time limit, which makes it the slowest step of BLEU, GLEU and METEOR. This class
takes the tokenizer's own pattern strings, compiles them with the standard ``re`` module
and applies them in the tokenizer's order (the default ``convert_parentheses=False``
path). It is only used for pure-ASCII text, where both engines agree; the tests compare
it with NLTK on generated text. If a pattern does not compile (``re`` before Python 3.11
has no possessive quantifiers), NLTK's tokenizer is used as it is.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

__all__ = ["treebank_word_tokenizer"]

Step = tuple["re.Pattern[str]", str]


def _recompile(pattern: Any) -> re.Pattern[str]:
    source = pattern.pattern
    return re.compile(source, re.IGNORECASE if pattern.flags & re.IGNORECASE else 0)


def treebank_word_tokenizer(nltk_tokenizer: Any) -> Callable[[str], list[str]]:
    """A function equal to ``nltk_tokenizer.tokenize`` (an ``NLTKWordTokenizer``) on ASCII text.

    Example:
        >>> from nltk.tokenize.destructive import NLTKWordTokenizer
        >>> treebank_word_tokenizer(NLTKWordTokenizer())("They can't stop, it's 3.88 (roughly).")
        ['They', 'ca', "n't", 'stop', ',', 'it', "'s", '3.88', '(', 'roughly', ')', '.']
    """
    cls = type(nltk_tokenizer)
    try:
        before_padding: list[Step] = [
            *((_recompile(p), s) for p, s in cls.STARTING_QUOTES),
            *((_recompile(p), s) for p, s in cls.PUNCTUATION),
            (_recompile(cls.PARENS_BRACKETS[0]), cls.PARENS_BRACKETS[1]),
            (_recompile(cls.DOUBLE_DASHES[0]), cls.DOUBLE_DASHES[1]),
        ]
        after_padding: list[Step] = [
            *((_recompile(p), s) for p, s in cls.ENDING_QUOTES),
            *((_recompile(p), r" \1 \2 ") for p in cls.CONTRACTIONS2),
            *((_recompile(p), r" \1 \2 ") for p in cls.CONTRACTIONS3),
        ]
    except (re.error, AttributeError, TypeError, ValueError):
        return nltk_tokenizer.tokenize  # type: ignore[no-any-return]

    def tokenize(text: str) -> list[str]:
        for pattern, replacement in before_padding:
            text = pattern.sub(replacement, text)
        text = " " + text + " "
        for pattern, replacement in after_padding:
            text = pattern.sub(replacement, text)
        return text.split()

    return tokenize
