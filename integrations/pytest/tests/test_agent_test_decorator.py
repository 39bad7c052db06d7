"""AgentTest's ``@agent_test`` under pytest: its documentation's examples give AgentTest's numbers.

Each folder of the session has its own ``.agenttest/config.yaml``, found from the test file's
folder upwards, as a suite with several configurations has them. The examples are those of
AgentTest's ``docs/evaluators/similarity.md`` (cosine, levenshtein, jaccard, exact,
``similarity_config``, ``test_cases``); the numbers are what AgentTest's own code computes for
the method each example names (AgentTest itself ignores ``similarity_config`` and would use the
configured method). The ``more`` folder holds AgentTest's examples of its other evaluators
(``examples/tests/*.py`` in AgentTest 0.1.0: contains, regex, metrics, llm_judge), the judge
answered by the scripted model server over HTTP.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from llm_server import LLMServer

from tracesim.evaluators.compat.agenttest import StringSimilarity

pytest_plugins = ["pytester"]

DISTRIBUTION = Path(__file__).resolve().parents[1]  # integrations/pytest
PLUGIN = "tracesim_pytest.plugin"

DOCS_CONFIG = """
version: '1.0'
llm: {provider: openai, model: gpt-3.5-turbo}
evaluators:
  - {name: similarity, type: string_similarity, config: {method: cosine, threshold: 0.8}, weight: 1.0}
  - {name: llm_judge, type: llm_as_judge, config: {criteria: [accuracy]}, enabled: false}
"""

DOCS_TESTS = """
from tracesim_pytest import agent_test

@agent_test(criteria=['similarity'])
def test_semantic_similarity():
    return {
        "input": "What is machine learning?",
        "actual": "ML is a subset of AI that enables computers to learn from data",
        "expected": "Machine learning allows computers to learn patterns from data automatically",
    }

@agent_test(criteria=['similarity'])
def test_exact_format():
    return {
        "input": "Format as JSON",
        "actual": '{"name": "John", "age": 30}',
        "expected": '{"name": "John", "age": 30}',
        "similarity_config": {"method": "levenshtein", "threshold": 0.95},
    }

@agent_test(criteria=['similarity'])
def test_keyword_coverage():
    return {
        "input": "List programming languages",
        "actual": "Python, Java, JavaScript, C++, Go",
        "expected": "JavaScript, Python, Java, C++, Rust",
        "similarity_config": {"method": "jaccard", "threshold": 0.6},
    }

@agent_test(criteria=['similarity'])
def test_exact_output():
    return {"input": "Return exactly: 'SUCCESS'", "actual": "SUCCESS", "expected": "SUCCESS",
            "similarity_config": {"method": "exact"}}

@agent_test(criteria=['similarity'])
def test_batch_evaluation():
    test_cases = [
        {"input": "Question 1", "actual": "Answer 1", "expected": "Expected 1"},
        {"input": "Question 2", "actual": "Answer 2", "expected": "Expected 2"},
    ]
    return {"test_cases": test_cases}

@agent_test(criteria=['similarity', 'llm_judge'], tags=['quality'])
def test_judge_is_disabled():
    return {"input": "Capital of France?", "actual": "Paris is the capital of France.",
            "expected": "Paris is the capital of France."}
"""

WEIGHTS_CONFIG = """
llm: {provider: openai, model: gpt-4}
evaluators:
  - {name: similarity, type: string_similarity, config: {method: cosine, threshold: 0.3}, weight: 3}
  - {name: keywords, type: string_similarity, config: {method: jaccard, threshold: 0.2}, weight: 1}
testing: {timeout: 20, retry_count: 0}
"""

ACTUAL = "Marie Curie was born in Warsaw in 1867"
EXPECTED = "Marie Curie was born in Warsaw"

WEIGHTS_TESTS = f"""
import threading
from tracesim_pytest import agent_test

ATTEMPTS = []

@agent_test(criteria=['similarity', 'keywords'])
def test_weights_combine():
    return {{"actual": {ACTUAL!r}, "expected": {EXPECTED!r}}}

@agent_test(timeout=0.2)
def test_timeout():
    threading.Event().wait(20)  # a hung agent call

@agent_test(retry_count=2)
def test_retry_after_an_exception():
    ATTEMPTS.append("x")
    if len(ATTEMPTS) == 1:
        raise RuntimeError("flaky model")
    return {{"actual": "same", "expected": "same"}}

