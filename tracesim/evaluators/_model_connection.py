"""`ModelConnection`: the model an evaluator calls, the server it is on, and the limits of the calls.

`LLMJudge`, `LLMSimilarity` and `SemanticSimilarity` (``backend="openai"``) share this group
of settings. Given once as an object, it is checked once, here, and the same connection can
be handed to several evaluators. Their flat keywords (``model=``, ``base_url=``, ...) build
the same object, so both spellings are checked by the same rules and send the same requests.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypedDict

from tracesim._errors import ConfigError
from tracesim.evaluators._model import ModelSettings
from tracesim.evaluators._options import check_int, check_number

__all__ = [
    "CONNECTION_FIELDS",
    "EMBEDDING_KEYWORDS",
    "JUDGE_KEYWORDS",
    "ConnectionKeywords",
    "EmbeddingConnectionKeywords",
    "ModelConnection",
    "connection_for",
]


@dataclass(frozen=True, kw_only=True)
class ModelConnection:
    """An OpenAI-compatible model endpoint and the limits of the calls an evaluator makes to it.

    Give it to `LLMJudge`, `LLMSimilarity` or `SemanticSimilarity` as ``connection=``; it
    replaces their flat keywords of the same names, which keep working. One connection can
    serve several evaluators. It is checked when built: a bad value raises
    `tracesim.ConfigError` naming the field (``ModelConnection.rpm``, say). It never calls
    the network. Its ``repr`` leaves the API key out.

    Args:
        model: The model name (with Azure OpenAI, the deployment). ``None``: the evaluator's
            default (``gpt-4o-mini`` for the judges, ``text-embedding-3-small`` for embeddings).
        base_url: Any OpenAI-compatible server (vLLM, Ollama, a gateway). ``None``: the
            ``openai`` client's default (``OPENAI_BASE_URL``, else OpenAI).
        api_key: The key sent to the server. ``None``: the ``openai`` client reads
            ``OPENAI_API_KEY``.
        azure_endpoint: An Azure OpenAI resource instead of ``base_url`` (judges only); then
            ``api_version`` is required.
        api_version: The Azure OpenAI API version, e.g. ``"2024-10-21"``.
        request_timeout_s: Bounds each request as a whole (connect, headers and the whole
            body). ``None``: the evaluator's default (60 s for the judges, 30 s for embeddings).
        max_retries: Retries of a request after a 429, a 5xx, a time-out or a dropped
            connection (``Retry-After`` honoured, within a retry budget).
        rpm: Requests per minute to this endpoint, shared by every evaluator calling it.
        tpm: Tokens per minute to this endpoint, likewise.
        cache_dir: A directory where answers are kept on disk, so the same request is not
            paid for twice.
        max_response_bytes: The largest response body read (at least 1024). ``None``: derived
            from the request (1 MiB, more for long answers or many texts).

    Example:
        >>> from tracesim.evaluators import LLMJudge, ModelConnection
        >>> local = ModelConnection(model="qwen2.5", base_url="http://127.0.0.1:9/v1", api_key="sk-1", rpm=60)
        >>> local
        ModelConnection(model='qwen2.5', base_url='http://127.0.0.1:9/v1', azure_endpoint=None, ...)
        >>> judge = LLMJudge("Is the answer polite?", scale="pass_fail", connection=local)
        >>> judge.model, judge.connection.rpm, judge.connection.request_timeout_s
        ('qwen2.5', 60.0, 60.0)
        >>> ModelConnection(max_retries=-1)
        Traceback (most recent call last):
        ...
        tracesim._errors.ConfigError: invalid value for setting 'ModelConnection.max_retries': got -1; ...
    """

    model: str | None = None
    base_url: str | None = None
    api_key: str | None = field(default=None, repr=False)
    azure_endpoint: str | None = None
    api_version: str | None = None
    request_timeout_s: float | None = None
    max_retries: int = 4
    rpm: float | None = None
    tpm: float | None = None
    cache_dir: str | os.PathLike[str] | None = None
    max_response_bytes: int | None = None

    def __post_init__(self) -> None:
        given = {name: getattr(self, name) for name in CONNECTION_FIELDS}
        for name, value in _checked("ModelConnection", given).items():
            object.__setattr__(self, name, value)

    def _settings(self) -> ModelSettings:
        """The caller's settings; ``model`` and ``request_timeout_s`` must be filled in by then."""
        assert self.model is not None
        assert self.request_timeout_s is not None
        return ModelSettings(
            model=self.model,
            base_url=self.base_url,
            api_key=self.api_key,
            azure_endpoint=self.azure_endpoint,
            api_version=self.api_version,
            request_timeout_s=self.request_timeout_s,
            max_retries=self.max_retries,
            rpm=self.rpm,
            tpm=self.tpm,
            cache_dir=None if self.cache_dir is None else os.fspath(self.cache_dir),
            max_response_bytes=self.max_response_bytes,
        )


