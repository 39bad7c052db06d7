"""Case ids that hold a secret are written redacted, the same way in every run, so a comparison
pairs each case with itself; runs whose redacted ids cannot be matched are said to be so."""

from __future__ import annotations

import hashlib
import json
import stat
from collections.abc import Mapping
from pathlib import Path

import pytest

from tracesim.cli._experiment import main
from tracesim.experiments import Case, Dataset, ExperimentReport
from tracesim.experiments._case_ids import ID_KEY_ENV, written_ids

ANN, BOB, CY = "ann@x.io", "bob@x.io", "cy@x.io"


def run(answers: Mapping[str, str]) -> ExperimentReport:
    """A run over the cases ``answers`` names (keyed by e-mail), in that order; "ok" passes."""
    cases = [Case(email, "ok", id=email) for email in answers]
    return Dataset(cases).evaluate(lambda email: answers[email], evaluators=["exact"], name="mail")


def saved(report: ExperimentReport, path: str) -> ExperimentReport:
    return ExperimentReport.load(report.to_json(path))


def statuses(report: ExperimentReport, baseline: ExperimentReport, **options: float) -> dict[str, str]:
    """Each case's status, keyed by the e-mail it stands for."""
    comparison = report.compare(baseline, **options)
    ids = written_ids([ANN, BOB, CY])
    names = {ids[email]: email for email in (ANN, BOB, CY)}
    return {names.get(c.case_id, c.case_id): c.status for c in comparison.cases}


def test_compare_pairs_each_redacted_case_with_itself_when_a_case_is_added_before_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The reviewer's repro: numbered in order of appearance, cy took ann's id and ann bob's."""
    saved(run({ANN: "ok", BOB: "wrong"}), "baseline.json")
    saved(run({CY: "ok", ANN: "ok", BOB: "wrong"}), "run.json")
    assert main(["compare", "run.json", "baseline.json"]) == 0
    out = capsys.readouterr().out
    assert "cases: 0 regressed, 0 improved, 2 unchanged, 1 new, 0 missing" in out
    assert "improved" not in out.split("cases:")[1].split("\n", 1)[1]
    [new] = [line.split() for line in out.splitlines() if line.strip().startswith("new")]
    assert new[1] == written_ids([CY])[CY]
    assert "note:" not in out  # the ids matched: nothing to warn about


def test_a_regression_is_not_hidden_by_a_case_added_before_it() -> None:
    baseline = saved(run({ANN: "ok", BOB: "ok"}), "baseline.json")
    current = saved(run({CY: "ok", ANN: "ok", BOB: "wrong"}), "run.json")
    # run-wide the pass rate fell by 1/3, within the tolerance; bob's case fell by 1
    comparison = current.compare(baseline, tolerance=0.5)
    assert statuses(current, baseline, tolerance=0.5) == {CY: "new", ANN: "unchanged", BOB: "regressed"}
    assert not comparison.ok


def test_a_run_in_memory_is_matched_with_its_saved_baseline() -> None:
    """``experiment run --baseline``: the run's ids are raw, the baseline's as written."""
    baseline = saved(run({ANN: "ok", BOB: "wrong"}), "baseline.json")
    current = run({CY: "ok", ANN: "ok", BOB: "ok"})
    assert statuses(current, baseline) == {CY: "new", ANN: "unchanged", BOB: "improved"}


def test_the_key_file_is_made_once_private_and_never_written_into_a_run() -> None:
    first = saved(run({ANN: "ok", BOB: "wrong"}), "one.json")
    key_file = Path(".tracesim/id.key")
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    key = key_file.read_bytes()
    assert len(key.strip()) == 64
    second = saved(run({BOB: "wrong", ANN: "ok"}), "two.json")
    assert key_file.read_bytes() == key
    assert {c.case_id for c in first.cases} == {c.case_id for c in second.cases}
    assert len({c.case_id for c in first.cases}) == 2
    for name in ("one.json", "two.json"):
        text = Path(name).read_text(encoding="utf-8")
        assert key.strip().decode() not in text
        assert ANN not in text
        assert BOB not in text


def test_the_suffix_is_keyed_not_a_plain_hash_of_the_address(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ID_KEY_ENV, "ci-secret-one")
    one = written_ids([ANN])[ANN]
    monkeypatch.setenv(ID_KEY_ENV, "ci-secret-two")
    two = written_ids([ANN])[ANN]
    assert one.startswith("[REDACTED:email]-")
    assert two.startswith("[REDACTED:email]-")
    assert one != two
    unkeyed = hashlib.sha256(ANN.encode()).hexdigest()
    assert unkeyed[:8] not in (one[-8:], two[-8:])
    assert not Path(".tracesim/id.key").exists()  # the setting is used, no file is made


def test_runs_made_with_different_keys_are_compared_with_a_note_naming_the_setting(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """CI with a fresh .tracesim/: the committed baseline and the run got different suffixes."""
    monkeypatch.setenv(ID_KEY_ENV, "the key on a laptop")
    saved(run({ANN: "ok", BOB: "wrong", "plain": "ok"}), "baseline.json")
    monkeypatch.setenv(ID_KEY_ENV, "another key in CI")
    saved(run({ANN: "ok", BOB: "wrong", "plain": "ok"}), "run.json")
    assert main(["compare", "run.json", "baseline.json", "--json"]) == 0
    notes = json.loads(capsys.readouterr().out)["notes"]
    [note] = [n for n in notes if ID_KEY_ENV in n]
    assert "2 redacted case ids of this run and 2 of the baseline" in note
    assert main(["compare", "run.json", "baseline.json"]) == 0
    assert "note: 2 redacted case ids of this run and 2 of the baseline" in capsys.readouterr().out


def test_a_redacted_id_only_in_the_baseline_is_noted() -> None:
    baseline = run({ANN: "ok", "plain": "ok"})
    current = run({"plain": "ok"})
    [note] = current.compare(baseline).notes
    assert "1 redacted case id of the baseline matches nothing in this run" in note
    assert ID_KEY_ENV in note


def test_suffixes_do_not_depend_on_order_and_a_clash_takes_a_longer_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(ID_KEY_ENV, "k")
    forward = written_ids([ANN, BOB, CY])
    assert forward == written_ids([CY, BOB, ANN])
    assert len(set(forward.values())) == 3
    # a plain id that happens to read like ann's written id: ann's suffix grows, the plain one stays
    clash = written_ids([forward[ANN], ANN])
    assert clash[forward[ANN]] == forward[ANN]
    assert clash[ANN].startswith(forward[ANN])
    assert len(clash[ANN]) == len(forward[ANN]) + 8
    # ids read back from a run map to themselves
    assert written_ids(forward.values()) == {v: v for v in forward.values()}
