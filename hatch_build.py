"""Build hook: compile the redaction probe (``tracesim/_redact/_probe.c``) into the wheel.

The probe is an accelerator. Without a C compiler, or with ``TRACESIM_PURE_PYTHON=1``, the
wheel is built without it (pure Python, any platform) and tracesim redacts with its Python
engine, which gives the same results at a higher CPU cost. An editable install
(``pip install -e .``) builds the module next to its source, where the checkout imports it.
"""

from __future__ import annotations

import os
import sys
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

SOURCE = "tracesim/_redact/_probe.c"
MODULE = "tracesim._redact._probe"


class ProbeBuildHook(BuildHookInterface):  # type: ignore[type-arg]
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel":
            return
        editable = version == "editable"
        if editable:
            # This interpreter's build left in the checkout would be imported: this build decides
            # anew. Only the names this interpreter imports: the venv of another Python on the
            # same checkout (tox, nox, a benchmark's) keeps its own build, and its speed.
            folder = (Path(self.root) / SOURCE).parent
            for suffix in EXTENSION_SUFFIXES:
                (folder / f"_probe{suffix}").unlink(missing_ok=True)
        if os.environ.get("TRACESIM_PURE_PYTHON", "") not in ("", "0"):
            print("tracesim: TRACESIM_PURE_PYTHON is set: no compiled redaction probe", file=sys.stderr)
            return
        try:
            built = self._compile(editable)
        except Exception as error:  # no compiler, no headers: the pure-Python wheel still works
            print(
                f"tracesim: the redaction probe was not compiled ({type(error).__name__}: {error}); "
                "redaction runs in pure Python, with the same results and more CPU",
                file=sys.stderr,
            )
            return
        build_data["pure_python"] = False
        build_data["infer_tag"] = True
        if not editable:
            build_data["force_include"][str(built)] = f"tracesim/_redact/{built.name}"

    def _compile(self, in_place: bool) -> Path:
        # setuptools knows each platform's compiler and flags (MSVC included); only its
        # build_ext command is used, never setup.py.
        from setuptools import Distribution, Extension
        from setuptools.command.build_ext import build_ext

        root = Path(self.root)
        work = root / "build" / "probe"  # ignored by git, so never packaged
        extension = Extension(MODULE, [str(root / SOURCE)], optional=False)
        command = build_ext(Distribution({"name": "tracesim-probe", "ext_modules": [extension]}))
        command.build_lib = str(root if in_place else work / "lib")
        command.build_temp = str(work / "temp")
        command.force = True  # never a module left from an earlier build
        command.ensure_finalized()
        command.run()
        (built,) = command.get_outputs()
        return Path(built)
