"""The build hook (``hatch_build.py``) with hatchling's own hook class, on a checkout in a temp dir.

An editable install builds the redaction probe next to its source, where the checkout imports
it. Before it builds, it removes the build this interpreter would import (a pure-Python
install must not keep using an old one), and only that one: the venv of another Python on the
same checkout (tox, nox, a benchmark's) keeps its build. Before, every ``_probe.*.so`` went,
and one editable install for Python 3.13 silently turned the 3.11 venv's redaction to its
pure-Python engine (same results, about 60,000 more instructions per exported span).
"""

from __future__ import annotations

import importlib.util
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]


def _hook(root: Path) -> Any:
    spec = importlib.util.spec_from_file_location("tracesim_hatch_build", REPO / "hatch_build.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.ProbeBuildHook(str(root), {}, None, None, str(root / "dist"), "wheel")


@pytest.fixture
def checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "tracesim" / "_redact"
    folder.mkdir(parents=True)
    (folder / "_probe.c").write_text("/* the probe's source */\n")
    monkeypatch.setenv("TRACESIM_PURE_PYTHON", "1")  # decide what to remove, compile nothing
    return tmp_path


def test_an_editable_build_removes_this_interpreters_probe_and_keeps_another_pythons(checkout: Path) -> None:
    folder = checkout / "tracesim" / "_redact"
    mine = folder / f"_probe{EXTENSION_SUFFIXES[0]}"
    other = folder / "_probe.cpython-399-x86_64-linux-gnu.so"  # no interpreter here imports this name
    for built in (mine, other):
        built.write_bytes(b"\x7fELF")
    data: dict[str, Any] = {"force_include": {}}

    _hook(checkout).initialize("editable", data)

    assert not mine.exists(), "this interpreter would have imported the old build"
    assert other.exists(), "another Python's venv on this checkout lost its compiled probe"
    assert (folder / "_probe.c").exists()
    assert "pure_python" not in data  # TRACESIM_PURE_PYTHON: nothing compiled, the wheel stays pure


def test_a_wheel_build_leaves_the_checkout_alone(checkout: Path) -> None:
    mine = checkout / "tracesim" / "_redact" / f"_probe{EXTENSION_SUFFIXES[0]}"
    mine.write_bytes(b"\x7fELF")

    _hook(checkout).initialize("standard", {"force_include": {}})

    assert mine.exists()
