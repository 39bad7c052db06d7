"""Start-up cost: `import tracesim`, then `configure()`, beside the OpenTelemetry pieces they need.

Each figure is the median wall time of ``--rounds`` fresh interpreters (``python -X importtime``
is not used: it slows what it measures). Rounds of the four scripts are interleaved, so a busy
machine slows them alike; the ratios are the figures to compare across machines.

    python benchmarks/bench_import.py --rounds 15

Baselines:
- ``opentelemetry.trace``: the API a decorated module needs at the least;
- ``opentelemetry.sdk.trace`` + ``export``: what any configured OpenTelemetry pipeline imports.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys

_TIMED = "import time; t = time.perf_counter(); {body}; print((time.perf_counter() - t) * 1000)"
SCRIPTS = {
    "import opentelemetry.trace (API)": "import opentelemetry.trace",
    "import the OpenTelemetry SDK": "import opentelemetry.sdk.trace, opentelemetry.sdk.trace.export",
    "import tracesim": "import tracesim",
    "import tracesim + configure()": "import tracesim; tracesim.configure(exporters='none')",
}


def _once(body: str) -> float:
    done = subprocess.run(
        [sys.executable, "-c", _TIMED.format(body=body)], capture_output=True, text=True, check=True
    )
    return float(done.stdout.split()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=11)
    args = parser.parse_args()
    times: dict[str, list[float]] = {name: [] for name in SCRIPTS}
    for _ in range(args.rounds):
        for name, body in SCRIPTS.items():
            times[name].append(_once(body))
    medians = {name: statistics.median(values) for name, values in times.items()}
    sdk = medians["import the OpenTelemetry SDK"]
    print(f"{'':34} {'median':>9} {'min':>9} {'max':>9} {'x SDK import':>13}")
    for name, values in times.items():
        print(
            f"{name:34} {medians[name]:8.1f}ms {min(values):8.1f}ms {max(values):8.1f}ms"
            f" {medians[name] / sdk:12.2f}x"
        )


if __name__ == "__main__":
    main()
