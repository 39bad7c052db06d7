"""``bleu``, ``gleu`` and ``meteor``: NLTK's sentence metrics on Azure's tokens."""

from __future__ import annotations

from typing import Any

from tracesim.evaluators import _nltk_data
from tracesim.evaluators._base import Evaluator, Measurement
from tracesim.evaluators._options import check_bool, require_number
from tracesim.evaluators._text import as_text
from tracesim.evaluators._tokenize import AzureTokenizer

__all__ = ["Bleu", "Gleu", "Meteor"]


class _TokenMetric(Evaluator):
    """Tokenize both texts with :class:`AzureTokenizer`, then score the token lists."""

    def __init__(self, **shared: Any) -> None:
        super().__init__(**shared)
        self._tokenizer = AzureTokenizer(self.type_name)

    def measure(self, output: Any, expected: Any, *, input: Any = None) -> Measurement:
        hypothesis, hyp_tokenizer = self._tokenizer.tokenize(as_text(output))
        reference, ref_tokenizer = self._tokenizer.tokenize(as_text(expected))
        details: dict[str, Any] = {
            "tokenizer": {"output": hyp_tokenizer, "expected": ref_tokenizer},
            "tokens": {"output": len(hypothesis), "expected": len(reference)},
        }
        return Measurement(self._score(reference, hypothesis, details), details)

    def _score(self, reference: list[str], hypothesis: list[str], details: dict[str, Any]) -> float:
        raise NotImplementedError


class Bleu(_TokenMetric):
    """NLTK ``sentence_bleu``: uniform 4-gram weights, Chen & Cherry smoothing method 4.

    The numbers of Azure AI Evaluation's ``BleuScoreEvaluator`` (which returns int 0
    when no unigram matches; this returns 0.0). Case-sensitive. ``threshold=0.5``.
    Needs NLTK's ``punkt_tab`` and ``perluniprops`` data.

    Example:
        >>> r = Bleu().evaluate("According to wikipedia, Marie Curie was not born in Paris but in Warsaw.",
        ...                     "Marie Curie was born in Warsaw.")
        >>> r.score
        0.1550967560878879
    """

    type_name = "bleu"
    default_threshold = 0.5

    def __init__(self, **shared: Any) -> None:
        super().__init__(**shared)
        from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu

        self._bleu = sentence_bleu
        self._smoothing = SmoothingFunction().method4

    def _score(self, reference: list[str], hypothesis: list[str], details: dict[str, Any]) -> float:
        details["smoothing"] = "method4"
        return float(self._bleu([reference], hypothesis, smoothing_function=self._smoothing))


class Gleu(_TokenMetric):
    """NLTK ``sentence_gleu`` over 1- to 4-grams, as Azure's ``GleuScoreEvaluator``.

    Two empty texts score 0.0. Case-sensitive. ``threshold=0.5``.

    Example:
        >>> Gleu().evaluate("Tokyo is the capital of Japan.", "The capital of Japan is Tokyo.").score
        0.4090909090909091
    """

    type_name = "gleu"
    default_threshold = 0.5

    def __init__(self, **shared: Any) -> None:
        super().__init__(**shared)
        from nltk.translate.gleu_score import sentence_gleu

        self._gleu = sentence_gleu

    def _score(self, reference: list[str], hypothesis: list[str], details: dict[str, Any]) -> float:
        return float(self._gleu([reference], hypothesis, min_len=1, max_len=4))


class Meteor(_TokenMetric):
    """NLTK ``meteor_score`` with WordNet synonyms, as Azure's ``MeteorScoreEvaluator``.

    Matching is exact (lowercased), then Porter stems, then WordNet 3.0 synonyms
    (``synonyms=False`` skips that stage). As in NLTK, the synonym stage looks up the
    *stemmed* leftovers, so "auto"/"car" match but "automobile"/"car" do not.
    ``alpha=0.9, beta=3.0, gamma=0.5``, ``threshold=0.5``. One identical word scores 0.5
    (the fragmentation penalty).
    Needs NLTK's ``wordnet``, ``punkt_tab`` and ``perluniprops`` data; WordNet is loaded
    once per process, when the first METEOR evaluator is built.

    Example:
        >>> Meteor().evaluate("The auto is red.", "The car is red.").score
        0.996
        >>> Meteor(synonyms=False).evaluate("The auto is red.", "The car is red.").score
        0.7500000000000001
    """

    type_name = "meteor"
    default_threshold = 0.5

    def __init__(
        self,
        alpha: float = 0.9,
        beta: float = 3.0,
        gamma: float = 0.5,
        *,
        synonyms: bool = True,
        **shared: Any,
    ) -> None:
        key = self.type_name
        self.alpha = require_number(f"{key}.alpha", alpha, low=0.0, high=1.0)
        self.beta = require_number(f"{key}.beta", beta, low=0.0)
        self.gamma = require_number(f"{key}.gamma", gamma, low=0.0, high=1.0)
        self.synonyms = check_bool(f"{key}.synonyms", synonyms)
        super().__init__(**shared)
        from nltk.stem.porter import PorterStemmer
        from nltk.translate.meteor_score import meteor_score

        self._meteor = meteor_score
        self._stemmer = PorterStemmer()
        self._wordnet: Any = _nltk_data.synonym_source(key) if synonyms else _nltk_data.NoSynonyms()

    def _score(self, reference: list[str], hypothesis: list[str], details: dict[str, Any]) -> float:
        details["synonyms"] = self.synonyms
        return float(
            self._meteor(
                [reference],
                hypothesis,
                stemmer=self._stemmer,
                wordnet=self._wordnet,
                alpha=self.alpha,
                beta=self.beta,
                gamma=self.gamma,
            )
        )

    def __repr__(self) -> str:
        return (
            f"Meteor(alpha={self.alpha}, beta={self.beta}, gamma={self.gamma}, synonyms={self.synonyms}, "
            f"name={self.name!r}, threshold={self.threshold!r})"
        )