@agent_test(retry_count=2)
def test_retries_run_out():
    print("attempt")
    return {{"actual": "a b", "expected": "c d"}}

@agent_test(criteria=['tone'])
def test_unknown_criterion():
    return {{"actual": "a", "contains": ["a"]}}

@agent_test()
def test_wrong_shape():
    return {{"test_cases": "not a list"}}

@agent_test()
def test_returns_nothing():
    assert True
"""

MORE_CONFIG = """
llm: {{provider: openai, model: judge-model, api_base: '{base_url}', api_key: test-key}}
evaluators:
  - {{name: similarity, type: string_similarity, config: {{method: levenshtein, threshold: 0.7}}}}
  - {{name: contains, type: contains_check, weight: 2}}
  - {{name: keywords, type: contains, config: {{match_all: false}}}}
  - {{name: metrics, type: nlp_metrics, config: {{rouge: {{variants: [rouge1]}}}}}}
  - {{name: llm_judge, type: llm_as_judge, config: {{criteria: [accuracy, clarity]}}}}
  - {{name: tone, type: llm_as_judge, config: {{criteria: [politeness]}}, enabled: false}}
"""

CLOUD = (
    "Cloud computing offers scalability, cost savings, accessibility, and improved collaboration for "
    "businesses."
)
ORDER = (
    "Order #ORD-2024-001 has been confirmed. Your total is $99.99. Confirmation sent to customer@email.com"
)
ORDER_EXPECTED = "Order #ORD-2024-001 confirmed. Total: $99.99. Email sent to customer@email.com"

MORE_TESTS = rf"""
from tracesim_pytest import agent_test

@agent_test(criteria=["contains"])
def test_security_information_presence():
    return {{"input": "How do you protect my personal data?",
            "actual": "We protect your data using encryption and strict privacy policies (GDPR).",
            "contains": ["encryption", "secure", "privacy", "GDPR"]}}

@agent_test(criteria=["contains"])
def test_refund_policy_elements():
    return {{"actual": "We offer a 30-day money-back guarantee. Contact Support to process your refund.",
            "contains": ["30-day", "money-back", "guarantee", "support", "refund"]}}

@agent_test(criteria=["keywords"])
def test_one_keyword_is_enough():
    return {{"actual": "Solar power is renewable.", "contains": ["solar", "wind"]}}

@agent_test(criteria=["regex"])
def test_phone_number_format():
    return {{"actual": "Call us any time.", "pattern": r"\(\d{{3}}\)\s\d{{3}}-\d{{4}}",
            "regex_config": {{"flags": ["IGNORECASE"]}}}}

@agent_test(criteria=["similarity", "contains", "regex"])
def test_structured_response_comprehensive():
    return {{
        "expected": {ORDER_EXPECTED!r},
        "actual": {ORDER!r},
        "contains": ["Order", "confirmed", "total", "email"],
        "patterns": [r"Order #ORD-\d{{4}}-\d{{3}}", r"\$\d+\.\d{{2}}",
                     r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Z|a-z]{{2,}}\b"],
    }}

@agent_test(criteria=["metrics"])
def test_summary_quality_rouge():
    return {{"actual": "Cloud computing provides scalable resources, reduces costs, enables remote access, "
                      "and enhances team collaboration.",
            "reference": {CLOUD!r},
            "metrics": {{"rouge": {{"min_score": 0.4, "variants": ["rouge-1", "rouge-2", "rouge-l"]}}}}}}

@agent_test(criteria=["metrics"])
def test_translation_quality_bleu():
    return {{"actual": "Hola, ¿cómo está usted?", "reference": "Hola, ¿cómo estás?",
            "metrics": {{"bleu": {{"min_score": 0.3, "smoothing": True}}}}}}

@agent_test(criteria=["metrics"])
def test_metrics_from_the_config():
    return {{"actual": "the cat sat on the mat", "expected": "the cat sat on a mat"}}

@agent_test(criteria=["metric"])
def test_numeric_answer():
    return {{"input": "What is 2+2?", "actual": "4.05", "expected": 4}}

@agent_test(criteria=["llm_judge", "tone"])
def test_judge_passes():
    return {{"input": "Capital of France?", "actual": "Paris is the capital of France.", "expected": "Paris"}}

