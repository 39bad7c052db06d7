"""tracesim-langchain's example: an agent running a LangChain chain, the chain's steps as spans.

Needs ``pip install 'tracesim[langchain]' langchain-openai`` and OPENAI_API_KEY
(OPENAI_BASE_URL for another endpoint). The trace goes to .tracesim/traces.jsonl;
``tracesim show`` prints it.
"""

from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_openai import ChatOpenAI

import tracesim

tracesim.configure(service_name="langchain-example")
tracesim.instrument_langchain()  # or configure(instrument=["langchain"])

chain = (
    ChatPromptTemplate.from_messages([("user", "Answer in one sentence: {question}")])
    | ChatOpenAI(model="gpt-4o-mini")
    | StrOutputParser()
)


@tracesim.trace(kind="agent")
def answer(question: str) -> str:
    return chain.invoke({"question": question})


if __name__ == "__main__":
    print(answer("Where was Marie Curie born?"))
    tracesim.shutdown()
