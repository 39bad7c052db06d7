"""The Daft recipe of docs/batch.md, run as written (when daft is installed)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

daft = pytest.importorskip("daft", reason="daft is not installed (it needs pyarrow<26; see docs/batch.md)")
pd = pytest.importorskip("pandas")

from tracesim.batch import score_frame  # noqa: E402

DOCS = Path(__file__).resolve().parents[2] / "docs" / "batch.md"


def recipe(heading: str) -> str:
    """The first Python block after ``heading`` in docs/batch.md."""
    text = DOCS.read_text(encoding="utf-8")
    after = text[text.index(heading) :]
    found = re.search(r"```python\n(.*?)```", after, re.DOTALL)
    assert found is not None
    return found.group(1)


def test_the_daft_recipe_gives_the_scores_of_score_frame(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = pd.DataFrame(
        {
            "id": [f"q{i}" for i in range(40)],
            "output": [f"Paris is the capital {i % 3}" for i in range(40)],
            "expected": [None if i % 7 == 0 else "Paris is the capital 0" for i in range(40)],
        }
    )
    (tmp_path / "answers").mkdir()
    rows.to_parquet(tmp_path / "answers" / "a.parquet")
    monkeypatch.chdir(tmp_path)
    code = recipe("**Daft**").replace(
        '"levenshtein:threshold=0.8", "rouge", "bleu"', '"levenshtein:threshold=0.8", "rouge"'
    )
    exec(compile(code, "docs/batch.md (Daft)", "exec"), {})
    written = pd.concat([pd.read_parquet(path) for path in sorted((tmp_path / "scores").glob("*.parquet"))])
    written = written.sort_values("id").reset_index(drop=True)
    expected = (
        score_frame(rows, ["levenshtein:threshold=0.8", "rouge"]).sort_values("id").reset_index(drop=True)
    )
    assert list(written.columns) == list(expected.columns)
    for column in expected.columns:
        assert (
            written[column].astype(object).where(written[column].notna(), None).tolist()
            == expected[column].astype(object).where(expected[column].notna(), None).tolist()
        ), column
