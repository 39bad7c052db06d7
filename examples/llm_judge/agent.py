"""An OpenAI-backed agent: its model calls traced, its answers judged online by another model.

Works with OpenAI or any OpenAI-compatible server (vLLM, Ollama, a gateway): the client reads
OPENAI_API_KEY and OPENAI_BASE_URL. Needs the openai extra for the model-call spans:

    pip install 'tracesim[openai]'
    cd examples/llm_judge && OPENAI_API_KEY=... python agent.py && tracesim show
"""

import os

import openai

import tracesim
from tracesim.evaluators import LLMSimilarity, ModelConnection

MODEL = os.environ.get("AGENT_MODEL", "gpt-4o-mini")

tracesim.configure(service_name="support-bot", instrument=["openai"])  # every openai call is a span
# The judge's model, its server (OPENAI_BASE_URL by default) and the limits of its calls, as one
# object that other model-backed evaluators can share; answers are kept on disk, paid for once.
judge_model = ModelConnection(model=os.environ.get("JUDGE_MODEL", MODEL), cache_dir=".tracesim/judge")
judge = LLMSimilarity(connection=judge_model, max_concurrency=8)
client = openai.OpenAI()

GOLDEN = {
    "Where was Marie Curie born?": "Marie Curie was born in Warsaw, Poland.",
    "What did Alan Turing propose in 1950?": "The imitation game, now called the Turing test.",
}


@tracesim.trace(kind="agent", evaluators=[judge], expected=GOLDEN.get)
def answer(question: str) -> str:
    reply = client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": question}], temperature=0
    )
    return reply.choices[0].message.content or ""


if __name__ == "__main__":
    with tracesim.attributes(session_id="demo-session", tags=["example"]):
        for question in GOLDEN:
            print(question, "->", answer(question))  # returns at once; the judge runs in the background
    tracesim.force_flush()  # short scripts: wait for the grades and the export
    print(tracesim.scoring_stats())
