"""``bleu``, ``gleu`` and ``meteor``: NLTK's sentence metrics on Azure's tokens.

BLEU and GLEU are NLTK's numbers computed by ``_ngrams`` (each n-gram order counted once, in
C); METEOR is NLTK's ``meteor_score`` itself.
"""

from __future__ import annotations

from typing import Any

from tracesim.evaluators import _nltk_data
from tracesim.evaluators._base import DEFAULT, Evaluator, Measurement, _Default
from tracesim.evaluators._long_texts import Caps, CutsLongTexts, TextCap
from tracesim.evaluators._ngrams import sentence_bleu4, sentence_gleu
from tracesim.evaluators._options import check_bool, require_number
from tracesim.evaluators._tokenize import AzureTokenizer

__all__ = ["BLEU_CAPS", "METEOR_CAPS", "Bleu", "Gleu", "Meteor"]

#: BLEU's and GLEU's default caps per text: on a host's scoring thread (a call at the cap
#: ~0.1 s) and anywhere else (~1 s at 200,000 characters); see ``_long_texts``.
BLEU_CAPS = Caps(thread=20_000, worker=200_000)
#: METEOR's: ~0.15 s at 10,000 characters, ~0.5 s at 100,000.
METEOR_CAPS = Caps(thread=10_000, worker=100_000)


class _TokenMetric(CutsLongTexts, Evaluator):
    """Tokenize both texts with :class:`AzureTokenizer`, then score the token lists.

    Each text is first cut to ``max_chars`` code points (NLTK's tokenizers and metrics are
    pure Python; the cap bounds the time of a call): the user's number, else the default of
    where the call runs (``_caps``; see ``_long_texts``). The NLTK data is looked up when the
    evaluator is built and loaded on its first call (see ``_nltk_data``).
    """

    score_range = (0.0, 1.0)
    _packages: tuple[str, ...] = ("punkt_tab", "perluniprops")
    _caps = BLEU_CAPS

    def __init__(self, *, max_chars: int | _Default | None, **shared: Any) -> None:
        self._cap = TextCap(self.type_name, max_chars, self._caps)
        super().__init__(**shared)
        self._tokenizer: AzureTokenizer | None = None
        self._missing = _nltk_data.report_missing(
            _nltk_data.find_missing(list(self._packages)), self.type_name
        )

    @property
    def missing_data(self) -> tuple[str, ...]:
        """The NLTK data packages this evaluator needs and NLTK cannot find (its calls error)."""
        return self._missing.packages if self._missing is not None else ()

    def _load(self) -> AzureTokenizer:
        """What the first call needs, loaded once per process; raises when data is missing."""
        if self._missing is not None:
            raise self._missing
        tokenizer = self._tokenizer
        if tokenizer is None:
            tokenizer = self._tokenizer = AzureTokenizer(self.type_name)
        return tokenizer

    def measure(self, output: Any, expected: Any, *, input: Any = None) -> Measurement:
        tokenizer = self._load()
        a, b, cut = self._cap.cut(output, expected, self.name)
        hypothesis, hyp_tokenizer = tokenizer.tokenize(a)
        reference, ref_tokenizer = tokenizer.tokenize_expected(b)
        details: dict[str, Any] = {
            "tokenizer": {"output": hyp_tokenizer, "expected": ref_tokenizer},
            "tokens": {"output": len(hypothesis), "expected": len(reference)},
        }
        if cut is not None:
            details["truncated_to"] = cut
        return Measurement(self._score(reference, hypothesis, details), details)

    def _score(self, reference: list[str], hypothesis: list[str], details: dict[str, Any]) -> float:
        raise NotImplementedError

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(max_chars={self._cap.setting!r}, name={self.name!r}, "
            f"threshold={self.threshold!r})"
        )


class Bleu(_TokenMetric):
    """NLTK ``sentence_bleu``: uniform 4-gram weights, Chen & Cherry smoothing method 4.

    The numbers of Azure AI Evaluation's ``BleuScoreEvaluator`` (which returns int 0
    when no unigram matches; this returns 0.0). Case-sensitive. ``threshold=0.5``.
    Needs NLTK's ``punkt_tab`` and ``perluniprops`` data. Each text is cut to its first
    ``max_chars`` code points first (``details.truncated_to`` says so): NLTK's sentence
    splitter is pure Python. By default the cap is 20,000 on tracesim's scoring threads in
    the host's interpreter (a call there takes under a fifth of a second; the first cut is
    logged once) and 200,000 anywhere else (worker processes, direct calls, offline
    scoring: about a second at the bound), so NLTK's number on any realistic text. A
    ``max_chars`` you give applies everywhere; ``max_chars=None`` removes the cap.

    Example:
        >>> r = Bleu().evaluate("According to wikipedia, Marie Curie was not born in Paris but in Warsaw.",
        ...                     "Marie Curie was born in Warsaw.")
        >>> r.score
        0.1550967560878879
    """

    type_name = "bleu"
    default_threshold = 0.5

    def __init__(self, *, max_chars: int | _Default | None = DEFAULT, **shared: Any) -> None:
        super().__init__(max_chars=max_chars, **shared)

    def _score(self, reference: list[str], hypothesis: list[str], details: dict[str, Any]) -> float:
        details["smoothing"] = "method4"
        return sentence_bleu4(reference, hypothesis)


