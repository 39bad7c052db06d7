"""NIST international tokenization (NLTK's ``NISTTokenizer.international_tokenize``) on ``re``.

NLTK 3.10 runs every pattern through the ``regex`` engine under a time limit; with the
thousands of characters in the perluniprops classes that costs milliseconds per text. This
module applies the same four substitutions, built from the same perluniprops data, with
the standard library's ``re`` (which compiles a character class to a lookup table). The
tests compare it with NLTK's tokenizer on generated text.
"""

from __future__ import annotations

import re

from tracesim.evaluators import _nltk_data

__all__ = ["NistInternational"]


def _char_class(chars: frozenset[str]) -> str:
    return "[" + "".join(re.escape(char) for char in sorted(chars)) + "]"


class NistInternational:
    """``tokenize(text)`` equals ``NISTTokenizer().international_tokenize(text)``.

    Example:
        >>> NistInternational("bleu").tokenize("café, world. 5,000€")
        ['caf', 'é', ',', 'world', '.', '5,000', '€']
    """

    def __init__(self, needed_by: str) -> None:
        from nltk.tokenize.util import xml_unescape

        classes = _nltk_data.perluniprops_classes(needed_by)
        number, punct = _char_class(classes["Number"]), _char_class(classes["Punctuation"])
        symbol = _char_class(classes["Symbol"])
        self._unescape = xml_unescape
        # In NLTK's order: pad ASCII runs; split number+punct and punct+number; pad symbols.
        self._steps = (
            (re.compile("([\x00-\x7f]+)"), r" \1 "),
            (re.compile(f"({number})({punct})"), r"\1 \2 "),
            (re.compile(f"({punct})({number})"), r" \1 \2"),
            (re.compile(f"({symbol})"), r" \1 "),
        )

    def tokenize(self, text: str) -> list[str]:
        """Split ``text`` into NIST international tokens."""
        text = self._unescape(text.replace("<skipped>", "").replace("\u2028", " "))
        for pattern, replacement in self._steps:
            text = pattern.sub(replacement, text)
        return text.split()
