"""Case ids (and evaluator names) as a run's files show them: redacted, yet stable across runs.

A case id that holds a secret (a user's e-mail, say) is written redacted. Two ids redacting to
the same text (``[REDACTED:email]``) must stay two cases, and the same original id must be
written the same way in every run, or a comparison pairs the wrong cases. So the redacted text
gets a suffix made from the original id: the first 8 hex digits of its HMAC-SHA256 under a
per-project key. Unkeyed, the suffix would let anyone holding ``run.json`` confirm a guessed
address; keyed, it tells nothing without the key.

The key is ``TRACESIM_ID_KEY`` when that is set (CI: the same secret wherever runs are made
and compared), else the file ``.tracesim/id.key`` under the working directory, made on first
need (32 random bytes, mode 0600). It is never written into a run. Ids no redaction changes
are kept as they are, and no key is needed for them.
"""

from __future__ import annotations

import hmac
import logging
import os
import secrets
from collections.abc import Iterable
from pathlib import Path

from tracesim import _outputs

__all__ = ["ID_KEY_ENV", "ID_KEY_FILE", "id_key", "is_redacted", "written_ids"]

ID_KEY_ENV = "TRACESIM_ID_KEY"
"""The environment variable holding the key redacted ids are made with."""
ID_KEY_FILE = Path(".tracesim") / "id.key"
"""The key's file, under the working directory, when ``TRACESIM_ID_KEY`` is not set."""

_SHORT, _LONG = 8, 16  # hex digits of the suffix; the longer one only when two short ones collide
_logger = logging.getLogger("tracesim")
_process_key: bytes | None = None  # when no key file can be made: ids stable in this process only


def written_ids(names: Iterable[str], *, key: bytes | None = None) -> dict[str, str]:
    """Each name as written: unchanged when redaction leaves it alone, else redacted plus a
    keyed suffix, ``[REDACTED:email]-1f0e9c2a``, the same for the same name in every run.

    ``key`` defaults to `id_key` (read only when some name is redacted). An id written before
    (already redacted) is kept as it is, so ids read back from a run map to themselves.

    Example:
        >>> ids = written_ids(["ann@x.io", "bob@x.io", "plain"], key=b"k")
        >>> ids["plain"], ids["ann@x.io"] == written_ids(["cy@x.io", "ann@x.io"], key=b"k")["ann@x.io"]
        ('plain', True)
        >>> ids["ann@x.io"][:17], len(ids["ann@x.io"]), ids["ann@x.io"] != ids["bob@x.io"]
        ('[REDACTED:email]-', 25, True)
    """
    unique = list(dict.fromkeys(names))
    written = {name: _outputs.text(name) for name in unique}
    changed = [name for name in unique if written[name] != name]
    if not changed:
        return written
    secret = id_key() if key is None else key
    digests = {name: hmac.new(secret, name.encode("utf-8", "surrogatepass"), "sha256") for name in changed}
    kept = {name for name in unique if written[name] == name}
    for length in (_SHORT, _LONG, 64):
        # Decided for every name at once, never in order of appearance: a name's suffix does
        # not depend on which cases came before it.
        candidates = {name: f"{written[name]}-{digests[name].hexdigest()[:length]}" for name in changed}
        counts: dict[str, int] = {}
        for candidate in candidates.values():
            counts[candidate] = counts.get(candidate, 0) + 1
        clashing = [n for n in changed if counts[candidates[n]] > 1 or candidates[n] in kept]
        for name in changed:
            if name not in clashing or length == 64:
                written[name] = candidates[name]
        changed = clashing
        if not changed:
            break
    return written


def is_redacted(case_id: str) -> bool:
    """True for an id that redaction changed when it was written (it holds a redaction marker).

    Example:
        >>> is_redacted("[REDACTED:email]-1f0e9c2a"), is_redacted("q1")
        (True, False)
    """
    return "[REDACTED" in case_id


def id_key() -> bytes:
    """The key redacted ids are made with: ``TRACESIM_ID_KEY``, else ``.tracesim/id.key``
    (made with 32 random bytes, mode 0600, when missing).

    Where the file can be neither read nor made (a read-only checkout), a random key for this
    process is used and a warning logged once: the ids are then stable within the process only.
    """
    from_env = os.environ.get(ID_KEY_ENV)
    if from_env:
        return from_env.encode("utf-8", "surrogatepass")
    try:
        return _key_file(ID_KEY_FILE)
    except OSError as exc:
        global _process_key
        if _process_key is None:
            _process_key = secrets.token_bytes(32)
            _logger.warning(
                "cannot read or make %s (%s): redacted case ids are stable within this process only; "
                "set %s to keep them stable across runs",
                ID_KEY_FILE,
                exc.strerror or exc,
                ID_KEY_ENV,
            )
        return _process_key


def _key_file(path: Path) -> bytes:
    """The key in ``path``, made first when missing; two processes making it agree on one."""
    try:
        return _read_key(path)
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    draft = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    fresh = secrets.token_hex(32).encode("ascii")
    # A draft made 0600 before the key is in it (the writer keeps an existing file's mode),
    # then linked into place: the first process to link wins, the others read its key.
    os.close(os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    try:
        _outputs.write_bytes_of(draft, lambda handle: handle.writelines([fresh]))
        os.chmod(draft, 0o600)
        os.link(draft, path)
    except FileExistsError:
        pass
    finally:
        draft.unlink(missing_ok=True)
    return _read_key(path)


def _read_key(path: Path) -> bytes:
    key = path.read_bytes().strip()
    if not key:
        raise OSError(f"{path} is empty")
    return key
