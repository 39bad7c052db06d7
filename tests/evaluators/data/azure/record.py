"""Record what azure-ai-evaluation's NLP evaluators return, as golden data for the Azure façade.

Run it with the Python of a virtualenv that has ``azure-ai-evaluation`` installed (never
tracesim's own), from the repository root, with NLTK's data on ``NLTK_DATA``::

    python3 -m venv /tmp/azv && /tmp/azv/bin/pip install azure-ai-evaluation      # newest
    python3 -m venv /tmp/azv116 && /tmp/azv116/bin/pip install "azure-ai-evaluation==1.16.*"
    NLTK_DATA=../shared/nltk_data /tmp/azv/bin/python tests/evaluators/data/azure/record.py
    NLTK_DATA=../shared/nltk_data /tmp/azv116/bin/python tests/evaluators/data/azure/record.py

Each run writes ``golden-<version>.json`` beside this file: the package and NLTK versions,
then one case per line: the evaluator, how it was built and called, and the dict it
returned or the exception it raised (type, message, ``str()``, blame/category/target).
``tests/evaluators/test_compat_azure.py`` replays every case against
``tracesim.evaluators.compat.azure`` without azure-ai-evaluation installed.

The inputs are the pairs below plus every response/expected pair of
``../conformance/cases.jsonl``.
"""

from __future__ import annotations

import json
import logging
import sys
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
CONFORMANCE = HERE.parent / "conformance" / "cases.jsonl"

MARIE_R = "According to wikipedia, Marie Curie was not born in Paris but in Warsaw."
MARIE_E = "Marie Curie was born in Warsaw."
PAIRS: dict[str, tuple[str, str]] = {
    "marie": (MARIE_R, MARIE_E),
    "paris": ("Paris, France", "Paris"),
    "identical": ("The cat sat on the mat.", "The cat sat on the mat."),
    "disjoint": ("x", "y"),
    "both-empty": ("", ""),
    "empty-response": ("", MARIE_E),
    "empty-truth": (MARIE_E, ""),
    "whitespace": ("   ", "\n\t"),
    "punctuation": ("!!! ... ???", "?"),
    "articles": ("a an the", "the the"),
    "accents": ("Le café est très bon à Paris.", "Le café à Paris est bon."),
    "cjk": ("東京は日本の首都です。", "日本の首都は東京です。"),
    "emoji": ("I love it 😀!", "I love it!"),
    "case": ("HELLO WORLD", "hello world"),
    "multiline": (
        "Marie Curie was a physicist.\nShe was born in Warsaw.\n\nShe won two Nobel prizes.",
        "Curie was born in Warsaw.\nShe won the Nobel prize twice.",
    ),
    "numbers": ("In 1903 and 1911 she won 2 prizes.", "She won 2 Nobel prizes, in 1903 and 1911."),
    "repeated": ("the the the the the the the", "the cat is on the mat"),
    "synonyms": ("The quick brown fox jumped over the lazy dog.", "A fast brown fox leaps over a lazy dog."),
    "long-ngrams": (
        "one two three four five six seven eight nine ten eleven twelve",
        "zero one two three four five six seven eight nine ten",
    ),
}
EVERY_ROUGE = ("marie", "accents", "multiline", "numbers", "repeated", "long-ngrams", "both-empty")
SINGLE = ("F1ScoreEvaluator", "BleuScoreEvaluator", "GleuScoreEvaluator", "MeteorScoreEvaluator")
ROUGE_TYPES = ("rouge1", "rouge2", "rouge3", "rouge4", "rouge5", "rougeL")
TURNS = [
    {"role": "system", "content": "Answer briefly."},
    {"role": "user", "content": "Where was Marie Curie born?"},
    {"role": "assistant", "content": MARIE_R, "ground_truth": MARIE_E},
    {"role": "user", "content": "And the capital of France?"},
    {"role": "tool", "content": "lookup: Paris"},
    {"role": "assistant", "content": "Paris, France", "ground_truth": "Paris"},
]


def case(
    evaluator: str, init: dict[str, Any] | None = None, pair: str | None = None, **call: Any
) -> dict[str, Any]:
    """One recorded call: ``evaluator(*init.args, **init.kwargs)(*call.args, **call.kwargs)``.

    With ``pair``, the call also gets ``response`` and ``ground_truth`` from ``inputs[pair]``;
    absent fields are empty.
    """
    init = init or {}
    spec: dict[str, Any] = {"evaluator": evaluator, "init": init, "call": {}}
    if call.get("_args"):
        spec["call"]["args"] = call.pop("_args")
    if call:
        spec["call"]["kwargs"] = call
    if pair is not None:
        spec["call"]["pair"] = pair
    return spec


