"""The fake GitLab's data and its JSON, shaped like GitLab's REST v4 answers."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass
class User:
    id: int
    username: str

    def payload(self, base_url: str) -> dict[str, Any]:
        return {
            "id": self.id,
            "username": self.username,
            "name": self.username.title(),
            "state": "active",
            "locked": False,
            "avatar_url": None,
            "web_url": f"{base_url}/{self.username}",
        }


@dataclass
class Project:
    id: int
    path: str  # path_with_namespace
    labels: list[str] = field(default_factory=list)
    members: set[int] = field(default_factory=set)  # who may set labels and assignees
    issues: list[dict[str, Any]] = field(default_factory=list)  # stored as rendered, oldest first

    def payload(self, base_url: str) -> dict[str, Any]:
        namespace, _, name = self.path.rpartition("/")
        return {
            "id": self.id,
            "name": name,
            "path": name,
            "path_with_namespace": self.path,
            "name_with_namespace": self.path.replace("/", " / "),
            "namespace": {"id": 1, "name": namespace, "path": namespace, "full_path": namespace},
            "default_branch": "main",
            "visibility": "private",
            "web_url": f"{base_url}/{self.path}",
            "created_at": "2024-01-01T00:00:00.000Z",
        }


class GitLabState:
    """Everything the fake knows, behind one lock (routes take it for each read or write)."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.base_url = ""
        self.users: dict[int, User] = {}
        self.tokens: dict[str, int] = {}  # token -> user id
        self.projects: dict[int, Project] = {}
        self._next_issue_id = 1000

    def add_user(self, user_id: int, username: str, token: str | None = None) -> None:
        with self.lock:
            self.users[user_id] = User(user_id, username)
            if token is not None:
                self.tokens[token] = user_id

    def add_project(
        self, project_id: int, path: str, labels: Sequence[str] = (), members: Sequence[int] = ()
    ) -> None:
        with self.lock:
            self.projects[project_id] = Project(project_id, path, list(labels), set(members))

    def project(self, key: str) -> Project | None:
        """By id, or by its full path (URL-encoded in the route, decoded here)."""
        with self.lock:
            if key.isdigit():
                return self.projects.get(int(key))
            return next((p for p in self.projects.values() if p.path == key), None)

    def add_issue(
        self,
        project_id: int,
        *,
        title: str,
        description: str,
        author_id: int,
        labels: Sequence[str] = (),
        assignee_ids: Sequence[int] = (),
        created_at: str | None = None,
    ) -> dict[str, Any]:
        """Store an issue as GitLab would (labels and assignees not allowed dropped silently)."""
        with self.lock:
            project = self.projects[project_id]
            self._next_issue_id += 1
            iid = len(project.issues) + 1
            member = author_id in project.members
            kept_labels = [name for name in labels if member and name in project.labels]
            people = [self.users[i] for i in assignee_ids if member and i in self.users]
            created = created_at or _now()
            issue = {
                "id": self._next_issue_id,
                "iid": iid,
                "project_id": project_id,
                "title": title,
                "description": description,
                "state": "opened",
                "created_at": created,
                "updated_at": created,
                "closed_at": None,
                "labels": sorted(kept_labels),
                "milestone": None,
                "author": self.users[author_id].payload(self.base_url),
                "assignees": [user.payload(self.base_url) for user in people],
                "assignee": people[0].payload(self.base_url) if people else None,
                "user_notes_count": 0,
                "confidential": False,
                "web_url": f"{self.base_url}/{project.path}/-/issues/{iid}",
                "references": {"short": f"#{iid}", "full": f"{project.path}#{iid}"},
            }
            project.issues.append(issue)
            return issue

    def issues(self, project_id: int) -> list[dict[str, Any]]:
        with self.lock:
            return [dict(issue) for issue in self.projects[project_id].issues]
