"""What the trace file's encoder costs per span: OpenTelemetry's JSON encoder against tracesim's.

``encode_line`` (`tracesim.exporters._jsonl`) writes each batch as one OTLP/JSON line. Before,
OpenTelemetry's ``opentelemetry-exporter-otlp-json-common`` built it (``encode_spans(...)``,
``to_dict()``, ``json.dumps``: `official_line`); now tracesim's own encoder writes the same bytes
(`tracesim.exporters._otlp_json_encode`). Both are timed here on the same spans, in the same
process, rounds interleaved (the machine is shared: read the ratio, not the absolute figures):

* ``plain``: a span of a ``@tracesim.trace`` call (input, output and tracesim's attributes);
* ``scored``: the same call scored inline by levenshtein, rouge and bleu: three result events of
  about 9 attributes each, plus the flat score attributes.

Each timing encodes a batch of ``--batch`` spans (the batch processor's export size) and is
divided by the spans in it; the figure printed is the median over ``--rounds`` rounds.

Run: ``NLTK_DATA=/work/shared/nltk_data python benchmarks/bench_jsonl_encode.py``
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable, Sequence

from opentelemetry.sdk.trace import ReadableSpan

import tracesim
from tracesim.evaluators import Bleu, Levenshtein, Rouge
from tracesim.exporters._jsonl import encode_line
from tracesim.exporters._otlp_json_encode import encode_json_line, official_line
from tracesim.testing import capture_spans

QUESTION = "Which river flows through the old town of Kraków, and where does it reach the sea? " * 2
ANSWER = "The Vistula flows through Kraków and reaches the Baltic Sea near Gdańsk, after about 1,000 km."


def make_spans(scored: bool, count: int) -> tuple[ReadableSpan, ...]:
    evaluators = [Levenshtein(), Rouge(), Bleu()] if scored else []

    @tracesim.trace(kind="llm", evaluators=evaluators, expected=ANSWER.replace("1,000", "1,047"))
    def answer(question: str) -> str:
        return ANSWER

    with capture_spans() as captured:
        for i in range(count):
            answer(f"{QUESTION} ({i})")
    return captured.otel_spans


def per_span(
    encode: Callable[[Sequence[ReadableSpan]], bytes], spans: Sequence[ReadableSpan], repeat: int
) -> float:
    """µs of CPU (this thread) per span to encode ``spans`` as one line, best of ``repeat``."""
    best = float("inf")
    for _ in range(repeat):
        start = time.thread_time_ns()
        encode(spans)
        best = min(best, time.thread_time_ns() - start)
    return best / len(spans) / 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=128, help="spans per encoded line")
    parser.add_argument("--rounds", type=int, default=15, help="interleaved rounds (median printed)")
    args = parser.parse_args()
    encoders = {"official": official_line, "tracesim": encode_line}
    print(f"µs of CPU per span, batches of {args.batch}, median of {args.rounds} interleaved rounds")
    print(f"{'spans':<8}{'official':>10}{'tracesim':>10}{'ratio':>8}   same bytes")
    for kind in ("plain", "scored"):
        spans = make_spans(kind == "scored", args.batch)
        same = encode_json_line(spans) == official_line(spans) == encode_line(spans)
        times: dict[str, list[float]] = {name: [] for name in encoders}
        for _ in range(args.rounds):
            for name, encode in encoders.items():
                times[name].append(per_span(encode, spans, repeat=3))
        official, ours = (statistics.median(times[name]) for name in encoders)
        print(f"{kind:<8}{official:>10.1f}{ours:>10.1f}{ours / official:>8.2f}   {same}")


if __name__ == "__main__":
    main()