def inputs() -> dict[str, list[str]]:
    """Named response/ground-truth pairs: ours, then the conformance file's."""
    table = {name: list(texts) for name, texts in PAIRS.items()}
    for line in CONFORMANCE.read_text(encoding="utf-8").splitlines():
        item = json.loads(line)
        table[item["id"]] = [item["response"], item["expected"]]
    return table


def rouge(rouge_type: str, **thresholds: float) -> dict[str, Any]:
    return {"args": [rouge_type], "kwargs": thresholds} if thresholds else {"args": [rouge_type]}


def pair_cases() -> list[tuple[str, dict[str, Any]]]:
    found = []
    for name in inputs():
        for evaluator in SINGLE:
            found.append((f"{evaluator}/{name}", case(evaluator, pair=name)))
        for rouge_type in ROUGE_TYPES if name in EVERY_ROUGE else ("rouge1", "rougeL"):
            found.append(
                (
                    f"RougeScoreEvaluator-{rouge_type}/{name}",
                    case("RougeScoreEvaluator", rouge(rouge_type), name),
                )
            )
    for name in ("marie", "multiline", "both-empty", "long-ngrams"):
        for rouge_type in ("rougeLsum", "rouge6", "rouge7", "rouge9"):
            found.append(
                (
                    f"RougeScoreEvaluator-{rouge_type}/{name}",
                    case("RougeScoreEvaluator", rouge(rouge_type), name),
                )
            )
    return found


def threshold_cases() -> list[tuple[str, dict[str, Any]]]:
    found = []
    for evaluator in SINGLE:
        for threshold in (0.0, 1, 0.9, 2.5, -1.0, True):
            for name in ("marie", "identical", "disjoint"):
                found.append(
                    (
                        f"{evaluator}-threshold-{threshold!r}/{name}",
                        case(evaluator, {"kwargs": {"threshold": threshold}}, name),
                    )
                )
        for bad in ("0.5", None):
            found.append(
                (
                    f"{evaluator}-threshold-{bad!r}",
                    case(evaluator, {"kwargs": {"threshold": bad}}, response="a", ground_truth="a"),
                )
            )
    for thresholds in (
        {"precision_threshold": 0.9, "recall_threshold": 0.1, "f1_score_threshold": 0.75},
        {"precision_threshold": 0.0, "recall_threshold": 1.0, "f1_score_threshold": 0.6},
    ):
        label = "-".join(str(v) for v in thresholds.values())
        for rouge_type in ("rouge1", "rougeL"):
            found.append(
                (
                    f"RougeScoreEvaluator-{rouge_type}-thresholds-{label}/marie",
                    case("RougeScoreEvaluator", rouge(rouge_type, **thresholds), "marie"),
                )
            )
    for name in ("precision_threshold", "recall_threshold", "f1_score_threshold"):
        found.append(
            (f"RougeScoreEvaluator-int-{name}", case("RougeScoreEvaluator", rouge("rouge1", **{name: 1})))
        )
    for rouge_type in ("rouge0", "rouge10", "rougeX", "ROUGEL"):
        found.append(
            (
                f"RougeScoreEvaluator-type-{rouge_type}",
                case("RougeScoreEvaluator", rouge(rouge_type), response="a b", ground_truth="a b"),
            )
        )
    for params in ({"args": [0.8]}, {"args": [0.5, 2.0, 0.2]}, {"kwargs": {"alpha": 1.0, "gamma": 0.0}}):
        label = json.dumps(params, sort_keys=True)
        for name in ("marie", "synonyms"):
            found.append((f"MeteorScoreEvaluator-{label}/{name}", case("MeteorScoreEvaluator", params, name)))
    return found


