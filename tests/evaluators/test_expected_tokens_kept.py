"""BLEU, GLEU and METEOR keep the tokens of expected texts they saw: the numbers stay NLTK's.

Expected answers repeat (a golden set, a dataset's references), and splitting sentences is most
of what BLEU costs, so an evaluator keeps the tokens of the last `KEPT` short expected texts.
These tests score with one evaluator instance, expected texts repeating in any order, and compare
every score with NLTK's on NLTK's own tokens.
"""

from __future__ import annotations

import nltk
from hypothesis import given, settings
from hypothesis import strategies as st
from nltk.tokenize.nist import NISTTokenizer
from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu
from nltk.translate.gleu_score import sentence_gleu
from nltk.translate.meteor_score import meteor_score

from tracesim.evaluators import Bleu, Gleu, Meteor
from tracesim.evaluators._tokenize import KEPT, KEPT_CHARS, AzureTokenizer

EXPECTED = [
    "Marie Curie won the Nobel Prize in Chemistry in 1911.",
    "She was born in Warsaw. She moved to Paris in 1891.",
    "Ada Lovelace wrote the first published algorithm.",
    "Zoë a déménagé à Paris en 1891.",  # not ASCII: NIST's international tokenizer
    "",
]
OUTPUTS = st.text(alphabet="abcdefghij .,ëé19", max_size=60) | st.sampled_from(EXPECTED)

# one instance each, as a scoring worker keeps them: what they keep carries from call to call
BLEU, GLEU, METEOR = Bleu(), Gleu(), Meteor()


def _tokens(text: str) -> list[str]:
    if text.isascii():
        return list(nltk.word_tokenize(text))
    return list(NISTTokenizer().international_tokenize(text))


@settings(max_examples=200, deadline=None)
@given(output=OUTPUTS, expected=st.sampled_from(EXPECTED))
def test_scores_with_kept_tokens_equal_nltks(output: str, expected: str) -> None:
    hyp, ref = _tokens(output), _tokens(expected)
    bleu = sentence_bleu([ref], hyp, smoothing_function=SmoothingFunction().method4)
    assert BLEU.evaluate(output, expected).score == float(bleu)
    assert GLEU.evaluate(output, expected).score == sentence_gleu([ref], hyp)
    meteor = meteor_score([ref], hyp, alpha=0.9, beta=3.0, gamma=0.5)
    assert METEOR.evaluate(output, expected).score == meteor


def test_each_call_gets_tokens_of_its_own() -> None:
    tokenizer = AzureTokenizer("bleu")
    first, _ = tokenizer.tokenize_expected(EXPECTED[0])
    first.clear()  # what a metric does with its list stays with that call
    again, name = tokenizer.tokenize_expected(EXPECTED[0])
    assert (again, name) == tokenizer.tokenize(EXPECTED[0])
    assert again


def test_what_is_kept_is_bounded_in_count_and_length() -> None:
    tokenizer = AzureTokenizer("bleu")
    for i in range(KEPT + 50):
        tokenizer.tokenize_expected(f"Answer number {i} is here.")
    assert tokenizer._kept.cache_info().currsize == KEPT
    tokenizer._kept.cache_clear()
    long_text = "word " * (KEPT_CHARS // 5 + 1)
    assert tokenizer.tokenize_expected(long_text) == tokenizer.tokenize(long_text)
    assert tokenizer._kept.cache_info().currsize == 0  # too long to keep
