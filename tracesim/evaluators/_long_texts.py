"""Where an evaluator runs decides how long a text it scores whole.

On tracesim's online scoring threads, an evaluator's CPU time is time the host's own threads
wait for the interpreter, so the pure-Python metrics (METEOR, ROUGE-Lsum, BLEU, ...) cut each
text at a *thread cap* by default, and say so once per evaluator. Everywhere else (a scoring
worker process, a direct ``evaluate()`` call, ``tracesim eval``, experiments, batch scoring)
the host's interpreter is not at stake and the default is a *worker bound*: far above
realistic answers, so the numbers are the reference tools' own, yet still a limit on the
memory and time of one call. A ``max_chars`` the user gives is used everywhere, as given.

The scoring pipeline names its threads ``tracesim-scoring`` (`HOST_SCORING_THREAD`); a
worker process calls `enter_worker_process` once, and nothing it runs counts as the host's.

Example:
    >>> in_worker_process(), on_host_scoring_thread()
    (False, False)
    >>> cap = TextCap("meteor", DEFAULT, Caps(thread=10_000, worker=100_000))
    >>> a, b, cut = cap.cut("x" * 20_000, "y", "meteor")  # not on a scoring thread: whole
    >>> len(a), cut
    (20000, None)
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Any

from tracesim.evaluators._base import DEFAULT, _Default
from tracesim.evaluators._compared_text import as_text
from tracesim.evaluators._options import check_max_chars

__all__ = [
    "DEFAULT",
    "HOST_SCORING_THREAD",
    "Caps",
    "CutsLongTexts",
    "TextCap",
    "enter_worker_process",
    "in_worker_process",
    "on_host_scoring_thread",
]

HOST_SCORING_THREAD = "tracesim-scoring"
"""The name (a prefix) of the scoring pipeline's threads, which run in the host's interpreter."""

_logger = logging.getLogger("tracesim")
_in_worker = False


def enter_worker_process() -> None:
    """Mark this process as a scoring worker: default caps become the worker's bounds."""
    global _in_worker
    _in_worker = True


def in_worker_process() -> bool:
    """True in a scoring worker process."""
    return _in_worker


def on_host_scoring_thread() -> bool:
    """True on one of tracesim's online scoring threads in the host's process.

    Example:
        >>> import threading
        >>> seen = []
        >>> def look() -> None:
        ...     seen.append(on_host_scoring_thread())
        >>> t = threading.Thread(target=look, name="tracesim-scoring")
        >>> t.start(); t.join(); seen
        [True]
    """
    return not _in_worker and threading.current_thread().name.startswith(HOST_SCORING_THREAD)


@dataclass(frozen=True, slots=True)
class Caps:
    """An evaluator's default caps per text: on a host's scoring thread, and anywhere else.

    ``lines`` (ROUGE-Lsum only) is the pair of line caps, thread first, then worker.

    Example:
        >>> Caps(thread=10_000, worker=100_000).worker
        100000
    """

    thread: int
    worker: int
    lines: tuple[int, int] | None = None


class TextCap:
    """An evaluator's ``max_chars``: the user's number (or None) everywhere, else a default.

    The default depends on where the call runs (see the module): ``caps.thread`` on a
    host's scoring thread, ``caps.worker`` anywhere else. The first time a default thread
    cap cuts a text, one line on the ``tracesim`` logger names the evaluator, the lengths
    and the two ways to whole texts.

    Example:
        >>> TextCap("bleu", 500, Caps(20_000, 200_000)).cut("a" * 600, "b", "bleu")[2]
        500
        >>> TextCap("bleu", DEFAULT, Caps(20_000, 200_000)).limit()
        200000
    """

    __slots__ = ("caps", "setting", "told", "type_name")

    def __init__(self, type_name: str, max_chars: int | _Default | None, caps: Caps) -> None:
        self.type_name = type_name
        self.caps = caps
        self.setting: int | _Default | None = (
            max_chars if isinstance(max_chars, _Default) else check_max_chars(type_name, max_chars)
        )
        self.told = False

    def limit(self) -> int | None:
        """The cap of a call made here and now (the user's, or the default of this place)."""
        setting = self.setting
        if not isinstance(setting, _Default):
            return setting
        return self.caps.thread if on_host_scoring_thread() else self.caps.worker

    def cut_lines(
        self, a: list[str], b: list[str], evaluator: str
    ) -> tuple[list[str], list[str], int | None]:
        """ROUGE-Lsum's lines of both texts, each list cut to the line cap of this place.

        With a ``max_chars`` the user gave, the thread's line cap (as before); with
        ``max_chars=None``, none; else the default of where the call runs. The third item is
        the line cap when a list was cut (``details["truncated_to_lines"]``), else None.
        """
        lines, setting = self.caps.lines, self.setting
        longest = max(len(a), len(b))
        if lines is None or setting is None or longest <= lines[0]:
            return a, b, None
        if not isinstance(setting, _Default):
            cap = lines[0]
        elif on_host_scoring_thread():
            cap = lines[0]
            self.tell(evaluator, f"the first {cap:,} lines of texts of {len(a):,} and {len(b):,} lines")
        else:
            cap = lines[1]
        if longest <= cap:
            return a, b, None
        return a[:cap], b[:cap], cap

    def cut(self, output: Any, expected: Any, evaluator: str) -> tuple[str, str, int | None]:
        """:func:`as_text` of both values, each cut to `limit` code points.

        The third item is the cap when a text was cut (``details["truncated_to"]``), else None.
        """
        a = output if type(output) is str else as_text(output)
        b = expected if type(expected) is str else as_text(expected)
        longest = max(len(a), len(b))
        setting = self.setting
        cap: int | None
        if not isinstance(setting, _Default):
            cap = setting
        elif longest <= self.caps.thread:  # the common case: under every default
            return a, b, None
        elif on_host_scoring_thread():
            cap = self.caps.thread
            self.tell(
                evaluator, f"the first {cap:,} characters of texts of {len(a):,} and {len(b):,} characters"
            )
        else:
            cap = self.caps.worker
        if cap is None or longest <= cap:
            return a, b, None
        return a[:cap], b[:cap], cap

    def tell(self, evaluator: str, what: str) -> None:
        """Say once per evaluator that its default thread cap cut a text (``what`` it scored)."""
        if self.told:
            return
        self.told = True  # a race of two threads says it twice at worst
        _logger.warning(
            "tracesim: evaluator %r scored %s on a scoring thread in the host's interpreter (its "
            "default cap there), so its number differs from the reference tool's on texts this "
            "long (details['truncated_to'] marks such results). For whole texts: set "
            "scoring_processes (e.g. 1) to score in worker processes, off the host's interpreter, "
            "or pass max_chars=None to score whole texts on the thread (said once per evaluator).",
            evaluator,
            what,
        )


class CutsLongTexts:
    """Mixin of the evaluators that cut long texts with a `TextCap` (their ``_cap``).

    ``max_chars`` reads as the cap of a call made where it is read; the setting as given
    (an int, None, or ``DEFAULT``) is ``_cap.setting``.
    """

    _cap: TextCap

    @property
    def max_chars(self) -> int | None:
        """The cap per text of a call made here: the user's, or the default of this place."""
        return self._cap.limit()
