"""``FakeImapServer``: a tiny IMAP server on 127.0.0.1 holding one Sent folder, so reconciliation's
Sent-folder search runs the real ``imaplib`` client against a real socket.

It answers only what that search needs: CAPABILITY, LOGIN, AUTHENTICATE XOAUTH2, SELECT/EXAMINE,
SEARCH HEADER Message-ID (a case-insensitive substring match, as RFC 3501 says and real servers
do), FETCH of the Message-ID header, LOGOUT (anything else: BAD). ``put`` files a Message-ID in the
folder; ``searches`` records each Message-ID asked for. Plain text: loopback only.
"""

from __future__ import annotations

import base64
import binascii
import shlex
import socketserver
import threading
from typing import Any

READ_TIMEOUT_SECONDS = 10.0


class _Handler(socketserver.StreamRequestHandler):
    timeout = READ_TIMEOUT_SECONDS
    server: _Server

    def handle(self) -> None:
        owner = self.server.owner
        state = {"authenticated": False, "selected": False}
        self._send("* OK fake IMAP ready (ResolveFlow sandbox)")
        while True:
            line = self.rfile.readline(8192)
            if not line:
                return
            try:
                tag, command, *rest = shlex.split(line.decode("utf-8", "replace").strip())
            except ValueError:
                self._send("* BAD unreadable")
                continue
            command = command.upper()
            if command == "LOGOUT":
                self._send("* BYE", f"{tag} OK LOGOUT completed")
                return
            self._send(*self._answer(owner, state, tag, command, rest))

    def _answer(
        self, owner: FakeImapServer, state: dict[str, bool], tag: str, command: str, rest: list[str]
    ) -> list[str]:
        if command == "CAPABILITY":
            return ["* CAPABILITY IMAP4rev1 AUTH=XOAUTH2", f"{tag} OK CAPABILITY completed"]
        if command == "LOGIN":
            state["authenticated"] = len(rest) == 2 and owner.check(rest[0], rest[1])
            return [f"{tag} {'OK' if state['authenticated'] else 'NO'} LOGIN"]
        if command == "AUTHENTICATE" and rest[:1] == ["XOAUTH2"]:
            state["authenticated"] = self._xoauth2(owner)
            return [f"{tag} {'OK' if state['authenticated'] else 'NO'} AUTHENTICATE"]
        if not state["authenticated"]:
            return [f"{tag} NO log in first"]
        if command in {"SELECT", "EXAMINE"}:
            state["selected"] = rest == [owner.folder]
            if not state["selected"]:
                return [f"{tag} NO no such folder"]
            return [f"* {len(owner.held())} EXISTS", f"{tag} OK [READ-ONLY] {command} completed"]
        searching = [part.upper() for part in rest[:2]] == ["HEADER", "MESSAGE-ID"]
        if command == "SEARCH" and state["selected"] and len(rest) == 3 and searching:
            numbers = owner.search(rest[2])
            return [f"* SEARCH {' '.join(numbers)}".rstrip(), f"{tag} OK SEARCH completed"]
        if command == "FETCH" and state["selected"] and rest:
            self._fetch(owner, rest[0])
            return [f"{tag} OK FETCH completed"]
        return [f"{tag} BAD not supported by the sandbox"]

    def _fetch(self, owner: FakeImapServer, numbers: str) -> None:
        held = owner.held()
        for number in numbers.split(","):
            if not number.isdigit() or not 1 <= int(number) <= len(held):
                continue
            header = f"Message-ID: {held[int(number) - 1]}\r\n\r\n".encode()
            head = f"* {number} FETCH (BODY[HEADER.FIELDS (MESSAGE-ID)] {{{len(header)}}}\r\n"
            self.wfile.write(head.encode() + header + b")\r\n")

    def _xoauth2(self, owner: FakeImapServer) -> bool:
        self._send("+ ")
        try:
            blob = base64.b64decode(self.rfile.readline(8192).strip(), validate=True).decode()
        except (binascii.Error, UnicodeDecodeError):
            return False
        fields = dict(part.split("=", 1) for part in blob.split("\x01") if "=" in part)
        return owner.check(fields.get("user", ""), fields.get("auth", "").removeprefix("Bearer "))

    def _send(self, *lines: str) -> None:
        self.wfile.write("".join(f"{line}\r\n" for line in lines).encode())


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    owner: FakeImapServer


class FakeImapServer:
    def __init__(self, user: str, secret: str, folder: str = "Sent") -> None:
        self.folder = folder
        self._credentials = (user, secret)
        self._lock = threading.Lock()
        self._held: list[str] = []
        self.searches: list[str] = []
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.owner = self
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def start(self) -> tuple[str, int]:
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return "127.0.0.1", self.port

    def stop(self) -> None:
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join(timeout=5.0)
            self._thread = None
        self._server.server_close()

    def __enter__(self) -> FakeImapServer:
        self.start()
        return self

    def __exit__(self, *_: Any) -> None:
        self.stop()

    def put(self, message_id: str) -> None:
        with self._lock:
            self._held.append(message_id)

    def held(self) -> list[str]:
        with self._lock:
            return list(self._held)

    def check(self, user: str, secret: str) -> bool:
        return (user, secret) == self._credentials

    def search(self, message_id: str) -> list[str]:
        with self._lock:
            self.searches.append(message_id)
            wanted = message_id.casefold()
            return [str(n) for n, held in enumerate(self._held, 1) if wanted in held.casefold()]
