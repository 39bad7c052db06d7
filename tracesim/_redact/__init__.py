"""The redaction engine: find secrets in text and replace them, cheaply enough for every string.

Every rule is found through an *anchor*, a character all of its matches contain: ``-`` in
``sk-…``, ``_`` in ``ghp_…``, ``@`` in an e-mail address, ``:``/``=`` after ``api_key``. Most
texts hold no secret, so each rule first proves cheaply that it finds nothing (`_Rule`): its
*gate*, a character the text must hold (one ``memchr``), then its *probe*, one regex scan in C
for the rule's first possible match (``re`` scans fast only for a pattern that starts with one
literal character, so each probe starts with its anchor; a rare anchor in a long text is
visited with ``str.find`` instead). Only a text where a probe finds something is scanned
in Python, from there. Key names start with common letters, so they are found backwards from
their separator (see `_keys`), on one lower-cased copy of the text, never with ``(?i)`` over a
value. No pattern nests unbounded quantifiers, so no input makes a rule backtrack more than a
bounded amount per anchor. ``Redactor._scan(text, exhaustive=True)``
runs every rule over the whole text without these shortcuts: the tests hold the two equal.

Where tracesim was installed with a C compiler, the gates and probes of all rules run as one
compiled pass instead (`_native`, ``_probe.c``): it tells each rule the first place its regex
could match, from literals every match holds (``sk-``, ``ghp_``, ``eyJ``), and finds the key
names before separators as the Python probe does, a few machine instructions per character
against about fifty. The rules' own regexes still decide what is a secret, from that place;
``Redactor(native=False)`` and ``TRACESIM_PURE_PYTHON=1`` use the Python probes, and the tests
hold both to the reference.

Rules report spans of the original text, most specific first (a private key block before
anything inside it, a vendor key before the generic ``key=value`` rule); a rule claims only
what earlier ones left, and all replacements are joined once. A replacement keeps the key and
says what was removed. Redacting twice changes nothing more.

Example:
    >>> Redactor().redact('{"password": "hunter2!", "total_tokens": 512}', "input.value")
    '{"password": "[REDACTED:password]", "total_tokens": 512}'
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from tracesim._internal_errors import internal_error, warn_once
from tracesim._redact._keys import ANCHORS, KEY_WORDS, SKIP_BACK, _KeyValues
from tracesim._redact._native import load
from tracesim._redact._rules import _TOKENS, _URL_PARTS, _Emails, _Schemes, _Tokens, _Urls
from tracesim._redact._scan import MARGIN, _lower, _Rule, _run, _Scan

__all__ = ["MARGIN", "PATTERN_GROUPS", "Redactor", "safe_cut"]

PATTERN_GROUPS: tuple[str, ...] = ("email", "api_key", "bearer", "url_password", "private_key")
"""Names accepted by the ``redact_patterns`` setting; all of them are on by default."""

# ---------------------------------------------------------------- the public face


class Redactor:
    """Replace secrets in text with ``[REDACTED:<what>]``, then run the user's hook. Never raises.

    Args:
        patterns: Built-in groups to apply (see `PATTERN_GROUPS`): ``email``; ``api_key``
            (vendor keys and tokens by their shape, JWTs, Slack and Discord webhooks, and the
            value after a key name: ``api_key=``, ``"password": ``, ``client_secret``,
            ``x-api-key:``, ``aws_secret_access_key``, in escaped JSON too); ``bearer``
            (``Bearer`` and ``Basic`` credentials, ``Authorization`` headers);
            ``url_password`` (``scheme://user:password@host``); ``private_key`` (PEM blocks).
        hook: ``(text, attribute) -> text``, called with the already redacted text. If it raises
            or returns a non-string, the value is withheld and a warning is logged once.
        native: Use the compiled probe when it is built (same results, less CPU); False runs
            the pure-Python probes.

    Example:
        >>> redactor = Redactor()
        >>> redactor.redact("mail marie@curie.org, key sk-proj-Abc123Def456Ghi789", "input.value")
        'mail [REDACTED:email], key [REDACTED:api_key]'
        >>> Redactor(["email"], hook=lambda text, attribute: text.upper()).redact("a@b.io hi", "x")
        '[REDACTED:EMAIL] HI'
        >>> Redactor(()).active
        False
    """

    def __init__(
        self,
        patterns: Sequence[str] = PATTERN_GROUPS,
        hook: Callable[[str, str], str] | None = None,
        *,
        native: bool = True,
    ) -> None:
        names = (patterns,) if isinstance(patterns, str) else tuple(patterns)
        unknown = sorted(set(names) - set(PATTERN_GROUPS))
        if unknown:
            raise ValueError(f"unknown redaction patterns {unknown}; expected some of {PATTERN_GROUPS}")
        groups = frozenset(names)
        rules: list[_Rule[Any]] = []  # most specific first
        for anchor in ("-", "_", "A", "eyJ", "SG"):
            specs = [spec for spec in _TOKENS if spec.find == anchor and spec.group in groups]
            if specs:
                rules.append(_Tokens(anchor, specs))
        if not groups.isdisjoint(_URL_PARTS):
            rules.append(_Urls(groups))
        if "bearer" in groups:
            rules.append(_Schemes())
        anchors = ("kpcg" if "api_key" in groups else "") + ("z" if "bearer" in groups else "")
        if anchors:
            rules.append(_KeyValues(anchors))
        if "email" in groups:
            rules.append(_Emails())
        self._rules = tuple(rules)
        # What `_scan` needs of each rule, bound once: it runs for every string of every span.
        self._steps = tuple((rule.gate, rule.lowered, rule.probe, rule) for rule in rules)
        self._hook = hook
        self._fast: tuple[tuple[_KeyValues | None, bool, re.Pattern[str] | None, _Rule[Any]], ...] = ()
        self._native = native
        self._probe = self._compiled_probe() if native else None

    def __getstate__(self) -> dict[str, Any]:
        """Pickled (to Dask workers, or by `copy.deepcopy`) without the compiled probe..."""
        state = dict(self.__dict__)
        state.update(_probe=None, _fast=())
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        """...which is built again where it is unpickled (it may be pure Python there)."""
        self.__dict__.update(state)
        self._probe = self._compiled_probe() if self._native else None

    def _compiled_probe(self) -> Any:
        """The one-pass probe for these rules (see `_native`), or None when it is not built."""
        module = load()
        if module is None:
            return None
        needles = tuple(
            (*needle[:4], index, *needle[4:])  # the rule's index after the literal's four fields
            for index, rule in enumerate(self._rules)
            for needle in rule.needles()
        )
        keys = next((rule for rule in self._rules if isinstance(rule, _KeyValues)), None)
        names = keys.spelt_backwards(ANCHORS) if keys is not None else ()
        self._fast = tuple(
            (rule if rule is keys else None, rule.lowered, getattr(rule, "first", None), rule)
            for rule in self._rules
        )
        try:
            return module.Probe(len(self._rules), needles, names, SKIP_BACK, KEY_WORDS)
        except Exception:  # a bug of ours: the Python probes give the same results
            internal_error("redaction probe")
            return None

    @property
    def hooked(self) -> bool:
        """True when a user hook runs: its result may depend on the attribute name."""
        return self._hook is not None

    @property
    def active(self) -> bool:
        """False when there is no pattern and no hook: callers may skip the pass."""
        return bool(self._rules) or self._hook is not None

    def _scan(self, text: str, exhaustive: bool = False) -> _Scan | None:
        """The secrets in ``text``: None, or a scan whose spans may be empty, when there are none.

        A rule runs only if the text holds a character of its gate and its probe finds a place to
        start. ``exhaustive`` runs every rule over the whole text instead: the reference.
        """
        if exhaustive:
            everything = _Scan(text)
            for rule in self._rules:
                rule.full(everything)
                everything.commit()
            return everything
        scan: _Scan | None = None
        low: str | None = None
        if self._probe is not None:
            probed = self._probe.scan(text)
            if probed is None:
                return None
            places, keys = probed
            for place, (key_names, lowered, first, rule) in zip(places, self._fast, strict=True):
                if key_names is not None:
                    if keys is not None:
                        if scan is None:
                            scan = _Scan(text, low)
                        key_names.located(scan, keys, ANCHORS)
                    continue
                if place < 0 or first is None:
                    continue
                elif lowered:
                    if low is None:
                        low = _lower(text) if scan is None else scan.low()
                    found = first.search(low, place)
                else:
                    found = first.search(text, place)
                if found is not None:
                    if scan is None:
                        scan = _Scan(text, low)
                    rule.run(scan, found)
                    scan.commit()
            return scan
        for gate, lowered, probe, rule in self._steps:
            for character in gate:  # a plain loop: a generator here costs more than the test
                if character in text:
                    break
            else:
                continue
            if lowered:
                if low is None:
                    low = _lower(text) if scan is None else scan.low()
                found = probe(low)
            else:
                found = probe(text)
            if found is not None:
                if scan is None:
                    scan = _Scan(text, low)
                rule.run(scan, found)
                scan.commit()
        return scan

    def _patterns(self, text: str, exhaustive: bool = False) -> str:
        """``text`` with the secrets the built-in patterns find replaced (see `_scan`)."""
        for _ in range(8):  # again if a secret was glued after one: it now starts a word
            scan = self._scan(text, exhaustive)
            if scan is None or not scan.spans:
                break
            text, glued = scan.result()
            if not glued:
                break
        return text

    def redact(self, text: str, attribute: str) -> str:
        """``text`` with every secret replaced, then passed through the hook (with ``attribute``)."""
        if self._rules:
            try:
                text = self._patterns(text)
            except Exception:  # a bug of ours: never let the value out unchecked
                internal_error("redaction")
                return "[REDACTED: redaction failed]"
        if self._hook is None:
            return text
        try:
            result: object = self._hook(text, attribute)  # user code: do not trust its annotation
        except Exception:
            warn_once("redact", "tracesim: the redact hook raised; the value was withheld")
            return "[REDACTED: redact hook failed]"
        if not isinstance(result, str):
            warn_once("redact-type", "tracesim: the redact hook returned a non-string; value withheld")
            return "[REDACTED: redact hook returned a non-string]"
        return result


# ---------------------------------------------------------------- cutting without leaking

_STRONG = r"\s\"'`,;&|()\[\]{}<>\\"  # separators: no secret spans one of these...
_TOKEN_RUN = re.compile(rf"[^{_STRONG}]*")
_PIECE_RUN = re.compile(rf"[^{_STRONG}=:/?#!]*")  # ...and inside a long token, pieces end here
_ALL = Redactor()


def safe_cut(text: str, limit: int) -> int:
    """Where to cut ``text`` to keep at most ``limit`` characters without leaving part of a secret.

    A token (a run between separators: white space, quotes, brackets, ``,;&|\\``) that straddles
    the cut and is at most `MARGIN` (256) characters long could be a secret: it is dropped
    whole, so no prefix of one is left (``sk-ss…[truncated]``, ``marie.curie@sorb…``). A longer
    token (a blob, a long URL) is no single secret and keeps most of the limit: it is cut after
    its last ``= : / ? # !`` within the margin, else ``min(MARGIN, limit // 2)`` short of the
    limit, which leaves room for the marker. Finally, if a built-in pattern matches across the
    cut (a quoted password with spaces, a JWT, a key inside a long URL), the cut moves back to
    where that secret starts.

    Example:
        >>> text = "key sk-proj-Abc123Def456Ghi789Jkl012 and more"
        >>> text[: safe_cut(text, 20)]
        'key '
        >>> safe_cut("x" * 5_000_000, 32 * 1024)
        32512
    """
    if len(text) <= limit:
        return len(text)
    if limit <= 0:
        return 0
    cut = limit
    if _TOKEN_RUN.fullmatch(text, limit, limit + 1):  # the cut falls inside a token
        back = _run(_TOKEN_RUN, text[max(0, limit - MARGIN - 1) : limit][::-1])
        if back + _run(_TOKEN_RUN, text, limit, limit + MARGIN + 1) - limit <= MARGIN:
            cut = limit - back  # short enough to be one secret: dropped whole
        else:
            low = max(limit - back, limit - min(MARGIN, limit // 2))
            cut = limit - _run(_PIECE_RUN, text[low:limit][::-1])
    window = max(0, cut - MARGIN)
    try:
        scan = _ALL._scan(text[window : cut + MARGIN])
    except Exception:  # a bug of ours: cut where no secret of the margin's size can straddle
        internal_error("redaction")
        return window
    for start, end, _ in scan.spans if scan else ():
        if window + start < cut < window + end:
            return window + start
    return cut
