"""The agent under test: canned answers, so that the example runs offline."""

ANSWERS = {
    "What is the capital of France?": "Paris is the capital of France.",
    "Format the user as JSON": '{"name": "John", "age": 30}',
    "List programming languages": "Python, Java, JavaScript, C++, Go",
    "Return exactly: 'SUCCESS'": "SUCCESS",
    "What is 2+2?": "2+2 equals 4",
    "Who wrote Romeo and Juliet?": "William Shakespeare wrote Romeo and Juliet.",
    "What is your refund policy?": "Refunds are accepted within 30 days: write to support@example.com.",
    "Summarize our shipping policy": "Orders ship within two business days and arrive in about a week.",
}


def support_agent(question: str) -> str:
    """Answer a question (a real agent would call a model here)."""
    return ANSWERS[question]
