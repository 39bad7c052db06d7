"""The public API is a short, deliberate list."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import tracesim
import tracesim.batch
import tracesim.evaluators
import tracesim.exporters
import tracesim.runs
import tracesim.testing
import tracesim.tracefile


def test_top_level_names_are_pinned() -> None:
    assert sorted(tracesim.__all__) == sorted(
        [
            "Case",
            "ConfigError",
            "ContextThreadPoolExecutor",
            "Dataset",
            "Expected",
            "ExportStats",
            "Golden",
            "NotConfiguredWarning",
            "RecordedRun",
            "ScoringStats",
            "Span",
            "TracesimError",
            "__version__",
            "attributes",
            "configure",
            "current_span",
            "expect",
            "export_stats",
            "force_flush",
            "instrument_anthropic",
            "instrument_langchain",
            "instrument_openai",
            "last_span",
            "propagate_context",
            "record_run",
            "score",
            "scoring_stats",
            "shutdown",
            "span",
            "trace",
            "uninstrument_anthropic",
            "uninstrument_langchain",
            "uninstrument_openai",
            "instrument_litellm",
            "instrument_mcp",
            "instrument_openai_agents",
            "instrument_pydantic_ai",
            "uninstrument_litellm",
            "uninstrument_mcp",
            "uninstrument_openai_agents",
            "uninstrument_pydantic_ai",
        ]
    )


def test_every_exported_name_exists_and_is_documented() -> None:
    modules = (
        tracesim,
        tracesim.evaluators,
        tracesim.exporters,
        tracesim.experiments,
        tracesim.testing,
        tracesim.tracefile,
    )
    for module in modules:
        for name in module.__all__:
            value = getattr(module, name)
            if name != "__version__":
                assert getattr(value, "__doc__", None), f"{module.__name__}.{name} has no docstring"


def test_the_package_is_typed() -> None:
    from importlib.resources import files

    assert files("tracesim").joinpath("py.typed").is_file()


def test_import_tracesim_loads_only_what_a_traced_call_needs(run_python: Any, tmp_path: Path) -> None:
    # Import time is measured by benchmarks, not here; this pins what makes it: none of these
    # heavy modules is loaded by `import tracesim` in a fresh interpreter.
    heavy = [
        "asyncio",  # async evaluators and async code bring it
        "httpx",  # replay, model-backed evaluators, Phoenix annotations
        "rich",  # the command line and the console exporter
        "importlib.metadata",  # the version is a literal
        "tracesim.experiments",
        "tracesim.integrations",
        "tracesim.evaluators",
        "tracesim.batch._replay",
        "opentelemetry.exporter.otlp.proto.http",
        "opentelemetry.sdk.trace",  # loaded by configure(), with its resource detectors (psutil)
        "psutil",
        "tracesim.exporters",
    ]
    script = f"import sys, tracesim; print([m for m in {heavy!r} if m in sys.modules])"
    done = run_python(script, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
    # configure() brings the SDK in, and traced calls work as ever
    script = (
        "import sys, tracesim\n"
        "tracesim.configure(exporters='none')\n"
        "@tracesim.trace\n"
        "def f(x): return x + 1\n"
        "print(f(1), 'opentelemetry.sdk.trace' in sys.modules)"
    )
    done = run_python(script, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["2", "True"]
    # and every public name is still there when asked for
    assert tracesim.Dataset.__name__ == "Dataset"
    assert tracesim.Expected is tracesim.runs.Expected  # the same class as tracesim.runs'
    assert callable(tracesim.instrument_openai)
    assert set(tracesim.__all__) <= set(dir(tracesim)) | {"__version__"}
    assert tracesim.exporters.JsonlExporter.__name__ == "JsonlExporter"


def test_exporters_lists_only_what_leaves_the_process() -> None:
    assert sorted(tracesim.exporters.__all__) == [
        "ConsoleExporter",
        "JsonlExporter",
        "RedactingExporter",
        "Redaction",
        "SpoolStats",
        "SpoolingExporter",
        "otlp_exporter",
    ]
    assert sorted(tracesim.tracefile.__all__) == [
        "EventRecord",
        "LinkRecord",
        "SpanRecord",
        "TraceFileWarning",
        "load_spans",
        "read_jsonl",
        "render_trees",
        "rotated_files",
        "spans_from_request",
    ]


@pytest.mark.parametrize("name", sorted(tracesim.exporters.MOVED))
def test_a_moved_name_still_imports_from_exporters_with_a_deprecation_warning(name: str) -> None:
    new_home = {"tracesim.tracefile": tracesim.tracefile, "tracesim.batch": tracesim.batch}[
        tracesim.exporters.MOVED[name]
    ]
    with pytest.warns(DeprecationWarning, match=rf"tracesim\.exporters\.{name} moved to {new_home.__name__}"):
        exec(f"from tracesim.exporters import {name} as old", namespace := {})  # the old import line
    assert namespace["old"] is getattr(new_home, name)
    with pytest.warns(DeprecationWarning, match="moved to"):
        assert getattr(tracesim.exporters, name) is getattr(new_home, name)  # warns on every use


def test_an_unknown_name_is_still_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        tracesim.exporters.nothing_here  # noqa: B018
