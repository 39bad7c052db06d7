"""AgentTest's ``@agent_test`` as pytest tests: move a suite by changing one import.

::

    from agent_test import agent_test         # AgentTest: `agenttest run`
    from tracesim_pytest import agent_test    # tracesim: `pytest`

The decorator takes AgentTest's signature (``criteria``, ``tags``, ``timeout``,
``retry_count``, ``**metadata``). The decorated test returns what AgentTest tests return
(``{"input", "actual", "expected"}``, ``{"test_cases": [...]}``, optionally with a
``similarity_config``); pytest runs it, the return value is scored with the evaluators of the
nearest ``.agenttest/config.yaml`` (from the test file's folder upwards, then from the
working directory; AgentTest's defaults without one) and a failing evaluation fails the test
with a message naming the criterion, score, threshold and values. Every evaluator AgentTest
registers is reproduced, with its numbers (`tracesim.evaluators.compat.agenttest`):
``similarity`` (``string_similarity``), ``contains``, ``regex``, ``metrics`` (ROUGE, BLEU,
METEOR), ``metric`` (numeric error) and ``llm_judge`` (on the ``llm:`` section's model,
through tracesim's `LLMJudge`).
What AgentTest documents but ignores is honoured: ``enabled: false`` turns an evaluator off,
``similarity_config``, ``contains_config``, ``regex_config`` and a judge's
``evaluation_criteria`` descriptions override the config per test, weights combine the
criteria into the overall score, ``timeout`` and ``retry_count`` (or ``testing.timeout`` /
``testing.retry_count``) work. AgentTest's tags become keywords: ``agenttest run --tag core``
is ``pytest -k core``.

The test body runs in a worker thread so that a timeout can fail the test at its deadline;
Python cannot stop a thread, so a body past its deadline keeps running in the background
(a daemon thread) while the test fails or is retried. The decorated function returns None
(pytest requires it); the original is ``test_fn.__wrapped__``. A criterion that names no
evaluator is an error unless its config entry is disabled.

Example:
    >>> @agent_test(criteria=["similarity"], tags=["qa"])
    ... def test_capital():
    ...     return {"input": "Capital of France?", "actual": "Paris", "expected": "Paris",
    ...             "similarity_config": {"method": "exact"}}
    >>> test_capital()  # passes: exact match, score 1.0
"""

from __future__ import annotations

import contextvars
import functools
import inspect
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from tracesim_pytest import _agenttest_config as cfg
from tracesim_pytest import _agenttest_score as scoring
from tracesim_pytest._report import AGENT_TEST_ATTRIBUTE, record

__all__ = ["SPEC_ATTRIBUTE", "AgentTestSpec", "agent_test"]

P = ParamSpec("P")
R = TypeVar("R")

SPEC_ATTRIBUTE = AGENT_TEST_ATTRIBUTE
"""The attribute of a decorated test that holds its `AgentTestSpec` (the pytest plugin reads its tags)."""


@dataclass(frozen=True)
class AgentTestSpec:
    """The decorator's arguments, checked: what to score a test with and how to run it."""

    criteria: tuple[str, ...] = ("similarity",)
    tags: tuple[str, ...] = ()
    timeout_s: float | None = None
    retry_count: int = 0
    metadata: Mapping[str, Any] = field(default_factory=dict)


def _names(value: Any, what: str, default: tuple[str, ...]) -> tuple[str, ...]:
    if value is None:
        return default
    if isinstance(value, str):
        return (value,)
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise TypeError(
        f"agent_test({what}=...) takes a name or a list of names such as ['similarity']; got {value!r}"
    )


def _spec(
    criteria: Any, tags: Any, timeout: Any, retry_count: Any, metadata: Mapping[str, Any]
) -> AgentTestSpec:
    if timeout is not None and (
        isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0
    ):
        raise ValueError(f"agent_test(timeout=...) takes a number of seconds > 0 or None; got {timeout!r}")
    if isinstance(retry_count, bool) or not isinstance(retry_count, int) or retry_count < 0:
        raise ValueError(f"agent_test(retry_count=...) takes an integer >= 0; got {retry_count!r}")
    return AgentTestSpec(
        criteria=_names(criteria, "criteria", ("similarity",)),
        tags=_names(tags, "tags", ()),
        timeout_s=None if timeout is None else float(timeout),
        retry_count=retry_count,
        metadata=dict(metadata),
    )


