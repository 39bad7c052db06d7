"""OTLP exporters: the official OpenTelemetry ones, with tracesim's defaults."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Literal
from urllib.parse import unquote, urlparse

from opentelemetry.sdk.trace.export import SpanExporter

from tracesim._errors import ConfigError

__all__ = ["OtlpProtocol", "env_headers", "otlp_exporter", "parse_headers", "settings_headers"]

OtlpProtocol = Literal["http/protobuf", "grpc"]
PROTOCOLS: tuple[str, ...] = ("http/protobuf", "grpc")


def otlp_exporter(
    protocol: str | None = None,
    endpoint: str | None = None,
    headers: Mapping[str, str] | None = None,
    *,
    timeout_s: float | None = None,
    spool_dir: str | os.PathLike[str] | None = None,
    spool_max_bytes: int = 256 * 1024 * 1024,
) -> SpanExporter:
    """Build the official OpenTelemetry OTLP span exporter for ``protocol``.

    Anything not given here comes from the standard variables the OpenTelemetry exporters
    read themselves: ``OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT``, ``..._HEADERS``,
    ``..._TIMEOUT``, ``..._PROTOCOL``, ``..._CERTIFICATE`` and so on.

    Args:
        protocol: ``"http/protobuf"`` (default) or ``"grpc"``.
        endpoint: For HTTP, a base URL (``http://host:4318``, ``/v1/traces`` is appended) or
            the full traces URL. For gRPC, ``http://host:4317`` (plaintext) or
            ``https://host:4317``.
        headers: Extra request headers, e.g. an API key.
        timeout_s: Per-export time limit in seconds.
        spool_dir: When set, batches the backend does not accept are kept in this directory
            and re-sent when it is back (a `SpoolingExporter` around the OTLP exporter).

    Over HTTP, a refusal that retrying cannot fix (a missing header, wrong credentials, a
    wrong path: 400, 401, 403, 404, 405, 415, 422) is logged once with the backend's own
    message and what to change, and is not treated as an outage; a batch too large (413) is
    sent again in halves. See ``docs/backends.md`` ("When the backend refuses") for what is
    kept. The request body is written by tracesim's own encoder: the protobuf message
    OpenTelemetry's encoder builds, at about a quarter of its CPU (see ``docs/performance.md``).
        spool_max_bytes: Size bound of the spool; the oldest batches go first when it is full.

    Example:
        >>> from tracesim.exporters import otlp_exporter
        >>> exporter = otlp_exporter("grpc", "http://127.0.0.1:4317")
        >>> durable = otlp_exporter(endpoint="http://127.0.0.1:6006", spool_dir=".tracesim/spool")
    """
    exporter = _official_exporter(protocol, endpoint, headers, timeout_s)
    if spool_dir is None:
        return exporter
    from tracesim.exporters._spool import SpoolingExporter

    return SpoolingExporter(exporter, spool_dir, max_bytes=spool_max_bytes)


def _official_exporter(
    protocol: str | None, endpoint: str | None, headers: Mapping[str, str] | None, timeout_s: float | None
) -> SpanExporter:
    from_env = protocol is None
    if protocol is None:
        protocol = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or os.environ.get(
            "OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"
        )
    if protocol not in PROTOCOLS:
        raise ConfigError(
            "otlp_protocol",
            protocol,
            " or ".join(PROTOCOLS),
            env_var="OTEL_EXPORTER_OTLP_PROTOCOL" if from_env else None,  # else the caller's argument
        )
    if protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter

        return GrpcExporter(endpoint=endpoint, headers=dict(headers) if headers else None, timeout=timeout_s)
    from tracesim.exporters._otlp_http import RefusalAwareSpanExporter

    return RefusalAwareSpanExporter(
        endpoint=_traces_url(endpoint) if endpoint else None,
        headers=dict(headers) if headers else None,
        timeout=timeout_s,
    )


def _traces_url(endpoint: str) -> str:
    parsed = urlparse(endpoint)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        # Settings check their URL where it was given; this is the caller's own argument.
        raise ConfigError("otlp_endpoint", endpoint, "an http:// or https:// URL")
    if parsed.path in ("", "/"):
        return endpoint.rstrip("/") + "/v1/traces"
    return endpoint


MLFLOW_EXPERIMENT_HEADER = "x-mlflow-experiment-id"


def settings_headers(
    otlp_headers: Mapping[str, str] | None, mlflow_experiment_id: str | None, *, signal: str = "traces"
) -> dict[str, str] | None:
    """The headers of every OTLP request of ``signal``; None leaves them to the variables.

    The official OTLP/HTTP exporters send the headers of ``OTEL_EXPORTER_OTLP_<SIGNAL>_HEADERS``
    (else ``OTEL_EXPORTER_OTLP_HEADERS``) and, over them, the headers given (``otlp_headers``).
    An MLflow experiment id adds ``x-mlflow-experiment-id`` only where no header of the
    configuration names an experiment: one written as a header, in ``otlp_headers`` or in
    those variables, is the more explicit choice and wins. Without ``otlp_headers`` the
    variables' headers are returned with it, and when the variables name an experiment and
    ``otlp_headers`` do not, theirs is copied in: the gRPC exporters do not read the variables
    when headers are given.

    Example:
        >>> settings_headers(None, "3", signal="traces")
        {'x-mlflow-experiment-id': '3'}
        >>> settings_headers({"x-mlflow-experiment-id": "7"}, "3")
        {'x-mlflow-experiment-id': '7'}
    """
    if mlflow_experiment_id is None:
        return dict(otlp_headers) if otlp_headers else None
    headers = dict(otlp_headers) if otlp_headers else env_headers(signal)
    if _experiment(headers) is None:
        from_env = _experiment(env_headers(signal))
        headers[MLFLOW_EXPERIMENT_HEADER] = from_env if from_env is not None else mlflow_experiment_id
    return headers


def _experiment(headers: Mapping[str, str]) -> str | None:
    for key, value in headers.items():
        if key.lower() == MLFLOW_EXPERIMENT_HEADER:
            return value
    return None


def env_headers(signal: str = "traces") -> dict[str, str]:
    """Headers from ``OTEL_EXPORTER_OTLP_<SIGNAL>_HEADERS``, else ``OTEL_EXPORTER_OTLP_HEADERS``."""
    raw = os.environ.get(f"OTEL_EXPORTER_OTLP_{signal.upper()}_HEADERS") or os.environ.get(
        "OTEL_EXPORTER_OTLP_HEADERS", ""
    )
    return parse_headers(raw)


def parse_headers(raw: str) -> dict[str, str]:
    """Parse ``k=v,k2=v2`` (values URL-decoded, as the OTLP variables specify)."""
    headers: dict[str, str] = {}
    for item in raw.split(","):
        if "=" in item:
            key, value = item.split("=", 1)
            headers[key.strip()] = unquote(value.strip())
    return headers
