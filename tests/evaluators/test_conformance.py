"""Every check in data/conformance/cases.jsonl: the numbers the reference tools produce.

The cases live in the repository (a copy of the project's shared file), so a clone on its
own runs them; see data/conformance/README.md.
"""

from __future__ import annotations

import importlib
import json
import math
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tracesim.evaluators import from_config

CASES_FILE = Path(__file__).parent / "data" / "conformance" / "cases.jsonl"
# The shared original, when a checkout of the project's shared folder sits beside the clone.
SHARED_CASES_FILE = (Path(__file__).parents[2] / "../shared/conformance/cases.jsonl").resolve()


def _checks() -> list[Any]:
    if not CASES_FILE.is_file():
        return [pytest.param(None, None, None, id="cases-file-missing")]  # fails below, never skips
    params = []
    for line in CASES_FILE.read_text(encoding="utf-8").splitlines():
        case = json.loads(line)
        for index, check in enumerate(case["checks"]):
            what = check.get("compat") or check["evaluator"]["type"]
            params.append(pytest.param(case, check, None, id=f"{case['id']}-{index}-{what}"))
    return params


def same(actual: Any, expected: Any) -> bool:
    """Floats within a relative 1e-9; ints and bools exactly; dicts by every expected key."""
    if isinstance(expected, bool):
        return isinstance(actual, bool) and actual is expected
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(
            k in actual and same(actual[k], v) for k, v in expected.items()
        )
    if isinstance(expected, int):
        return not isinstance(actual, bool) and isinstance(actual, (int, float)) and actual == expected
    if isinstance(expected, float):
        return (
            not isinstance(actual, bool)
            and isinstance(actual, (int, float))
            and math.isclose(actual, expected, rel_tol=1e-9, abs_tol=0.0)
        )
    return bool(actual == expected)


_cache: dict[str, Any] = {}


def _evaluator(config: dict[str, Any]) -> Any:
    key = json.dumps(config, sort_keys=True)
    if key not in _cache:
        _cache[key] = from_config(config)
    return _cache[key]


def _run_compat(check: dict[str, Any], response: str, expected: str) -> Any:
    module_name, name = check["compat"].split(".")
    target = getattr(importlib.import_module(f"tracesim.evaluators.compat.{module_name}"), name)
    init, call = check["init"], check["call"]
    if call == "Cls(**init)(response=R, ground_truth=E)":
        return target(**init)(response=response, ground_truth=expected)
    if call == "fn(R, E, **init)":
        return target(response, expected, **init)
    if call == "Cls(**init).evaluate(R, E)":
        result = target(**init).evaluate(response, expected)
        return result.to_dict() if hasattr(result, "to_dict") else result  # AgentTest's EvaluationResult
    if call == "Cls(**init).measure(E, R)":
        return target(**init).measure(expected, response)
    raise AssertionError(f"unknown call style {call!r}")


@pytest.mark.parametrize(("case", "check", "_unused"), _checks())
def test_conformance(case: dict[str, Any], check: dict[str, Any], _unused: None) -> None:
    assert case is not None, f"{CASES_FILE} not found: the evaluator numbers would go unchecked"
    response, expected = case["response"], case["expected"]
    if "evaluator" in check:
        result = _evaluator(check["evaluator"]).evaluate(response, expected)
        assert result.status == "ok", result.error
        assert same(result.score, check["score"]), (check["evaluator"], result.score, check["score"])
    else:
        actual = _run_compat(check, response, expected)
        assert same(actual, check["result"]), (check["compat"], check["init"], actual, check["result"])


def test_the_file_has_every_kind_of_check() -> None:
    assert CASES_FILE.is_file(), f"{CASES_FILE} not found: the evaluator numbers would go unchecked"
    lines = CASES_FILE.read_text(encoding="utf-8").splitlines()
    total = sum(len(json.loads(line)["checks"]) for line in lines)
    assert len(lines) >= 49
    assert total >= 1857


def test_the_in_repository_copy_matches_the_shared_file() -> None:
    if not SHARED_CASES_FILE.is_file():
        pytest.skip(f"no shared cases file at {SHARED_CASES_FILE} to compare the in-repository copy with")
    assert CASES_FILE.is_file(), f"{CASES_FILE} not found"
    assert CASES_FILE.read_bytes() == SHARED_CASES_FILE.read_bytes(), (
        f"{CASES_FILE} differs from {SHARED_CASES_FILE}: copy the shared file over the in-repository one "
        "(or send the change to the shared one) so both hold the same reference numbers"
    )


def test_a_clone_without_the_cases_file_fails_instead_of_skipping(tmp_path: Path) -> None:
    # This test module, alone in a folder with no data/ beside it: the run must fail.
    shutil.copyfile(__file__, tmp_path / "test_conformance.py")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rfs", "-k", "not a_clone_without"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "test_conformance[cases-file-missing]" in done.stdout
    assert "FAILED" in done.stdout
    assert "not found: the evaluator numbers would go unchecked" in done.stdout
