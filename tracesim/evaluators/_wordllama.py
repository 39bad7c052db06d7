"""The ``local`` embedding backend: WordLlama's static token embeddings, shipped in its wheel.

WordLlama (``pip install 'tracesim[embeddings]'``) embeds a text as the mean of its tokens'
vectors: no torch, no GPU, 16 MB of weights inside the wheel. Its own default loader looks
for the tokenizer file in the wrong folder of the package and then downloads it, so this
module loads the model from the installed package with downloads disabled: it never opens a
network connection. The model is loaded on the first embedding call (never when an evaluator
is built or a function decorated), once per process for each (model, dims).

Bag-of-token embeddings ignore word order and barely register negation: "delayed" and
"not delayed" have a cosine of 0.94, "The flight was delayed." and "The flight was not
delayed." 0.97. Use an embedding API or an LLM judge when such differences matter.
"""

from __future__ import annotations

import importlib
import logging
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tracesim._errors import ConfigError, TracesimError

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

__all__ = ["DEFAULT_DIMS", "DEFAULT_MODEL", "LocalEmbedder", "MissingExtraError", "local_embedder"]

DEFAULT_MODEL = "l2_supercat"
#: The width stored in the wheel. 64 and 128 (Matryoshka truncations) score a little lower in
#: WordLlama's published benchmarks and are no faster here (tokenizing dominates the cost, see
#: benchmarks/bench_semantic.py); they only save memory: 39 MB loaded at 64 against 62 at 256.
DEFAULT_DIMS = 256
#: The models whose weights ship in the wordllama wheel -> the width stored there. Other
#: wordllama models and widths (512, 1024) would be downloaded, which this backend never does.
_STORED_DIMS = {"l2_supercat": 256}
_TRUNCATIONS = (64, 128, 256)
_INSTALL = "pip install 'tracesim[embeddings]'"
# Token vectors are summed this many at a time, so a very long text needs a bounded buffer
# (2048 x 256 float32 = 2 MiB) instead of one row per token.
_CHUNK_TOKENS = 2048


class MissingExtraError(TracesimError, ImportError):
    """The ``local`` embedding backend cannot load: the ``embeddings`` extra is not installed.

    Raised by the first embedding call (not when the evaluator is built), so it becomes the
    evaluator's error result; the message says how to install the extra.

    Example:
        >>> str(MissingExtraError("wordllama is not installed")).split(";")[0]
        "the 'local' embedding backend needs the 'embeddings' extra"
    """

    def __init__(self, reason: str) -> None:
        self.extra = "embeddings"
        super().__init__(
            f"the 'local' embedding backend needs the 'embeddings' extra; {reason}. "
            f"Install it with: {_INSTALL}",
            name="wordllama",
        )


class _Model:
    """A loaded tokenizer and its read-only token-vector matrix; shared by threads."""

    def __init__(self, tokenizer: Any, matrix: NDArray[np.float32]) -> None:
        self.tokenizer = tokenizer
        self.matrix = matrix
        self.dims = int(matrix.shape[1])

    def embed(self, texts: list[str]) -> NDArray[np.float32]:
        import numpy as np

        out = np.zeros((len(texts), self.dims), dtype=np.float32)
        for row, ids in zip(out, self._token_ids(texts), strict=True):
            if len(ids) <= _CHUNK_TOKENS:
                self.matrix.take(ids, axis=0).sum(axis=0, out=row)
            else:
                for start in range(0, len(ids), _CHUNK_TOKENS):
                    row += self.matrix.take(ids[start : start + _CHUNK_TOKENS], axis=0).sum(axis=0)
        # The sum has the mean's direction, so normalising it gives WordLlama's embed(norm=True).
        # A text without tokens (only "") keeps a zero row: it has no direction.
        norms = np.sqrt(np.einsum("ij,ij->i", out, out))[:, None]
        np.divide(out, norms, out=out, where=norms > 0)
        return out

    def _token_ids(self, texts: list[str]) -> list[list[int]]:
        # The batch method, even for one text: it releases the GIL while it tokenizes (encode()
        # holds it), so the application's threads and a second scoring worker run meanwhile.
        # Two threads embedding pairs: 4,400 pairs/s against 2,400 with encode(). The _fast
        # variant skips character offsets, which pooling does not need (tokenizers >= 0.21).
        batch = getattr(self.tokenizer, "encode_batch_fast", self.tokenizer.encode_batch)
        return [encoding.ids for encoding in batch(texts, add_special_tokens=False)]


