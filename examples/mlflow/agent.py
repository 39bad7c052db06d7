"""Scores in MLflow: an agent scored online, its results shown as MLflow assessments.

Start a tracking server (its own virtualenv: MLflow pins its own OpenTelemetry), then run this
with the OTLP endpoint and the experiment in the environment:

    pip install 'mlflow==3.17.2' && mlflow server --host 127.0.0.1 --port 5000 --workers 1
    OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:5000 MLFLOW_EXPERIMENT_ID=0 python agent.py

Then open http://127.0.0.1:5000, the experiment "Default", its Traces tab: each answer has its
feedback (levenshtein, rouge, user_rating) and its expected response.
"""

from pathlib import Path

import tracesim
from tracesim.evaluators import Levenshtein, Rouge

tracesim.configure(service_name="support-bot")  # endpoint and experiment from the environment
GOLDEN = tracesim.Golden(Path(__file__).parent.parent / "online_scoring" / "golden.jsonl", key="question")

ANSWERS = {
    "Where was Marie Curie born?": "Marie Curie was born in Warsaw in 1867.",
    "What did Alan Turing propose in 1950?": "Alan Turing proposed the imitation game in 1950.",
}


ANSWERED: dict[str, tracesim.Span] = {}  # kept to take a user's rating later


@tracesim.trace(kind="agent", evaluators=[Levenshtein(threshold=0.8), Rouge("rougeL")], expected=GOLDEN)
def answer(question: str) -> str:
    ANSWERED[question] = tracesim.current_span()
    return ANSWERS[question]


if __name__ == "__main__":
    for question in ANSWERS:
        answer(question)  # returns at once; scoring and the assessments go in the background
        print(f"tr-{ANSWERED[question].trace_id}", question)  # MLflow's id of the trace
    rated = ANSWERED["Where was Marie Curie born?"]
    tracesim.score(rated, name="user_rating", value=1.0, label="helpful")  # feedback from a person
    tracesim.force_flush()  # short scripts: wait for the scores, the spans and the assessments
