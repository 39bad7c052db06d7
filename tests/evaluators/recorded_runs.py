"""The run evaluators' reference cases, recorded from the packages they reproduce (the scripts
that recorded them sit beside them in ``data/``), read by the tests of each evaluator."""

from __future__ import annotations

import json
from collections.abc import Collection
from pathlib import Path
from typing import Any

DATA = Path(__file__).parent / "data"
AGENTEVALS_DEEPEVAL = DATA / "run_cases_agentevals_deepeval.jsonl"
RAGAS_PYDANTIC = DATA / "run_cases_ragas_pydantic.jsonl"


def recorded(path: Path, evaluators: Collection[str]) -> list[dict[str, Any]]:
    """The cases of ``path`` recorded for any of ``evaluators``, in file order."""
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    return [row for row in rows if row["evaluator"] in evaluators]
