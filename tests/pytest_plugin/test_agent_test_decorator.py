"""AgentTest's ``@agent_test`` under pytest: its documentation's examples give AgentTest's numbers.

Each folder of the session has its own ``.agenttest/config.yaml``, found from the test file's
folder upwards, as a suite with several configurations has them. The examples are those of
AgentTest's ``docs/evaluators/similarity.md`` (cosine, levenshtein, jaccard, exact,
``similarity_config``, ``test_cases``); the numbers are what AgentTest's own code computes for
the method each example names (AgentTest itself ignores ``similarity_config`` and would use the
configured method).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tracesim.evaluators.compat.agenttest import StringSimilarity

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parents[2]
PLUGIN = "tracesim.integrations.pytest_plugin"

DOCS_CONFIG = """
version: '1.0'
llm: {provider: openai, model: gpt-3.5-turbo}
evaluators:
  - {name: similarity, type: string_similarity, config: {method: cosine, threshold: 0.8}, weight: 1.0}
  - {name: llm_judge, type: llm_as_judge, config: {criteria: [accuracy]}, enabled: false}
"""

DOCS_TESTS = """
from tracesim.integrations.agenttest import agent_test

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
from tracesim.integrations.agenttest import agent_test

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

@agent_test(criteria=['contains'])
def test_unsupported_criterion():
    return {{"actual": "a", "contains": ["a"]}}

@agent_test()
def test_wrong_shape():
    return {{"test_cases": "not a list"}}

@agent_test()
def test_returns_nothing():
    assert True
"""

DISABLED_CONFIG = """
evaluators:
  - {name: similarity, type: string_similarity, config: {method: exact}, enabled: false}
"""

DISABLED_TESTS = """
from tracesim.integrations.agenttest import agent_test

@agent_test()
def test_everything_disabled():
    return {"actual": "not", "expected": "equal"}
"""


def _suite(root: Path, folder: str, config: str, module: str, tests: str) -> None:
    (root / folder / ".agenttest").mkdir(parents=True)
    (root / folder / ".agenttest" / "config.yaml").write_text(config)
    (root / folder / f"{module}.py").write_text(tests)


@pytest.fixture
def subprocess_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")  # load only our plugin (see test_pytest_plugin)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)


@pytest.mark.usefixtures("subprocess_env")
def test_agenttest_suites_run_under_pytest(pytester: pytest.Pytester) -> None:
    root = pytester.path
    _suite(root, "docs", DOCS_CONFIG, "test_agenttest_docs", DOCS_TESTS)
    _suite(root, "weights", WEIGHTS_CONFIG, "test_agenttest_weights", WEIGHTS_TESTS)
    _suite(root, "disabled", DISABLED_CONFIG, "test_agenttest_disabled", DISABLED_TESTS)
    shutil.copytree(REPO / "examples" / "agenttest", root / "example")
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
    cosine = StringSimilarity(method="cosine").evaluate(ACTUAL, EXPECTED)["score"]
    jaccard = StringSimilarity(method="jaccard").evaluate(ACTUAL, EXPECTED)["score"]
    assert scores("weights::test_weights_combine") == {
        "similarity": cosine,
        "keywords": jaccard,
        "overall": pytest.approx((3 * cosine + jaccard) / 4),
    }
    result.stdout.fnmatch_lines(["*TimeoutError: test_timeout ran past its timeout of 0.2 s*"])
    assert tests["weights::test_retry_after_an_exception"]["outcome"] == "passed"
    result.stdout.fnmatch_lines(["*test_retries_run_out failed its AgentTest evaluation (after 3 attempts):"])
    assert result.stdout.str().count("attempt\n") == 3
    result.stdout.fnmatch_lines(["*ValueError: agent_test criterion 'contains' is not available*"])
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
    }
    result.assert_outcomes(passed=12, failed=7)


@pytest.mark.usefixtures("subprocess_env")
def test_agenttest_tags_select_with_k(pytester: pytest.Pytester) -> None:
    shutil.copytree(REPO / "examples" / "agenttest", pytester.path / "example")
    result = pytester.runpytest_subprocess("-p", PLUGIN, "-p", "no:cacheprovider", "-k", "format", "example")
    result.assert_outcomes(passed=2, deselected=3)  # `agenttest run --tag format`


def test_decorator_arguments_are_checked() -> None:
    from tracesim.integrations.agenttest import agent_test

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
    from tracesim import ConfigError
    from tracesim.integrations._agenttest_config import find, load

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
