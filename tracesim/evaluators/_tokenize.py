"""The tokenizer of BLEU, GLEU and METEOR, chosen per string as Azure AI Evaluation does."""

from __future__ import annotations

import functools

from tracesim.evaluators import _nltk_data
from tracesim.evaluators._nist import NistInternational
from tracesim.evaluators._treebank import treebank_word_tokenizer

__all__ = ["KEPT", "KEPT_CHARS", "NIST", "WORD_TOKENIZE", "AzureTokenizer"]

KEPT = 256
"""Expected texts whose tokens a tokenizer keeps (`AzureTokenizer.tokenize_expected`)."""
KEPT_CHARS = 2000
"""Only texts of up to this many characters are kept: a few MB at most, text and tokens (a
300-character answer and its tokens take about 4 KB)."""
WORD_TOKENIZE = "nltk.word_tokenize"
NIST = "nltk.NISTTokenizer.international_tokenize"


class AzureTokenizer:
    """Pure-ASCII text -> ``nltk.word_tokenize``; any other text -> NIST international.

    ``word_tokenize`` is Punkt sentence splitting followed by NLTK's Treebank word
    tokenizer on each sentence; this class holds both, loaded once per process, and
    composes them the same way. The Treebank and NIST steps run NLTK's patterns and
    perluniprops classes on the standard ``re`` engine (see ``_treebank`` and ``_nist``),
    tens of times faster than NLTK 3.10's time-limited ``regex`` calls, with the same
    tokens. Needs the ``punkt_tab`` and ``perluniprops`` data.

    Example:
        >>> tok = AzureTokenizer("bleu")
        >>> tok.tokenize("Marie Curie was born in Warsaw.")
        (['Marie', 'Curie', 'was', 'born', 'in', 'Warsaw', '.'], 'nltk.word_tokenize')
    """

    def __init__(self, needed_by: str) -> None:
        self._sentences = _nltk_data.punkt_tokenizer(needed_by).tokenize
        self._words = treebank_word_tokenizer(_nltk_data.treebank_tokenizer())
        self._international = NistInternational(needed_by).tokenize
        self._kept = functools.lru_cache(maxsize=KEPT)(self._frozen)

    def tokenize_expected(self, text: str) -> tuple[list[str], str]:
        """`tokenize`, remembering the tokens of the last `KEPT` texts of up to `KEPT_CHARS`
        characters: expected answers repeat (a golden set, a dataset's references), and
        splitting sentences is most of what BLEU costs. The tokens are the same; each call gets
        a list of its own.

        Example:
            >>> tok = AzureTokenizer("bleu")
            >>> tok.tokenize_expected("She won in 1911.") == tok.tokenize("She won in 1911.")
            True
        """
        if len(text) > KEPT_CHARS:
            return self.tokenize(text)
        tokens, name = self._kept(text)
        return list(tokens), name

    def _frozen(self, text: str) -> tuple[tuple[str, ...], str]:
        tokens, name = self.tokenize(text)
        return tuple(tokens), name

    def tokenize(self, text: str) -> tuple[list[str], str]:
        """Return the tokens of ``text`` and the name of the tokenizer used."""
        if text.isascii():
            words = self._words
            return [token for sentence in self._sentences(text) for token in words(sentence)], WORD_TOKENIZE
        return self._international(text), NIST
