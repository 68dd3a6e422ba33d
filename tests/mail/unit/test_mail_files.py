"""``mail import``'s files: inside a Maildir or a folder of .eml files no symbolic link is followed
and no device, FIFO or socket is opened for reading; no file is read past the size bound; an
mbox is split in bounded pieces. The hostile folders are read in a child process with an
address-space ceiling and a timeout, so that a regression fails the test instead of filling
the machine's memory (a link to /dev/zero) or hanging it (a FIFO)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from resolveflow.mail.bounds import MailBounds
from resolveflow.mail.files import read_file
from resolveflow.mail.loader import MailSource, UnreadableMessage

CEILING_BYTES = 1024 * 1024 * 1024
_CHILD = textwrap.dedent(
    """
    import json, resource, sys
    resource.setrlimit(resource.RLIMIT_AS, (int(sys.argv[2]), int(sys.argv[2])))
    from pathlib import Path
    from resolveflow.mail.loader import MailSource
    source = MailSource(Path(sys.argv[1]))
    ids = [m.message_id for m in source]
    print(json.dumps({"ids": ids, "skipped": source.skipped}))
    """
)


def _read_in_child(path: Path) -> tuple[list[str], list[tuple[str, str]]]:
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(path), str(CEILING_BYTES)],
        capture_output=True,
        timeout=60,  # a FIFO opened for reading would block here forever
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]
    result = json.loads(done.stdout)
    return result["ids"], [tuple(pair) for pair in result["skipped"]]


def _eml(n: int) -> bytes:
    return (
        f"From: a@example.org\nMessage-ID: <m{n}@example.org>\nSubject: {n}\n\ntext {n}\n".encode()
    )


def test_a_maildir_skips_links_fifos_and_folders_and_reads_the_rest(tmp_path: Path) -> None:
    outside = tmp_path / "outside.eml"
    outside.write_bytes(_eml(9))
    box = tmp_path / "box"
    for sub in ("cur", "new", "tmp"):
        (box / sub).mkdir(parents=True)
    (box / "new" / "1.M1P1.host").write_bytes(_eml(1))
    (box / "cur" / "2.M2P2.host:2,S").symlink_to("/dev/zero")
    os.mkfifo(box / "new" / "3.M3P3.host")
    (box / "cur" / "4.M4P4.host:2,S").symlink_to(outside)
    (box / "cur" / "5.M5P5.host:2,").mkdir()
    (box / "new" / "6.M6P6.host").write_bytes(_eml(6))
    ids, skipped = _read_in_child(box)
    assert ids == ["<m1@example.org>", "<m6@example.org>"]
    reasons = sorted(reason.rsplit(": ", 1)[1] for _, reason in skipped)
    assert reasons == [
        "a symbolic link, not followed",
        "a symbolic link, not followed",
        "not a regular file",
        "not a regular file",
    ]
    assert [name for name, _ in skipped] == [f"{box}#{n}" for n in (2, 3, 4, 5)]


def test_a_folder_of_eml_files_follows_no_link_out_of_it(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "secret.eml").write_bytes(_eml(9))
    folder = tmp_path / "mail"
    (folder / "sub").mkdir(parents=True)
    (folder / "a.eml").write_bytes(_eml(1))
    (folder / "sub" / "b.eml").write_bytes(_eml(2))
    (folder / "c.eml").symlink_to(elsewhere / "secret.eml")
    (folder / "linked").symlink_to(elsewhere)
    (folder / "zero.eml").symlink_to("/dev/zero")
    os.mkfifo(folder / "pipe.eml")
    (folder / "notes.txt").symlink_to("/etc/hostname")  # not mail: ignored, as before
    ids, skipped = _read_in_child(folder)
    assert ids == ["<m1@example.org>", "<m2@example.org>"]
    assert sorted((Path(name).name, reason.rsplit(": ", 1)[1]) for name, reason in skipped) == [
        ("c.eml", "a symbolic link, not followed"),
        ("linked", "a symbolic link, not followed"),
        ("pipe.eml", "not a regular file"),
        ("zero.eml", "a symbolic link, not followed"),
    ]


def test_no_file_is_read_past_the_bound_even_when_it_is_larger_than_it_says() -> None:
    # procfs files say 0 bytes and hold more: what a file that grows after the fstat looks like.
    status = Path("/proc/self/status")
    assert status.stat().st_size == 0
    with pytest.raises(UnreadableMessage, match="larger than 100 bytes"):
        read_file(status, 100, follow=True)
    with pytest.raises(UnreadableMessage, match="not a regular file"):
        read_file(Path("/dev/zero"), 100, follow=True)


def test_an_mbox_skips_a_message_over_the_bound_and_splits_only_at_line_starts(
    tmp_path: Path,
) -> None:
    huge_line = b"x" * 1001 + b"From evil@example.org Mon Jan  1 00:00:00 2024\n"  # cut at 1001
    mbox = tmp_path / "box.mbox"
    mbox.write_bytes(
        b"From a Mon Jan  1 00:00:00 2024\n" + _eml(1) + b"\n"
        b"From b Mon Jan  1 00:00:00 2024\n" + _eml(2) + huge_line + b"\n"
        b"From c Mon Jan  1 00:00:00 2024\n" + _eml(3)
    )
    source = MailSource(mbox, MailBounds(message_max_bytes=1024))
    assert [m.message_id for m in source] == ["<m1@example.org>", "<m3@example.org>"]
    [(name, reason)] = source.skipped
    assert name == f"{mbox}#2" and reason.endswith("bytes is larger than 1024")


def test_mail_draft_reads_no_device_and_no_fifo(tmp_path: Path) -> None:
    """``mail draft --reply-to`` reads its file before opening the app: a device or a FIFO is
    one line and exit 2, not a MemoryError (before: /dev/zero read until the ceiling) or a hang."""
    fifo = tmp_path / "request.eml"
    os.mkfifo(fifo)
    for path in ("/dev/zero", str(fifo)):
        done = subprocess.run(
            [sys.executable, "-c", _CLI, str(CEILING_BYTES), path],
            capture_output=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 2, done.stderr.decode(errors="replace")[-2000:]
        assert f"{path}: not a regular file" in done.stderr.decode()


_CLI = textwrap.dedent(
    """
    import resource, sys
    resource.setrlimit(resource.RLIMIT_AS, (int(sys.argv[1]), int(sys.argv[1])))
    from resolveflow.cli import main
    args = ["mail", "draft", "--mailbox", "support@acme.example", "--reply-to", sys.argv[2]]
    sys.exit(main(args))
    """
)
