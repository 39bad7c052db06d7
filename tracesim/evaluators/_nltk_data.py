"""NLTK data: found through NLTK's search path, loaded once per process, never downloaded.

Evaluators look their packages up when built (a few file lookups) and load them on their
first call, in the scoring thread, so building one at decoration or configuration time costs
nothing. When packages are missing, the evaluator is still built, a warning naming every
missing package and the command that installs them is logged once, and each call returns an
``error`` result with the same message (:class:`MissingNLTKDataError`): an observability
setting never stops the application from starting.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from tracesim._errors import TracesimError

__all__ = [
    "NLTK_PACKAGES",
    "MissingNLTKDataError",
    "find_missing",
    "perluniprops_classes",
    "punkt_tokenizer",
    "report_missing",
    "synonym_source",
    "treebank_tokenizer",
]

#: NLTK data package -> the resource path NLTK looks up for it.
NLTK_PACKAGES: dict[str, str] = {
    "punkt_tab": "tokenizers/punkt_tab/english/",
    "perluniprops": "misc/perluniprops",
    "wordnet": "corpora/wordnet",
}

_T = TypeVar("_T")
_lock = threading.Lock()
_loaded: dict[str, Any] = {}


class MissingNLTKDataError(TracesimError, LookupError):
    """An NLTK data package an evaluator needs is not installed.

    Example:
        >>> str(MissingNLTKDataError("wordnet", "meteor")).split(":")[0]
        "evaluator 'meteor' needs the NLTK data package 'wordnet', which is not on NLTK's search path"
    """

    def __init__(self, package: str | Sequence[str], needed_by: str) -> None:
        self.packages = (package,) if isinstance(package, str) else tuple(package)
        self.package = self.packages[0]
        """The first missing package (``packages`` has them all)."""
        self.needed_by = needed_by
        from nltk import data

        searched = ", ".join(str(p) for p in data.path) or "(empty)"
        names = ", ".join(repr(p) for p in self.packages)
        several = len(self.packages) > 1
        super().__init__(
            f"evaluator {needed_by!r} needs the NLTK data package{'s' if several else ''} {names}, which "
            f"{'are' if several else 'is'} not on NLTK's search path: {searched}. Install "
            f"{'them' if several else 'it'} with `python -m tracesim nlp-data` (downloads every package "
            f"tracesim's evaluators use) or `python -m nltk.downloader {' '.join(self.packages)}`, or set "
            f"NLTK_DATA to a folder that holds {'them' if several else 'it'} "
            f"(NLTK_DATA={os.environ.get('NLTK_DATA', '')!r} now)."
        )


def report_missing(packages: Sequence[str], needed_by: str) -> MissingNLTKDataError | None:
    """The error for ``packages`` missing, logged once per evaluator type and set; None if none are."""
    if not packages:
        return None
    error = MissingNLTKDataError(packages, needed_by)
    from tracesim._internal_errors import warn_once

    warn_once(
        f"nltk-data:{needed_by}:{','.join(packages)}",
        "tracesim: %s Until then its results are errors.",
        error,
    )
    return error


def find_missing(packages: list[str] | None = None) -> list[str]:
    """The packages among ``packages`` (default: all tracesim uses) NLTK cannot find.

    Example:
        >>> find_missing(["punkt_tab"])  # with NLTK_DATA pointing at the data
        []
    """
    wanted = packages if packages is not None else list(NLTK_PACKAGES)
    # Found on disk without importing NLTK: a host whose evaluators score in worker processes
    # never needs NLTK itself, and importing it (with scikit-learn and SciPy behind it) makes
    # each full garbage collection of the host's heap take ~80 ms instead of ~9 ms.
    unsure = [package for package in wanted if not _on_disk(NLTK_PACKAGES[package])]
    if not unsure:
        return []
    from nltk import data

    missing = []
    for package in unsure:
        resource = NLTK_PACKAGES[package]
        candidates = [resource]
        if resource.startswith(("corpora/", "misc/")):
            folder, name = resource.split("/", 1)
            candidates.insert(0, f"{folder}/{name}.zip/{name}/")
        if not any(_found(data, path) for path in candidates):
            missing.append(package)
    return missing


def _search_path() -> list[str] | None:
    """NLTK's search path as ``nltk.data`` builds it on POSIX; None when only NLTK can say
    (NLTK already imported, whose ``data.path`` a program may have changed; Windows; App Engine)."""
    if "nltk" in sys.modules or os.name == "nt" or "APPENGINE_RUNTIME" in os.environ:
        return None
    found = [os.path.expanduser(d) for d in os.environ.get("NLTK_DATA", "").split(os.pathsep) if d]
    home = os.path.expanduser("~/")
    if home != "~/":
        found.append(os.path.join(home, "nltk_data"))
    prefix = sys.prefix
    found += [os.path.join(prefix, "nltk_data"), os.path.join(prefix, "share", "nltk_data")]
    found += [os.path.join(prefix, "lib", "nltk_data"), "/usr/share/nltk_data", "/usr/local/share/nltk_data"]
    found += ["/usr/lib/nltk_data", "/usr/local/lib/nltk_data"]
    return found


def _on_disk(resource: str) -> bool:
    """True when ``resource`` is surely where NLTK would find it: a folder, or an entry of a zip
    file named after one of its parts (``tokenizers/punkt_tab.zip`` holding
    ``punkt_tab/english/``). False means "not sure": NLTK's own lookup decides.

    Example:
        >>> _on_disk("no/such/resource/")
        False
    """
    roots = _search_path()
    if not roots:
        return False
    pieces = resource.rstrip("/").split("/")
    for root in roots:
        if not os.path.isdir(root):
            continue
        if os.path.exists(os.path.join(root, *pieces)):
            return True
        for i in range(len(pieces)):
            archive = os.path.join(root, *pieces[:i], pieces[i] + ".zip")
            if os.path.isfile(archive) and _holds(archive, "/".join(pieces[i:]) + "/"):
                return True
    return False


def _holds(archive: str, entry: str) -> bool:
    """Whether the zip file ``archive`` has ``entry`` (a folder: any name under it)."""
    import zipfile

    try:
        with zipfile.ZipFile(archive) as opened:
            return any(name.startswith(entry) for name in opened.namelist())
    except (OSError, zipfile.BadZipFile):
        return False


def _found(data: Any, path: str) -> bool:
    try:
        data.find(path)
    except LookupError:
        return False
    return True


def _once(key: str, package: str, needed_by: str, load: Callable[[], _T]) -> _T:
    value = _loaded.get(key)
    if value is not None:
        return value  # type: ignore[no-any-return]
    with _lock:
        value = _loaded.get(key)
        if value is None:
            try:
                value = load()
            except LookupError:
                raise MissingNLTKDataError(package, needed_by) from None
            _loaded[key] = value
    return value


def punkt_tokenizer(needed_by: str) -> Any:
    """NLTK's English Punkt sentence tokenizer (data: ``punkt_tab``)."""

    def load() -> Any:
        from nltk.tokenize.punkt import PunktTokenizer

        return PunktTokenizer("english")

    return _once("punkt", "punkt_tab", needed_by, load)


