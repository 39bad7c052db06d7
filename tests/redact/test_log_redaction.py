"""tracesim's own log lines are redacted like everything else it writes (issue 23).

A warning that quotes a backend's answer, an internal error's traceback whose exception message
holds the key the request used: each passes the ``tracesim`` logger's filter, which redacts the
rendered message and the traceback before any handler (the user's file, a log shipper) sees it.
"""

from __future__ import annotations

import io
import json
import logging
import subprocess
import sys
from collections.abc import Iterator

import pytest
from secret_kinds import SECRETS

import tracesim
from tracesim import _outputs
from tracesim._internal_errors import CauseLog, WarnOnce

PEM = (
    "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj\n"
    "-----END PRIVATE KEY-----"
)
KINDS = {**SECRETS, "pem": (PEM, "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC")}


@pytest.fixture
def logged() -> Iterator[io.StringIO]:
    """What a plain handler on the ``tracesim`` logger writes, with tracebacks."""
    buffer = io.StringIO()
    handler = logging.StreamHandler(buffer)
    handler.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
    logger = logging.getLogger("tracesim")
    logger.addHandler(handler)
    try:
        yield buffer
    finally:
        logger.removeHandler(handler)


def _unescaped(text: str) -> str:
    return text.replace("\\\\", "\\").replace('\\"', '"')


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_secret_in_a_log_message_its_arguments_or_traceback_is_redacted(
    logged: io.StringIO, kind: str
) -> None:
    secret, fragment = KINDS[kind]
    logger = logging.getLogger("tracesim")
    logger.warning("backend said: " + secret.replace("%", "%%"))
    logger.warning("backend said %s (%r)", secret, {"detail": secret})
    WarnOnce().warn("k", "tracesim: %s", secret)
    CauseLog().failed("c", "tracesim: cannot write %s", secret)
    try:
        raise PermissionError(f"denied for {secret}")
    except PermissionError:
        logger.exception("tracesim internal error with %s", secret)
    written = logged.getvalue()
    assert written.count("\n") >= 5
    assert "Traceback" in written
    assert "PermissionError" in written
    assert fragment not in written
    assert fragment not in _unescaped(written)


def test_the_users_own_loggers_are_left_alone(logged: io.StringIO) -> None:
    """Only tracesim's records are rewritten: the host's logging is not tracesim's to change."""
    other = io.StringIO()
    handler = logging.StreamHandler(other)
    user = logging.getLogger("the_host_app")
    user.addHandler(handler)
    try:
        user.warning("mail %s", SECRETS["email"][0])
    finally:
        user.removeHandler(handler)
    assert SECRETS["email"][0] in other.getvalue()


def test_a_record_that_cannot_be_rendered_is_withheld_not_logged_raw(logged: io.StringIO) -> None:
    class Hostile:
        def __str__(self) -> str:
            raise RuntimeError("no text")

    logging.getLogger("tracesim").warning("value %s", Hostile())
    assert "log record withheld" in logged.getvalue()


def test_the_running_configurations_hook_redacts_log_lines(tmp_path: object, logged: io.StringIO) -> None:
    tracesim.configure(
        exporters=["jsonl"],
        jsonl_path=str(tmp_path) + "/t.jsonl",  # type: ignore[operator]
        redact=lambda text, attribute: text.replace("PRJ-4411", "[project]"),
    )
    try:
        logging.getLogger("tracesim").warning("ticket PRJ-4411 failed")
    finally:
        tracesim.shutdown()
    assert "PRJ-4411" not in logged.getvalue()
    assert "[project]" in logged.getvalue()


def test_the_filter_is_on_as_soon_as_tracesim_is_imported() -> None:
    """No configure(): a command line tool logs through the same filter."""
    code = (
        "import logging, tracesim\n"
        "logging.basicConfig(format='%(message)s')\n"
        f"logging.getLogger('tracesim').warning('key {SECRETS['openai'][0]}')\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert "[REDACTED:api_key]" in run.stderr
    assert SECRETS["openai"][1] not in run.stderr


def test_install_is_idempotent() -> None:
    logger = logging.getLogger("tracesim")
    _outputs.install_log_redaction()
    _outputs.install_log_redaction()
    assert sum(isinstance(f, _outputs._LogRedaction) for f in logger.filters) == 1


class ExcInfoFormatter(logging.Formatter):
    """Formats the traceback from ``record.exc_info`` itself, as python-json-logger does (and
    Sentry's logging integration reads the exception from it); ``exc_text`` when there is none."""

    def format(self, record: logging.LogRecord) -> str:
        document = {"message": record.getMessage()}
        if record.exc_info:
            document["exc_info"] = self.formatException(record.exc_info)
        elif record.exc_text:
            document["exc_info"] = record.exc_text
        if record.stack_info:
            document["stack_info"] = self.formatStack(record.stack_info)
        return json.dumps(document)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_formatter_that_reads_exc_info_gets_the_redacted_traceback(kind: str) -> None:
    secret, fragment = KINDS[kind]
    buffer = io.StringIO()
    handler = logging.StreamHandler(buffer)
    handler.setFormatter(ExcInfoFormatter())
    logger = logging.getLogger("tracesim")
    logger.addHandler(handler)
    try:
        try:
            raise PermissionError(f"denied for {secret}")
        except PermissionError:
            logger.exception("tracesim internal error", stack_info=True)
            logger.error("once more", exc_info=True)
    finally:
        logger.removeHandler(handler)
    lines = [json.loads(line) for line in buffer.getvalue().splitlines()]
    assert len(lines) == 2
    for line in lines:
        assert "Traceback" in line["exc_info"]
        assert "PermissionError: denied for" in line["exc_info"]
        assert fragment not in json.dumps(line)
        assert fragment not in str(line)
    assert "Stack (most recent call last)" in lines[0]["stack_info"]
