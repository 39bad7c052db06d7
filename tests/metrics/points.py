"""Reading the metrics tracesim wrote to ``<trace file>.metrics.jsonl`` (OTLP/JSON lines)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

METRICS_FILE = Path(".tracesim/traces.metrics.jsonl")


def last_points(path: Path = METRICS_FILE) -> dict[str, list[dict[str, Any]]]:
    """The points of the last line, by metric name; each point's attributes flattened into ``attrs``."""
    lines = path.read_text().splitlines()
    assert lines, f"{path} is empty"
    request = json.loads(lines[-1])
    found: dict[str, list[dict[str, Any]]] = {}
    for resource in request["resourceMetrics"]:
        for scope in resource["scopeMetrics"]:
            for metric in scope["metrics"]:
                data = metric.get("sum") or metric.get("histogram") or metric.get("gauge") or {}
                for point in data.get("dataPoints", []):
                    attrs = {a["key"]: _value(a["value"]) for a in point.get("attributes", [])}
                    found.setdefault(metric["name"], []).append(
                        {**point, "attrs": attrs, "unit": metric.get("unit")}
                    )
    return found


def _value(value: dict[str, Any]) -> Any:
    for key in ("stringValue", "boolValue", "doubleValue"):
        if key in value:
            return value[key]
    if "intValue" in value:
        return int(value["intValue"])
    return value


def results_by(points: dict[str, list[dict[str, Any]]], *keys: str) -> Counter[tuple[Any, ...]]:
    """``tracesim.evaluation.results`` summed by the attributes ``keys``."""
    totals: Counter[tuple[Any, ...]] = Counter()
    for point in points.get("tracesim.evaluation.results", []):
        totals[tuple(point["attrs"][k] for k in keys)] += int(point["asInt"])
    return totals