@agent_test(criteria=["llm_judge"])
def test_judge_fails():
    return {{"input": "Capital of France?", "actual": "Lyon",
            "evaluation_criteria": {{"accuracy": "names the right city"}}}}

@agent_test(criteria=["llm_judge"])
def test_judge_answer_unreadable():
    return {{"input": "Favourite fruit?", "actual": "banana"}}
"""


def _judge(request: dict[str, Any]) -> str:
    prompt = request["messages"][-1]["content"]
    if "banana" in prompt:
        return "That seems reasonable overall."  # no grade: the judge cannot use it
    if "Lyon" in prompt:
        return json.dumps({"reason": "Lyon is not the capital of France.", "score": 3})
    return json.dumps({"reason": "Correct and clear.", "score": 9})


DISABLED_CONFIG = """
evaluators:
  - {name: similarity, type: string_similarity, config: {method: exact}, enabled: false}
"""

DISABLED_TESTS = """
from tracesim_pytest import agent_test

@agent_test()
def test_everything_disabled():
    return {"actual": "not", "expected": "equal"}
"""


def _score(result: Any) -> Any:
    """A compat evaluator's score: AgentTest's result object, or the dict earlier versions gave."""
    return result["score"] if isinstance(result, dict) else result.score


def _suite(root: Path, folder: str, config: str, module: str, tests: str) -> None:
    (root / folder / ".agenttest").mkdir(parents=True)
    (root / folder / ".agenttest" / "config.yaml").write_text(config)
    (root / folder / f"{module}.py").write_text(tests)


@pytest.fixture
def subprocess_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")  # load only our plugin (see test_pytest_plugin)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)


@pytest.mark.usefixtures("subprocess_env")
def test_agenttest_suites_run_under_pytest(pytester: pytest.Pytester, llm_server: LLMServer) -> None:
    root = pytester.path
    llm_server.judge = _judge
    _suite(root, "docs", DOCS_CONFIG, "test_agenttest_docs", DOCS_TESTS)
    _suite(root, "more", MORE_CONFIG.format(base_url=llm_server.base_url), "test_agenttest_more", MORE_TESTS)
    _suite(root, "weights", WEIGHTS_CONFIG, "test_agenttest_weights", WEIGHTS_TESTS)
    _suite(root, "disabled", DISABLED_CONFIG, "test_agenttest_disabled", DISABLED_TESTS)
    shutil.copytree(DISTRIBUTION / "examples" / "agenttest", root / "example")
    result = pytester.runpytest_subprocess(
        "-p", PLUGIN, "-p", "no:cacheprovider", "--tracesim-json", "out.json"
    )
    data = json.loads((root / "out.json").read_text())
    # "folder/test_module.py::test_name" -> "folder::test_name"
    tests = {f"{t['nodeid'].split('/')[0]}::{t['nodeid'].split('::')[1]}": t for t in data["tests"]}

    def scores(test: str) -> dict[str, float | None]:
        return {r["evaluator"]: r["score"] for r in tests[test]["results"]}

    # The documentation's examples: AgentTest's numbers, and its pass rule.
    assert scores("docs::test_semantic_similarity")["similarity"] == pytest.approx(0.29876035114318833)
    assert tests["docs::test_semantic_similarity"]["outcome"] == "failed"
    assert scores("docs::test_exact_format") == {"similarity": 1.0, "overall": 1.0}
    assert scores("docs::test_keyword_coverage")["similarity"] == pytest.approx(4 / 6)  # the docs say 0.8
    assert scores("docs::test_exact_output")["similarity"] == 1.0
    assert (
        scores("docs::test_batch_evaluation")["similarity"] == 0.0
    )  # "Answer 1" / "Expected 1": no shared word
    assert [r["status"] for r in tests["docs::test_judge_is_disabled"]["results"]] == ["ok", "skipped", "ok"]
    result.stdout.fnmatch_lines(
        [
            "*test_semantic_similarity failed its AgentTest evaluation:",
            "*similarity: score 0.2988 below threshold 0.8 (cosine); actual 'ML is a subset*",
            "*overall score 0.2988 (weights: similarity=1); config: *docs/.agenttest/config.yaml",
        ]
    )
    result.stdout.fnmatch_lines(["*similarity: 0 of 2 cases passed (mean score 0, threshold 0.8)"])

    # Weights from the config combine the criteria; timeouts, retries and errors.
    cosine = _score(StringSimilarity(method="cosine").evaluate(ACTUAL, EXPECTED))
    jaccard = _score(StringSimilarity(method="jaccard").evaluate(ACTUAL, EXPECTED))
    assert scores("weights::test_weights_combine") == {
        "similarity": cosine,
        "keywords": jaccard,
        "overall": pytest.approx((3 * cosine + jaccard) / 4),
    }
    result.stdout.fnmatch_lines(["*TimeoutError: test_timeout ran past its timeout of 0.2 s*"])
    assert tests["weights::test_retry_after_an_exception"]["outcome"] == "passed"
    result.stdout.fnmatch_lines(["*test_retries_run_out failed its AgentTest evaluation (after 3 attempts):"])
    assert result.stdout.str().count("attempt\n") == 3
    result.stdout.fnmatch_lines(["*ValueError: agent_test criterion 'tone' names no evaluator: use one of*"])
    result.stdout.fnmatch_lines(
        ["*TypeError: test_cases must be a list of dicts with 'actual' and 'expected'*"]
    )
    result.stdout.fnmatch_lines(
        ["*similarity: error: No 'actual' value found in test output (return {'actual': ..., *"]
    )

    # enabled: false turns the only evaluator off: nothing fails; the example suite is green.
    assert tests["disabled::test_everything_disabled"]["outcome"] == "passed"
    example = {name: test["outcome"] for name, test in tests.items() if name.startswith("example::")}
    assert example == {
        "example::test_capital": "passed",
        "example::test_json_format": "passed",
        "example::test_keyword_coverage": "passed",
        "example::test_exact_output": "passed",
        "example::test_batch": "passed",
        "example::test_refund_policy": "passed",
        "example::test_shipping_summary": "passed",
    }
    _check_more(result, tests, llm_server)
    result.assert_outcomes(passed=21, failed=12)


def _check_more(result: pytest.RunResult, tests: dict[str, Any], llm_server: LLMServer) -> None:
    """AgentTest's other evaluators: its numbers and pass rules, and what a failure says."""

    def scores(test: str) -> dict[str, float | None]:
        return {r["evaluator"]: r["score"] for r in tests[f"more::{test}"]["results"]}

    outcomes = {name.split("::")[1]: t["outcome"] for name, t in tests.items() if name.startswith("more::")}
    assert outcomes == {
        "test_security_information_presence": "failed",  # "secure" is missing: all must be found
        "test_refund_policy_elements": "passed",  # case-insensitive
        "test_one_keyword_is_enough": "passed",  # match_all: false, which AgentTest ignores
        "test_phone_number_format": "failed",
        "test_structured_response_comprehensive": "passed",
        "test_summary_quality_rouge": "passed",
        "test_translation_quality_bleu": "failed",
        "test_metrics_from_the_config": "passed",
        "test_numeric_answer": "passed",
        "test_judge_passes": "passed",
        "test_judge_fails": "failed",
        "test_judge_answer_unreadable": "failed",
    }
    assert scores("test_security_information_presence") == {"contains": 0.75, "overall": 0.75}
    combined = scores("test_structured_response_comprehensive")
    similarity = _score(StringSimilarity(method="levenshtein").evaluate(ORDER, ORDER_EXPECTED))
    assert (combined["similarity"], combined["contains"], combined["regex"]) == (similarity, 1.0, 1.0)
    assert combined["overall"] == pytest.approx(
        (combined["similarity"] + 2 * 1.0 + 1.0) / 4
    )  # contains: weight 2
    assert scores("test_summary_quality_rouge")["metrics"] == 0.41452991452991456  # rouge-score's, with stems
    assert scores("test_translation_quality_bleu")["metrics"] == 0.16990442448471224  # NLTK's, smoothing 1
    assert scores("test_numeric_answer")["metric"] == pytest.approx(1 - 0.05**2)  # mse
    assert scores("test_judge_passes") == {"llm_judge": 0.9, "tone": None, "overall": 0.9}  # tone: disabled
    assert [r["status"] for r in tests["more::test_judge_passes"]["results"]] == ["ok", "skipped", "ok"]
    assert tests["more::test_judge_passes"]["results"][0]["reason"] == "Correct and clear."
    result.stdout.fnmatch_lines(
        [
            "*test_security_information_presence failed its AgentTest evaluation:",
            "*contains: 3 of 4 strings found (score 0.75); missing ?'secure'?; actual 'We protect*",
        ]
    )
    result.stdout.fnmatch_lines(
        ["*regex: 0 of 1 patterns matched (score 0); not matched *; actual 'Call us any time.'"]
    )
    result.stdout.fnmatch_lines(
        ["*metrics: mean score 0.1699 (mean min_score 0.3): bleu 0.1699 < min_score 0.3"]
    )
    result.stdout.fnmatch_lines(
        ["*llm_judge: score 0.3 below threshold 0.7 (grade 3/10 on accuracy): 'Lyon is not the capital*"]
    )
    result.stdout.fnmatch_lines(
        ["*llm_judge: error: LLM judge evaluation failed: unparseable: no usable score in the model's*"]
    )
    # The judge got the llm: section's model and key, the entry's criteria or the test's own.
    sent = [r for r in llm_server.requests if r.path == "/v1/chat/completions"]
    assert {r.body["model"] for r in sent} == {"judge-model"}
    assert {r.headers["authorization"] for r in sent} == {"Bearer test-key"}
    prompts = {
        r.body["messages"][-1]["content"].split("<response>\n")[1].split("\n")[0]: r.body for r in sent
    }
    assert (
        "- clarity: the response is easy to follow"
        in prompts["Paris is the capital of France."]["messages"][-1]["content"]
    )
    assert "- accuracy: names the right city" in prompts["Lyon"]["messages"][-1]["content"]


