"""What backfill writes and prints besides spans (its ledger, its console lines, its report) holds
no secret of its destinations, and the ledger's redacted keys still let a backfill resume."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("pandas", reason="the batch tests need the 'dask' extra (pandas)")

from batchdata import traced_file
from otlp_sink import OtlpSink, refused_url
from secret_kinds import SECRETS

from tracesim.batch import Spans, backfill, score
from tracesim.batch._backfill import LEDGER
from tracesim.cli import main


@pytest.fixture
def results(tmp_path: Path) -> Path:
    scores = tmp_path / "scores"
    score(
        Spans(str(traced_file(tmp_path)), name="answer"), evaluators=["exact"], output=scores, engine="local"
    )
    return scores


@pytest.fixture
def sink() -> Iterator[OtlpSink]:
    endpoint = OtlpSink()
    yield endpoint
    endpoint.close()


def with_secret(url: str, kind: str) -> str:
    """``url`` holding the secret of ``kind``: as its password, or in its query."""
    secret, _ = SECRETS[kind]
    if kind == "url_password":
        return url.replace("http://", "http://admin:hunter2pass@")
    return f"{url}?note={secret}"


@pytest.mark.parametrize("kind", sorted(SECRETS))
def test_a_secret_in_the_destination_is_in_no_ledger_line_or_console_line(
    results: Path, sink: OtlpSink, kind: str, capsys: pytest.CaptureFixture[str]
) -> None:
    url = with_secret(sink.url, kind)
    _, fragment = SECRETS[kind]

    assert main(["backfill", str(results), "--to", url]) == 0
    first = capsys.readouterr()
    assert main(["backfill", str(results), "--to", url]) == 0  # resumes: the same key
    second = capsys.readouterr()

    ledger = (results / LEDGER).read_text(encoding="utf-8")
    for where, text in {
        "ledger": ledger,
        "first": first.out + first.err,
        "again": second.out + second.err,
    }.items():
        assert fragment not in text, (where, text)
    assert "carrier spans" in first.out
    assert "parts already sent (ledger)" in second.out
    assert len(sink.requests) == 1  # sent once: the second run found it in the ledger
    [entry] = [json.loads(line) for line in ledger.splitlines()]
    assert entry["destination"].startswith("otlp:http://")
    assert "[REDACTED:" in entry["destination"]


def test_the_same_url_gives_the_same_key_and_an_older_clear_ledger_still_resumes(
    results: Path, sink: OtlpSink
) -> None:
    url = sink.url.replace("http://", "http://admin:hunter2pass@")
    [part] = sorted(results.glob("part-*"))
    digest = hashlib.sha256(part.read_bytes()).hexdigest()
    # what a tracesim before redacted keys wrote: the password in the clear
    older = {"destination": f"otlp:{url}", "part": part.name, "sha256": digest, "at": 1.0}
    (results / LEDGER).write_text(json.dumps(older) + "\n", encoding="utf-8")

    report = backfill(results, to=url)

    assert (report.parts, report.already_sent, report.carriers) == (0, 1, 0)
    assert sink.requests == []
    assert report.destinations == [f"otlp:{sink.url.replace('http://', 'http://admin:[REDACTED:password]@')}"]
    # another password for the same user and host is another destination's key in the clear,
    # but the same key redacted: sent once, not twice
    other = backfill(results, to=url.replace("hunter2pass", "other-pass-9"))
    assert other.already_sent == 1


def test_a_refused_destination_with_a_password_is_reported_without_it(
    results: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = refused_url().replace("http://", "http://admin:hunter2pass@")

    assert main(["backfill", str(results), "--to", url]) == 1

    captured = capsys.readouterr()
    assert "parts not delivered" in captured.out
    assert "[REDACTED:password]" in captured.out
    assert "hunter2pass" not in captured.out + captured.err
    assert not (results / LEDGER).exists()
    report = backfill(results, to=url)
    assert "hunter2pass" not in repr(report)


def test_a_file_destination_named_with_a_secret_is_redacted_in_the_ledger(
    results: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "to marie.curie@sorbonne.fr"
    folder.mkdir()
    out = folder / "carriers.jsonl"

    first = backfill(results, to=out)
    again = backfill(results, to=out)

    assert (first.carriers, again.already_sent) == (1, 1)
    assert "marie.curie@sorbonne" not in (results / LEDGER).read_text(encoding="utf-8")
    assert out.exists()  # written where the user said