def treebank_tokenizer() -> Any:
    """NLTK's improved Treebank word tokenizer, the one ``nltk.word_tokenize`` uses (no data)."""

    def load() -> Any:
        from nltk.tokenize.destructive import NLTKWordTokenizer

        return NLTKWordTokenizer()

    return _once("treebank", "", "", load)


def perluniprops_classes(needed_by: str) -> dict[str, frozenset[str]]:
    """The Perl Unicode property sets NLTK's NIST tokenizer uses: Number, Punctuation, Symbol."""

    def load() -> dict[str, frozenset[str]]:
        from nltk.corpus import perluniprops

        return {name: frozenset(perluniprops.chars(name)) for name in ("Number", "Punctuation", "Symbol")}

    return _once("perluniprops", "perluniprops", needed_by, load)


class _SynonymSource:
    """WordNet ``synsets()`` behind a lock and a bounded cache.

    NLTK's WordNet reader seeks in shared file handles, so concurrent lookups from the
    scoring thread pool could read each other's lines; the lock prevents that, and the
    cache makes repeated words cost a dict lookup.
    """

    _MAX_CACHED = 200_000

    def __init__(self, reader: Any) -> None:
        self._reader = reader
        self._lock = threading.Lock()
        self._cache: dict[str, tuple[Any, ...]] = {}

    def synsets(self, word: str) -> tuple[Any, ...]:
        found = self._cache.get(word)
        if found is None:
            with self._lock:
                found = tuple(self._reader.synsets(word))
            if len(self._cache) < self._MAX_CACHED:
                self._cache[word] = found
        return found


class NoSynonyms:
    """A stand-in WordNet with no synonyms (METEOR with ``synonyms=False``)."""

    def synsets(self, word: str) -> tuple[Any, ...]:
        return ()


def synonym_source(needed_by: str) -> _SynonymSource:
    """WordNet 3.0, loaded once per process (data: ``wordnet``)."""

    def load() -> _SynonymSource:
        from nltk.corpus import wordnet

        wordnet.ensure_loaded()
        return _SynonymSource(wordnet)

    return _once("wordnet", "wordnet", needed_by, load)
