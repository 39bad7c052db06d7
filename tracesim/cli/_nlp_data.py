"""``tracesim nlp-data``: download (or check) the NLTK data the text evaluators need.

BLEU, GLEU and METEOR need ``punkt_tab`` and ``perluniprops``; METEOR also ``wordnet``.
tracesim never downloads while scoring; this command does it once, where a network exists.
"""

from __future__ import annotations

import argparse
import sys

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the options of ``tracesim nlp-data``."""
    parser.add_argument(
        "--dir",
        help="download into this folder (default: NLTK's default, e.g. ~/nltk_data; "
        "point NLTK_DATA at any other folder)",
    )
    parser.add_argument(
        "--check", action="store_true", help="only report which packages NLTK can find (no network)"
    )
    parser.add_argument("--force", action="store_true", help="download even the packages already found")


def run(args: argparse.Namespace) -> int:
    """Download or check the packages; 0 when all are present afterwards, else 1."""
    from tracesim.evaluators._nltk_data import NLTK_PACKAGES, find_missing

    missing = find_missing()
    if args.check:
        for package in NLTK_PACKAGES:
            print(f"{package:14} {'missing' if package in missing else 'found'}")
        if missing:
            print(
                f"missing: {', '.join(missing)}; run `python -m tracesim nlp-data` to download them",
                file=sys.stderr,
            )
        return 1 if missing else 0
    import nltk

    wanted = list(NLTK_PACKAGES) if args.force else missing
    if not wanted:
        print("all NLTK data packages tracesim uses are installed: " + ", ".join(NLTK_PACKAGES))
        return 0
    failed = []
    for package in wanted:
        print(f"downloading {package} ...", flush=True)
        try:
            ok = nltk.download(package, download_dir=args.dir, quiet=True, raise_on_error=True)
        except Exception as exc:  # network errors come in many types
            print(f"  failed: {type(exc).__name__}: {exc}", file=sys.stderr)
            ok = False
        if not ok:
            failed.append(package)
    if args.dir:
        nltk.data.path.insert(0, args.dir)
    still_missing = find_missing(wanted)
    if failed or still_missing:
        names = ", ".join(sorted(set(failed) | set(still_missing)))
        print(
            f"could not install: {names}. Without a network, copy an nltk_data folder holding them "
            "here and set NLTK_DATA to it.",
            file=sys.stderr,
        )
        return 1
    print("done: " + ", ".join(wanted))
    return 0
