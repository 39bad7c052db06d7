"""Online scoring: an agent scored against a golden file while callers do not wait.

cd examples/online_scoring && python agent.py && tracesim show
"""

from pathlib import Path

import tracesim
from tracesim.evaluators import Levenshtein, Rouge

tracesim.configure(service_name="support-bot")
GOLDEN = tracesim.Golden(Path(__file__).with_name("golden.jsonl"), key="question")

ANSWERS = {
    "Where was Marie Curie born?": "Marie Curie was born in Warsaw in 1867.",
    "What did Alan Turing propose in 1950?": "Alan Turing proposed the imitation game in 1950.",
    "How high is Mount Everest?": "8,849 metres.",
}


@tracesim.trace(kind="agent", evaluators=[Levenshtein(threshold=0.8), Rouge("rougeL")], expected=GOLDEN)
def answer(question: str) -> str:
    return ANSWERS[question]


if __name__ == "__main__":
    for question in ANSWERS:
        print(question, "->", answer(question))  # returns at once; scoring runs in the background
    tracesim.force_flush()  # short scripts and tests: wait for scores + export
    print(tracesim.scoring_stats())
