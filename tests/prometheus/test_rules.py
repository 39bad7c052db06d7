"""The shipped Prometheus rules pass ``promtool``, and a broken copy of them does not.

``examples/prometheus/tracesim-rules.yml`` is checked (``promtool check rules``) and unit tested
(``promtool test rules`` with ``tracesim-rules.test.yml``), as CI would. Each mutation below
breaks one thing a reader relies on (a comparison, a threshold, the minimum-traffic guard, the
pass rate's definition, a ``for``, the syntax); promtool must then fail, which shows that the
unit tests check what they claim to.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import NamedTuple

import pytest

RULES_DIR = Path(__file__).resolve().parents[2] / "examples" / "prometheus"
RULES = RULES_DIR / "tracesim-rules.yml"
RULE_TESTS = RULES_DIR / "tracesim-rules.test.yml"
INSTALL = "apt-get install -y --no-install-recommends prometheus"


@pytest.fixture
def promtool() -> str:
    """The path of ``promtool`` (Debian's ``prometheus`` package ships it)."""
    found = shutil.which("promtool")
    if found is None:
        pytest.skip(f"needs promtool, not on PATH here (Debian: {INSTALL})")
    return found


def _run(promtool: str, *args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [promtool, *map(str, args)], cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )


def test_the_shipped_rules_pass_the_check(promtool: str) -> None:
    import yaml

    groups = yaml.safe_load(RULES.read_text(encoding="utf-8"))["groups"]
    result = _run(promtool, "check", "rules", RULES, cwd=RULES_DIR)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {sum(len(g['rules']) for g in groups)} rules found" in result.stdout


def test_the_shipped_rules_pass_their_unit_tests(promtool: str) -> None:
    result = _run(promtool, "test", "rules", RULE_TESTS, cwd=RULES_DIR)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


def test_every_alert_is_tested_firing_and_silent() -> None:
    import yaml

    rules = yaml.safe_load(RULES.read_text(encoding="utf-8"))
    alerts = {r["alert"] for group in rules["groups"] for r in group["rules"] if "alert" in r}
    assert alerts == {
        "TracesimPassRateLow",
        "TracesimEvaluatorErrors",
        "TracesimScoringDropped",
        "TracesimLLMCostHigh",
    }
    tests = yaml.safe_load(RULE_TESTS.read_text(encoding="utf-8"))["tests"]
    checks = [check for test in tests for check in test.get("alert_rule_test", [])]
    for alert in alerts:
        outcomes = {bool(c["exp_alerts"]) for c in checks if c["alertname"] == alert}
        assert outcomes == {True, False}, f"{alert}: tested {'firing' if True in outcomes else 'silent'} only"
        for check in checks:
            for expected in check["exp_alerts"] if check["alertname"] == alert else []:
                assert expected["exp_annotations"]["summary"], alert
                assert expected["exp_annotations"]["runbook"].endswith(f"#{alert.lower()}"), alert


PASS_RATE = "tracesim:evaluation_pass_rate:ratio_rate5m"
DECIDED = "tracesim:evaluation_decided:rate5m"
ERROR_SHARE = "tracesim:evaluation_error_share:ratio_rate5m"
COST = "sum by (job) (tracesim:llm_cost_usd:increase1h)"
OUTCOME = "tracesim:evaluation_results:rate5m{tracesim_evaluation_outcome"
NEXT_RULE = "\n      - record: tracesim:evaluation_decided:rate1h"
OUTCOME_1H = "tracesim:evaluation_results:rate1h{tracesim_evaluation_outcome"


class Mutation(NamedTuple):
    what: str  # what it breaks
    old: str  # the text of tracesim-rules.yml replaced (its first occurrence)
    new: str
    command: str = "test"  # the promtool command that must fail: "test" rules or "check" rules


MUTATIONS = [
    Mutation("flipped comparison", f"{PASS_RATE} < 0.8", f"{PASS_RATE} > 0.8"),
    Mutation("pass-rate line moved", f"{PASS_RATE} < 0.8", f"{PASS_RATE} < 0.5"),
    Mutation("no minimum-traffic guard", f"{DECIDED} * 300 >= 20", f"{DECIDED} * 300 >= 0"),
    Mutation("no zero for an evaluator that never passed", f"or 0 * {DECIDED}\n", "\n"),
    Mutation(
        "errors counted as failures",
        f'{OUTCOME}=~"passed|failed"}}){NEXT_RULE}',
        f'{OUTCOME}=~"passed|failed|error"}}){NEXT_RULE}',
    ),
    Mutation(
        "errors counted as failures over 1h",
        f'{OUTCOME_1H}=~"passed|failed"}})',
        f'{OUTCOME_1H}=~"passed|failed|error"}})',
    ),
    Mutation("pass-rate alert without its for", ">= 20\n        for: 10m", ">= 20\n        for: 0m"),
    Mutation("error-share line moved", f"{ERROR_SHARE} > 0.1", f"{ERROR_SHARE} > 0.5"),
    Mutation(
        "undecided results not runs",
        f'{OUTCOME}!~"dropped|not_sampled"}})',
        f'{OUTCOME}=~"passed|failed|error|skipped"}})',
    ),
    Mutation("sampling counted as drops", f'{OUTCOME}="dropped"}})', f'{OUTCOME}=~"dropped|not_sampled"}})'),
    Mutation("cost line moved", f"{COST} > 20", f"{COST} > 40"),
    Mutation("wrong label name", COST, COST.replace("job", "service")),
    Mutation("unclosed parenthesis", "(rate(tracesim_evaluation_results_total[5m]))", "(rate(", "check"),
    Mutation("unknown template function", "| humanizePercentage", "| asPercentage", "check"),
]


@pytest.mark.parametrize(("what", "old", "new", "command"), MUTATIONS, ids=[m[0] for m in MUTATIONS])
def test_a_broken_rule_fails(
    promtool: str, tmp_path: Path, what: str, old: str, new: str, command: str
) -> None:
    text = RULES.read_text(encoding="utf-8")
    assert text.count(old) >= 1, f"{what}: the mutation no longer applies to {RULES.name}; update it"
    (tmp_path / RULES.name).write_text(text.replace(old, new, 1), encoding="utf-8")
    shutil.copy(RULE_TESTS, tmp_path / RULE_TESTS.name)
    args = ("check", "rules", RULES.name) if command == "check" else ("test", "rules", RULE_TESTS.name)
    result = _run(promtool, *args, cwd=tmp_path)
    assert result.returncode != 0, f"{what}: promtool {' '.join(args)} passed a broken rule\n{result.stdout}"
    assert "FAILED" in result.stdout + result.stderr
