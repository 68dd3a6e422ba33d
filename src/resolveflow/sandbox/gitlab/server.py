"""``FakeGitLabServer``: a real HTTP server on 127.0.0.1 that behaves like the slice of GitLab's
REST v4 API ResolveFlow uses, so tests point the production python-gitlab client at it.

Faults are injected per request, as on the fake GitHub: a write applied but never answered
(``DropAfterWrite``), applied and answered too late (``HangAfterWrite``), applied and answered one
byte at a time (``Trickle``), an error status instead of the write (``Status``), and a rate limit
(``RateLimited``, 429 with Retry-After). The counters
(``writes_received``, ``writes_applied``) let a test prove how many writes reached GitLab and how
many took effect.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import unquote, urlencode

from resolveflow.sandbox.gitlab.state import GitLabState
from resolveflow.sandbox.loopback import Exchange, LoopbackServer, Reply

API = "/api/v4"
HANG_LIMIT_SECONDS = 30.0  # a hung write is cut after this, or when the server stops


@dataclass(frozen=True)
class DropAfterWrite:
    """Apply the write, then close the connection without an answer."""


@dataclass(frozen=True)
class HangAfterWrite:
    """Apply the write, then answer nothing until the client has given up."""


@dataclass(frozen=True)
class Trickle:
    """Run the route (a write is applied), send the status line and headers at once, then the
    body one byte at a time, ``interval`` seconds before each: every socket read succeeds well
    within a per-read timeout, so only a wall-clock deadline bounds the answer. It ends as soon
    as the server stops."""

    interval: float


@dataclass(frozen=True)
class Status:
    """Answer this status instead of running the route (nothing is applied)."""

    status: int


@dataclass(frozen=True)
class RateLimited:
    """429 with Retry-After; nothing is applied."""

    retry_after: int = 60


Fault = DropAfterWrite | HangAfterWrite | Trickle | Status | RateLimited


class FakeGitLabServer:
    def __init__(self, port: int = 0) -> None:
        self.state = GitLabState()
        self._lock = threading.Lock()
        self._faults: list[tuple[Fault, str | None, re.Pattern[str] | None]] = []
        self._writes_received = 0
        self._writes_applied = 0
        self._requests: list[tuple[str, str]] = []
        self.loopback = LoopbackServer(self.serve, port=port, server_name="nginx")

    # --- life and seeding -----------------------------------------------------------------

    def start(self) -> str:
        url = self.loopback.start()
        self.state.base_url = url
        return url

    def stop(self) -> None:
        self.loopback.stop()

    def __enter__(self) -> FakeGitLabServer:
        self.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        assert self.loopback.url is not None, "start the server first"
        return self.loopback.url

    def inject(
        self, fault: Fault, *, method: str | None = None, path: str | None = None, times: int = 1
    ) -> None:
        """Apply ``fault`` to the next ``times`` requests matching ``method`` and ``path`` (a
        regular expression searched in the path after /api/v4)."""
        with self._lock:
            pattern = re.compile(path) if path else None
            self._faults.extend([(fault, method, pattern)] * times)

    @property
    def writes_received(self) -> int:
        with self._lock:
            return self._writes_received

    @property
    def writes_applied(self) -> int:
        with self._lock:
            return self._writes_applied

    @property
    def requests(self) -> list[tuple[str, str]]:
        """Every API request as (method, path), in order."""
        with self._lock:
            return list(self._requests)

    def issues(self, project_id: int) -> list[dict[str, Any]]:
        return self.state.issues(project_id)

    # --- serving --------------------------------------------------------------------------

    def _take_fault(self, method: str, path: str) -> Fault | None:
        with self._lock:
            for index, (fault, want_method, pattern) in enumerate(self._faults):
                if (want_method is None or want_method == method) and (
                    pattern is None or pattern.search(path)
                ):
                    del self._faults[index]
                    return fault
        return None

    def serve(self, exchange: Exchange) -> None:
        path = exchange.path.removeprefix(API)
        write = exchange.method not in {"GET", "HEAD"}
        with self._lock:
            self._requests.append((exchange.method, path))
            self._writes_received += write
        user_id = self.state.tokens.get(exchange.header("PRIVATE-TOKEN") or "")
        if user_id is None:
            exchange.send(Reply(401, {"message": "401 Unauthorized"}))
            return
        fault = self._take_fault(exchange.method, path)
        if isinstance(fault, Status):
            exchange.send(Reply(fault.status, {"message": f"{fault.status} sandbox fault"}))
            return
        if isinstance(fault, RateLimited):
            reply = Reply(429, {"message": "429 Too Many Requests"})
            reply.headers["Retry-After"] = str(fault.retry_after)
            exchange.send(reply)
            return
        reply = self._route(exchange, path, user_id)
        if write and 200 <= reply.status < 300:
            with self._lock:
                self._writes_applied += 1
        if isinstance(fault, DropAfterWrite):
            exchange.drop()
        elif isinstance(fault, HangAfterWrite):
            self.loopback.stopping.wait(HANG_LIMIT_SECONDS)
            exchange.drop()
        elif isinstance(fault, Trickle):
            exchange.send(reply, byte_interval=fault.interval)
        else:
            exchange.send(reply)

    def _route(self, exchange: Exchange, path: str, user_id: int) -> Reply:
        base = self.state.base_url
        if path == "/user":
            return Reply(200, self.state.users[user_id].payload(base))
        if path == "/users":
            wanted = exchange.query.get("username", [""])[0]
            found = [u.payload(base) for u in self.state.users.values() if u.username == wanted]
            return self._page(exchange, path, found)
        one = re.fullmatch(r"/projects/([^/]+)/issues/(\d+)", path)
        if one is not None and exchange.method == "GET":
            return self._one_issue(one.group(1), int(one.group(2)))
        match = re.fullmatch(r"/projects/([^/]+)(/labels|/issues)?", path)
        project = self.state.project(unquote(match.group(1))) if match else None
        if match is None or project is None:
            return Reply(404, {"message": "404 Project Not Found"})
        area = match.group(2)
        if area is None and exchange.method == "GET":
            return Reply(200, project.payload(base))
        if area == "/labels" and exchange.method == "GET":
            labels = [{"id": i + 1, "name": name, "color": "#428BCA", "description": None}
                      for i, name in enumerate(project.labels)]  # fmt: skip
            return self._page(exchange, path, labels)
        if area == "/issues" and exchange.method == "GET":
            return self._page(exchange, path, self._listed(exchange, project.id))
        if area == "/issues" and exchange.method == "POST":
            return self._create(exchange, project.id, user_id)
        return Reply(405, {"message": "405 Method Not Allowed"})

    def _one_issue(self, key: str, iid: int) -> Reply:
        project = self.state.project(unquote(key))
        issues = self.state.issues(project.id) if project else []
        issue = next((i for i in issues if i["iid"] == iid), None)
        if issue is None:
            return Reply(404, {"message": "404 Not found"})
        return Reply(200, dict(issue))

    def _listed(self, exchange: Exchange, project_id: int) -> list[dict[str, Any]]:
        after = exchange.query.get("created_after", [None])[0]
        issues = self.state.issues(project_id)
        if after:
            since = datetime.fromisoformat(after.replace("Z", "+00:00"))
            issues = [
                issue
                for issue in issues
                if datetime.fromisoformat(issue["created_at"].replace("Z", "+00:00")) >= since
            ]
        issues.sort(key=lambda issue: (issue["created_at"], issue["id"]))
        if exchange.query.get("sort", ["desc"])[0] == "desc":
            issues.reverse()
        return issues

    def _create(self, exchange: Exchange, project_id: int, user_id: int) -> Reply:
        try:
            data = json.loads(exchange.body or b"{}")
        except ValueError:
            return Reply(400, {"message": "400 Bad request - body is not JSON"})
        title = str(data.get("title") or "").strip()
        if not title:
            return Reply(400, {"error": "title is missing"})
        labels = data.get("labels") or []
        if isinstance(labels, str):
            labels = [name.strip() for name in labels.split(",") if name.strip()]
        issue = self.state.add_issue(
            project_id,
            title=title,
            description=str(data.get("description") or ""),
            author_id=user_id,
            labels=labels,
            assignee_ids=[int(i) for i in data.get("assignee_ids") or []],
        )
        return Reply(201, issue)

    def _page(self, exchange: Exchange, path: str, items: list[dict[str, Any]]) -> Reply:
        """One page, with GitLab's pagination headers and a ``Link`` to the next page."""
        per_page = max(1, min(100, int(exchange.query.get("per_page", ["20"])[0])))
        page = max(1, int(exchange.query.get("page", ["1"])[0]))
        total_pages = max(1, -(-len(items) // per_page))
        reply = Reply(200, items[(page - 1) * per_page : page * per_page])
        reply.headers.update(
            {
                "x-page": str(page),
                "x-per-page": str(per_page),
                "x-total": str(len(items)),
                "x-total-pages": str(total_pages),
                "x-next-page": str(page + 1) if page < total_pages else "",
                "x-prev-page": str(page - 1) if page > 1 else "",
            }
        )
        if page < total_pages:
            query = {key: values[0] for key, values in exchange.query.items()}
            query.update(page=str(page + 1), per_page=str(per_page))
            link = f"{self.state.base_url}{API}{path}?{urlencode(query)}"
            reply.headers["Link"] = f'<{link}>; rel="next"'
        return reply
