"""Needles: what the compiled one-pass probe (``_probe.c``) looks for, derived from the rules.

A *needle* is a literal that every match of a rule contains at a known place, followed by a run
of characters the match must have. The compiled probe finds, per rule, the first place a needle
allows, and the rule's own regex is searched from there: a needle is a necessary condition
only, so the Python engine keeps deciding what is a secret. Without the compiled module (no C
compiler at install time, or ``TRACESIM_PURE_PYTHON=1``), the Python probes run instead.

Example:
    >>> literals("gl(?:pat|ptt)-")
    ['glpat-', 'glptt-']
    >>> literals("-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY")
    ['-----BEGIN ']
    >>> characters("a-c_-")
    'abc_-'
    >>> run_after("eyJ[A-Za-z0-9_-]{8,}")
    ('ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-', 8)
"""

from __future__ import annotations

import os
import re
from typing import Any, NamedTuple

from tracesim._internal_errors import warn_once

__all__ = ["Needle", "characters", "literals", "load", "run_after"]

VERSION = 3  # of the compiled probe this code expects: `PROBE_VERSION` in _probe.c
_SPECIAL = set("[](){}?*+|\\.^$")
_QUANTIFIERS = set("{*+?")
_MAX_LITERALS = 64  # a prefix expanding to more is cut where it would exceed this
_SMALL_SET = 10  # a character set with more members ends the literal


class Needle(NamedTuple):
    """A literal, where the scan stops in it, where the rule's match starts in it, and what must follow.

    After the literal: at least ``skip_min`` characters of ``skip``, then ``run_min`` characters of
    ``run`` (characters outside ASCII count when ``run_wide``), or with ``cut`` 1 to run_min-1 of
    them and the cut marker's "…". ``folded``: compared with the text lower-cased.
    """

    literal: str
    trigger: int
    start: int = 0
    folded: bool = False
    skip: str = ""
    skip_min: int = 0
    run: str = ""
    run_wide: bool = False
    run_min: int = 0
    cut: bool = False


def characters(spec: str) -> str:
    """The characters of a regex character-class body made of literals and ``a-z`` ranges."""
    out: list[str] = []
    i = 0
    while i < len(spec):
        if i + 2 < len(spec) and spec[i + 1] == "-":
            out.extend(chr(c) for c in range(ord(spec[i]), ord(spec[i + 2]) + 1))
            i += 3
        else:
            out.append(spec[i])
            i += 1
    return "".join(dict.fromkeys(out))


def _element(pattern: str, i: int) -> tuple[list[str] | None, int, bool]:
    """The element of ``pattern`` at ``i``: its literal choices (None: not finite), where it ends,
    and whether each choice is the whole element (a group's branch may end early)."""
    char = pattern[i]
    if char == "\\" and i + 1 < len(pattern) and not pattern[i + 1].isalnum():
        return [pattern[i + 1]], i + 2, True
    if char == "[":
        end = pattern.find("]", i + 1)
        body = pattern[i + 1 : end]
        if end < 0 or body.startswith("^") or "\\" in body:
            return None, i, False
        members = characters(body)
        return (list(members) if len(members) <= _SMALL_SET else None), end + 1, True
    if pattern.startswith("(?:", i):
        depth, k, branches, last = 1, i + 3, [], i + 3
        while k < len(pattern) and depth:
            if pattern[k] == "\\":
                k += 2
                continue
            depth += {"(": 1, ")": -1}.get(pattern[k], 0)
            if (pattern[k] == "|" and depth == 1) or depth == 0:
                branches.append(pattern[last:k])
                last = k + 1
            k += 1
        choices: list[str] = []
        whole = True
        for branch in branches:
            expanded, complete, _ = _expand(branch)
            if expanded == [""]:
                return None, i, False
            choices += expanded
            whole = whole and complete
        return choices, k, whole
    if char in _SPECIAL:
        return None, i, False
    return [char], i + 1, True


def _expand(pattern: str) -> tuple[list[str], bool, int]:
    """The literal prefixes of ``pattern``, whether they are the whole pattern, and where the
    first element they do not hold starts (when they all stop there)."""
    found = [""]
    i = 0
    while i < len(pattern):
        choices, end, whole = _element(pattern, i)
        if choices is not None and end < len(pattern) and pattern[end] in _QUANTIFIERS:
            choices = None  # quantified: not a fixed part
        if choices is None or len(found) * len(choices) > _MAX_LITERALS:
            return found, False, i
        found = [head + choice for head in found for choice in choices]
        if not whole:
            return found, False, -1  # the branches stopped at different places
        i = end
    return found, True, i


_COUNTED = re.compile(r"\[([^\]\\^]+)\](?:\{(\d+)(?:,\d*)?\}|(\+))")


def literals(pattern: str) -> list[str]:
    """The literal strings that every match of ``pattern`` starts with: its finite prefix, expanded.

    Literal characters, small character sets and groups of literal alternatives expand; the
    first other element (a large set, a quantified one, a lookaround) ends the prefix.
    """
    return _expand(pattern)[0]


def run_after(pattern: str) -> tuple[str, int]:
    """The characters and the least count of the run that follows `literals` in every match of
    ``pattern`` (``[A-Za-z0-9]{8,}`` gives all 62 and 8); ("", 0) when it is not a counted class."""
    _, _, stop = _expand(pattern)
    found = _COUNTED.match(pattern, stop) if stop >= 0 else None
    if found is None:
        return "", 0
    return characters(found.group(1)), 1 if found.group(3) else int(found.group(2))


def load() -> Any:
    """The compiled probe module, or None: not built, built from another version of ``_probe.c``
    (an old in-place build), or ``TRACESIM_PURE_PYTHON=1``."""
    if os.environ.get("TRACESIM_PURE_PYTHON", "") not in ("", "0"):
        return None
    try:
        from tracesim._redact import _probe
    except ImportError:
        return None
    if getattr(_probe, "VERSION", None) != VERSION:
        warn_once(
            "probe-version",
            "tracesim: the compiled redaction probe is from another version of tracesim; "
            "redacting in pure Python (reinstall tracesim to rebuild it)",
        )
        return None
    return _probe
