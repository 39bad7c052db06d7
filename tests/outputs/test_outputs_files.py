"""How `tracesim._outputs` puts a file in place, and what `clean` keeps.

A whole file is written to a temporary name and renamed over the target, so a reader never sees
half of it. The rename must not change what the user had: a new file gets the mode the umask
gives (as ``open`` would), an existing file keeps its mode, a symlink stays a link and its
target is written, and a FIFO or ``/dev/stdout`` is written in place, never replaced by a
regular file. `clean` redacts mapping keys without merging two keys that redact alike.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tracesim import _outputs

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX modes, symlinks and FIFOs")

WRITERS: dict[str, Callable[[Path], Any]] = {
    "write_text": lambda path: _outputs.write_text(path, "mail marie@curie.org\n"),
    "write_json": lambda path: _outputs.write_json(path, {"mail": "marie@curie.org"}),
    "write_bytes_of": lambda path: _outputs.write_bytes_of(path, lambda out: out.write(b"parquet bytes\n")),
}

_CHILD = """
import sys
from pathlib import Path
from tracesim import _outputs

writer, path = sys.argv[1], Path(sys.argv[2])
if writer == "write_text":
    _outputs.write_text(path, "mail marie@curie.org\\n")
elif writer == "write_json":
    _outputs.write_json(path, {"mail": "marie@curie.org"})
else:
    _outputs.write_bytes_of(path, lambda out: out.write(b"parquet bytes\\n"))