CONNECTION_FIELDS: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(ModelConnection))
"""The names of `ModelConnection`'s fields: also the evaluators' flat keywords for them."""


class ConnectionKeywords(TypedDict, total=False):
    """`ModelConnection`'s fields as the flat keywords of `LLMJudge` and `LLMSimilarity`.

    Each keyword means what the field of the same name means; ``request_timeout_s`` is a
    number here (leave it out for the evaluator's default).
    """

    model: str | None
    base_url: str | None
    api_key: str | None
    azure_endpoint: str | None
    api_version: str | None
    request_timeout_s: float
    max_retries: int
    rpm: float | None
    tpm: float | None
    cache_dir: str | os.PathLike[str] | None
    max_response_bytes: int | None


class EmbeddingConnectionKeywords(TypedDict, total=False):
    """`ModelConnection`'s fields as the flat keywords of `SemanticSimilarity` (``model`` is its
    own parameter; Azure OpenAI is not taken)."""

    base_url: str | None
    api_key: str | None
    request_timeout_s: float
    max_retries: int
    rpm: float | None
    tpm: float | None
    cache_dir: str | os.PathLike[str] | None
    max_response_bytes: int | None


JUDGE_KEYWORDS: tuple[str, ...] = tuple(ConnectionKeywords.__annotations__)
EMBEDDING_KEYWORDS: tuple[str, ...] = tuple(EmbeddingConnectionKeywords.__annotations__)


def _checked(prefix: str, values: Mapping[str, Any]) -> dict[str, Any]:
    """The connection fields in ``values``, checked and normalised; errors name ``prefix.field``.

    The one place the group's rules live: `ModelConnection` calls it with its own name, the
    evaluators' flat keywords with their type name (``llm_judge.max_retries``).
    """
    for key in ("model", "base_url", "azure_endpoint"):
        value = values.get(key)
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise ConfigError(f"{prefix}.{key}", value, "a non-empty string")
    if values.get("azure_endpoint") and not values.get("api_version"):
        accepted = "the Azure OpenAI API version, e.g. 2024-10-21"
        raise ConfigError(f"{prefix}.api_version", values.get("api_version"), accepted)
    checked = dict(values)
    if "request_timeout_s" in values:
        timeout = values["request_timeout_s"]
        checked["request_timeout_s"] = check_number(
            # None ("the evaluator's default") is a ModelConnection field's value only: as an
            # evaluator's keyword it was always refused, so its error must not offer it
            f"{prefix}.request_timeout_s",
            timeout,
            low=0.0,
            low_open=True,
            allow_none=prefix == "ModelConnection",
        )
    if "max_retries" in values:
        checked["max_retries"] = check_int(f"{prefix}.max_retries", values["max_retries"], low=0)
    if "max_response_bytes" in values:
        checked["max_response_bytes"] = check_int(
            f"{prefix}.max_response_bytes", values["max_response_bytes"], low=1024, allow_none=True
        )
    for key in ("rpm", "tpm"):
        if key in values:
            per_minute = values[key]
            checked[key] = check_number(f"{prefix}.{key}", per_minute, low=0, low_open=True, allow_none=True)
    cache_dir = values.get("cache_dir")
    if cache_dir is not None:
        if not isinstance(cache_dir, (str, os.PathLike)):
            raise ConfigError(f"{prefix}.cache_dir", cache_dir, "a directory path (str or os.PathLike)")
        checked["cache_dir"] = os.fspath(cache_dir)
    return checked


