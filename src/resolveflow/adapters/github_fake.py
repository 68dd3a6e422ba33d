"""A real HTTP server on 127.0.0.1 that behaves like the slice of GitHub ResolveFlow uses.

Tests and benchmarks point the production ``GitHubKitClient`` at it, so every byte goes through
httpx and githubkit exactly as it would against api.github.com: schema validation, pagination via
``Link`` headers, rate-limit headers, keep-alive connections. Faults are injected per request to
reproduce what makes exactly-once execution hard: a write that is applied but never answered,
answered too late, answered with garbage, or refused with a rate limit.

State lives in memory behind one lock; counters (``writes_received``, ``writes_applied``,
``write_log``) let tests prove how many writes reached GitHub and how many took effect.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import re
import socket
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, NamedTuple, Self
from urllib.parse import parse_qs, unquote

from resolveflow.adapters import github_fake_payloads as payloads

logger = logging.getLogger(__name__)

WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
RATE_LIMIT_WINDOW_SECONDS = 3600


# --- faults --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Delay:
    """Sleep (past the client's timeout), then apply the write and answer.

    With ``apply_write=False`` the request is dropped after the sleep: nothing applied, no answer.
    """

    seconds: float
    apply_write: bool = True


@dataclass(frozen=True)
class DropAfterWrite:
    """Apply the write, then close the connection without sending a response."""


@dataclass(frozen=True)
class HangAfterWrite:
    """Apply the write, set ``server.write_accepted``, then never answer (until ``stop()``)."""


@dataclass(frozen=True)
class Status:
    """Answer with ``code`` and ``body`` (default: a GitHub error JSON); optionally apply first."""

    code: int
    body: str | dict[str, Any] | None = None
    apply_write: bool = False
    content_type: str = "application/json"
    headers: Mapping[str, str] | None = None


@dataclass(frozen=True)
class SecondaryRateLimit:
    """403 with ``Retry-After`` and GitHub's secondary-rate-limit message; nothing applied."""

    retry_after: int = 1


@dataclass(frozen=True)
class PrimaryRateLimit:
    """403 with ``x-ratelimit-remaining: 0`` and a reset ``reset_in`` seconds from now."""

    reset_in: int = 1


@dataclass(frozen=True)
class Malformed2xx:
    """Apply the write, then answer 2xx with a body that fails schema validation (or isn't JSON)."""

    apply_write: bool = True
    invalid_json: bool = False


Fault = (
    Delay | DropAfterWrite | HangAfterWrite | Status | SecondaryRateLimit | PrimaryRateLimit
) | Malformed2xx


@dataclass
class _Injected:
    fault: Fault
    method: str | None
    path: re.Pattern[str] | None
    remaining: int

    def matches(self, method: str, target: str) -> bool:
        if self.method is not None and self.method.upper() != method:
            return False
        return self.path is None or self.path.search(target) is not None


class WriteRecord(NamedTuple):
    """One write request as the server saw it (compares equal to a plain 4-tuple)."""

    method: str
    path: str
    login: str | None
    applied: bool


# --- state ---------------------------------------------------------------------------------


@dataclass
class _Label:
    id: int
    name: str
    color: str
    description: str | None


@dataclass
class _Issue:
    id: int
    number: int
    title: str
    body: str
    state: str
    user: str
    is_pull_request: bool
    created_at: str
    labels: list[str] = field(default_factory=list)  # lower-cased keys into _Repo.labels
    comments: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class _Repo:
    full_name: str
    labels: dict[str, _Label] = field(default_factory=dict)  # key: lower-cased name
    issues: dict[int, _Issue] = field(default_factory=dict)


@dataclass
class _Request:
    method: str
    path: str
    query: dict[str, list[str]]
    body: bytes
    login: str | None
    logged: bool = False

    @property
    def is_write(self) -> bool:
        return self.method in WRITE_METHODS


@dataclass
class _Reply:
    status: int
    payload: Any = None
    raw: bytes | None = None
    content_type: str = "application/json; charset=utf-8"
    headers: dict[str, str] = field(default_factory=dict)

    def encoded(self) -> bytes:
        return self.raw if self.raw is not None else json.dumps(self.payload).encode()


_ROUTES: list[tuple[str, re.Pattern[str], str]] = [
    ("GET", re.compile(r"^/repos/([^/]+/[^/]+)/issues/(\d+)/comments$"), "_list_comments"),
    ("POST", re.compile(r"^/repos/([^/]+/[^/]+)/issues/(\d+)/comments$"), "_create_comment"),
    ("GET", re.compile(r"^/repos/([^/]+/[^/]+)/issues/(\d+)/labels$"), "_list_issue_labels"),
    ("POST", re.compile(r"^/repos/([^/]+/[^/]+)/issues/(\d+)/labels$"), "_add_labels"),
    ("GET", re.compile(r"^/repos/([^/]+/[^/]+)/issues/(\d+)$"), "_get_issue"),
    ("GET", re.compile(r"^/repos/([^/]+/[^/]+)/labels$"), "_list_repo_labels"),
    ("GET", re.compile(r"^/user$"), "_get_user"),
]


class FakeGitHubServer:
    """In-memory GitHub over real HTTP/1.1 on 127.0.0.1 (see the module docstring)."""

    def __init__(
        self, port: int = 0, *, default_login: str = "resolveflow-bot", rate_limit: int = 5000
    ) -> None:
        self._port = port
        self._default_login = default_login
        self._rate_limit = rate_limit
        self._lock = threading.Lock()
        self._repos: dict[str, _Repo] = {}
        self._tokens: dict[str, str] = {}
        self._faults: list[_Injected] = []
        self._next_id = 1_000_001
        self._writes_received = 0
        self._writes_applied = 0
        self._requests = 0
        self._connections_opened = 0
        self._write_log: list[WriteRecord] = []
        self._used: dict[str, int] = {}
        self._window_reset = int(time.time()) + RATE_LIMIT_WINDOW_SECONDS
        self._open_sockets: set[socket.socket] = set()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._url: str | None = None
        self._stopping = threading.Event()
        self.write_accepted = threading.Event()  # set by HangAfterWrite once the write is applied

    # --- lifecycle -------------------------------------------------------------------------

    def start(self) -> Self:
        """Bind (port 0 = ephemeral) and serve on a daemon thread."""
        if self._httpd is not None:
            return self
        self._stopping.clear()
        httpd = _HTTPServer(("127.0.0.1", self._port), _Handler)
        httpd.fake = self
        self._httpd = httpd
        host, port = httpd.server_address[:2]
        self._url = f"http://{host!s}:{port}"
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and cut every open connection, releasing hung and delayed requests."""
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        self._stopping.set()
        httpd.shutdown()
        with self._lock:
            open_sockets = list(self._open_sockets)
        for sock in open_sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def url(self) -> str:
        """Base URL such as ``http://127.0.0.1:54321`` (no trailing slash)."""
        if self._url is None:
            raise RuntimeError("FakeGitHubServer was never started; call start() first")
        return self._url

    # --- seeding and inspection ------------------------------------------------------------

    def register_token(self, token: str, login: str) -> None:
        """Requests bearing ``token`` act as ``login`` (unknown tokens act as the default login)."""
        with self._lock:
            self._tokens[token] = login

    def add_repo(self, full_name: str, labels: Iterable[str] = ()) -> None:
        with self._lock:
            repo = self._repos.setdefault(full_name, _Repo(full_name))
            for name in labels:
                self._ensure_label(repo, name)

    def remove_repo_label(self, full_name: str, name: str) -> None:
        """Delete a label from the repository and from every issue carrying it."""
        with self._lock:
            repo = self._repo(full_name)
            repo.labels.pop(name.lower(), None)
            for issue in repo.issues.values():
                issue.labels = [key for key in issue.labels if key != name.lower()]

    def add_issue(
        self,
        full_name: str,
        number: int,
        title: str = "",
        body: str = "",
        *,
        labels: Iterable[str] = (),
        user: str = "octocat",
        is_pull_request: bool = False,
        state: str = "open",
    ) -> None:
        """Seed an issue (or pull request); unknown labels are created in the repo."""
        with self._lock:
            repo = self._repos.setdefault(full_name, _Repo(full_name))
            created_at = payloads.now_iso()
            issue = _Issue(
                self._new_id(), number, title, body, state, user, is_pull_request, created_at
            )
            issue.labels = [self._ensure_label(repo, name).name.lower() for name in labels]
            repo.issues[number] = issue

    def add_comment_directly(
        self, full_name: str, number: int, body: str, user: str = "octocat"
    ) -> dict[str, Any]:
        """Seed an existing comment without going through HTTP (not counted as a write)."""
        with self._lock:
            return self._store_comment(self._issue(full_name, number), full_name, body, user)

    def comments(self, full_name: str, number: int) -> list[dict[str, Any]]:
        with self._lock:
            return [dict(c) for c in self._issue(full_name, number).comments]

    def issue_labels(self, full_name: str, number: int) -> list[str]:
        with self._lock:
            repo = self._repo(full_name)
            return [repo.labels[key].name for key in self._issue(full_name, number).labels]

    def repo_labels(self, full_name: str) -> list[str]:
        with self._lock:
            return [lab.name for lab in self._repo(full_name).labels.values()]

    def inject(
        self, fault: Fault, *, method: str | None = "POST", path: str | None = None, times: int = 1
    ) -> None:
        """Queue ``fault`` for the next ``times`` requests matching ``method`` and ``path``.

        ``path`` is a regex searched in the request target (path plus query string); ``None``
        matches anything. Faults are consumed in the order they were injected.
        """
        pattern = re.compile(path) if path is not None else None
        with self._lock:
            self._faults.append(_Injected(fault, method, pattern, times))

    @property
    def pending_faults(self) -> int:
        with self._lock:
            return sum(f.remaining for f in self._faults)

    @property
    def writes_received(self) -> int:
        with self._lock:
            return self._writes_received

    @property
    def writes_applied(self) -> int:
        with self._lock:
            return self._writes_applied

    @property
    def write_log(self) -> list[WriteRecord]:
        with self._lock:
            return list(self._write_log)

    @property
    def requests_received(self) -> int:
        with self._lock:
            return self._requests

    @property
    def connections_opened(self) -> int:
        """TCP connections accepted so far; lets tests prove the client reuses connections."""
        with self._lock:
            return self._connections_opened

    # --- request plumbing used by _Handler -------------------------------------------------

    def _track(self, sock: socket.socket, *, opened: bool) -> None:
        with self._lock:
            if opened:
                self._connections_opened += 1
                self._open_sockets.add(sock)
            else:
                self._open_sockets.discard(sock)

    def _begin(self, method: str, target: str, body: bytes, authorization: str | None) -> _Request:
        """Count the request and resolve who is making it."""
        path, _, query = target.partition("?")
        with self._lock:
            self._requests += 1
            if method in WRITE_METHODS:
                self._writes_received += 1
            login = self._login_for(authorization)
        return _Request(method, path, parse_qs(query), body, login)

    def _take_fault(self, method: str, target: str) -> Fault | None:
        with self._lock:
            for injected in self._faults:
                if injected.matches(method, target):
                    injected.remaining -= 1
                    if injected.remaining <= 0:
                        self._faults.remove(injected)
                    return injected.fault
        return None

    def _execute(self, request: _Request) -> _Reply:
        """Run the route under the lock and record whether the write took effect."""
        with self._lock:
            if request.login is None:
                reply = _Reply(401, payloads.error("Requires authentication", status=401))
            else:
                reply = self._route(request)
            applied = request.is_write and 200 <= reply.status < 300
            self._writes_applied += int(applied)
            self._log(request, applied)
            return reply

    def _skip(self, request: _Request) -> None:
        """Record a write that was received but deliberately not applied."""
        with self._lock:
            self._log(request, applied=False)

    def _log(self, request: _Request, applied: bool) -> None:
        if request.is_write and not request.logged:
            request.logged = True
            self._write_log.append(
                WriteRecord(request.method, request.path, request.login, applied)
            )

    def _rate_headers(self, login: str | None) -> dict[str, str]:
        with self._lock:
            now = int(time.time())
            if now >= self._window_reset:
                self._used.clear()
                self._window_reset = now + RATE_LIMIT_WINDOW_SECONDS
            key = login or ""
            used = self._used[key] = self._used.get(key, 0) + 1
            return {
                "x-ratelimit-limit": str(self._rate_limit),
                "x-ratelimit-remaining": str(max(0, self._rate_limit - used)),
                "x-ratelimit-reset": str(self._window_reset),
                "x-ratelimit-used": str(used),
                "x-ratelimit-resource": "core",
            }

    def _login_for(self, authorization: str | None) -> str | None:
        scheme, _, token = (authorization or "").strip().partition(" ")
        if scheme.lower() not in ("token", "bearer") or not token.strip():
            return None
        return self._tokens.get(token.strip(), self._default_login)

    # --- routes (called with the lock held) ------------------------------------------------

    def _route(self, request: _Request) -> _Reply:
        for method, pattern, handler_name in _ROUTES:
            match = pattern.match(request.path)
            if match and method == request.method:
                handler: Callable[..., _Reply] = getattr(self, handler_name)
                try:
                    return handler(request, *(unquote(g) for g in match.groups()))
                except payloads.Rejected as exc:
                    return _Reply(exc.status, exc.payload)
        return _Reply(404, payloads.not_found())

    def _list_comments(self, request: _Request, full_name: str, number: str) -> _Reply:
        return self._paged(request, self._issue(full_name, int(number)).comments)

    def _create_comment(self, request: _Request, full_name: str, number: str) -> _Reply:
        issue = self._issue(full_name, int(number))
        body = payloads.comment_body(payloads.json_body(request.body))
        assert request.login is not None
        stored = self._store_comment(issue, full_name, body, request.login)
        return _Reply(201, stored, headers={"Location": stored["url"]})

    def _list_issue_labels(self, request: _Request, full_name: str, number: str) -> _Reply:
        issue = self._issue(full_name, int(number))
        return self._paged(request, self._label_payloads(full_name, issue.labels))

    def _add_labels(self, request: _Request, full_name: str, number: str) -> _Reply:
        issue = self._issue(full_name, int(number))
        names = payloads.label_names(payloads.json_body(request.body))
        repo = self._repo(full_name)
        for name in names:  # GitHub creates labels that do not exist yet
            key = self._ensure_label(repo, name).name.lower()
            if key not in issue.labels:
                issue.labels.append(key)
        return _Reply(200, self._label_payloads(full_name, issue.labels))

    def _get_issue(self, request: _Request, full_name: str, number: str) -> _Reply:
        issue = self._issue(full_name, int(number))
        payload = payloads.issue(
            self.url,
            self.url,
            full_name,
            issue_id=issue.id,
            number=issue.number,
            title=issue.title,
            body=issue.body,
            state=issue.state,
            user=payloads.simple_user(self.url, self.url, issue.user),
            labels=self._label_payloads(full_name, issue.labels),
            comment_count=len(issue.comments),
            is_pull_request=issue.is_pull_request,
            created_at=issue.created_at,
        )
        return _Reply(200, payload)

    def _list_repo_labels(self, request: _Request, full_name: str) -> _Reply:
        keys = list(self._repo(full_name).labels)
        return self._paged(request, self._label_payloads(full_name, keys))

    def _get_user(self, request: _Request) -> _Reply:
        assert request.login is not None
        return _Reply(200, payloads.private_user(self.url, self.url, request.login))

    # --- helpers (lock held) ---------------------------------------------------------------

    def _new_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def _repo(self, full_name: str) -> _Repo:
        repo = self._repos.get(full_name)
        if repo is None:
            raise payloads.Rejected(404, payloads.not_found())
        return repo

    def _issue(self, full_name: str, number: int) -> _Issue:
        issue = self._repo(full_name).issues.get(number)
        if issue is None:
            raise payloads.Rejected(404, payloads.not_found())
        return issue

    def _ensure_label(self, repo: _Repo, name: str) -> _Label:
        existing = repo.labels.get(name.lower())
        if existing is None:
            existing = _Label(self._new_id(), name, payloads.NEW_LABEL_COLOR, None)
            repo.labels[name.lower()] = existing
        return existing

    def _label_payloads(self, full_name: str, keys: list[str]) -> list[dict[str, Any]]:
        labels = self._repo(full_name).labels
        return [
            payloads.label(
                self.url,
                full_name,
                label_id=lab.id,
                name=lab.name,
                color=lab.color,
                description=lab.description,
            )
            for lab in (labels[key] for key in keys if key in labels)
        ]

    def _store_comment(
        self, issue: _Issue, full_name: str, body: str, login: str
    ) -> dict[str, Any]:
        user = payloads.simple_user(self.url, self.url, login)
        stored = payloads.comment(
            self.url,
            self.url,
            full_name,
            number=issue.number,
            comment_id=self._new_id(),
            body=body,
            user=user,
        )
        issue.comments.append(stored)
        return stored

    def _paged(self, request: _Request, items: list[dict[str, Any]]) -> _Reply:
        page, link = payloads.paginate(
            items, base_url=self.url, path=request.path, query=request.query
        )
        return _Reply(200, page, headers={"Link": link} if link else {})


# --- HTTP layer ----------------------------------------------------------------------------


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 256
    fake: FakeGitHubServer


class _Handler(BaseHTTPRequestHandler):
    """Parses HTTP, applies the next matching fault, and writes the reply."""

    protocol_version = "HTTP/1.1"  # keep-alive; every reply carries Content-Length
    disable_nagle_algorithm = True  # headers and body go out in two writes
    server: _HTTPServer

    def version_string(self) -> str:
        return "GitHub.com"

    def setup(self) -> None:
        super().setup()
        self.server.fake._track(self.connection, opened=True)

    def finish(self) -> None:
        self.server.fake._track(self.connection, opened=False)
        with contextlib.suppress(OSError):
            super().finish()

    def log_message(self, format: str, *args: Any) -> None:
        """Silenced: the benchmark drives ~1000 requests per second through here."""

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_PUT(self) -> None:
        self._dispatch("PUT")

    def do_PATCH(self) -> None:
        self._dispatch("PATCH")

    def do_DELETE(self) -> None:
        self._dispatch("DELETE")

    def _dispatch(self, method: str) -> None:
        fake = self.server.fake
        try:
            body = self._read_body()
        except (OSError, ValueError):  # unreadable request: give up on this connection
            self.close_connection = True
            return
        request = fake._begin(method, self.path, body, self.headers.get("Authorization"))
        try:
            fault = fake._take_fault(method, self.path) if request.login is not None else None
            self._serve(fake, request, fault)
        except OSError:  # the client went away (e.g. it timed out first)
            self.close_connection = True
        except Exception:
            logger.exception("fake GitHub handler failed", extra={"fake_path": request.path})
            self._send(fake, request, _Reply(500, payloads.error("Server Error", status=500)))
        finally:
            fake._skip(request)

    def _read_body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def _serve(self, fake: FakeGitHubServer, request: _Request, fault: Fault | None) -> None:
        match fault:
            case None:
                self._send(fake, request, fake._execute(request))
            case Delay(seconds=seconds, apply_write=apply):
                stopped = fake._stopping.wait(seconds)
                if stopped or (request.is_write and not apply):
                    self._drop()
                else:
                    self._send(fake, request, fake._execute(request))
            case DropAfterWrite():
                fake._execute(request)
                self._drop()
            case HangAfterWrite():
                fake._execute(request)
                fake.write_accepted.set()
                fake._stopping.wait()
                self._drop()
            case Status():
                if fault.apply_write:
                    fake._execute(request)
                self._send(fake, request, _status_reply(fault))
            case SecondaryRateLimit(retry_after=retry_after):
                reply = _Reply(403, payloads.error(payloads.SECONDARY_RATE_LIMIT_MESSAGE))
                reply.headers["Retry-After"] = str(retry_after)
                self._send(fake, request, reply)
            case PrimaryRateLimit(reset_in=reset_in):
                self._send_primary_rate_limit(fake, request, reset_in)
            case Malformed2xx(apply_write=apply, invalid_json=invalid):
                if apply:
                    fake._execute(request)
                raw = b'{"id": 1, "unterminated' if invalid else b'{"id": 1}'
                status = 201 if request.method == "POST" else 200
                self._send(fake, request, _Reply(status, raw=raw))

    def _send_primary_rate_limit(
        self, fake: FakeGitHubServer, request: _Request, reset_in: int
    ) -> None:
        reply = _Reply(403, payloads.error(payloads.PRIMARY_RATE_LIMIT_MESSAGE))
        headers = fake._rate_headers(request.login)
        headers["x-ratelimit-remaining"] = "0"
        headers["x-ratelimit-used"] = headers["x-ratelimit-limit"]
        headers["x-ratelimit-reset"] = str(int(time.time()) + reset_in)
        self._write(reply, headers)

    def _send(self, fake: FakeGitHubServer, request: _Request, reply: _Reply) -> None:
        self._write(reply, fake._rate_headers(request.login))

    def _write(self, reply: _Reply, rate_headers: dict[str, str]) -> None:
        body = reply.encoded()
        self.send_response(reply.status)
        self.send_header("Content-Type", reply.content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("X-GitHub-Media-Type", "github.v3; format=json")
        extra = {name.lower(): value for name, value in reply.headers.items()}
        for name, value in {**rate_headers, **extra}.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def _drop(self) -> None:
        """Close the connection without a response, as a crashed proxy or reset would."""
        self.close_connection = True


def _status_reply(fault: Status) -> _Reply:
    headers = dict(fault.headers or {})
    if fault.body is None:
        payload = payloads.error(f"Injected {fault.code}", status=fault.code)
        return _Reply(fault.code, payload, headers=headers)
    if isinstance(fault.body, dict):
        return _Reply(fault.code, fault.body, content_type=fault.content_type, headers=headers)
    raw = fault.body.encode()
    return _Reply(fault.code, raw=raw, content_type=fault.content_type, headers=headers)


def main(argv: list[str] | None = None) -> None:
    """Serve a seeded fake until Ctrl-C (handy for demos: point ResolveFlow at the URL)."""
    parser = argparse.ArgumentParser(description="Run a fake GitHub API on 127.0.0.1.")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--repo", action="append", default=[], help="owner/name (repeatable)")
    parser.add_argument("--labels", default="bug,needs-triage", help="comma-separated")
    parser.add_argument("--issues", default="1", help="comma-separated issue numbers to seed")
    args = parser.parse_args(argv)
    server = FakeGitHubServer(port=args.port)
    for full_name in args.repo or ["acme/widgets"]:
        server.add_repo(full_name, [n for n in args.labels.split(",") if n])
        for number in (int(n) for n in args.issues.split(",") if n):
            server.add_issue(full_name, number, title=f"Issue {number}")
    with server:
        print(server.url, flush=True)  # noqa: T201
        with contextlib.suppress(KeyboardInterrupt):
            threading.Event().wait()


if __name__ == "__main__":
    main()
