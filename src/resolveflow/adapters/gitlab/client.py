"""``PythonGitLabClient``: the ``GitLab`` protocol over python-gitlab, with a timeout on every call.

python-gitlab would sleep on a 429 and try again (``obey_rate_limit``); the gate decides when to
try again instead, so a response hook turns a 429 into ``RateLimitedResponse`` before the library
sees it. Transient errors are never retried here either: a POST retried after a 5xx could open a
second issue. The timeout is requests' (connect and each read), and every request also has a
wall-clock deadline (``deadline.DeadlineSession``, by default ``DEADLINE_TIMEOUTS`` timeouts, as
GitHub's), so an answer trickled byte by byte is cut too; a hang or a cut is outcome unknown.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, TypeVar

import gitlab
import requests

from resolveflow.adapters.base import Call, writes
from resolveflow.adapters.github.protocol import DEADLINE_TIMEOUTS
from resolveflow.adapters.gitlab.deadline import DeadlinePassed, DeadlineSession
from resolveflow.adapters.gitlab.errors import (
    RateLimitedResponse,
    gitlab_call,
    retry_after_seconds,
    translate,
)
from resolveflow.adapters.gitlab.protocol import GitLabIssue, GitLabProject

T = TypeVar("T")
PER_PAGE = 100


def _refuse_429(response: requests.Response, *_: Any, **__: Any) -> None:
    if response.status_code == 429:
        raise RateLimitedResponse(retry_after_seconds(response.headers.get("Retry-After")))


def _timestamp(value: str) -> datetime:
    parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def to_issue(data: dict[str, Any]) -> GitLabIssue:
    author = data.get("author") or {}
    return GitLabIssue(
        iid=int(data["iid"]),
        title=str(data["title"]),
        description=str(data.get("description") or ""),
        author_id=int(author.get("id", 0)),
        author=str(author.get("username", "")),
        labels=tuple(str(label) for label in data.get("labels") or ()),
        assignee_ids=tuple(int(person["id"]) for person in data.get("assignees") or ()),
        created_at=_timestamp(str(data["created_at"])),
        url=str(data["web_url"]),
    )


class PythonGitLabClient:
    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        timeout_seconds: float,
        deadline_seconds: float | None = None,
    ) -> None:
        session = DeadlineSession(deadline_seconds or timeout_seconds * DEADLINE_TIMEOUTS)
        session.hooks["response"].append(_refuse_429)
        self._me: tuple[int, str] | None = None
        self._gl = gitlab.Gitlab(
            base_url,
            private_token=token,
            timeout=timeout_seconds,
            session=session,
            retry_transient_errors=False,
            per_page=PER_PAGE,
        )

    def close(self) -> None:
        self._gl.session.close()

    def __enter__(self) -> PythonGitLabClient:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def _call(self, call: Call, run: Callable[[], T]) -> T:
        try:
            return run()
        except (gitlab.exceptions.GitlabError, requests.RequestException, DeadlinePassed) as exc:
            raise translate(call, exc) from None
        except RateLimitedResponse as exc:
            raise translate(call, exc) from None
        except (KeyError, TypeError, ValueError) as exc:  # an answer not shaped like GitLab's
            raise translate(call, exc) from None

    def project(self, project: int | str) -> GitLabProject:
        def run() -> GitLabProject:
            found = self._gl.projects.get(project)
            return GitLabProject(
                id=int(found.id), path=str(found.path_with_namespace), url=str(found.web_url)
            )

        return self._call(gitlab_call("project", "GET", f"/projects/{project}", False), run)

    def project_labels(self, project_id: int) -> list[str]:
        def run() -> list[str]:
            labels = self._gl.projects.get(project_id, lazy=True).labels.list(get_all=True)
            return [str(label.name) for label in labels]

        return self._call(
            gitlab_call("labels", "GET", f"/projects/{project_id}/labels", False), run
        )

    def user_id(self, username: str) -> int | None:
        def run() -> int | None:
            users = self._gl.users.list(username=username, get_all=False)
            return int(users[0].id) if users else None

        return self._call(gitlab_call("user", "GET", "/users", False), run)

    def current_user(self) -> tuple[int, str]:
        """Asked once per client (one token): the pages ask it on every view."""
        if self._me is not None:
            return self._me

        def run() -> tuple[int, str]:
            data = self._gl.http_get("/user")
            assert isinstance(data, dict)
            return int(data["id"]), str(data["username"])

        self._me = self._call(gitlab_call("current_user", "GET", "/user", False), run)
        return self._me

    def issues_created_since(self, project_id: int, since: datetime) -> list[GitLabIssue]:
        def run() -> list[GitLabIssue]:
            manager = self._gl.projects.get(project_id, lazy=True).issues
            found = manager.list(
                created_after=since.astimezone(UTC).isoformat(),
                order_by="created_at",
                sort="desc",
                scope="all",
                state="all",
                get_all=True,
            )
            return [to_issue(issue.asdict()) for issue in found]

        return self._call(
            gitlab_call("issues", "GET", f"/projects/{project_id}/issues", False), run
        )

    def issue(self, project_id: int, iid: int) -> GitLabIssue:
        def run() -> GitLabIssue:
            found = self._gl.projects.get(project_id, lazy=True).issues.get(iid)
            return to_issue(found.asdict())

        path = f"/projects/{project_id}/issues/{iid}"
        return self._call(gitlab_call("issue", "GET", path, False), run)

    @writes
    def create_issue(
        self,
        project_id: int,
        *,
        title: str,
        description: str,
        labels: list[str],
        assignee_ids: list[int],
    ) -> GitLabIssue:
        def run() -> GitLabIssue:
            manager = self._gl.projects.get(project_id, lazy=True).issues
            data: dict[str, Any] = {"title": title, "description": description}
            if labels:
                data["labels"] = ",".join(labels)
            if assignee_ids:
                data["assignee_ids"] = assignee_ids
            return to_issue(manager.create(data).asdict())

        return self._call(
            gitlab_call("create_issue", "POST", f"/projects/{project_id}/issues", True), run
        )