def connection_for(
    owner: str,
    connection: ModelConnection | Mapping[str, Any] | None,
    flat: Mapping[str, Any],
    *,
    default_model: str,
    default_timeout_s: float,
    accepted: tuple[str, ...] = CONNECTION_FIELDS,
    caller: str | None = None,
) -> ModelConnection:
    """An evaluator's connection, ``model`` and ``request_timeout_s`` filled in with its defaults.

    ``connection`` is the object given (or a mapping of its fields, as from a config file);
    ``flat`` the flat keywords the caller gave for the same fields (``accepted`` names those
    it takes: another name is a `TypeError`, as for any unknown keyword, naming ``caller``, the
    signature the keywords were given to, e.g. ``LLMJudge.__init__()``). Without a
    connection they build it, and a bad value is named ``owner.key``. With one, a flat
    keyword whose value differs from the connection's is a conflict: `ConfigError` names it.

    Example:
        >>> connection_for("llm_judge", None, {"rpm": 30}, default_model="m", default_timeout_s=60.0).rpm
        30.0
        >>> shared = ModelConnection(base_url="http://127.0.0.1:9/v1")
        >>> connection_for("llm_judge", shared, {"base_url": "http://other/v1"}, default_model="m",
        ...                default_timeout_s=60.0)
        Traceback (most recent call last):
        ...
        tracesim._errors.ConfigError: invalid value for setting 'llm_judge.base_url': ...
    """
    for key in flat:
        if key not in accepted:
            raise TypeError(f"{caller or owner} got an unexpected keyword argument {key!r}")
    given = dict(flat)
    if "model" in given:
        given["model"] = given["model"] or None  # an empty model name has always meant the default
    if connection is None:
        built = ModelConnection(**_checked(owner, given))
    else:
        built = _as_connection(owner, connection)
    filled = dataclasses.replace(
        built,
        model=built.model or default_model,
        request_timeout_s=default_timeout_s if built.request_timeout_s is None else built.request_timeout_s,
    )
    if connection is not None:
        for key, value in given.items():
            if (value is None and key != "request_timeout_s") or _same(value, getattr(filled, key)):
                continue  # None is the keyword's default: not a second value
            shown = "<hidden>" if key == "api_key" else value
            raise ConfigError(
                f"{owner}.{key}",
                shown,
                f"the connection's {key}, or no {key} keyword: with connection= given, set {key} "
                f"in the ModelConnection (dataclasses.replace(connection, {key}=...)), not beside it",
            )
    return filled


def _as_connection(owner: str, connection: Any) -> ModelConnection:
    if isinstance(connection, ModelConnection):
        return connection
    if isinstance(connection, Mapping):  # e.g. from a YAML or JSON config
        unknown = sorted(str(key) for key in connection if key not in CONNECTION_FIELDS)
        if unknown:
            raise ConfigError(
                f"{owner}.connection.{unknown[0]}",
                connection[unknown[0]],
                "fields of ModelConnection: " + ", ".join(CONNECTION_FIELDS),
            )
        return ModelConnection(**connection)
    raise ConfigError(
        f"{owner}.connection",
        connection,
        "a tracesim.evaluators.ModelConnection, or a mapping of its fields (model, base_url, ...)",
    )


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, os.PathLike) or isinstance(b, os.PathLike):
        return os.fspath(a) == os.fspath(b) if a is not None and b is not None else False
    return bool(a == b)
