"""Building an NLTK-backed evaluator does not import NLTK: only its first call does.

A host whose evaluators score in worker processes never runs them itself; importing NLTK (with
scikit-learn and SciPy behind it) would grow its heap tenfold, and every full garbage collection
of the host with it (from ~9 ms to ~80 ms: the host's p99 latency).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tracesim.evaluators import _nltk_data

_PROBE = """
import json, sys
from tracesim.evaluators import Bleu, Gleu, Meteor
built = [Bleu(), Gleu(), Meteor()]
before = "nltk" in sys.modules
missing = [list(e.missing_data) for e in built]
score = built[2].evaluate("The auto is red.", "The car is red.").score
print(json.dumps({"imported_when_built": before, "missing": missing, "meteor": score}))
"""


def _run(env: dict[str, str]) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE], env=env, capture_output=True, text=True, timeout=300, check=True
    )
    return json.loads(done.stdout.splitlines()[-1])  # type: ignore[no-any-return]


@pytest.mark.skipif(not os.environ.get("NLTK_DATA"), reason="needs NLTK_DATA (the NLTK data packages)")
def test_building_imports_no_nltk_and_the_first_call_scores() -> None:
    seen = _run(dict(os.environ))
    assert seen == {"imported_when_built": False, "missing": [[], [], []], "meteor": 0.996}


def test_where_nltk_finds_nothing_the_answer_is_nltks(tmp_path: os.PathLike[str]) -> None:
    env = {**os.environ, "NLTK_DATA": str(tmp_path), "HOME": str(tmp_path)}
    code = (
        "import json\nfrom tracesim.evaluators import _nltk_data\n"
        "ours = _nltk_data.find_missing(['punkt_tab'])\n"
        "from nltk import data\n"
        "def found(path):\n"
        "    try:\n        data.find(path)\n    except LookupError:\n        return False\n    return True\n"
        "nltks = [] if found('tokenizers/punkt_tab/english/') else ['punkt_tab']\n"
        "print(json.dumps([ours, nltks]))"
    )
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    ours, nltks = json.loads(done.stdout)
    assert ours == nltks


def test_a_zip_holding_the_folder_counts_and_one_without_it_does_not(tmp_path: os.PathLike[str]) -> None:
    import zipfile

    root = os.path.join(tmp_path, "tokenizers")
    os.makedirs(root)
    with zipfile.ZipFile(os.path.join(root, "punkt_tab.zip"), "w") as archive:
        archive.writestr("punkt_tab/english/collocations.tab", "")
    assert _nltk_data._holds(os.path.join(root, "punkt_tab.zip"), "punkt_tab/english/")
    assert not _nltk_data._holds(os.path.join(root, "punkt_tab.zip"), "punkt_tab/german/")
