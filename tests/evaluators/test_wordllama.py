"""The ``local`` embedding backend: WordLlama's bundled weights, loaded offline, once, lazily.

These tests load the real model from the installed wheel. The pytest process never imports
wordllama itself before the backend has (its import configures the root logger; the backend
keeps it from doing so), and process-wide behaviour (loading once, network, a missing extra)
is checked in fresh interpreters.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tracesim import ConfigError
from tracesim.evaluators._wordllama import MissingExtraError, local_embedder

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("wordllama") is None,
    reason="the 'embeddings' extra (wordllama) is not installed",
)

REPO = Path(__file__).resolve().parents[2]


def _cosine(embed: Callable[[list[str]], Any], a: str, b: str) -> float:
    vectors = embed([a, b])
    return float(vectors[0] @ vectors[1])


def test_rows_are_unit_length_float32_of_the_model_width() -> None:
    texts = ("Marie Curie was born in Warsaw.", "Refunds take five business days.", "ok")
    for dims in (None, 64, 128):
        embed = local_embedder(dims=dims)
        vectors = embed(texts)  # any sequence, not only a list
        width = dims or 256
        assert embed.name == f"wordllama/l2_supercat@{width}"
        assert vectors.shape == (3, width)
        assert vectors.dtype == np.float32
        np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_matches_wordllamas_own_normalised_embedding() -> None:
    embed = local_embedder()
    texts = [
        "The capital of Japan is Tokyo.",
        "Use git status to see which files changed.",
        "x " * 3000,  # longer than one pooling chunk
        "Der Zug nach München fährt um 14:30 ab.",
        "ok",
    ]
    in_pairs = np.vstack([embed(texts[i : i + 2]) for i in range(0, len(texts), 2)])  # as the evaluator
    in_one_batch = embed(texts)  # texts of very different lengths: no padding may leak into a row
    wordllama: Any = sys.modules["wordllama"]  # imported by the backend, which kept root logging alone
    package = Path(wordllama.__file__).parent
    theirs = wordllama.WordLlama.load(cache_dir=package, disable_download=True).embed(texts, norm=True)
    np.testing.assert_allclose(in_pairs, theirs, atol=1e-5)
    np.testing.assert_allclose(in_one_batch, theirs, atol=1e-5)


def test_an_empty_text_is_a_zero_row() -> None:
    # "" has no tokens, hence no direction; a zero row keeps NaN out of every cosine.
    vectors = local_embedder()(["", "text"])
    assert not vectors[0].any()
    assert float(np.linalg.norm(vectors[1])) == pytest.approx(1.0, abs=1e-5)
    assert local_embedder()([]).shape == (0, 256)


def test_identical_texts_have_cosine_one() -> None:
    text = "Your order #48213 ships on Monday and should arrive within three business days."
    assert _cosine(local_embedder(), text, text) == pytest.approx(1.0, abs=1e-5)


def test_a_paraphrase_scores_above_an_unrelated_sentence() -> None:
    embed = local_embedder()
    anchor = "The capital of Japan is Tokyo."
    paraphrase = _cosine(embed, anchor, "Tokyo is Japan's capital city.")
    unrelated = _cosine(embed, anchor, "Refunds are processed within 5 to 7 business days.")
    assert paraphrase > 0.9  # measured 0.97
    assert unrelated < 0.2  # measured -0.03
    assert paraphrase > unrelated


def test_negation_is_barely_seen() -> None:
    # A known limitation of bag-of-token embeddings, documented rather than fixed: a text is
    # the mean of its token vectors, so one added "not" moves it little. Measured with the
    # default model: 0.94 for the words, 0.97 for the sentences.
    embed = local_embedder()
    assert 0.7 < _cosine(embed, "delayed", "not delayed") < 1.0
    assert 0.7 < _cosine(embed, "The flight was delayed.", "The flight was not delayed.") < 1.0


def test_a_very_long_text_is_pooled_in_chunks_to_the_same_direction() -> None:
    sentence = "The flight was delayed by a storm over the Atlantic."
    long = " ".join([sentence] * 3000)  # 159,000 characters, 33,000 tokens: many chunks
    assert _cosine(local_embedder(), long, sentence) == pytest.approx(1.0, abs=1e-4)


def test_one_string_is_refused_rather_than_embedded_letter_by_letter() -> None:
    with pytest.raises(TypeError, match="not one string"):
        local_embedder()("delayed")


@pytest.mark.parametrize(
    ("model", "dims", "setting"),
    [
        ("l3_supercat", None, "semantic.model"),  # a wordllama model whose weights are downloaded
        ("potion_base_8m", None, "semantic.model"),
        (None, 512, "semantic.dimensions"),  # stored on Hugging Face, not in the wheel
        (None, 100, "semantic.dimensions"),
        (None, True, "semantic.dimensions"),
        (None, 64.0, "semantic.dimensions"),
    ],
)
def test_names_the_wheel_does_not_hold_fail_at_construction(
    model: str | None, dims: object, setting: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        local_embedder(model, dims=dims)  # type: ignore[arg-type]
    assert caught.value.setting == setting


# Switches that tell Hugging Face libraries to stay offline: the backend must not need them.
OFFLINE_SWITCHES = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE")


def _python(code: str, home: Path) -> subprocess.CompletedProcess[str]:
    """``code`` in a fresh interpreter with an empty home (no ~/.cache/wordllama to fall back on)."""
    env = {key: value for key, value in os.environ.items() if key not in OFFLINE_SWITCHES}
    env.update(HOME=str(home), XDG_CACHE_HOME=str(home / ".cache"))
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _run(code: str, home: Path) -> dict[str, object]:
    done = _python(code, home)
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


LOAD_RACE = """
import json, threading
import wordllama
from tracesim.evaluators._wordllama import local_embedder

