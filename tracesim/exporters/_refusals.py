"""When an OTLP backend refuses: answers retrying cannot fix, in the backend's words, and what to change.

The official OTLP/HTTP exporters report a refusal as ``Failed to export spans batch code: 422,
reason: Unprocessable Entity``, once per batch and without the body, where the backend says
what is wrong (MLflow: ``header x-mlflow-experiment-id: Field required``). tracesim gives the
exporters a ``requests.Session`` whose response hook (`AnswerRecorder`) keeps the status and
the first bytes of the body of each answer, on the thread that asked, so that the exporter
around them can name the cause once and say what to change (`describe`), and keeps the SDK's
own per-batch line for such an answer out of the log (`quiet_sdk_lines`).

- `PERMANENT`: statuses no retry fixes while the configuration stays as it is (a missing
  header, a wrong path, a batch too large);
- `NOT_TAKEN`: statuses that say "this signal is not taken at this URL" (MLflow answers 404 on
  ``/v1/metrics`` and ``/v1/logs``, Phoenix 405).

Example:
    >>> answer = Answer(
    ...     "http://127.0.0.1:5000/v1/traces",
    ...     422,
    ...     '{"detail":[{"type":"missing","loc":["header","x-mlflow-experiment-id"],'
    ...     '"msg":"Field required","input":null}]}',
    ...     "application/json",
    ... )
    >>> backend_message(answer)
    'header x-mlflow-experiment-id: Field required'
    >>> print(advice(answer.status, backend_message(answer), "spans").replace(" or ", "\\n or "))
    set mlflow_experiment_id (TRACESIM_MLFLOW_EXPERIMENT_ID / MLFLOW_EXPERIMENT_ID)
     or OTEL_EXPORTER_OTLP_HEADERS=x-mlflow-experiment-id=<id>
"""

from __future__ import annotations

import html
import logging
import re
import threading
from dataclasses import dataclass
from typing import Any

import requests

from tracesim import _inputs

__all__ = [
    "NOT_TAKEN",
    "PERMANENT",
    "Answer",
    "AnswerRecorder",
    "Refusal",
    "advice",
    "backend_message",
    "classify",
    "describe",
    "quiet_sdk_lines",
]

PERMANENT = frozenset({400, 401, 403, 404, 405, 413, 415, 422})
"""Answers that retrying with the same configuration cannot turn into a success."""

NOT_TAKEN = frozenset({404, 405, 415, 501})
"""Answers that say the URL takes no data of this signal (or not in this encoding)."""

_BODY_KEPT = 4096  # bytes of an answer's body kept to quote from
_MESSAGE_CHARS = 200  # characters of the backend's message quoted in a log line

_SDK_LOGGERS = (
    "opentelemetry.exporter.otlp.proto.http.trace_exporter",
    "opentelemetry.exporter.otlp.proto.http.metric_exporter",
    "opentelemetry.exporter.otlp.proto.http._log_exporter",
)


@dataclass(frozen=True)
class Answer:
    """One HTTP answer of a backend: the URL asked, the status, the start of the body, its type."""

    url: str
    status: int
    body: str
    content_type: str
    experiment: str | None = None
    """The ``x-mlflow-experiment-id`` header the request carried, if any (to tell MLflow's
    refusal of that header from a refusal of the batch, by its error code)."""


@dataclass(frozen=True)
class Refusal:
    """A refusal: the URL, the status, the backend's message, what to change, and how far it reaches.

    ``lasting`` is True when the configuration is refused (a header, credentials, the path, the
    encoding): every request will be, until it changes. False when only this request is (a
    malformed or too large batch).

    Example:
        >>> Refusal("http://h/v1/logs", 405, "Method Not Allowed", "...").lasting
        True
    """

    url: str
    status: int
    message: str
    advice: str
    lasting: bool = True


