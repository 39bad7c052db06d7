"""Where an evaluator runs decides how long a text it scores whole.

On a scoring thread, an evaluator's CPU time is time the host's own threads wait for the
interpreter, so the pure-Python metrics (METEOR, ROUGE-Lsum, BLEU, ...) cut each text at a
cap by default. In a scoring worker process the host's interpreter is not at stake: there the
defaults are bounds on memory and time far above realistic answers, so the numbers are the
reference tools' own. `enter_worker_process` is called once by the worker process.

Example:
    >>> in_worker_process()
    False
"""

from __future__ import annotations

__all__ = ["enter_worker_process", "in_worker_process"]

_in_worker = False


def enter_worker_process() -> None:
    """Mark this process as a scoring worker: default caps become the worker's bounds."""
    global _in_worker
    _in_worker = True


def in_worker_process() -> bool:
    """True in a scoring worker process."""
    return _in_worker