def input_cases() -> list[tuple[str, dict[str, Any]]]:
    """Missing, extra, positional and non-text inputs, and the conversation= forms."""
    everyone = [*SINGLE, "RougeScoreEvaluator"]
    found = []

    def add(label: str, **call: Any) -> None:
        for evaluator in everyone:
            init = rouge("rouge1") if evaluator == "RougeScoreEvaluator" else None
            found.append((f"{evaluator}/{label}", case(evaluator, init, **call)))

    add("response-None", response=None, ground_truth="a")
    add("ground_truth-None", response="a", ground_truth=None)
    add("no-inputs")
    add("only-response", response="a")
    add("positional", _args=["a", "a"])
    add("extra-keywords", response="a b", ground_truth="a c", query="q", context="c")
    add("response-int", response=123, ground_truth="123")
    add("ground_truth-list", response="a", ground_truth=["a"])
    add("conversation-two-turns", conversation={"messages": TURNS})
    add("conversation-one-turn", conversation={"messages": TURNS[:3]})
    add(
        "conversation-no-overlap",
        conversation={
            "messages": [
                {"role": "user", "content": "q"},
                {"role": "assistant", "content": "x", "ground_truth": "y"},
                {"role": "user", "content": "q"},
                {"role": "assistant", "content": "z", "ground_truth": "w"},
            ]
        },
    )
    add(
        "conversation-three-turns-mixed",
        conversation={
            "messages": [
                {"role": "user", "content": "q"},
                {"role": "assistant", "content": "the cat sat", "ground_truth": "the cat sat"},
                {"role": "user", "content": "q"},
                {"role": "assistant", "content": "x", "ground_truth": "y"},
                {"role": "user", "content": "q"},
                {"role": "assistant", "content": MARIE_R, "ground_truth": MARIE_E},
            ]
        },
    )
    add(
        "conversation-no-ground-truth",
        conversation={"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]},
    )
    add(
        "conversation-extra-assistant",
        conversation={"messages": [TURNS[1], TURNS[2], TURNS[5]]},
    )
    add("conversation-no-assistant", conversation={"messages": [{"role": "user", "content": "q"}]})
    add("conversation-empty", conversation={"messages": []})
    add("conversation-and-response", conversation={"messages": TURNS}, response="a")
    add("conversation-and-empty-response", conversation={"messages": TURNS}, response="")
    add("conversation-not-a-dict", conversation="Where was Marie Curie born?")
    add("conversation-without-messages", conversation={"context": "c"})
    add(
        "conversation-content-parts",
        conversation={
            "messages": [
                {"role": "user", "content": "q"},
                {"role": "assistant", "content": [{"type": "text", "text": "a"}], "ground_truth": "a"},
            ]
        },
    )
    add(
        "conversation-content-None",
        conversation={"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": None}]},
    )
    add(
        "conversation-image",
        conversation={
            "messages": [
                {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "https://x/a.png"}}]},
                {"role": "assistant", "content": "a cat", "ground_truth": "a cat"},
            ]
        },
    )
    return found


def describe_exception(error: BaseException, phase: str) -> dict[str, Any]:
    described: dict[str, Any] = {
        "phase": phase,
        "type": type(error).__name__,
        "mro": [cls.__name__ for cls in type(error).__mro__],
        "message": str(error.args[0]) if error.args else None,
        "str": str(error),
    }
    for field in ("blame", "category", "target"):
        value = getattr(error, field, None)
        if value is not None:
            described[field] = {"name": value.name, "value": value.value}
    return described


def record(evaluators: dict[str, Callable[..., Any]], spec: dict[str, Any]) -> dict[str, Any]:
    init, call = spec["init"], dict(spec["call"].get("kwargs", {}))
    if "pair" in spec["call"]:
        call["response"], call["ground_truth"] = inputs()[spec["call"]["pair"]]
    try:
        evaluator = evaluators[spec["evaluator"]](*init.get("args", []), **init.get("kwargs", {}))
    except Exception as error:  # recorded, not handled
        return {**spec, "raises": describe_exception(error, "init")}
    try:
        returned = evaluator(*spec["call"].get("args", []), **call)
    except Exception as error:  # recorded, not handled
        return {**spec, "raises": describe_exception(error, "call")}
    return {**spec, "returns": returned}


def placeholder_punkt(folder: Path) -> Path:
    # Azure looks for NLTK's legacy "punkt" package before each call and downloads it when it
    # is absent; the tokenizers it uses need only "punkt_tab", so an empty stand-in keeps the
    # recording offline.
    target = folder / "tokenizers"
    target.mkdir(parents=True)
    with zipfile.ZipFile(target / "punkt.zip", "w") as archive:
        archive.writestr("punkt/README", "placeholder")
    return folder


def main() -> int:
    logging.disable(logging.CRITICAL)  # Azure logs every failed conversion at ERROR
    from importlib.metadata import version

    import azure.ai.evaluation as azure_eval
    import nltk

    with tempfile.TemporaryDirectory() as tmp:
        nltk.data.path.append(str(placeholder_punkt(Path(tmp))))
        evaluators = {name: getattr(azure_eval, name) for name in (*SINGLE, "RougeScoreEvaluator")}
        cases = [
            {"id": label, **record(evaluators, spec)}
            for label, spec in (*pair_cases(), *threshold_cases(), *input_cases())
        ]
    package = version("azure-ai-evaluation")
    ids = {name: getattr(cls, "id", None) for name, cls in evaluators.items()}
    header = {"package": "azure-ai-evaluation", "version": package, "nltk": nltk.__version__, "ids": ids}
    table = ",\n".join(f"{json.dumps(k)}: {json.dumps(v, ensure_ascii=False)}" for k, v in inputs().items())
    lines = ",\n".join(json.dumps(item, ensure_ascii=False) for item in cases)
    text = json.dumps(header)[:-1] + ', "inputs": {\n' + table + '\n}, "cases": [\n' + lines + "\n]}\n"
    out = HERE / f"golden-{package}.json"
    out.write_text(text, encoding="utf-8")
    print(f"{out}: {len(cases)} cases ({sum('raises' in c for c in cases)} raise)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