def agent_test(
    criteria: str | Sequence[str] | None = None,
    tags: str | Sequence[str] | None = None,
    timeout: float | None = None,
    retry_count: int = 0,
    **metadata: Any,
) -> Callable[[Callable[P, object]], Callable[P, None]]:
    """Mark a function returning an AgentTest test output as a pytest test scored by AgentTest's rules.

    ``criteria`` defaults to ``["similarity"]``; ``timeout`` (seconds) defaults to the
    config's ``testing.timeout`` (300); a failure or an exception is retried ``retry_count``
    times (else ``testing.retry_count``), and the last attempt decides. ``metadata`` (such as
    ``description=``) is kept on the test's `AgentTestSpec`.

    Example:
        >>> @agent_test(criteria="similarity", timeout=60, retry_count=1, description="greeting")
        ... def test_greeting():
        ...     return {"actual": "Hello, world", "expected": "Hello, world"}
        >>> test_greeting.__tracesim_agent_test__.criteria
        ('similarity',)
    """
    spec = _spec(criteria, tags, timeout, retry_count, metadata)

    def decorate(func: Callable[P, object]) -> Callable[P, None]:
        if (
            not inspect.isfunction(func)
            or inspect.iscoroutinefunction(func)
            or inspect.isgeneratorfunction(func)
        ):
            raise TypeError(f"@agent_test decorates a plain function returning a test output; got {func!r}")
        signature = inspect.signature(func)
        # The test asks pytest for `request` (to record its results), unless it already does.
        inject = "request" not in signature.parameters

        @functools.wraps(func)
        def wrapper(*args: P.args, **kwargs: P.kwargs) -> None:
            __tracebackhide__ = True  # pytest shows the test's failure, not these frames
            request = kwargs.pop("request", None) if inject else kwargs.get("request")
            _run(spec, func, args, kwargs, request)

        if inject:
            wrapper.__signature__ = _with_request(signature)  # type: ignore[attr-defined]
        setattr(wrapper, SPEC_ATTRIBUTE, spec)
        return wrapper

    return decorate


def _with_request(signature: inspect.Signature) -> inspect.Signature:
    params = list(signature.parameters.values())
    request = inspect.Parameter("request", inspect.Parameter.KEYWORD_ONLY)
    at = next((i for i, p in enumerate(params) if p.kind is inspect.Parameter.VAR_KEYWORD), len(params))
    return signature.replace(parameters=[*params[:at], request, *params[at:]])


def _config_for(func: Callable[..., object]) -> cfg.AgentTestConfig:
    try:
        start = Path(inspect.getfile(func)).resolve().parent
    except (TypeError, OSError):  # defined in an interactive session
        start = Path.cwd()
    return cfg.load(cfg.find(start))


# -- running: a worker thread for the deadline, retries -----------------------------------------


def _call(func: Callable[..., R], args: Any, kwargs: Any, timeout_s: float, origin: str) -> R:
    __tracebackhide__ = True
    outcome: list[tuple[bool, Any]] = []
    done = threading.Event()
    context = contextvars.copy_context()  # the active span and tracesim's settings follow the body

    def body() -> None:
        try:
            outcome.append((True, context.run(func, *args, **kwargs)))
        except BaseException as exc:  # handed to the test's thread, which raises it
            outcome.append((False, exc))
        finally:
            done.set()

    name = getattr(func, "__qualname__", "test")
    threading.Thread(target=body, name=f"agent_test {name}", daemon=True).start()
    if not done.wait(timeout_s):
        raise TimeoutError(
            f"{name} ran past its timeout of {timeout_s:g} s (agent_test(timeout=...) or testing.timeout in "
            f"{origin}); Python cannot stop a thread, so its body may still be running"
        )
    ok, value = outcome[0]
    if ok:
        return value  # type: ignore[no-any-return]
    raise value


def _run(spec: AgentTestSpec, func: Callable[..., object], args: Any, kwargs: Any, request: Any) -> None:
    __tracebackhide__ = True
    config = _config_for(func)
    timeout_s = spec.timeout_s if spec.timeout_s is not None else config.timeout_s
    attempts = 1 + (spec.retry_count or config.retry_count)
    for attempt in range(1, attempts + 1):
        try:
            output = _call(func, args, kwargs, timeout_s, config.origin)
        except Exception as exc:
            if attempt < attempts:
                continue
            if attempts > 1 and hasattr(exc, "add_note"):
                exc.add_note(f"agent_test: the last of {attempts} attempts")
            raise
        outcome = scoring.score(output, spec.criteria, config)
        if outcome.passed or attempt == attempts:
            break
    if request is not None:
        record(request.node, "agent_test", outcome.results(attempt))
    if not outcome.passed:
        raise AssertionError(outcome.message(getattr(func, "__qualname__", "test"), attempt))
