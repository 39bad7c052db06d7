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
    ("type_name", "package"),
    [("bleu", "punkt_tab"), ("gleu", "punkt_tab"), ("meteor", "punkt_tab")],
)
def test_missing_data_fails_at_construction_with_the_fix(
    tmp_path: Path, type_name: str, package: str
) -> None:
    code = (
        "from tracesim.evaluators import from_config, MissingNLTKDataError\n"
        "try:\n"
        f"    from_config({{'type': {type_name!r}}})\n"
        "except MissingNLTKDataError as exc:\n"
        "    print('PACKAGE', exc.package)\n"
        "    print(exc)\n"
        "else:\n"
        "    print('NO ERROR')\n"
    )
    done = _run(code, tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"PACKAGE {package}" in done.stdout
    assert "python -m tracesim nlp-data" in done.stdout
    assert f"python -m nltk.downloader {package}" in done.stdout
    assert "NLTK_DATA" in done.stdout


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
    # Only punkt_tab present: BLEU then needs perluniprops; METEOR needs wordnet.
    data = tmp_path / "partial"
    _copy_data("tokenizers/punkt_tab", data)
    code = (
        "from tracesim.evaluators import Bleu, MissingNLTKDataError\n"
        "try:\n    Bleu()\nexcept MissingNLTKDataError as exc:\n    print('PACKAGE', exc.package)\n"
    )
    done = _run(code, tmp_path, data)
    assert "PACKAGE perluniprops" in done.stdout, done.stderr


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