class AnswerRecorder:
    """Keep the last HTTP answer of a ``requests.Session``, per thread, for the exporter to read.

    `session` builds the session to hand to an official OTLP/HTTP exporter (its ``session=``
    argument). Each answer is recorded by the session's response hook on the thread that sent
    the request; `begin` forgets the previous one, `last` reads it. An answer whose status is in
    ``quiet`` also marks the thread so that the SDK's own "Failed to export" line for it is
    left out (see `quiet_sdk_lines`): the exporter around says it once instead.

    Example:
        >>> recorder = AnswerRecorder(quiet=PERMANENT)
        >>> session = recorder.session()
        >>> recorder.begin()
        >>> recorder.last() is None
        True
    """

    def __init__(self, quiet: frozenset[int] = frozenset()) -> None:
        self._local = threading.local()
        self._quiet = quiet
        quiet_sdk_lines()

    def session(self) -> requests.Session:
        """A new session whose answers this recorder keeps."""
        session = requests.Session()
        session.hooks["response"].append(self._record)
        return session

    def begin(self) -> None:
        """Forget this thread's last answer (call before each export)."""
        self._local.answer = None
        _quiet.active = False

    def end(self) -> None:
        """Stop leaving this thread's SDK lines out (call after each export)."""
        _quiet.active = False

    def last(self) -> Answer | None:
        """This thread's last answer since `begin`, or None (no answer: the connection failed)."""
        answer: Answer | None = getattr(self._local, "answer", None)
        return answer

    def _record(self, response: requests.Response, *args: Any, **kwargs: Any) -> None:
        content_type = response.headers.get("content-type", "")
        try:
            raw = response.content[:_BODY_KEPT]
        except Exception:  # a body that cannot be read is not worth quoting
            raw = b""
        said = _from_status_proto(raw) if "protobuf" in content_type and raw else None
        body = said if said is not None else raw.decode("utf-8", "replace")
        sent = response.request.headers.get(_HEADER) if response.request is not None else None
        experiment = sent.decode("latin-1") if isinstance(sent, bytes) else sent
        self._local.answer = Answer(response.url, response.status_code, body, content_type, experiment)
        _quiet.active = response.status_code in self._quiet


_quiet = threading.local()