"""


def _child(writer: str, path: str, **kwargs: Any) -> subprocess.CompletedProcess[bytes]:
    """``writer`` run on ``path`` in a fresh interpreter (its umask, its standard output)."""
    return subprocess.run(
        [sys.executable, "-c", _CHILD, writer, path], capture_output=True, timeout=120, check=True, **kwargs
    )


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.mark.parametrize("writer", sorted(WRITERS))
@pytest.mark.parametrize(
    ("umask", "expected"), [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)], ids=["022", "077", "002"]
)
def test_a_new_file_gets_the_mode_the_umask_gives(
    tmp_path: Path, writer: str, umask: int, expected: int
) -> None:
    """As ``open(path, "w")`` would: 0644 under umask 022 (it was 0600, mkstemp's, whatever the umask)."""
    path = tmp_path / "a.txt"
    _child(writer, str(path), umask=umask)
    assert oct(_mode(path)) == oct(expected)


@pytest.mark.parametrize("writer", sorted(WRITERS))
@pytest.mark.parametrize("mode", [0o640, 0o604, 0o755], ids=oct)
def test_an_existing_file_keeps_its_mode(tmp_path: Path, writer: str, mode: int) -> None:
    path = tmp_path / "run.json"
    path.write_text("old\n", encoding="utf-8")
    path.chmod(mode)
    WRITERS[writer](path)
    assert oct(_mode(path)) == oct(mode)
    assert path.read_bytes() != b"old\n"


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_a_symlink_stays_a_link_and_its_target_is_written(tmp_path: Path, writer: str) -> None:
    """``run.json -> baselines/run.json``: the baseline is updated, the link is kept."""
    (tmp_path / "baselines").mkdir()
    target = tmp_path / "baselines" / "run.json"
    target.write_text("old\n", encoding="utf-8")
    target.chmod(0o640)
    link = tmp_path / "run.json"
    link.symlink_to(Path("baselines") / "run.json")  # relative, as users make them
    WRITERS[writer](link)
    assert link.is_symlink()
    assert os.readlink(link) == os.path.join("baselines", "run.json")
    assert target.read_bytes() != b"old\n"
    assert oct(_mode(target)) == oct(0o640)
    assert "marie@curie.org" not in target.read_text(encoding="utf-8")
    assert sorted(p.name for p in (tmp_path / "baselines").iterdir()) == ["run.json"]  # no temporary left


def test_a_dangling_symlink_gets_its_target_created(tmp_path: Path) -> None:
    link = tmp_path / "latest.json"
    link.symlink_to(tmp_path / "runs-1.json")
    _outputs.write_json(link, {"ok": True})
    assert link.is_symlink()
    assert json.loads((tmp_path / "runs-1.json").read_text(encoding="utf-8")) == {"ok": True}


def test_a_chain_of_symlinks_writes_the_last_target(tmp_path: Path) -> None:
    final = tmp_path / "final.txt"
    final.write_text("old", encoding="utf-8")
    (tmp_path / "middle.txt").symlink_to(final)
    (tmp_path / "first.txt").symlink_to(tmp_path / "middle.txt")
    _outputs.write_text(tmp_path / "first.txt", "new\n")
    assert (tmp_path / "first.txt").is_symlink()
    assert (tmp_path / "middle.txt").is_symlink()
    assert final.read_text(encoding="utf-8") == "new\n"


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_a_fifo_is_written_in_place(tmp_path: Path, writer: str) -> None:
    """``-o pipe`` (a named pipe another program reads): written into, never replaced."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # a reader, so the writer's open returns
    try:
        WRITERS[writer](fifo)
        received = os.read(reader, 65536)
    finally:
        os.close(reader)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert received.endswith(b"\n")
    assert len(received) > 5
    assert b"marie@curie.org" not in received


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_a_link_to_standard_output_writes_to_it(tmp_path: Path, writer: str) -> None:
    """A link to ``/dev/stdout`` (a pipe here): what was written reaches the pipe, the link stays."""
    link = tmp_path / "out"
    link.symlink_to("/dev/stdout")
    run = _child(writer, str(link))
    assert link.is_symlink()
    assert run.stdout.endswith(b"\n")
    assert len(run.stdout) > 5
    assert b"marie@curie.org" not in run.stdout


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_a_link_to_standard_output_redirected_to_a_file_writes_that_file(tmp_path: Path, writer: str) -> None:
    """``out -> /dev/stdout`` with ``> log``: /dev/stdout resolves to ``log``, a regular file the
    shell holds open. Replacing it would leave the shell writing to a deleted file."""
    link = tmp_path / "out"
    link.symlink_to("/dev/stdout")
    log = tmp_path / "log"
    with log.open("wb") as handle:
        before = os.fstat(handle.fileno()).st_ino
        subprocess.run(
            [sys.executable, "-c", _CHILD, writer, str(link)], stdout=handle, timeout=120, check=True
        )
    assert link.is_symlink()
    assert os.stat(log).st_ino == before
    assert log.read_bytes().endswith(b"\n")


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_dev_stdout_is_written_in_place(writer: str, tmp_path: Path) -> None:
    """``-o /dev/stdout`` into a pipe and into a file the shell opened (``> out``): the same file."""
    run = _child(writer, "/dev/stdout")
    assert run.stdout.endswith(b"\n")
    assert len(run.stdout) > 5
    assert b"marie@curie.org" not in run.stdout
    redirected = tmp_path / "out"
    with redirected.open("wb") as handle:
        before = os.fstat(handle.fileno()).st_ino
        subprocess.run(
            [sys.executable, "-c", _CHILD, writer, "/dev/stdout"], stdout=handle, timeout=120, check=True
        )
    assert os.stat(redirected).st_ino == before  # not replaced: the shell's file holds the output
    assert redirected.read_bytes().endswith(b"\n")
    assert stat.S_ISLNK(os.lstat("/dev/stdout").st_mode)


# -- clean: keys that redact alike ----------------------------------------------------------------


def test_two_keys_that_redact_alike_are_both_kept() -> None:
    """Scores keyed by a user's e-mail: one entry per user, numbered apart in the order given."""
    cleaned = _outputs.clean({"a@x.io": 1, "b@x.io": 2, "c@x.io": 3})
    assert cleaned == {"[REDACTED:email]": 1, "[REDACTED:email]-2": 2, "[REDACTED:email]-3": 3}
    assert list(cleaned.values()) == [1, 2, 3]


def test_a_key_that_redaction_leaves_alone_keeps_its_name() -> None:
    """A key that is already ``[REDACTED:email]-2`` keeps it; the redacted ones are numbered around it."""
    cleaned = _outputs.clean({"a@x.io": 1, "[REDACTED:email]-2": 2, "b@x.io": 3, "plain": 4})
    assert cleaned == {"[REDACTED:email]": 1, "[REDACTED:email]-2": 2, "[REDACTED:email]-3": 3, "plain": 4}
    assert list(cleaned) == ["[REDACTED:email]", "[REDACTED:email]-2", "[REDACTED:email]-3", "plain"]


def test_keys_that_redact_alike_deep_in_a_document_are_all_written(tmp_path: Path) -> None:
    document = {"runs": [{"by": {f"user{i}@x.io": i for i in range(5)}, "n": 5}]}
    path = tmp_path / "doc.json"
    _outputs.write_json(path, document)
    written = json.loads(path.read_text(encoding="utf-8"))
    assert sorted(written["runs"][0]["by"].values()) == [0, 1, 2, 3, 4]
    assert "@x.io" not in path.read_text(encoding="utf-8")


def test_distinct_numbers_names_apart_as_clean_does_keys() -> None:
    names = ["a@x.io", "plain", "b@x.io", "[REDACTED:email]-2", "a@x.io"]
    assert _outputs.distinct(names) == {
        "a@x.io": "[REDACTED:email]",
        "plain": "plain",
        "b@x.io": "[REDACTED:email]-3",
        "[REDACTED:email]-2": "[REDACTED:email]-2",
    }


def test_keys_that_are_not_text_are_kept_as_they_are() -> None:
    assert _outputs.clean({1: "a@x.io", None: 2, (1, 2): "x"}) == {
        1: "[REDACTED:email]",
        None: 2,
        (1, 2): "x",
    }
