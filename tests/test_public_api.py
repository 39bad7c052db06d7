"""The public API is a short, deliberate list."""

from __future__ import annotations

import tracesim
import tracesim.evaluators
import tracesim.exporters
import tracesim.testing


def test_top_level_names_are_pinned() -> None:
    assert sorted(tracesim.__all__) == sorted(
        [
            "Case",
            "ConfigError",
            "ContextThreadPoolExecutor",
            "Dataset",
            "Golden",
            "NotConfiguredWarning",
            "ScoringStats",
            "Span",
            "TracesimError",
            "__version__",
            "attributes",
            "configure",
            "current_span",
            "expect",
            "force_flush",
            "instrument_anthropic",
            "instrument_langchain",
            "instrument_openai",
            "last_span",
            "propagate_context",
            "score",
            "scoring_stats",
            "shutdown",
            "span",
            "trace",
            "uninstrument_anthropic",
            "uninstrument_langchain",
            "uninstrument_openai",
        ]
    )


def test_every_exported_name_exists_and_is_documented() -> None:
    for module in (tracesim, tracesim.evaluators, tracesim.exporters, tracesim.experiments, tracesim.testing):
        for name in module.__all__:
            value = getattr(module, name)
            if name != "__version__":
                assert getattr(value, "__doc__", None), f"{module.__name__}.{name} has no docstring"


def test_the_package_is_typed() -> None:
    from importlib.resources import files

    assert files("tracesim").joinpath("py.typed").is_file()