class _QuietFilter(logging.Filter):
    """Leaves out the SDK exporters' "Failed to export" lines for answers tracesim reports itself."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not getattr(_quiet, "active", False):
            return True
        return not str(record.msg).startswith("Failed to export")


_FILTER = _QuietFilter()


def quiet_sdk_lines() -> None:
    """Install (once) the filter that leaves out the SDK lines tracesim's exporters replace.

    Only lines logged on a thread whose last answer an `AnswerRecorder` marked are left out:
    the same SDK exporters used by the application elsewhere keep logging as they do.
    """
    for name in _SDK_LOGGERS:
        logger = logging.getLogger(name)
        if _FILTER not in logger.filters:
            logger.addFilter(_FILTER)


def backend_message(answer: Answer) -> str:
    """The backend's own explanation in ``answer``, short: JSON ``detail`` or ``message``, else text.

    FastAPI's validation errors (a ``detail`` list) read ``<loc>: <msg>``; an HTML error page
    reads as its text; anything longer than 200 characters is cut.

    Example:
        >>> backend_message(Answer("u", 404, '{"error_code":"X","message":"No Experiment with id=9"}', ""))
        'No Experiment with id=9'
        >>> backend_message(Answer("u", 404, "<html><title>404 Not Found</title></html>", "text/html"))
        '404 Not Found'
        >>> backend_message(Answer("u", 405, "", "text/plain"))
        ''
    """
    text = answer.body.strip()
    found = _from_json(text)
    if found is None:
        if text.startswith("<") or "html" in answer.content_type:
            text = html.unescape(re.sub(r"<[^>]*>", " ", re.sub(r"(?is)<(script|style).*?</\1>", " ", text)))
        found = text
    found = " ".join(found.split())
    return found if len(found) <= _MESSAGE_CHARS else found[: _MESSAGE_CHARS - 1] + "…"


def _from_json(text: str) -> str | None:
    try:
        data = _inputs.loads(text, "the backend's answer")  # nesting bounded: never a RecursionError
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    detail = data.get("detail")
    if isinstance(detail, list):
        parts = []
        for item in detail:
            if isinstance(item, dict):
                where = " ".join(str(part) for part in item.get("loc") or ())
                said = str(item.get("msg", ""))
                parts.append(f"{where}: {said}" if where else said)
            else:
                parts.append(str(item))
        return "; ".join(parts)
    if isinstance(detail, str):
        return detail
    for key in ("message", "error", "title"):
        if isinstance(data.get(key), str):
            return str(data[key])
    return None


def _from_status_proto(body: bytes) -> str | None:
    # The OTLP specification's error body: a google.rpc.Status. Decoded only when the package
    # that defines it is there (it comes with the OTLP exporters).
    try:
        from google.rpc import status_pb2  # type: ignore[import-untyped]
    except ImportError:
        return None
    status = status_pb2.Status()
    try:
        status.ParseFromString(body)
    except Exception:
        return None
    return str(status.message) or None


_EXPERIMENT = "mlflow_experiment_id (TRACESIM_MLFLOW_EXPERIMENT_ID / MLFLOW_EXPERIMENT_ID)"
_HEADER = "x-mlflow-experiment-id"
_HEADERS = "otlp_headers / OTEL_EXPORTER_OTLP_HEADERS"


def advice(status: int, message: str, signal: str) -> str:
    """What to change for a refusal ``status`` with ``message``, for ``signal`` (spans, metrics, logs).

    Example:
        >>> advice(401, "invalid token", "spans")
        'check the credentials header (otlp_headers / OTEL_EXPORTER_OTLP_HEADERS)'
        >>> advice(405, "", "logs")
        'this URL takes no OTLP logs: check otlp_endpoint / OTEL_EXPORTER_OTLP_ENDPOINT'
    """
    said = message.lower()
    if _HEADER in said and status in (400, 422) and ("required" in said or "missing" in said):
        return f"set {_EXPERIMENT} or OTEL_EXPORTER_OTLP_HEADERS={_HEADER}=<id>"
    if "experiment" in said and status == 404:
        return (
            f"name an experiment that exists on this MLflow server in {_EXPERIMENT} or the {_HEADER} header"
        )
    if "experiment" in said and status == 400:
        return f"an MLflow experiment id is an integer: check {_EXPERIMENT} or the {_HEADER} header"
    if status in (401, 403):
        return f"check the credentials header ({_HEADERS})"
    if status in (404, 405, 501):
        variable = (
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT" if signal == "spans" else "OTEL_EXPORTER_OTLP_ENDPOINT"
        )
        return f"this URL takes no OTLP {signal}: check otlp_endpoint / {variable}"
    if status == 413:
        return "the backend takes smaller requests: lower OTEL_BSP_MAX_EXPORT_BATCH_SIZE or raise its limit"
    if status == 415:
        return "the backend takes no OTLP/HTTP protobuf here: check otlp_protocol and the endpoint"
    return "the backend found the request invalid: its message says why"


_CONFIG_STATUSES = frozenset({401, 403, 404, 405, 415, 501})


def classify(answer: Answer, signal: str) -> Refusal | None:
    """The refusal ``answer`` is, or None when retrying may help (2xx, 408, 429, 5xx but 501).

    Whether the configuration is refused (``lasting``) is read from the status and the
    answer's structured fields only, never from its free text, which may quote the batch (a
    span named "run experiment 7"): 401, 403, 404, 405, 415 and 501 refuse the configuration;
    a 400 or 422 does when a request header is what failed validation (FastAPI's
    ``detail[].loc == ["header", <name>]``: MLflow without ``x-mlflow-experiment-id``), or when
    MLflow's ``error_code`` is ``INVALID_PARAMETER_VALUE`` while the request's
    ``x-mlflow-experiment-id`` is not an integer. Any other 400 or 422, and a 413, refuse that
    request only: retrying the batch cannot help, and later batches may well be taken.

    Example:
        >>> classify(Answer("http://h/v1/traces", 503, "busy", "text/plain"), "spans") is None
        True
        >>> quoted = '{"detail":"Cannot convert span run experiment 7"}'
        >>> classify(Answer("http://h", 422, quoted, "application/json"), "spans").lasting
        False
        >>> missing = '{"detail":[{"loc":["header","x-api-key"],"msg":"Field required"}]}'
        >>> classify(Answer("http://h/v1/traces", 422, missing, "application/json"), "spans").lasting
        True
        >>> classify(Answer("http://h/v1/traces", 401, "no key", "text/plain"), "spans").lasting
        True
    """
    if answer.status not in PERMANENT | NOT_TAKEN:
        return None
    message = backend_message(answer)
    data = _json_object(answer.body)
    header = _refused_header(data)
    mlflow_experiment = _refuses_experiment(answer, data)
    if answer.status in (400, 422):
        lasting = header is not None or mlflow_experiment
    else:
        lasting = answer.status in _CONFIG_STATUSES
    return Refusal(
        answer.url, answer.status, message, _advice(answer, header, mlflow_experiment, signal), lasting
    )


def _json_object(text: str) -> dict[str, Any]:
    try:
        data = _inputs.loads(text, "the backend's answer")  # nesting bounded: never a RecursionError
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def _refused_header(data: dict[str, Any]) -> str | None:
    """The request header a FastAPI validation error names (``loc == ["header", name]``), or None."""
    detail = data.get("detail")
    for item in detail if isinstance(detail, list) else ():
        loc = item.get("loc") if isinstance(item, dict) else None
        if isinstance(loc, list) and len(loc) == 2 and loc[0] == "header" and isinstance(loc[1], str):
            return loc[1]
    return None


def _refuses_experiment(answer: Answer, data: dict[str, Any]) -> bool:
    """Whether MLflow refused the request's experiment header (by its error code, not its text)."""
    code = data.get("error_code")
    if answer.experiment is None or not isinstance(code, str):
        return False
    if answer.status == 404:
        return code == "RESOURCE_DOES_NOT_EXIST"
    if answer.status == 400:  # MLflow parses the header with int(): anything else is refused so
        try:
            int(answer.experiment)
        except ValueError:
            return code == "INVALID_PARAMETER_VALUE"
    return False


def _advice(answer: Answer, header: str | None, mlflow_experiment: bool, signal: str) -> str:
    if header is not None and header.lower() == _HEADER:
        return f"set {_EXPERIMENT} or OTEL_EXPORTER_OTLP_HEADERS={_HEADER}=<id>"
    if header is not None:
        return f"set the {header} header ({_HEADERS})"
    if mlflow_experiment and answer.status == 404:
        return (
            f"name an experiment that exists on this MLflow server in {_EXPERIMENT} or the {_HEADER} header"
        )
    if mlflow_experiment:
        return f"an MLflow experiment id is an integer: check {_EXPERIMENT} or the {_HEADER} header"
    return advice(answer.status, "", signal)


def describe(what: str, refusal: Refusal) -> str:
    """One log line for ``refusal``: who refused what, in its words, and what to change.

    Example:
        >>> describe("spans", Refusal("http://h/v1/traces", 401, "bad key", "check the key"))
        'the backend at http://h/v1/traces refused spans (401: bad key); check the key'
    """
    said = f"{refusal.status}: {refusal.message}" if refusal.message else str(refusal.status)
    return f"the backend at {refusal.url} refused {what} ({said}); {refusal.advice}"
