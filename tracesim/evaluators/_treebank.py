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


# For each pattern (by its source), the characters of which the text must hold one for the
# pattern to match at all, when the text is ASCII (only then is this tokenizer used): a
# substitution whose characters are all absent is skipped, which changes nothing. Patterns
# not listed always run. The case-insensitive contractions need a whole word instead.
_NEEDS_ONE_OF = {
    r"([«“‘„]|[`]+)": "`",
    r"^\"": '"',
    r"(``)": "`",
    r"([ \(\[{<])(\"|\'{2})": "\"'",
    r"(?i)(?<!\w)(\')(?!(?:re|ve|ll|m|t|s|d|n)\b)(?=\w)": "'",
    r"([:,])([^\d])": ":,",
    r"([:,])$": ":,",
    r"\.{2,}": ".",
    r"[;@#$%&]": ";@#$%&",
    r"[\u2012-\u2015]": "",
    r"[?!]": "?!",
    r"([^'])' ": "'",
    r"[*]": "*",
    r"[\]\[\(\)\{\}\<\>]": "[](){}<>",
    r"--": "-",
    r"([»”’])": "",
    r"''": "'",
    r'"': '"',
    r"([^' ])('[sS]|'[mM]|'[dD]|') ": "'",
    r"([^' ])('ll|'LL|'re|'RE|'ve|'VE|n't|N'T) ": "'",
}
_CONTRACTION = re.compile(r"\(\?i\)(?: |\\b)\(([^()]+)\)\(\?#X\)\(([^()]+)\)")  # "(?i)\b(can)(?#X)(not)\b"


def _guard(source: str) -> tuple[str | None, str | None]:
    """(characters of which one must be present, or a lower-case word that must be), or Nones."""
    if source in _NEEDS_ONE_OF:
        return _NEEDS_ONE_OF[source], None
    if source.startswith(r"([^\.])(\.)"):  # the sentence-final period, whatever may follow it
        return ".", None
    match = _CONTRACTION.match(source)
    if match:
        return None, match[1] + match[2]  # "cannot", "d'ye", "'tis"
    return None, None


Guard = Callable[[str], object]


def _guarded(pattern: re.Pattern[str], replacement: str) -> tuple[re.Pattern[str], str, Guard | None]:
    """A step with the test that lets it be skipped: one C call that finds one of its characters."""
    one_of, _ = _guard(pattern.pattern)
    if one_of is None:
        return pattern, replacement, None
    if not one_of:  # only non-ASCII characters can match: never on ASCII text
        return pattern, replacement, lambda text: False
    return pattern, replacement, re.compile(f"[{re.escape(one_of)}]").search


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
        after_padding: list[Step] = [*((_recompile(p), s) for p, s in cls.ENDING_QUOTES)]
        contractions: list[Step] = [
            *((_recompile(p), r" \1 \2 ") for p in cls.CONTRACTIONS2),
            *((_recompile(p), r" \1 \2 ") for p in cls.CONTRACTIONS3),
        ]
    except (re.error, AttributeError, TypeError, ValueError):
        return nltk_tokenizer.tokenize  # type: ignore[no-any-return]
    steps = [_guarded(pattern, replacement) for pattern, replacement in before_padding]
    steps_after = [_guarded(pattern, replacement) for pattern, replacement in after_padding]
    words = [(pattern, replacement, _guard(pattern.pattern)[1]) for pattern, replacement in contractions]

    def tokenize(text: str) -> list[str]:
        for pattern, replacement, holds in steps:
            if holds is None or holds(text):
                text = pattern.sub(replacement, text)
        text = " " + text + " "
        for pattern, replacement, holds in steps_after:
            if holds is None or holds(text):
                text = pattern.sub(replacement, text)
        low = text.lower()  # these patterns only insert spaces: a word absent now stays absent
        for pattern, replacement, word in words:
            if word is None or word in low:
                text = pattern.sub(replacement, text)
        return text.split()

    return tokenize