class LocalEmbedder:
    """Embeds texts with a WordLlama model from the installed wheel, offline.

    Callable from any number of threads. The model loads on the first call (about 0.3 s,
    plus 0.5 s for the first ``import wordllama``), once per process for each (model, dims):
    threads that arrive while it loads wait for that one load; calls on a model already
    loaded never wait for a lock. Rows are unit length (a zero row for an empty text), so a
    cosine is a dot product. ``name`` identifies the model in result details.

    Example:
        >>> embed = local_embedder()
        >>> embed.name
        'wordllama/l2_supercat@256'
        >>> vectors = embed(["The flight was delayed.", "The plane left late."])  # doctest: +SKIP
        >>> vectors.shape, round(float(vectors[0] @ vectors[1]), 2)  # doctest: +SKIP
        ((2, 256), 0.45)
    """

    def __init__(self, model: str, dims: int) -> None:
        self.model = model
        self.dims = dims
        self.name = f"wordllama/{model}@{dims}"
        self._loaded: _Model | None = None

    def __call__(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Embed ``texts``: an array of shape (len(texts), dims), float32, unit-length rows.

        Raises:
            MissingExtraError: wordllama is not installed, or its wheel lacks the weights.
        """
        if isinstance(texts, str):
            raise TypeError("texts must be a sequence of strings, not one string")
        model = self._loaded
        if model is None:
            model = self._loaded = _model_for(self.model, self.dims)
        return model.embed(texts if isinstance(texts, list) else list(texts))

    def __repr__(self) -> str:
        return f"LocalEmbedder({self.name!r})"


def local_embedder(model: str | None = None, *, dims: int | None = None) -> LocalEmbedder:
    """The ``local`` backend for ``model`` (default ``l2_supercat``) at ``dims`` (64, 128, 256).

    Checks the names only: nothing is imported or loaded until the first call.

    Raises:
        ConfigError: the model is not shipped in the wordllama wheel, or ``dims`` is not one of
            its widths.

    Example:
        >>> local_embedder(dims=64).name
        'wordllama/l2_supercat@64'
    """
    model = DEFAULT_MODEL if model is None else model
    stored = _STORED_DIMS.get(model)
    if stored is None:
        accepted = ", ".join(repr(name) for name in _STORED_DIMS)
        raise ConfigError("semantic.model", model, f"{accepted} (the models shipped in the wordllama wheel)")
    widths = [width for width in _TRUNCATIONS if width <= stored]
    if dims is None:
        dims = stored
    elif isinstance(dims, bool) or not isinstance(dims, int) or dims not in widths:
        raise ConfigError("semantic.dimensions", dims, f"one of {widths} for {model!r}, or None for {stored}")
    return LocalEmbedder(model, dims)


# -- loading: once per (model, dims), without blocking users of models already loaded ------------

_models: dict[tuple[str, int], _Model] = {}
_load_locks: dict[tuple[str, int], threading.Lock] = {}
_registry_lock = threading.Lock()  # held only to find a load lock, never during a load


def _model_for(model: str, dims: int) -> _Model:
    key = (model, dims)
    found = _models.get(key)
    if found is not None:
        return found
    with _registry_lock:
        lock = _load_locks.setdefault(key, threading.Lock())
    with lock:
        found = _models.get(key)
        if found is None:
            found = _models[key] = _load(model, dims)
    return found


def _load(model: str, dims: int) -> _Model:
    import numpy as np

    wordllama = _import_wordllama()
    package = Path(wordllama.__file__).parent
    stored = _STORED_DIMS[model]
    try:
        # With the package folder as cache_dir, WordLlama finds the weights in <package>/weights
        # and the tokenizer in <package>/tokenizers (its default looks in <package>/tokenizer,
        # which does not exist, then downloads); disable_download makes a miss an error.
        loaded = wordllama.WordLlama.load(
            model,
            cache_dir=package,
            dim=stored,
            trunc_dim=None if dims == stored else dims,
            disable_download=True,
        )
    except FileNotFoundError as exc:
        version = getattr(wordllama, "__version__", "?")
        raise MissingExtraError(f"wordllama {version} at {package} does not ship {model!r}: {exc}") from exc
    tokenizer = loaded.tokenizer
    # WordLlama pads every batch to its longest text; we pool each text on its own, so padding
    # would only add tokens to skip. This tokenizer is ours alone (load() builds a new one).
    tokenizer.no_padding()
    matrix = np.ascontiguousarray(loaded.embedding, dtype=np.float32)
    matrix.flags.writeable = False  # shared by every thread: nothing may write to it
    return _Model(tokenizer, matrix)


def _import_wordllama() -> Any:
    try:
        with _root_logger_kept():
            return importlib.import_module("wordllama")
    except ImportError as exc:
        raise MissingExtraError(f"importing wordllama failed ({exc})") from exc


@contextmanager
def _root_logger_kept() -> Iterator[None]:
    """Keep ``import wordllama`` from configuring the application's logging.

    wordllama calls ``logging.basicConfig(level=INFO)`` when imported, which would give an
    application without logging configuration an INFO handler on stderr. basicConfig does
    nothing when the root logger has a handler, so a NullHandler is held there for the import
    (for that half second, a warning logged by another thread of such an application is not
    printed by logging's last-resort handler; every configured handler still gets it).
    """
    root = logging.getLogger()
    placeholder = logging.NullHandler()
    root.addHandler(placeholder)
    try:
        yield
    finally:
        root.removeHandler(placeholder)
