"""Inputs the benchmarks trace: a small agent call and a realistic ~10 KB chat call.

The chat is what an LLM application passes around: a list of ``{"role", "content"}``
messages in plain English (a support conversation about an API, so words such as "token",
"key" and "model" occur naturally, as they do in real traffic) and a metadata dict with
usage counters, the model name and a cache key. It holds no secret: the common case, where
redaction must find nothing and cost little. Run ``python benchmarks/_workload.py`` to print
its size.
"""

from __future__ import annotations

import json
from typing import Any

QUESTION = ("Where was Marie Curie born, and what did she study in Paris? " * 4)[:200]
CONTEXT = {"user": "u-123", "session": "s-456", "top_k": 3, "lang": "en"}
ANSWER = ("Marie Curie was born in Warsaw and studied physics and mathematics at the Sorbonne. " * 3)[:200]

# What tracesim writes at start for kind="agent": the hand-written baselines write the same.
AGENT_ATTRIBUTES = {
    "openinference.span.kind": "AGENT",
    "gen_ai.operation.name": "invoke_agent",
    "gen_ai.agent.name": "agent",
}

_SYSTEM = (
    "You are a patient support assistant for a hosted language model API. Answer in plain English, "
    "keep answers short, and never ask the customer to paste credentials into the chat. When a "
    "question is about billing, explain how usage is counted before suggesting a plan change."
)
_TURNS = (
    (
        "user",
        "Hi, we moved our summarisation job to the smaller model last week and the monthly bill went "
        "up instead of down. Each request sends a long meeting transcript, and we ask for a summary of "
        "about two hundred words. Is the smaller model counted differently?",
    ),
    (
        "assistant",
        "Thanks for the details. Both models are billed per token, for the prompt and for the "
        "completion. The smaller model is cheaper per token, so a higher bill usually means more tokens "
        "were sent. Did the transcripts get longer, or did the job start retrying failed requests?",
    ),
    (
        "user",
        "The transcripts are the same length as before. We did add a retry loop, though: when a request "
        "times out after thirty seconds we send it again, up to three times. Could that explain it? The "
        "dashboard shows roughly twice as many prompt tokens as in the previous month.",
    ),
    (
        "assistant",
        "That is very likely the cause. A request that times out on your side may still finish on ours, "
        "and it is billed when it does. Three retries can triple the prompt tokens for a slow request. "
        "I would raise the client time-out to ninety seconds and retry only on connection errors.",
    ),
    (
        "user",
        "Makes sense. Another question: we rotate our API key every month, and after the last rotation "
        "a few workers kept failing with an authentication error for about an hour. Is there a delay "
        "before a new key becomes active, or should it work at once?",
    ),
    (
        "assistant",
        "A new key works at once, but the old one keeps working for twenty-four hours so that you can "
        "roll it out gradually. If workers failed for an hour, they probably still had the old value "
        "cached in their environment and were started before the rotation. Restarting them fixes it.",
    ),
    (
        "user",
        "We also see the word 'length' as the finish reason on some summaries, and those summaries stop "
        "in the middle of a sentence. We set the maximum output to three hundred tokens. Is that too "
        "low for two hundred words, or is something else going on?",
    ),
    (
        "assistant",
        "Two hundred English words are usually about two hundred and seventy tokens, so three hundred "
        "leaves very little room, and some transcripts make the model write longer summaries. Raise the "
        "limit to five hundred and ask for 'at most two hundred words' in the instructions instead.",
    ),
    (
        "user",
        "Good idea. Last one: our cache key is built from the transcript text, but two meetings with "
        "the same agenda sometimes get the same summary. Should the key also include the meeting date, "
        "or is there a better way to avoid returning a stale answer?",
    ),
    (
        "assistant",
        "Include everything that changes the answer: the full transcript, the model name, the prompt "
        "version and the output limit. A hash of those four values is a good cache key. Adding the date "
        "alone would hide the problem for meetings held on the same day with a similar agenda.",
    ),
)


def chat_messages(target_chars: int = 10_000) -> list[dict[str, str]]:
    """A support conversation of about ``target_chars`` characters of JSON, system prompt first."""
    messages = [{"role": "system", "content": _SYSTEM}]
    turn = 0
    while len(json.dumps(messages)) < target_chars:
        role, content = _TURNS[turn % len(_TURNS)]
        if turn >= len(_TURNS):  # a second pass reads as a follow-up, not as the same text
            content = f"(follow-up {turn // len(_TURNS)}) {content}"
        messages.append({"role": role, "content": content})
        turn += 1
    return messages


CHAT = chat_messages()
CHAT_METADATA: dict[str, Any] = {
    "usage": {"prompt_tokens": 812, "completion_tokens": 212, "total_tokens": 1024},
    "model": "gpt-4o-mini",
    "cache_key": "conv-123",
    "temperature": 0.2,
}
CHAT_ANSWER = _TURNS[-1][1]


if __name__ == "__main__":
    text = json.dumps({"messages": CHAT, "metadata": CHAT_METADATA})
    print(f"chat: {len(CHAT)} messages, {len(text):,} chars of JSON; answer {len(CHAT_ANSWER)} chars")
