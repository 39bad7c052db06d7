"""`ModelConnection`: the same requests as the flat keywords, checked once, and no key in its repr."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

import pytest
from llm_server import LLMServer, Recorded

from tracesim import ConfigError
from tracesim.evaluators import (
    Evaluator,
    LLMJudge,
    LLMSimilarity,
    ModelConnection,
    SemanticSimilarity,
    from_config,
)
from tracesim.evaluators.compat import agenta, azure

QUESTION = "Where was Marie Curie born?"
GOLDEN = "Marie Curie was born in Warsaw, Poland."
SECRET = "sk-test-0123456789abcdefghijklmnop"  # shaped like an OpenAI key
# headers that differ between two equal requests (ids, retry counters), or name the client
_VOLATILE = {"x-request-id", "idempotency-key", "x-stainless-retry-count", "content-length"}


def _sent(record: Recorded) -> tuple[str, Any, dict[str, str]]:
    """What a request says: its path, body and headers, less those that change every time."""
    headers = {k: v for k, v in record.headers.items() if k not in _VOLATILE}
    return record.path, record.body, headers


def _requests_of(server: LLMServer, evaluator: Evaluator) -> list[tuple[str, Any, dict[str, str]]]:
    server.reset()
    result = evaluator.evaluate("Curie was born in Warsaw.", GOLDEN, input=QUESTION)
    assert result.status == "ok", result.error
    return [_sent(record) for record in server.requests]


def _limits(server: LLMServer) -> dict[str, Any]:
    return {
        "model": "scripted-model",
        "base_url": server.base_url,
        "api_key": "conn-key",
        "request_timeout_s": 12.5,
        "max_retries": 2,
        "rpm": 6000,
        "tpm": 900_000,
        "max_response_bytes": 1 << 20,
    }


@pytest.mark.parametrize("kind", [LLMJudge, LLMSimilarity, SemanticSimilarity])
def test_the_object_and_the_flat_keywords_send_the_same_requests(server: LLMServer, kind: type) -> None:
    fields = _limits(server)
    extra: dict[str, Any] = {"rubric": "Is the response correct?"} if kind is LLMJudge else {}
    by_keywords = kind(**extra, **fields)
    by_object = kind(**extra, connection=ModelConnection(**fields))
    by_mapping = kind(**extra, connection=dict(fields))  # as a config file gives it
    sent = _requests_of(server, by_keywords)
    assert sent  # the server was asked
    assert _requests_of(server, by_object) == sent
    assert _requests_of(server, by_mapping) == sent
    assert by_object.connection == by_keywords.connection == by_mapping.connection
    assert by_object.timeout_s == by_keywords.timeout_s == 2 * 12.5 + 10


@pytest.mark.parametrize(
    ("kind", "model", "timeout_s"),
    [
        (LLMJudge, "gpt-4o-mini", 60.0),
        (LLMSimilarity, "gpt-4o-mini", 60.0),
        (SemanticSimilarity, "text-embedding-3-small", 30.0),
    ],
)
def test_an_empty_connection_leaves_each_evaluators_defaults(
    kind: type, model: str, timeout_s: float
) -> None:
    extra: dict[str, Any] = {"rubric": "Is it right?"} if kind is LLMJudge else {}
    built = kind(**extra, connection=ModelConnection(base_url="http://127.0.0.1:9/v1"))
    flat = kind(**extra, base_url="http://127.0.0.1:9/v1")
    assert built.model == flat.model == model
    assert built.connection == flat.connection
    assert built.connection.request_timeout_s == timeout_s
    assert built.connection.max_retries == 4
    assert built.timeout_s == flat.timeout_s == 2 * timeout_s + 10


def test_one_connection_serves_several_evaluators(server: LLMServer) -> None:
    shared = ModelConnection(model="judge-model", base_url=server.base_url, api_key="k", rpm=600)
    judge = LLMJudge("Is the response polite?", connection=shared)
    similar = LLMSimilarity(connection=shared)
    assert judge.connection == similar.connection
    assert judge.evaluate("Thank you!", None, input="Hi").status == "ok"
    assert similar.evaluate("Warsaw.", GOLDEN, input=QUESTION).status == "ok"
    assert {r.body["model"] for r in server.requests if r.body} == {"judge-model"}


def test_from_config_takes_a_connection_mapping(server: LLMServer) -> None:
    judge = from_config(
        {"type": "llm_similarity", "connection": {"model": "judge-model", "base_url": server.base_url}}
    )
    assert isinstance(judge, LLMSimilarity)
    assert (judge.model, judge.connection.base_url) == ("judge-model", server.base_url)


# -- validation: the message names the field to change ------------------------------------------


@pytest.mark.parametrize(
    ("fields", "setting", "accepted"),
    [
        ({"model": ""}, "ModelConnection.model", "a non-empty string"),
        ({"base_url": "  "}, "ModelConnection.base_url", "a non-empty string"),
        ({"azure_endpoint": 3}, "ModelConnection.azure_endpoint", "a non-empty string"),
        ({"azure_endpoint": "https://x.openai.azure.com"}, "ModelConnection.api_version", "2024-10-21"),
        ({"request_timeout_s": 0}, "ModelConnection.request_timeout_s", "> 0"),
        ({"request_timeout_s": "fast"}, "ModelConnection.request_timeout_s", "> 0"),
        ({"max_retries": -1}, "ModelConnection.max_retries", ">= 0"),
        ({"max_retries": 1.5}, "ModelConnection.max_retries", ">= 0"),
        ({"rpm": 0}, "ModelConnection.rpm", "> 0"),
        ({"tpm": float("nan")}, "ModelConnection.tpm", "> 0"),
        ({"max_response_bytes": 100}, "ModelConnection.max_response_bytes", ">= 1024"),
        ({"cache_dir": 7}, "ModelConnection.cache_dir", "a directory path"),
    ],
)
def test_a_bad_field_names_itself(fields: dict[str, Any], setting: str, accepted: str) -> None:
    with pytest.raises(ConfigError) as info:
        ModelConnection(**fields)
    assert info.value.setting == setting
    assert accepted in info.value.accepted


@pytest.mark.parametrize(
    ("kind", "owner"),
    [(LLMJudge, "llm_judge"), (LLMSimilarity, "llm_similarity"), (SemanticSimilarity, "semantic")],
)
def test_flat_keywords_are_checked_by_the_same_rules_under_the_evaluators_name(
    kind: type, owner: str
) -> None:
    extra: dict[str, Any] = {"rubric": "Is it right?"} if kind is LLMJudge else {}
    for key, value in (
        ("max_retries", -1),
        ("rpm", 0),
        ("request_timeout_s", None),
        ("max_response_bytes", 1),
    ):
        with pytest.raises(ConfigError) as info:
            kind(**extra, **{key: value})
        assert info.value.setting == f"{owner}.{key}"
    # As a keyword the timeout has no "default" value (None is ModelConnection's): not offered
    with pytest.raises(ConfigError) as info:
        kind(**extra, request_timeout_s=0)
    assert info.value.accepted == "a number > 0"
    with pytest.raises(ConfigError) as info:
        ModelConnection(request_timeout_s=0)
    assert info.value.accepted == "a number > 0, or null"


@pytest.mark.parametrize("kind", [LLMJudge, LLMSimilarity, SemanticSimilarity])
def test_an_unknown_keyword_names_the_signature_it_was_given_to(kind: type) -> None:
    extra: dict[str, Any] = {"rubric": "Is it right?"} if kind is LLMJudge else {}
    with pytest.raises(
        TypeError, match=rf"^{kind.__name__}\.__init__\(\) got an unexpected keyword argument 'bogus'$"
    ):
        kind(**extra, bogus=1)


@pytest.mark.parametrize(
    ("flat", "setting"),
    [
        ({"model": "other-model"}, "llm_judge.model"),
        ({"base_url": "http://other:1/v1"}, "llm_judge.base_url"),
        ({"max_retries": 1}, "llm_judge.max_retries"),
        ({"request_timeout_s": 5.0}, "llm_judge.request_timeout_s"),
        ({"rpm": 10}, "llm_judge.rpm"),
        ({"api_key": SECRET}, "llm_judge.api_key"),
    ],
)
def test_a_flat_keyword_that_conflicts_with_the_connection_is_refused(
    flat: dict[str, Any], setting: str
) -> None:
    connection = ModelConnection(model="m", base_url="http://127.0.0.1:9/v1", api_key="k")
    with pytest.raises(ConfigError) as info:
        LLMJudge("Is it right?", connection=connection, **flat)
    assert info.value.setting == setting
    assert "ModelConnection" in info.value.accepted  # says where to set it instead
    assert SECRET not in str(info.value)


def test_a_flat_keyword_that_agrees_with_the_connection_or_keeps_its_default_is_fine() -> None:
    connection = ModelConnection(model="m", base_url="http://127.0.0.1:9/v1", rpm=30)
    judge = LLMJudge(
        "Is it right?", connection=connection, model="m", rpm=30, max_retries=4, request_timeout_s=60
    )
    assert judge.connection == dataclasses.replace(connection, request_timeout_s=60.0)


@pytest.mark.parametrize(
    ("connection", "setting"),
    [
        ("http://127.0.0.1:9/v1", "semantic.connection"),
        ({"modle": "m"}, "semantic.connection.modle"),
        (
            ModelConnection(azure_endpoint="https://x.openai.azure.com", api_version="2024-10-21"),
            "semantic.connection.azure_endpoint",
        ),
    ],
)
def test_a_connection_semantic_similarity_cannot_use_is_refused(connection: Any, setting: str) -> None:
    with pytest.raises(ConfigError) as info:
        SemanticSimilarity(connection=connection)
    assert info.value.setting == setting


def test_a_connection_with_a_backend_that_calls_no_server_is_refused() -> None:
    with pytest.raises(ConfigError) as info:
        SemanticSimilarity(backend=lambda texts: [[1.0, 0.0]] * len(texts), connection=ModelConnection())
    assert info.value.setting == "semantic.connection"


# -- the object itself ---------------------------------------------------------------------------


def test_the_repr_leaves_the_api_key_out() -> None:
    connection = ModelConnection(model="m", base_url="http://127.0.0.1:9/v1", api_key=SECRET)
    judge = LLMJudge("Is it right?", connection=connection)
    for shown in (repr(connection), str(connection), repr(judge.connection)):
        assert SECRET not in shown
        assert "api_key" not in shown
    assert "base_url='http://127.0.0.1:9/v1'" in repr(connection)
    assert connection.api_key == SECRET  # kept, only not shown


def test_it_is_frozen_normalised_and_comparable(tmp_path: Path) -> None:
    connection = ModelConnection(cache_dir=tmp_path, rpm=60, request_timeout_s=5)
    assert connection.cache_dir == os.fspath(tmp_path)
    assert (connection.rpm, connection.request_timeout_s) == (60.0, 5.0)
    assert connection == ModelConnection(cache_dir=str(tmp_path), rpm=60.0, request_timeout_s=5.0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        connection.rpm = 1  # type: ignore[misc]
    with pytest.raises(TypeError):
        ModelConnection("m")  # type: ignore[misc]  # keywords only: fields are never confused


def test_the_compat_facades_build_a_connection() -> None:
    judge = azure.SimilarityEvaluator({"model": "m", "base_url": "http://127.0.0.1:9/v1", "api_key": "k"})
    core = judge._answer._judge
    assert core.connection == ModelConnection(
        model="m", base_url="http://127.0.0.1:9/v1", api_key="k", request_timeout_s=60.0
    )
    embedder = agenta._semantic("text-embedding-3-small", "http://127.0.0.1:9/v1", "k")
    assert embedder.connection == ModelConnection(
        model="text-embedding-3-small", base_url="http://127.0.0.1:9/v1", api_key="k", request_timeout_s=30.0
    )


@pytest.mark.parametrize("kind", [LLMJudge, LLMSimilarity, SemanticSimilarity])
def test_an_unknown_keyword_is_still_a_type_error(kind: type) -> None:
    extra: dict[str, Any] = {"rubric": "Is it right?"} if kind is LLMJudge else {}
    with pytest.raises(TypeError, match="'base_ur'"):
        kind(**extra, base_ur="http://127.0.0.1:9/v1")


def test_semantic_similarity_takes_no_azure_keywords() -> None:
    with pytest.raises(TypeError, match="'azure_endpoint'"):
        SemanticSimilarity(azure_endpoint="https://x.openai.azure.com", api_version="2024-10-21")  # type: ignore[call-arg]


def test_from_config_takes_the_flat_keywords_and_names_a_misspelt_one(server: LLMServer) -> None:
    built = from_config({"type": "semantic", "base_url": server.base_url, "rpm": 60, "max_retries": 1})
    assert isinstance(built, SemanticSimilarity)
    assert built.connection == ModelConnection(
        model="text-embedding-3-small", base_url=server.base_url, rpm=60, max_retries=1, request_timeout_s=30
    )
    with pytest.raises(ConfigError) as info:
        from_config({"type": "llm_judge", "rubric": "Is it right?", "base_ur": server.base_url})
    assert info.value.setting == "llm_judge.base_ur"
    assert "did you mean 'base_url'?" in info.value.accepted
    assert "connection" in info.value.accepted
