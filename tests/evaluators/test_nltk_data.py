"""NLTK data: METEOR really uses WordNet; missing data fails early with a clear message."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tracesim.cli import main
from tracesim.evaluators import Meteor
from tracesim.evaluators._nltk_data import find_missing

REPO = Path(__file__).parents[2]


def test_meteor_uses_wordnet_synonyms() -> None:
    # "auto" and "car" share a WordNet synset; nothing else relates them.
    with_synonyms = Meteor().evaluate("The auto is red.", "The car is red.")
    without = Meteor(synonyms=False).evaluate("The auto is red.", "The car is red.")
    assert with_synonyms.score == pytest.approx(0.996)
    assert without.score == pytest.approx(0.75)
    assert Meteor().evaluate("auto", "car").score == 0.5
    assert Meteor(synonyms=False).evaluate("auto", "car").score == 0.0


def test_wordnet_is_loaded_once_per_process() -> None:
    first, second = Meteor(), Meteor(alpha=0.5)
    assert first._wordnet is second._wordnet


def test_shared_data_is_complete() -> None:
    assert find_missing() == []


def _only_data_in(folder: Path, code: str) -> str:
    """``code`` run with ``folder`` as NLTK's whole search path.

    NLTK_DATA alone is not enough: NLTK also searches ~/nltk_data, the interpreter's prefix
    and /usr/share/nltk_data, where `tracesim nlp-data` may have installed the data.
    """
    return f"import nltk\nnltk.data.path[:] = [{str(folder)!r}]\n" + code


def _run(code: str, tmp_path: Path, data: Path | None = None) -> subprocess.CompletedProcess[str]:
    if data is None:
        data = tmp_path / "empty_nltk_data"
        data.mkdir(mode=0o700)
    env = {**os.environ, "NLTK_DATA": str(data), "HOME": str(tmp_path)}
    return subprocess.run(
        [sys.executable, "-c", _only_data_in(data, code)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
        check=False,
    )


def _installed(resource: str) -> Path:
    """The file or folder NLTK would load ``resource`` (e.g. ``tokenizers/punkt_tab``) from.

    Searches ``nltk.data.path`` (NLTK_DATA, ~/nltk_data, the prefix, /usr/share/...), so the
    data may come from NLTK_DATA or from `tracesim nlp-data`'s default location; a package
    may be installed as its zip or unpacked.
    """
    import nltk

    for root in nltk.data.path:
        for candidate in (Path(root) / f"{resource}.zip", Path(root) / resource):
            if candidate.exists():
                return candidate
    searched = ", ".join(str(p) for p in nltk.data.path)
    pytest.fail(
        f"NLTK data {resource!r} is on none of NLTK's search paths ({searched}); install it with "
        "`python -m tracesim nlp-data` or point NLTK_DATA at a folder that holds it"
    )


@pytest.mark.parametrize(
    ("type_name", "packages"),
    [
        ("bleu", "'punkt_tab', 'perluniprops'"),
        ("gleu", "'punkt_tab', 'perluniprops'"),
        ("meteor", "'punkt_tab', 'perluniprops', 'wordnet'"),
    ],
)
def test_missing_data_makes_results_errors_naming_every_package_and_the_fix(
    tmp_path: Path, type_name: str, packages: str
) -> None:
    # Built at decoration or configuration time, the evaluator must not stop the application:
    # one warning, then each call is an error result with the same message.
    code = (
        "import logging\n"
        "logging.basicConfig(level=logging.WARNING, format='LOG %(message)s')\n"
        "from tracesim.evaluators import from_config\n"
        f"evaluator = from_config({{'type': {type_name!r}}})\n"
        f"again = from_config({{'type': {type_name!r}}})\n"
        "print('MISSING', evaluator.missing_data)\n"
        "result = evaluator.evaluate('Paris', 'Paris')\n"
        "print('STATUS', result.status, result.error_type)\n"
        "print('ERROR', result.error)\n"
    )
    done = _run(code, tmp_path)
    assert done.returncode == 0, done.stderr
    assert "STATUS error MissingNLTKDataError" in done.stdout
    error = next(line for line in done.stdout.splitlines() if line.startswith("ERROR"))
    assert f"the NLTK data packages {packages}, which are not on NLTK's search path" in error
    assert "python -m tracesim nlp-data" in error
    assert f"python -m nltk.downloader {packages.replace(chr(39), '').replace(',', '')}" in error
    assert "NLTK_DATA" in error
    logged = [line for line in done.stderr.splitlines() if line.startswith("LOG")]
    assert len(logged) == 1, done.stderr  # two evaluators of the type, one warning
    assert "Until then its results are errors." in logged[0]


def test_building_meteor_loads_nothing_and_its_first_call_loads_wordnet() -> None:
    from tracesim.evaluators import _nltk_data
    from tracesim.evaluators._nltk_metrics import Meteor

    _nltk_data._loaded.pop("wordnet", None)
    evaluator = Meteor()
    assert "wordnet" not in _nltk_data._loaded  # not at decoration time
    assert evaluator.evaluate("The auto is red.", "The car is red.").score == 0.996
    assert "wordnet" in _nltk_data._loaded


def test_tracesim_eval_still_refuses_at_once(tmp_path: Path) -> None:
    data = tmp_path / "rows.jsonl"
    data.write_text('{"output": "a", "expected": "a"}\n')
    code = "import sys\nfrom tracesim.cli import main\nsys.exit(main(['eval', sys.argv[1], '-e', 'bleu']))\n"
    done = subprocess.run(
        [sys.executable, "-c", _only_data_in(tmp_path / "none", code), str(data)],
        env={**os.environ, "NLTK_DATA": str(tmp_path / "none"), "HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert "needs the NLTK data packages 'punkt_tab', 'perluniprops'" in done.stderr


def _copy_data(resource: str, root: Path) -> None:
    """Copy the installed NLTK ``resource`` (zip or folder) into the data folder ``root``."""
    source = _installed(resource)
    target = root / resource.rsplit("/", 1)[0] / source.name
    target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    if source.is_dir():
        shutil.copytree(source, target)
    else:
        shutil.copyfile(source, target)


def test_each_missing_package_is_named(tmp_path: Path) -> None:
    # Only punkt_tab present: BLEU then needs perluniprops; METEOR also needs wordnet.
    data = tmp_path / "partial"
    _copy_data("tokenizers/punkt_tab", data)
    code = (
        "from tracesim.evaluators import Bleu, Meteor\n"
        "print('BLEU', Bleu().missing_data)\n"
        "print('METEOR', Meteor().missing_data)\n"
        "print('NO SYNONYMS', Meteor(synonyms=False).missing_data)\n"
    )
    done = _run(code, tmp_path, data)
    assert "BLEU ('perluniprops',)" in done.stdout, done.stderr
    assert "METEOR ('perluniprops', 'wordnet')" in done.stdout, done.stderr
    assert "NO SYNONYMS ('perluniprops',)" in done.stdout, done.stderr


def test_data_in_nltks_default_folder_is_used_without_nltk_data(tmp_path: Path) -> None:
    # `tracesim nlp-data` installs into NLTK's default folder (~/nltk_data), not NLTK_DATA.
    home = tmp_path / "home"
    for resource in ("tokenizers/punkt_tab", "misc/perluniprops"):
        _copy_data(resource, home / "nltk_data")
    env = {key: value for key, value in os.environ.items() if key != "NLTK_DATA"}
    env["HOME"] = str(home)
    code = (
        "import nltk\n"
        f"assert {str(home / 'nltk_data')!r} in nltk.data.path, nltk.data.path\n"
        "from tracesim.evaluators import Gleu\n"
        "print(Gleu().evaluate('a b c d', 'a b c d').score)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.stdout.strip() == "1.0", done.stderr


def test_other_evaluators_need_no_data(tmp_path: Path) -> None:
    code = (
        "from tracesim.evaluators import from_config\n"
        "for t in ['exact', 'levenshtein', 'levenshtein_distance', 'jaccard', 'cosine', 'content_similarity',"
        " 'f1', 'rouge']:\n"
        "    assert from_config({'type': t}).evaluate('a b c', 'a b d').status == 'ok'\n"
        "print('OK')\n"
    )
    done = _run(code, tmp_path)
    assert done.stdout.strip() == "OK", done.stderr


def test_nlp_data_check(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["nlp-data", "--check"]) == 0
    out = capsys.readouterr().out
    assert "punkt_tab" in out
    assert "wordnet" in out
    assert "missing" not in out


def test_nlp_data_check_reports_missing(tmp_path: Path) -> None:
    done = _run("from tracesim.cli import main; raise SystemExit(main(['nlp-data', '--check']))", tmp_path)
    assert done.returncode == 1
    assert "wordnet        missing" in done.stdout
    assert "python -m tracesim nlp-data" in done.stderr
