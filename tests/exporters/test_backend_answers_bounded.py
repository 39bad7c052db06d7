"""A backend's answer is read within tracesim's input limits: an answer nested past them is
read as no message, never a RecursionError on the export or sender thread."""

from __future__ import annotations

import httpx

from tracesim.exporters._mlflow import _is_server_info, _trace_not_found
from tracesim.exporters._refusals import Answer, backend_message, classify

DEEP = "[" * 5000


def test_a_refusal_nested_too_deeply_is_still_said_by_its_status() -> None:
    answer = Answer("http://collector/v1/traces", 422, DEEP, "application/json")
    refusal = classify(answer, "spans")
    assert refusal is not None
    assert refusal.status == 422
    assert isinstance(backend_message(answer), str)


def test_an_mlflow_answer_nested_too_deeply_is_neither_mlflow_nor_a_missing_trace() -> None:
    request = httpx.Request("GET", "http://mlflow/api/3.0/mlflow/server-info")
    deep = httpx.Response(404, content=DEEP.encode(), request=request)
    assert _is_server_info(httpx.Response(200, content=DEEP.encode(), request=request)) is False
    assert _trace_not_found(deep) is False
    large = httpx.Response(
        200, content=b'{"store_type": "x", "pad": "' + b"a" * (17 << 20) + b'"}', request=request
    )
    assert _is_server_info(large) is False  # past the size tracesim reads