@pytest.mark.usefixtures("subprocess_env")
def test_agenttest_tags_select_with_k(pytester: pytest.Pytester) -> None:
    shutil.copytree(DISTRIBUTION / "examples" / "agenttest", pytester.path / "example")
    result = pytester.runpytest_subprocess("-p", PLUGIN, "-p", "no:cacheprovider", "-k", "format", "example")
    result.assert_outcomes(passed=2, deselected=5)  # `agenttest run --tag format`


def test_decorator_arguments_are_checked() -> None:
    from tracesim_pytest import agent_test

    with pytest.raises(TypeError, match=r"criteria=\.\.\.\) takes a name or a list of names"):
        agent_test(criteria=[1])
    with pytest.raises(ValueError, match=r"timeout=\.\.\.\) takes a number of seconds > 0"):
        agent_test(timeout=0)
    with pytest.raises(ValueError, match=r"retry_count=\.\.\.\) takes an integer >= 0"):
        agent_test(retry_count=-1)
    with pytest.raises(TypeError, match="decorates a plain function"):

        @agent_test()
        async def test_async() -> None: ...


def test_config_mistakes_name_the_file_and_the_key(tmp_path: Path) -> None:
    from tracesim_pytest._agenttest_config import find, load
    from tracesim_pytest._agenttest_score import score

    from tracesim import ConfigError

    (tmp_path / "suite" / "deep").mkdir(parents=True)
    (tmp_path / "suite" / ".agenttest").mkdir()
    path = tmp_path / "suite" / ".agenttest" / "config.yaml"
    path.write_text("evaluators:\n  - {name: similarity, type: string_similarity, weight: heavy}\n")
    assert find(tmp_path / "suite" / "deep") == path  # from the test file's folder upwards
    with pytest.raises(ConfigError, match=r"'evaluators\[0\]\.weight': got 'heavy' from .*config\.yaml"):
        load(path)
    path.write_text("testing: {timeout: soon}\n")
    with pytest.raises(ConfigError, match=r"'testing\.timeout': got 'soon'.*a number of seconds > 0"):
        load(path)
    path.write_text("llm: {provider: openai, model: 4}\n")
    with pytest.raises(ConfigError, match=r"'llm\.model': got 4 from .*config\.yaml; accepted: a string"):
        load(path)
    # An evaluator's config: mistake names its keys, then the entry and the file.
    path.write_text("evaluators:\n  - {name: contains, type: contains_check, config: {mode: all}}\n")
    with pytest.raises(ValueError, match="Contains config accepts the keys case_sensitive") as raised:
        score({"actual": "a", "contains": ["a"]}, ["contains"], load(path))
    assert raised.value.__notes__ == [
        f"agent_test: building the evaluator of 'contains' from the entry 'contains' in {path}"
    ]
