"""`SemanticSimilarity` (type ``semantic``): the cosine of two embeddings, -1 to 1."""

from __future__ import annotations

import inspect
import math
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from tracesim import _outputs
from tracesim._errors import ConfigError
from tracesim.evaluators._base import DEFAULT, Measurement, _Default
from tracesim.evaluators._compared_text import cut_texts
from tracesim.evaluators._model import ModelCaller
from tracesim.evaluators._model_connection import (
    EMBEDDING_KEYWORDS,
    EmbeddingConnectionKeywords,
    ModelConnection,
    connection_for,
)
from tracesim.evaluators._model_evaluator import ModelEvaluator
from tracesim.evaluators._options import check_max_chars

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["SemanticSimilarity"]

DEFAULT_OPENAI_MODEL = "text-embedding-3-small"
_REQUEST_TIMEOUT_S = 30.0  # request_timeout_s when not given (the default in the signature)
Embed = Callable[[list[str]], Any]


class _Vectors:
    """Recent embeddings by text, so a reference answer is embedded once, not on every call."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, text: str) -> np.ndarray | None:
        with self._lock:
            vector = self._items.get(text)
            if vector is not None:
                self._items.move_to_end(text)
            return vector

    def put(self, text: str, vector: np.ndarray) -> None:
        if self.size <= 0:
            return
        with self._lock:
            self._items[text] = vector
            self._items.move_to_end(text)
            while len(self._items) > self.size:
                self._items.popitem(last=False)


class SemanticSimilarity(ModelEvaluator):
    """Cosine similarity of the embeddings of the output and the expected output, -1 to 1.

    Backends (``backend=``):

    - ``"openai"`` (default): the official ``openai`` client, model ``text-embedding-3-small``,
      any OpenAI-compatible ``base_url`` (``OPENAI_BASE_URL`` / ``OPENAI_API_KEY`` are read
      by the client when not given). Both texts go in one request; embeddings are kept by
      text (``cache_size`` of them), so a reference answer is embedded once. Retries on 429
      (``Retry-After`` honoured), 5xx, time-outs and connection errors, with a budget;
      optional ``rpm``/``tpm`` limits and an on-disk ``cache_dir``. ``request_timeout_s`` bounds
      each request whole (a trickled body included); ``max_response_bytes`` caps a response
      (default: 1 MiB, more for many texts; larger is a ``response_too_large`` error).
    - ``"local"``: an offline model whose weights ship in its wheel
      (``pip install 'tracesim[embeddings]'``: WordLlama's ``l2_supercat``, 256 dimensions,
      or ``dimensions=64``/``128``), loaded on first use, never touching the network.
      Bag-of-token embeddings ignore word order and barely see negation: "delayed" and
      "not delayed" score 0.94, "The payment succeeded." and "The payment did not
      succeed." 0.82.
    - any callable ``embed(texts) -> vectors`` (sentence-transformers, fastembed, your own
      endpoint); an ``async def`` one runs on the scoring loop.

    Identical texts score 1.0 without a request; an empty text against a non-empty one 0.0.
    Each text is cut to its first ``max_chars`` (20,000) code points first (about 5,000
    tokens of English, within the 8,191 an OpenAI embedding model takes;
    ``details.truncated_to`` says so).
    ``details`` record the backend, model, tokens, requests, retries and cache hits.

    Args:
        backend: ``"openai"``, ``"local"`` or a callable ``embed(texts) -> vectors``.
        connection: For ``backend="openai"``: the embedding model, its server and the limits
            of the calls, as one `ModelConnection` (or a mapping of its fields), which several
            evaluators can share. Its ``model`` defaults to ``text-embedding-3-small``, its
            ``request_timeout_s`` to 30 s; Azure OpenAI is not taken here. Its fields may be
            given as keywords instead (see Other Parameters); a keyword whose value differs
            from the connection's is a `tracesim.ConfigError`.
        model: The embedding model: of the server (``openai``), of WordLlama (``local``), or
            a name for a callable's results.
        dimensions: Ask for vectors of this size (``openai``), or pick a local model's size.
        cache_size: Embeddings kept in memory by text (0 keeps none).
        max_chars: Each text is cut to its first ``max_chars`` code points.
        name: The result's name (the type name by default).
        threshold: The pass mark, -1 to 1 (``None``: no pass/fail).
        sample_rate: The share of calls scored, 0 to 1.
        timeout_s: Bounds the whole evaluation, retries included (default with ``openai``:
            twice ``request_timeout_s`` plus 10 s).
        max_concurrency: Evaluations in flight at once.

    Other Parameters:
        base_url (str | None): Any OpenAI-compatible server; the ``openai`` client's default
            when omitted.
        api_key (str | None): Its key; ``OPENAI_API_KEY`` when omitted.
        request_timeout_s (float): Bounds each request whole (30 s).
        max_retries (int): Retries of a failed request (4).
        rpm (float | None): Requests per minute to the endpoint.
        tpm (float | None): Tokens per minute to the endpoint.
        cache_dir (str | os.PathLike[str] | None): Where embeddings are kept on disk.
        max_response_bytes (int | None): The largest response body read (see `ModelConnection`).

    Example:
        >>> import numpy as np
        >>> letters = lambda texts: [np.array([t.count("a"), t.count("b")], float) for t in texts]
        >>> SemanticSimilarity(backend=letters).evaluate("aab", "ab").score
        0.9486832980505138
        >>> shared = ModelConnection(base_url="http://127.0.0.1:9/v1", api_key="k", rpm=600)
        >>> embedder = SemanticSimilarity(connection=shared)
        >>> embedder.model, embedder.connection.request_timeout_s
        ('text-embedding-3-small', 30.0)
    """

    type_name = "semantic"
    default_threshold = None
    _keyword_options: ClassVar[tuple[str, ...]] = EMBEDDING_KEYWORDS  # taken by **connection_keywords
    score_range = (-1.0, 1.0)

    def __init__(
        self,
        *,
        backend: str | Embed = "openai",
        connection: ModelConnection | Mapping[str, Any] | None = None,
        model: str | None = None,
        dimensions: int | None = None,
        cache_size: int = 4096,
        max_chars: int | None = 20_000,
        name: str | None = None,
        threshold: float | _Default | None = DEFAULT,
        sample_rate: float = 1.0,
        timeout_s: float | None = None,
        max_concurrency: int | None = None,
        **connection_keywords: Unpack[EmbeddingConnectionKeywords],
    ) -> None:
        super().__init__(
            name=name,
            threshold=threshold,
            sample_rate=sample_rate,
            timeout_s=timeout_s,
            max_concurrency=max_concurrency,
        )
        if dimensions is not None and (
            isinstance(dimensions, bool) or not isinstance(dimensions, int) or dimensions < 1
        ):
            raise ConfigError(
                "semantic.dimensions", dimensions, "a positive int, or None for the model's own"
            )
        if isinstance(cache_size, bool) or not isinstance(cache_size, int) or cache_size < 0:
            raise ConfigError("semantic.cache_size", cache_size, "an int >= 0 (0 keeps no embeddings)")
        self.dimensions = dimensions
        self.max_chars = check_max_chars("semantic", max_chars)
        self._vectors = _Vectors(cache_size)
        self._caller: ModelCaller | None = None
        self._embed: Embed | None = None
        self.connection: ModelConnection | None = None
        """The endpoint and call limits of the ``openai`` backend (defaults filled in); else None."""
        for key in connection_keywords:
            if key not in EMBEDDING_KEYWORDS:
                signature = f"{type(self).__name__}.__init__()"
                raise TypeError(f"{signature} got an unexpected keyword argument {key!r}")
        if connection is not None and backend != "openai":
            accepted = "None unless backend='openai' (a local or callable backend calls no server)"
            raise ConfigError("semantic.connection", connection, accepted)
        if callable(backend):
            self.backend = "callable"
            self._embed = backend
            self.model = model or getattr(backend, "__qualname__", type(backend).__name__)
            method = type(backend).__call__  # an object with an async __call__ is async too
            self.async_backend = inspect.iscoroutinefunction(backend) or inspect.iscoroutinefunction(method)
        elif backend == "openai":
            self.backend = "openai"
            flat: dict[str, Any] = dict(connection_keywords)
            if model is not None:
                flat["model"] = model
            self.connection = connection_for(
                "semantic",
                connection,
                flat,
                default_model=DEFAULT_OPENAI_MODEL,
                default_timeout_s=_REQUEST_TIMEOUT_S,
                accepted=(*EMBEDDING_KEYWORDS, "model"),
                caller=f"{type(self).__name__}.__init__()",
            )
            if self.connection.azure_endpoint:
                raise ConfigError(
                    "semantic.connection.azure_endpoint",
                    self.connection.azure_endpoint,
                    "None: SemanticSimilarity calls an OpenAI-compatible base_url, not Azure OpenAI",
                )
            self.model = self.connection.model or DEFAULT_OPENAI_MODEL
            self._caller = ModelCaller(self.connection._settings())
        elif backend == "local":
            from tracesim.evaluators._wordllama import local_embedder  # nothing loads until the first call

            self.backend = "local"
            embedder = local_embedder(model, dims=dimensions)
            self._embed = embedder
            self.model = embedder.name
            self.async_backend = False
        else:
            raise ConfigError("semantic.backend", backend, "'openai', 'local' or a callable embed(texts)")

    async def ameasure(self, output: Any, expected: Any, *, input: Any = None) -> Measurement:
        texts, details = self._texts(output, expected)
        trivial = _trivial(*texts)
        if trivial is not None:
            return trivial
        vectors, missing = self._known(texts)
        if missing:
            vectors = self._learn(texts, vectors, missing, await self._embed_texts(missing, details))
        details["embedded"] = len(missing)
        return Measurement(_cosine(vectors[0], vectors[1]), details)  # type: ignore[arg-type]

    def measure(self, output: Any, expected: Any, *, input: Any = None) -> Measurement:
        if self._caller is not None or self.async_backend or self._embed is None:
            return super().measure(output, expected, input=input)  # type: ignore[return-value]
        texts, details = self._texts(output, expected)  # a local model: computed right here
        trivial = _trivial(*texts)
        if trivial is not None:
            return trivial
        vectors, missing = self._known(texts)
        if missing:
            vectors = self._learn(texts, vectors, missing, _as_vectors(self._embed(missing), len(missing)))
        details["embedded"] = len(missing)
        return Measurement(_cosine(vectors[0], vectors[1]), details)  # type: ignore[arg-type]

    def _texts(self, output: Any, expected: Any) -> tuple[tuple[str, str], dict[str, Any]]:
        a, b, cut = cut_texts(output, expected, self.max_chars)
        details: dict[str, Any] = {"backend": self.backend, "model": self.model}
        if cut is not None:
            details["truncated_to"] = cut
        return (a, b), details

    def _known(self, texts: tuple[str, str]) -> tuple[list[np.ndarray | None], list[str]]:
        """The cached vectors of ``texts`` (None where unknown) and the distinct texts to embed."""
        vectors = [self._vectors.get(text) for text in texts]
        missing = [text for text, vector in zip(texts, vectors, strict=True) if vector is None]
        return vectors, list(dict.fromkeys(missing))  # the same text twice is embedded once

    def _learn(
        self,
        texts: tuple[str, str],
        vectors: list[np.ndarray | None],
        missing: list[str],
        embedded: list[np.ndarray],
    ) -> list[np.ndarray | None]:
        found = dict(zip(missing, embedded, strict=True))
        for text, vector in found.items():
            self._vectors.put(text, vector)
        return [
            found[text] if vector is None else vector for text, vector in zip(texts, vectors, strict=True)
        ]

    async def _embed_texts(self, texts: list[str], details: dict[str, Any]) -> list[np.ndarray]:
        if self._caller is not None:  # texts leave the process: redacted as everything tracesim sends
            sent = [_outputs.text(text) for text in texts]
            raw, usage = await self._caller.embed(sent, dimensions=self.dimensions)
            details.update(usage.details())
            return _as_vectors(raw, len(texts))
        assert self._embed is not None
        result = self._embed(texts)
        if inspect.isawaitable(result):
            result = await result
        return _as_vectors(result, len(texts))


def _trivial(output: str, expected: str) -> Measurement | None:
    if output == expected:
        return Measurement(1.0, {"method": "identical texts, no embedding needed"})
    if not output.strip() or not expected.strip():
        return Measurement(0.0, {"method": "an empty text against a non-empty one"})
    return None


def _as_vectors(raw: Any, count: int) -> list[np.ndarray]:
    vectors = [np.asarray(vector, dtype=np.float64).ravel() for vector in raw]
    if len(vectors) != count:
        raise ValueError(f"the embedding backend returned {len(vectors)} vectors for {count} texts")
    return vectors


def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    if a.shape != b.shape:
        raise ValueError(f"embeddings of different sizes: {a.shape[0]} and {b.shape[0]}")
    norms = float(np.linalg.norm(a)) * float(np.linalg.norm(b))
    if norms == 0.0 or not math.isfinite(norms):
        raise ValueError("an embedding is all zeros or not finite: its cosine is undefined")
    return max(-1.0, min(1.0, float(np.dot(a, b)) / norms))  # rounding can step past +-1
