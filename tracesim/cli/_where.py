"""Where this directory's configuration sends spans: the default file of show, report, replay."""

from __future__ import annotations

__all__ = ["default_trace_file", "missing_file_message"]

_FALLBACK = ".tracesim/traces.jsonl"


def default_trace_file() -> str:
    """The ``jsonl_path`` of the configuration here (tracesim.yaml, environment), else the default.

    Example:
        >>> default_trace_file()  # doctest: +SKIP
        '.tracesim/traces.jsonl'
    """
    try:
        from tracesim._config import resolve_setting

        path = resolve_setting("jsonl_path")
    except Exception:  # a broken configuration is configure()'s to report, not show's
        return _FALLBACK
    return str(path) if path else _FALLBACK


def missing_file_message(missing: list[str]) -> str:
    """``no such file: ...``, and, when the configuration here sends spans elsewhere, where."""
    message = f"no such file: {', '.join(missing)}"
    try:
        from tracesim._config import resolve

        exporters = resolve({}).exporters
    except Exception:
        return message
    if "jsonl" in exporters:
        return message
    names = ", ".join(str(e) for e in exporters) or "none"
    return (
        f"{message}; the configuration here writes no trace file (exporters: {names}): "
        "see the spans in that backend, or add 'jsonl' to exporters "
        "(TRACESIM_EXPORTERS=otlp,jsonl) to keep a local copy too"
    )
