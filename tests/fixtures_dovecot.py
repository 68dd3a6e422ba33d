"""A real IMAP server for the Sent-folder search: Debian's dovecot, started by a test as a child
process on 127.0.0.1 with a configuration of its own (IMAP only, no TLS, one user in a
passwd-file, Maildir in a temporary folder), and stopped when the test ends.

``dovecot`` is the fixture (``pytest_plugins = ["fixtures_dovecot"]``); ``Dovecot.deliver`` files
a message with a given Message-ID in a folder by IMAP APPEND, as a mail client saving its copy
of a sent message would. ``scripts/test`` installs the package when it is missing.
"""

from __future__ import annotations

import contextlib
import grp
import imaplib
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from resolveflow.adapters.smtp.imap import ImapEndpoint

DOVECOT = "/usr/sbin/dovecot"
USER = "support@acme.example"
PASSWORD = "dovecot-test-password"
START_SECONDS = 10.0
STOP_SECONDS = 5.0


@dataclass(frozen=True)
class Dovecot:
    port: int
    folder: Path  # configuration, sockets, logs and mail
    host: str = "127.0.0.1"
    user: str = USER
    password: str = PASSWORD

    def endpoint(self, **changes: Any) -> ImapEndpoint:
        fields: dict[str, Any] = {
            "host": self.host,
            "port": self.port,
            "folder": "Sent",
            "username": self.user,
            "secret": self.password,
            "tls": False,
            "timeout_seconds": 5.0,
            **changes,
        }
        return ImapEndpoint(**fields)

    def deliver(self, message_id: str, folder: str = "Sent", subject: str = "Re: Refund") -> None:
        message = (
            f"From: {self.user}\r\nTo: alice@customer.example\r\nSubject: {subject}\r\n"
            f"Message-ID: {message_id}\r\n\r\nThe refund was issued today.\r\n"
        ).encode()
        client = imaplib.IMAP4(self.host, self.port, timeout=5.0)
        try:
            client.login(self.user, self.password)
            status, detail = client.append(folder, None, None, message)
            assert status == "OK", detail
        finally:
            client.logout()

    def log(self) -> str:
        parts = [self.folder / "dovecot.log", self.folder / "dovecot.stderr"]
        return "\n".join(p.read_text(errors="replace") for p in parts if p.exists())


@pytest.fixture
def dovecot(tmp_path: Path) -> Iterator[Dovecot]:
    if not os.access(DOVECOT, os.X_OK):
        pytest.fail(f"{DOVECOT} is missing: scripts/test installs Debian's dovecot-imapd package")
    root = os.geteuid() == 0
    # As root, dovecot's login and mail processes drop to its own system users, which cannot
    # enter the run's private (0700) temporary root: they get a folder of their own in /tmp.
    folder = Path(tempfile.mkdtemp(prefix="resolveflow-dovecot-")) if root else tmp_path
    try:
        server = Dovecot(port=_free_port(), folder=folder)
        _prepare(server, root)
        with _running(server):
            yield server
    finally:
        if root:
            shutil.rmtree(folder, ignore_errors=True)


def _prepare(server: Dovecot, root: bool) -> None:
    mail = server.folder / "mail"
    mail.mkdir()
    if root:
        server.folder.chmod(0o711)
        owner = pwd.getpwnam("dovecot")  # created by the package
        internal, login, uid, gid = "dovecot", "dovenull", owner.pw_uid, owner.pw_gid
        os.chown(mail, uid, gid)
    else:
        # Not root: every dovecot process runs as this user, who also owns the mail.
        uid, gid = os.getuid(), os.getgid()
        internal = login = pwd.getpwuid(uid).pw_name
    (server.folder / "passwd").write_text(f"{server.user}:{{PLAIN}}{server.password}\n")
    (server.folder / "dovecot.conf").write_text(
        _config(
            server,
            internal=internal,
            group=grp.getgrgid(gid).gr_name,
            login=login,
            uid=uid,
            gid=gid,
        )
    )


def _config(server: Dovecot, *, internal: str, group: str, login: str, uid: int, gid: int) -> str:
    home = server.folder
    return f"""\
protocols = imap
listen = {server.host}
base_dir = {home}/run
state_dir = {home}/state
instance_name = resolveflow-test-{server.port}
log_path = {home}/dovecot.log
ssl = no
disable_plaintext_auth = no
auth_mechanisms = plain login
# A wrong password is answered at once, not after dovecot's default 2 s penalty.
auth_failure_delay = 0
default_internal_user = {internal}
default_internal_group = {group}
default_login_user = {login}
first_valid_uid = {uid}
first_valid_gid = {gid}
passdb {{
  driver = passwd-file
  args = scheme=PLAIN username_format=%u {home}/passwd
}}
userdb {{
  driver = static
  args = uid={uid} gid={gid} home={home}/mail/%u
}}
mail_location = maildir:{home}/mail/%u
namespace inbox {{
  inbox = yes
  separator = /
  mailbox Sent {{
    special_use = \\Sent
    auto = create
  }}
}}
# No per-address penalty after a wrong password (anvil would slow the next logins for seconds).
service anvil {{
  chroot =
  unix_listener anvil-auth-penalty {{
    mode = 0
  }}
}}
service imap-login {{
  chroot =
  inet_listener imap {{
    address = {server.host}
    port = {server.port}
  }}
  inet_listener imaps {{
    port = 0
  }}
}}
"""


@contextmanager
def _running(server: Dovecot) -> Iterator[None]:
    with (server.folder / "dovecot.stderr").open("wb") as stderr:
        process = subprocess.Popen(
            [DOVECOT, "-F", "-c", str(server.folder / "dovecot.conf")],
            stdin=subprocess.DEVNULL,
            stdout=stderr,
            stderr=stderr,
            start_new_session=True,  # its own process group: stopped as one, below
        )
    try:
        _wait_ready(server, process)
        yield
    finally:
        _stop(process)


def _wait_ready(server: Dovecot, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"dovecot exited ({process.returncode}) at start:\n{server.log()}")
        try:
            with socket.create_connection((server.host, server.port), timeout=1.0) as probe:
                if probe.recv(64).startswith(b"* OK"):
                    return
        except OSError:
            pass
        time.sleep(0.02)  # polling for the listener, bounded by the deadline
    pytest.fail(
        f"dovecot did not answer on port {server.port} in {START_SECONDS} s:\n{server.log()}"
    )


def _stop(process: subprocess.Popen[bytes]) -> None:
    # SIGTERM to the whole group at once: the master alone takes about a second to stop its
    # children. SIGKILL is the bounded fallback, and takes any process left in the group.
    _signal_group(process, signal.SIGTERM)
    try:
        process.wait(timeout=STOP_SECONDS)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=STOP_SECONDS)
    _signal_group(process, signal.SIGKILL)


def _signal_group(process: subprocess.Popen[bytes], signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):  # the group is already empty
        os.killpg(process.pid, signum)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
