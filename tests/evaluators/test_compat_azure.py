"""compat.azure against what azure-ai-evaluation itself returns (1.16 and the newest release).

``data/azure/golden-<version>.json`` holds dicts and exceptions recorded from the real
package by ``data/azure/record.py`` (its own virtualenv; this test needs no Azure). Every
recorded case is replayed against the façade built with that version's ``result_format``
(``"1.16"`` for 1.16.x, ``"1.18"`` for 1.17 and later), which must return exactly that
version's dict: the same keys in the same order, each value of the same type and the same
value (floats bit for bit). The second half ports what Azure's own unit tests check for these
evaluators (missing inputs, thresholds, ROUGE thresholds and types, conversations).
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tracesim.evaluators.compat import azure
from tracesim.evaluators.compat.azure import (
    BleuScoreEvaluator,
    ErrorBlame,
    ErrorCategory,
    ErrorTarget,
    EvaluationException,
    F1ScoreEvaluator,
    GleuScoreEvaluator,
    MeteorScoreEvaluator,
    RougeScoreEvaluator,
    RougeType,
)

DATA = Path(__file__).parent / "data" / "azure"
GOLDEN = {
    json.loads(path.read_text(encoding="utf-8"))["version"]: path for path in DATA.glob("golden-*.json")
}
MARIE_R = "According to wikipedia, Marie Curie was not born in Paris but in Warsaw."
MARIE_E = "Marie Curie was born in Warsaw."


def _load(version: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(GOLDEN[version].read_text(encoding="utf-8"))
    return data


def _groups() -> list[Any]:
    """One test per (version, evaluator): a failure lists every case that differs."""
    params = []
    for version in sorted(GOLDEN):
        names = sorted({case["evaluator"] for case in _load(version)["cases"]})
        params += [pytest.param(version, name, id=f"{version}-{name}") for name in names]
    return params


def result_format(version: str) -> str:
    """The façade's ``result_format`` for a recorded release: 1.16's dict before 1.17."""
    return "1.16" if tuple(map(int, version.split(".")))[:2] < (1, 17) else "1.18"


@functools.cache
def _evaluator(name: str, init_json: str, version: str) -> Any:
    # Built once per configuration, as a user would (the cores load NLTK data when built).
    init = json.loads(init_json)
    kwargs = {**init.get("kwargs", {}), "result_format": result_format(version)}
    return getattr(azure, name)(*init.get("args", []), **kwargs)


def _build_and_call(inputs: dict[str, list[str]], case: dict[str, Any], version: str) -> Any:
    call = case["call"]
    kwargs = dict(call.get("kwargs", {}))
    if "pair" in call:
        kwargs["response"], kwargs["ground_truth"] = inputs[call["pair"]]
    evaluator = _evaluator(case["evaluator"], json.dumps(case["init"], sort_keys=True), version)
    return evaluator(*call.get("args", []), **kwargs)


def identical(actual: Any, expected: Any) -> bool:
    """Same type and value; floats bit for bit (NaN equals NaN); dicts and lists exactly."""
    if type(actual) is not type(expected):
        return False
    if isinstance(expected, float):
        return actual == expected or (math.isnan(actual) and math.isnan(expected))
    if isinstance(expected, dict):
        return actual.keys() == expected.keys() and all(identical(actual[k], v) for k, v in expected.items())
    if isinstance(expected, list):
        return len(actual) == len(expected) and all(map(identical, actual, expected))
    return bool(actual == expected)


def missing_or_different(actual: dict[str, Any], expected: dict[str, Any]) -> list[str]:
    """Keys of ``expected`` that ``actual`` lacks or holds differently (per-turn lists likewise)."""
    wrong = []
    for key, value in expected.items():
        if key == "evaluation_per_turn" and isinstance(actual.get(key), dict):
            wrong += [f"{key}.{k}" for k in missing_or_different(actual[key], value)]
        elif key not in actual or not identical(actual[key], value):
            wrong.append(f"{key}: façade {actual.get(key, '<missing>')!r}, Azure {value!r}")
    return wrong


def check_raised(error: BaseException, recorded: dict[str, Any]) -> None:
    kind = recorded["type"]
    if kind == "EvaluationException":
        assert isinstance(error, EvaluationException), repr(error)
        assert (error.args[0], str(error)) == (recorded["message"], recorded["str"])
        for field in ("blame", "category", "target"):
            assert getattr(error, field).value == recorded[field]["value"], field
    elif kind == "ValueError":  # ROUGE types Azure's scorer refuses; here refused when built
        assert isinstance(error, ValueError), repr(error)
        assert error.args[0] == recorded["message"]
    elif kind == "TypeError":  # 1.16's float check on ROUGE thresholds, or a threshold of no number
        assert isinstance(error, TypeError), repr(error)
        if "must be a float" in recorded["message"]:
            assert error.args[0] == recorded["message"]
    else:  # AttributeError/KeyError from deep inside Azure: the façade says which input is wrong
        assert kind in ("AttributeError", "KeyError"), kind
        assert isinstance(error, EvaluationException), repr(error)
        assert error.blame is ErrorBlame.USER_ERROR
        assert isinstance(error, TypeError) == (kind == "AttributeError")


def test_golden_files_cover_1_16_and_a_newer_release() -> None:
    versions = [tuple(int(part) for part in version.split(".")) for version in GOLDEN]
    assert any(v[:2] == (1, 16) for v in versions), sorted(GOLDEN)
    assert any(v >= (1, 18) for v in versions), sorted(GOLDEN)
    for version in GOLDEN:
        data = _load(version)
        assert len(data["cases"]) >= 600
        assert sum("raises" in case for case in data["cases"]) >= 60


def _problem(inputs: dict[str, list[str]], case: dict[str, Any], version: str) -> str | None:
    """How the façade's answer to one recorded case differs from Azure's, or None."""
    if "raises" in case:
        try:
            returned = _build_and_call(inputs, case, version)
        except Exception as error:
            try:
                check_raised(error, case["raises"])
            except AssertionError as mismatch:
                return f"{case['id']}: raised {error!r}, Azure {case['raises']}: {mismatch}"
            return None
        return f"{case['id']}: returned {returned!r}, Azure raised {case['raises']['type']}"
    returned = _build_and_call(inputs, case, version)
    wrong = missing_or_different(returned, case["returns"])
    if list(returned) != list(case["returns"]):
        wrong.append(f"keys: façade {list(returned)}, Azure {list(case['returns'])}")
    return f"{case['id']}: {wrong}" if wrong else None


@pytest.mark.parametrize(("version", "evaluator"), _groups())
def test_facade_returns_what_azure_returns(version: str, evaluator: str) -> None:
    data = _load(version)
    cases = [case for case in data["cases"] if case["evaluator"] == evaluator]
    problems = [p for p in (_problem(data["inputs"], case, version) for case in cases) if p is not None]
    assert problems == [], f"{len(problems)} of {len(cases)} cases differ"
    assert len(cases) >= 90


def _returned_keys(version: str, result_format: str | None) -> Iterator[tuple[str, list[str], list[str]]]:
    """(case id, keys the façade returns, keys the release returned) for each recorded return."""
    data = _load(version)
    for case in data["cases"]:
        if case.get("returns"):
            call = case["call"]
            kwargs = dict(call.get("kwargs", {}))
            if "pair" in call:
                kwargs["response"], kwargs["ground_truth"] = data["inputs"][call["pair"]]
            init = dict(case["init"].get("kwargs", {}))
            if result_format is not None:
                init["result_format"] = result_format
            evaluator = getattr(azure, case["evaluator"])(*case["init"].get("args", []), **init)
            keys = list(evaluator(*call.get("args", []), **kwargs))
            yield case["id"], keys, list(case["returns"])


NEWEST, OLDEST = (f(GOLDEN, key=lambda v: tuple(map(int, v.split(".")))) for f in (max, min))


def test_result_format_1_18_gives_exactly_the_newest_releases_keys() -> None:
    checked = [(case, keys, wanted) for case, keys, wanted in _returned_keys(NEWEST, "1.18")]
    assert all(keys == wanted for _, keys, wanted in checked), next(c for c in checked if c[1] != c[2])
    assert len(checked) >= 550


def test_the_default_gives_the_newest_releases_keys_then_those_only_1_16_has() -> None:
    """Code written for 1.18 and code written for 1.16 both find their keys (in the evaluator
    contract's documented dicts too: ``f1_result``, ``rouge_precision``...)."""
    old = {case: wanted for case, _, wanted in _returned_keys(OLDEST, "1.16")}
    compared = 0
    for case, keys, wanted in _returned_keys(NEWEST, None):
        assert [key for key in keys if key in wanted] == wanted, case  # 1.18's keys, in its order
        if case in old:
            assert set(keys) == set(wanted) | set(old[case]), case
            compared += 1
    assert compared >= 100


def test_evaluator_ids_are_azures() -> None:
    for version in GOLDEN:
        ids = _load(version)["ids"]
        assert len(ids) == 5
        for name, ident in ids.items():
            assert getattr(azure, name).id == ident, (version, name)


# -- what Azure's own unit tests check for these evaluators, against the façade -----------------

SINGLE = [
    (F1ScoreEvaluator, "f1", "f1_score"),
    (BleuScoreEvaluator, "bleu", "bleu"),
    (GleuScoreEvaluator, "gleu", "gleu"),
    (MeteorScoreEvaluator, "meteor", "meteor"),
]


@pytest.mark.parametrize(("cls", "key", "metric"), SINGLE)
def test_threshold_sets_result_and_is_reported(cls: Any, key: str, metric: str) -> None:
    score = cls()(response=MARIE_R, ground_truth=MARIE_E)[f"{metric}_score"]
    for threshold, passed in ((score, True), (score + 1e-9, False), (0.0, True), (1.0, False)):
        old = cls(threshold=threshold, result_format="1.16")(response=MARIE_R, ground_truth=MARIE_E)
        out = cls(threshold=threshold)(response=MARIE_R, ground_truth=MARIE_E)
        verdict = "pass" if passed else "fail"
        assert (old[f"{key}_result"], old[f"{key}_threshold"]) == (verdict, threshold)
        assert (out[f"{metric}_result"], out[f"{metric}_threshold"], out[f"{metric}_passed"]) == (
            verdict,
            threshold,
            passed,
        )
        assert (out[f"{metric}_status"], out[f"{metric}_reason"], out[f"{metric}_properties"]) == (
            "completed",
            None,
            None,
        )


@pytest.mark.parametrize(("cls", "key", "metric"), SINGLE)
def test_missing_input_raises_azure_message(cls: Any, key: str, metric: str) -> None:
    for kwargs in ({}, {"response": "a"}, {"ground_truth": "a"}, {"response": None, "ground_truth": "a"}):
        with pytest.raises(EvaluationException) as caught:
            cls()(**kwargs)
        message = f"{cls.__name__}: Either 'conversation' or individual inputs must be provided."
        assert caught.value.args[0] == message
        assert str(caught.value) == f"(UserError) {message}"
        assert (caught.value.blame, caught.value.category, caught.value.target) == (
            ErrorBlame.USER_ERROR,
            ErrorCategory.INVALID_VALUE,
            ErrorTarget.CONVERSATION,
        )


def test_rouge_default_and_custom_thresholds() -> None:
    out = RougeScoreEvaluator(rouge_type=RougeType.ROUGE_1)(response=MARIE_R, ground_truth=MARIE_E)
    flat = out["rouge_properties"]
    assert [flat[f"rouge_{m}_threshold"] for m in ("precision", "recall", "f1_score")] == [0.5, 0.5, 0.5]
    custom = RougeScoreEvaluator(
        rouge_type=RougeType.ROUGE_L, precision_threshold=0.9, recall_threshold=0.1, f1_score_threshold=0.75
    )(response=MARIE_R, ground_truth=MARIE_E)
    # precision 6/13 and F1 12/19 fall short; recall 1.0 passes.
    properties = custom["rouge_properties"]
    assert [properties[f"rouge_{m}_result"] for m in ("precision", "recall", "f1_score")] == [
        "fail",
        "pass",
        "fail",
    ]
    assert (custom["rouge_result"], custom["rouge_passed"], custom["rouge_threshold"]) == (
        "fail",
        False,
        0.75,
    )
    assert [properties[f"rouge_{m}_passed"] for m in ("precision", "recall", "f1_score")] == [
        False,
        True,
        False,
    ]
    assert properties["rouge_precision_threshold"] == 0.9


@pytest.mark.parametrize("rouge_type", [*RougeType, "rouge6", "rouge9", "rougeLsum"])
def test_rouge_types_azure_takes(rouge_type: Any) -> None:
    out = RougeScoreEvaluator(
        rouge_type, precision_threshold=0.0, recall_threshold=0.0, f1_score_threshold=0.0
    )(
        response="the cat sat on the mat today with a hat on",
        ground_truth="the cat sat on the mat today with a hat",
    )
    assert out["rouge_properties"]["rouge_recall"] == 1.0
    assert out["rouge_properties"]["rouge_f1_score_result"] == out["rouge_result"] == "pass"


@pytest.mark.parametrize(
    ("rouge_type", "message"),
    [("rouge0", "rougen requires positive n: rouge0"), ("rouge10", "Invalid rouge type: rouge10")],
)
def test_rouge_types_azure_refuses(rouge_type: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        RougeScoreEvaluator(rouge_type)


def test_rouge_threshold_not_a_float_raises_as_both_versions_do() -> None:
    for name in ("precision_threshold", "recall_threshold", "f1_score_threshold"):
        with pytest.raises(EvaluationException) as caught:
            RougeScoreEvaluator("rouge1", **{name: 1})  # type: ignore[arg-type]
        assert isinstance(caught.value, TypeError)  # 1.16 raised TypeError
        assert caught.value.args[0] == f"{name} must be a float, got <class 'int'>"
        assert caught.value.target is ErrorTarget.ROUGE_EVALUATOR


@pytest.mark.parametrize(("cls", "key", "metric"), SINGLE)
def test_conversation_is_scored_per_turn(cls: Any, key: str, metric: str) -> None:
    evaluator = cls()
    turns = [("Paris, France", "Paris"), (MARIE_R, MARIE_E)]
    messages: list[dict[str, str]] = []
    for response, truth in turns:
        messages += [
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": response, "ground_truth": truth},
        ]
    out = evaluator(conversation={"messages": messages})
    singles = [evaluator(response=r, ground_truth=g) for r, g in turns]
    assert out["evaluation_per_turn"][f"{metric}_score"] == [s[f"{metric}_score"] for s in singles]
    assert out[f"{metric}_score"] == sum(s[f"{metric}_score"] for s in singles) / 2
    assert out[f"{metric}_passed"] == sum(s[f"{metric}_passed"] for s in singles) / 2
    assert out[f"{metric}_result"] == singles[-1][f"{metric}_result"]
    old = cls(result_format="1.16")(conversation={"messages": messages})
    assert old[f"{key}_result"] == singles[-1][f"{metric}_result"]
    assert list(old) == [f"{key}_score", f"{key}_result", f"{key}_threshold", "evaluation_per_turn"]
    one = evaluator(conversation={"messages": messages[:2]})
    assert one == singles[0]
    assert evaluator(conversation={"messages": []}) == {}
    with pytest.raises(EvaluationException, match="Cannot provide both 'conversation' and individual inputs"):
        evaluator(conversation={"messages": messages}, response="a")


def test_wrong_input_types_raise_evaluation_exception_naming_the_input() -> None:
    with pytest.raises(EvaluationException, match="'response' must be a string, got int") as caught:
        F1ScoreEvaluator()(response=123, ground_truth="123")  # type: ignore[arg-type]
    assert isinstance(caught.value, TypeError)
    with pytest.raises(TypeError, match="threshold must be a number"):
        BleuScoreEvaluator(threshold="0.5")  # type: ignore[arg-type]
    with pytest.raises(EvaluationException, match="image content"):
        GleuScoreEvaluator()(
            conversation={
                "messages": [
                    {
                        "role": "user",
                        "content": [{"type": "image_url", "image_url": {"url": "https://x/a.png"}}],
                    },
                    {"role": "assistant", "content": "a cat", "ground_truth": "a cat"},
                ]
            }
        )


def test_other_keywords_are_ignored_as_in_azure() -> None:
    plain = MeteorScoreEvaluator()(response=MARIE_R, ground_truth=MARIE_E)
    assert MeteorScoreEvaluator()(response=MARIE_R, ground_truth=MARIE_E, query="q", context="c") == plain


def test_exception_carries_azure_fields() -> None:
    error = EvaluationException(
        "boom", internal_message="b**m", target=ErrorTarget.EVALUATE, tsg_link="https://example.invalid/tsg"
    )
    assert (error.message, error.internal_message, error.blame, error.category) == (
        "boom",
        "b**m",
        ErrorBlame.UNKNOWN,
        ErrorCategory.UNKNOWN,
    )
    assert str(error) == "(InternalError) boom\nVisit https://example.invalid/tsg to troubleshoot this issue."