class Gleu(_TokenMetric):
    """NLTK ``sentence_gleu`` over 1- to 4-grams, as Azure's ``GleuScoreEvaluator``.

    Two empty texts score 0.0. Case-sensitive. ``threshold=0.5``. Each text is cut to its
    first ``max_chars`` code points first (``details.truncated_to`` says so): by default
    20,000 on tracesim's scoring threads in the host's interpreter (under a fifth of a
    second; the first cut is logged once), 200,000 anywhere else (about a second). A
    ``max_chars`` you give applies everywhere; ``max_chars=None`` removes the cap.

    Example:
        >>> Gleu().evaluate("Tokyo is the capital of Japan.", "The capital of Japan is Tokyo.").score
        0.4090909090909091
    """

    type_name = "gleu"
    default_threshold = 0.5

    def __init__(self, *, max_chars: int | _Default | None = DEFAULT, **shared: Any) -> None:
        super().__init__(max_chars=max_chars, **shared)

    def _score(self, reference: list[str], hypothesis: list[str], details: dict[str, Any]) -> float:
        return sentence_gleu(reference, hypothesis)


class Meteor(_TokenMetric):
    """NLTK ``meteor_score`` with WordNet synonyms, as Azure's ``MeteorScoreEvaluator``.

    Matching is exact (lowercased), then Porter stems, then WordNet 3.0 synonyms
    (``synonyms=False`` skips that stage). As in NLTK, the synonym stage looks up the
    *stemmed* leftovers, so "auto"/"car" match but "automobile"/"car" do not.
    ``alpha=0.9, beta=3.0, gamma=0.5``, ``threshold=0.5``. One identical word scores 0.5
    (the fragmentation penalty).
    Needs NLTK's ``wordnet``, ``punkt_tab`` and ``perluniprops`` data; WordNet is loaded
    once per process, on the first call of a METEOR evaluator (a few seconds, in the scoring
    thread), not when one is built. Each text is cut to its first ``max_chars`` code points
    first (``details.truncated_to`` says so): tokens, Porter stems and WordNet lookups of
    words not seen before are pure Python. By default the cap is 10,000 on tracesim's
    scoring threads in the host's interpreter (a call there takes under a third of a
    second; the first cut is logged once) and 100,000 anywhere else (worker processes,
    direct calls, offline scoring: about half a second at the bound), so NLTK's number on
    any realistic text. A ``max_chars`` you give applies everywhere; ``max_chars=None``
    removes the cap.

    Example:
        >>> Meteor().evaluate("The auto is red.", "The car is red.").score
        0.996
        >>> Meteor(synonyms=False).evaluate("The auto is red.", "The car is red.").score
        0.7500000000000001
    """

    type_name = "meteor"
    default_threshold = 0.5
    _caps = METEOR_CAPS

    def __init__(
        self,
        alpha: float = 0.9,
        beta: float = 3.0,
        gamma: float = 0.5,
        *,
        synonyms: bool = True,
        max_chars: int | _Default | None = DEFAULT,
        **shared: Any,
    ) -> None:
        key = self.type_name
        self.alpha = require_number(f"{key}.alpha", alpha, low=0.0, high=1.0)
        self.beta = require_number(f"{key}.beta", beta, low=0.0)
        self.gamma = require_number(f"{key}.gamma", gamma, low=0.0, high=1.0)
        self.synonyms = check_bool(f"{key}.synonyms", synonyms)
        self._packages = (*_TokenMetric._packages, "wordnet") if self.synonyms else _TokenMetric._packages
        super().__init__(max_chars=max_chars, **shared)
        # NLTK is imported on the first call, not here: a host whose evaluators score in worker
        # processes never imports it (see _nltk_data.find_missing); WordNet takes seconds to load.
        self._meteor: Any = None
        self._stemmer: Any = None
        self._wordnet: Any = None

    def _load(self) -> AzureTokenizer:
        tokenizer = super()._load()
        if self._meteor is None:
            from nltk.stem.porter import PorterStemmer
            from nltk.translate.meteor_score import meteor_score

            self._stemmer = _CachedStems(PorterStemmer())
            self._meteor = meteor_score
        if self._wordnet is None:
            self._wordnet = (
                _nltk_data.synonym_source(self.type_name) if self.synonyms else _nltk_data.NoSynonyms()
            )
        return tokenizer

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
            f"max_chars={self._cap.setting!r}, name={self.name!r}, threshold={self.threshold!r})"
        )


class _CachedStems:
    """A stemmer whose stems are remembered: Porter's rules are pure Python and a pure function.

    Words repeat across texts (and within one), so most lookups are hits. The table is
    cleared when it reaches ``size`` words, which bounds its memory.
    """

    def __init__(self, stemmer: Any, size: int = 100_000) -> None:
        self._stem = stemmer.stem
        self._known: dict[str, str] = {}
        self._size = size

    def stem(self, word: str) -> str:
        known = self._known.get(word)
        if known is None:
            known = self._stem(word)
            if len(self._known) >= self._size:
                self._known.clear()
            self._known[word] = known
        return known
