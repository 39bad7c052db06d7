"""``tracesim nlp-data``: download (or check) the NLTK data the text evaluators need.

BLEU, GLEU and METEOR need ``punkt_tab`` and ``perluniprops``; METEOR also ``wordnet``.
tracesim never downloads while scoring; this command does it once, where a network exists.
Without one it says, in one line per package, what is missing, and where to copy the data.
Running it again when everything is there does nothing and prints one line.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

from tracesim._outputs import echo

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the options of ``tracesim nlp-data``."""
    parser.add_argument(
        "--dir",
        help="look in this folder first and download into it (created private to you; point "
        "NLTK_DATA at it afterwards). Default: NLTK's own search path, downloading into ~/nltk_data "
        "or the first system folder NLTK can write",
    )
    parser.add_argument(
        "--check", action="store_true", help="only report which packages NLTK can find (no network)"
    )
    parser.add_argument("--force", action="store_true", help="download even the packages already found")


def run(args: argparse.Namespace) -> int:
    """Download or check the packages; 0 when all are present afterwards, else 1.

    Example:
        >>> from tracesim.cli import main
        >>> main(["nlp-data", "--check"])  # doctest: +SKIP
        punkt_tab      found
        perluniprops   found
        wordnet        found
        0
    """
    from nltk import data

    from tracesim.evaluators._nltk_data import NLTK_PACKAGES, find_missing

    directory = Path(args.dir).expanduser() if args.dir else None
    if directory is not None:
        if not args.check and (problem := _prepare_dir(directory)):
            echo(f"error: {problem}", file=sys.stderr)
            return 1
        data.path.insert(0, str(directory))
    missing = find_missing()
    if args.check:
        return _check(list(NLTK_PACKAGES), missing)
    wanted = list(NLTK_PACKAGES) if args.force else missing
    if not wanted:
        where = f" (looked in {directory} first)" if directory else ""
        echo("all NLTK data packages tracesim uses are installed: " + ", ".join(NLTK_PACKAGES) + where)
        return 0
    failed, cause = _download(wanted, str(directory) if directory else None)
    for package in find_missing(wanted):
        failed.setdefault(package, "downloaded, but NLTK still cannot find it")
    if not failed:
        echo("done: " + ", ".join(wanted))
        return 0
    for package, reason in failed.items():
        echo(f"{package:14} not installed: {reason}", file=sys.stderr)
    if cause:
        echo(f"cause: {cause}", file=sys.stderr)
    echo(_where_to_copy(list(failed), data.path), file=sys.stderr)
    return 1


def _check(packages: Sequence[str], missing: Sequence[str]) -> int:
    for package in packages:
        echo(f"{package:14} {'missing' if package in missing else 'found'}")
    if missing:
        echo(
            f"missing: {', '.join(missing)}; run `python -m tracesim nlp-data` to download them",
            file=sys.stderr,
        )
    return 1 if missing else 0


def _prepare_dir(directory: Path) -> str | None:
    """Create ``directory`` private to this account; the reason NLTK would not use it, if any."""
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        mode = directory.stat().st_mode
    except OSError as exc:
        return f"cannot create {directory}: {exc}"
    if os.name == "posix" and mode & 0o022:
        # NLTK refuses data roots other accounts could plant files in.
        return f"NLTK ignores {directory}: other accounts can write to it (`chmod go-w {directory}`)"
    return None


def _download(wanted: Sequence[str], directory: str | None) -> tuple[dict[str, str], str | None]:
    """Download each package: the ones that failed, each with a one-line reason, and a common cause."""
    from nltk.downloader import Downloader

    downloader = Downloader(download_dir=directory)
    try:
        with _quiet():
            downloader.index()  # one request: is the data server reachable at all?
    except Exception as exc:  # network errors come in many types
        return dict.fromkeys(wanted, "no network (NLTK's data server is unreachable)"), _one_line(exc)
    failed = {}
    for package in wanted:
        echo(f"downloading {package} ...", flush=True)
        with _quiet() as said:
            try:
                ok = downloader.download(package, quiet=True)
            except Exception as exc:
                echo(exc)
                ok = False
        if not ok:
            failed[package] = _one_line(said.getvalue()) or "download failed"
    return failed, None


@contextlib.contextmanager
def _quiet() -> Iterator[io.StringIO]:
    """Collect what NLTK prints (a wrapped, multi-line error per package) to summarise it."""
    said = io.StringIO()
    with contextlib.redirect_stdout(said), contextlib.redirect_stderr(said):
        yield said


def _one_line(what: object) -> str:
    text = " ".join(str(what).replace("[nltk_data]", " ").split())
    return text if len(text) <= 200 else text[:197] + "..."


def _where_to_copy(packages: Sequence[str], search_path: Sequence[object]) -> str:
    """Where an ``nltk_data`` folder holding ``packages`` would be found."""
    folders = [str(p) for p in search_path if isinstance(p, (str, os.PathLike))]
    target = next((f for f in folders if _writable(Path(f))), None)
    from tracesim.evaluators._nltk_data import NLTK_PACKAGES

    # "corpora/wordnet" is looked up as corpora/wordnet.zip or the unzipped folder
    files = ", ".join("/".join(NLTK_PACKAGES[p].split("/")[:2]) + ".zip" for p in packages)
    into = f" into {target} (the first folder NLTK searches that can be written here)" if target else ""
    return (
        f"Without a network, copy an nltk_data folder's contents ({files}){into}, or set NLTK_DATA "
        f"to a folder holding them. NLTK searches, in order: {', '.join(folders)}"
    )


def _writable(folder: Path) -> bool:
    """``folder`` can be written, or created: its nearest existing ancestor can be written."""
    while not folder.exists():
        if folder.parent == folder:
            return False
        folder = folder.parent
    return folder.is_dir() and os.access(folder, os.W_OK | os.X_OK)