THREADS = 8
real_load = wordllama.WordLlama.load
loads = []
arrived = threading.Condition()
count = [0]
loading, release = threading.Event(), threading.Event()

def counting_load(*args, **kwargs):  # wordllama's loader, counted; the dims-128 load is held
    loads.append(kwargs.get("trunc_dim"))
    if kwargs.get("trunc_dim") == 128:
        with arrived:  # every racing thread has called the embedder
            assert arrived.wait_for(lambda: count[0] == THREADS, timeout=60)
        loading.set()
        assert release.wait(60)
    return real_load(*args, **kwargs)

wordllama.WordLlama.load = counting_load
local_embedder(dims=64)(["warm up the 64-wide model"])

shared = local_embedder(dims=128)
shapes = []
def race(index):
    embed = shared if index % 2 else local_embedder(dims=128)  # shared and separate instances
    with arrived:
        count[0] += 1
        arrived.notify_all()
    shapes.append(embed(["thread %d" % index]).shape)

threads = [threading.Thread(target=race, args=(i,)) for i in range(THREADS)]
for thread in threads:
    thread.start()
assert loading.wait(60)
# While the 128-wide model loads, the loaded 64-wide one serves a new embedder at once.
other = []
user = threading.Thread(target=lambda: other.append(local_embedder(dims=64)(["meanwhile"]).shape))
user.start()
user.join(60)
served_during_load = not user.is_alive() and not release.is_set()
release.set()
for thread in threads:
    thread.join(60)
print(json.dumps({"loads": loads, "shapes": [list(s) for s in shapes], "served": served_during_load,
                  "other": [list(s) for s in other]}))
"""


def test_concurrent_first_calls_load_once_and_never_block_a_loaded_model(tmp_path: Path) -> None:
    result = _run(LOAD_RACE, tmp_path)
    assert result["loads"] == [64, 128]  # one load per (model, dims), eight threads racing for 128
    assert result["shapes"] == [[1, 128]] * 8
    assert result["served"] is True
    assert result["other"] == [[1, 64]]


NO_NETWORK = """
import json, logging, socket, sys
attempts = []

def refuse(*args, **kwargs):
    attempts.append(repr(args[:2]))
    raise OSError("network blocked by the test")

socket.socket.connect = refuse
socket.socket.connect_ex = refuse
socket.getaddrinfo = refuse  # a name lookup is a network attempt too
try:  # the block itself works: wordllama's own default loader would be caught here
    socket.create_connection(("huggingface.co", 443), timeout=5)
except OSError:
    pass
blocked = len(attempts)
del attempts[:]

from tracesim.evaluators._wordllama import local_embedder
embed = local_embedder()
built_without_import = "wordllama" not in sys.modules and "tokenizers" not in sys.modules
vectors = embed(["The flight was delayed.", "The plane left late."])
print(json.dumps({
    "blocked": blocked,
    "attempts": attempts,
    "built_without_import": built_without_import,
    "shape": list(vectors.shape),
    "root": [len(logging.root.handlers), logging.root.level],
}))
"""


def test_loads_with_every_connection_refused_and_leaves_logging_alone(tmp_path: Path) -> None:
    result = _run(NO_NETWORK, tmp_path)
    assert result["blocked"] == 1
    assert result["attempts"] == []
    assert result["built_without_import"] is True
    assert result["shape"] == [2, 256]
    # `import wordllama` runs logging.basicConfig(level=INFO); the application's root logger
    # must still be as Python left it: no handler, level WARNING.
    assert result["root"] == [0, 30]
    assert not (tmp_path / ".cache").exists()  # nothing downloaded, no cache folder made


MISSING_EXTRA = """
import sys
sys.modules["wordllama"] = None  # as if the 'embeddings' extra were not installed
from tracesim import TracesimError
from tracesim.evaluators._wordllama import MissingExtraError, local_embedder
embed = local_embedder()  # building the backend needs nothing
try:
    embed(["text"])
except MissingExtraError as exc:
    print("IMPORT_ERROR", isinstance(exc, ImportError), isinstance(exc, TracesimError))
    print(exc)
else:
    print("NO ERROR")
"""


def test_a_missing_extra_fails_the_first_call_with_the_install_command(tmp_path: Path) -> None:
    done = _python(MISSING_EXTRA, tmp_path)
    assert done.returncode == 0, done.stderr
    assert "IMPORT_ERROR True True" in done.stdout
    assert "pip install 'tracesim[embeddings]'" in done.stdout
    assert "'embeddings' extra" in done.stdout


def test_missing_extra_error_is_an_import_error() -> None:
    error = MissingExtraError("wordllama is not installed")
    assert isinstance(error, ImportError)
    assert error.name == "wordllama"
    assert error.extra == "embeddings"
    assert str(error).endswith("Install it with: pip install 'tracesim[embeddings]'")
