"""An AgentTest suite run by pytest: the only change from AgentTest is the import below.

    from agent_test import agent_test    # before: `agenttest run`

Run it with `pytest integrations/pytest/examples/agenttest` from the repository (scores: add
`--tracesim-json results.json`).
"""

from support_agent import support_agent
from tracesim_pytest import agent_test


@agent_test(criteria=["similarity"], tags=["qa"])
def test_capital() -> dict[str, str]:
    question = "What is the capital of France?"
    return {
        "input": question,
        "actual": support_agent(question),
        "expected": "Paris is the capital of France.",
    }


@agent_test(criteria=["similarity"], tags=["format"])
def test_json_format() -> dict[str, object]:
    question = "Format the user as JSON"
    return {
        "input": question,
        "actual": support_agent(question),
        "expected": '{"name": "John", "age": 30}',
        "similarity_config": {"method": "levenshtein", "threshold": 0.95},
    }


@agent_test(criteria=["similarity"], tags=["qa"])
def test_keyword_coverage() -> dict[str, object]:
    question = "List programming languages"
    return {
        "input": question,
        "actual": support_agent(question),
        "expected": "JavaScript, Python, Java, C++, Rust",
        "similarity_config": {"method": "jaccard", "threshold": 0.6},  # Jaccard 4/6 = 0.667
    }


@agent_test(criteria=["similarity", "llm_judge"], tags=["format"])  # llm_judge: enabled: false
def test_exact_output() -> dict[str, object]:
    question = "Return exactly: 'SUCCESS'"
    return {
        "input": question,
        "actual": support_agent(question),
        "expected": "SUCCESS",
        "similarity_config": {"method": "exact"},
    }


@agent_test(criteria=["similarity"], tags=["qa", "batch"], retry_count=1)
def test_batch() -> dict[str, object]:
    cases = [
        ("What is 2+2?", "2+2 equals 4"),
        ("Who wrote Romeo and Juliet?", "William Shakespeare wrote Romeo and Juliet"),
    ]
    return {"test_cases": [{"input": q, "actual": support_agent(q), "expected": e} for q, e in cases]}


@agent_test(criteria=["contains", "regex"], tags=["policy"])
def test_refund_policy() -> dict[str, object]:
    question = "What is your refund policy?"
    return {
        "input": question,
        "actual": support_agent(question),
        "contains": ["refund", "30 days"],  # case-insensitive; all must be found
        "patterns": [r"[\w.]+@[\w.]+\.com"],  # at least one pattern must match
    }


@agent_test(criteria=["metrics"], tags=["policy"])
def test_shipping_summary() -> dict[str, object]:
    question = "Summarize our shipping policy"
    return {
        "input": question,
        "actual": support_agent(question),
        "reference": "We ship orders in two business days, and delivery takes about a week.",
        "metrics": {"rouge": {"variants": ["rouge1", "rougeL"], "min_score": 0.5}},  # mean F1 0.72
    }
