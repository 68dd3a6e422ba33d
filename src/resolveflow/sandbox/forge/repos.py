"""Repositories, labels and accounts: seeding functions and the REST routes over them.

Routes (``ROUTES``): ``GET /repos/{o}/{r}/labels``; ``GET``/``POST
/repos/{o}/{r}/issues/{n}/labels`` (adding creates unknown labels, as GitHub does);
``DELETE /repos/{o}/{r}/issues/{n}/labels/{name}`` (404 when the issue does not carry it); adding
and removing record ``labeled``/``unlabeled`` events by the token's login (see ``events``);
``GET /repos/{o}/{r}/assignees/{login}`` (204 when the login may be assigned, that is may push,
else 404); ``GET /user`` (the token's account).
"""

from __future__ import annotations

from collections.abc import Iterable

from resolveflow.sandbox.forge import payloads
from resolveflow.sandbox.forge.model import FakeRequest, RepoRecord
from resolveflow.sandbox.forge.routing import REPO, Route, route
from resolveflow.sandbox.forge.state import ForgeState
from resolveflow.sandbox.loopback import Reply

# --- seeding and inspection (each takes the lock) ------------------------------------------


def add_repo(
    forge: ForgeState, full_name: str, labels: Iterable[str] = (), *, pushers: Iterable[str] = ()
) -> None:
    """Create the repository (or add to it): ``labels`` to create, ``pushers`` who may push.

    The server's default login may push everywhere without being listed here.
    """
    with forge.lock:
        repo = forge.repos.setdefault(full_name, RepoRecord(full_name))
        for name in labels:
            forge.ensure_label(repo, name)
        repo.pushers.update(pushers)


def grant_push(forge: ForgeState, full_name: str, login: str) -> None:
    """Give ``login`` push access to an existing repository."""
    with forge.lock:
        forge.repo(full_name).pushers.add(login)


def revoke_push(forge: ForgeState, full_name: str, login: str) -> None:
    """Take back push access granted for this repository (not a maintainer's)."""
    with forge.lock:
        forge.repo(full_name).pushers.discard(login)


def register_token(forge: ForgeState, token: str, login: str) -> None:
    """Requests bearing ``token`` act as ``login`` (unknown tokens act as the default login)."""
    with forge.lock:
        forge.tokens[token] = login


def remove_repo_label(forge: ForgeState, full_name: str, name: str) -> None:
    """Delete a label from the repository and from every issue carrying it."""
    with forge.lock:
        repo = forge.repo(full_name)
        repo.labels.pop(name.lower(), None)
        for issue in repo.issues.values():
            issue.labels = [key for key in issue.labels if key != name.lower()]


def issue_labels(forge: ForgeState, full_name: str, number: int) -> list[str]:
    with forge.lock:
        repo = forge.repo(full_name)
        return [repo.labels[key].name for key in forge.issue(full_name, number).labels]


def repo_labels(forge: ForgeState, full_name: str) -> list[str]:
    with forge.lock:
        return [lab.name for lab in forge.repo(full_name).labels.values()]


# --- routes (lock held) --------------------------------------------------------------------


def list_repo_labels(forge: ForgeState, request: FakeRequest) -> Reply:
    (full_name,) = request.params
    keys = list(forge.repo(full_name).labels)
    return forge.paged(request, forge.label_payloads(full_name, keys))


def list_issue_labels(forge: ForgeState, request: FakeRequest) -> Reply:
    full_name, number = request.params
    issue = forge.issue(full_name, int(number))
    return forge.paged(request, forge.label_payloads(full_name, issue.labels))


def add_labels(forge: ForgeState, request: FakeRequest) -> Reply:
    full_name, number = request.params
    assert request.login is not None  # the dispatcher answers 401 first
    issue = forge.issue(full_name, int(number))
    names = payloads.label_names(payloads.json_body(request.body))
    repo = forge.repo(full_name)
    now = payloads.now_iso()
    for name in names:  # GitHub creates labels that do not exist yet
        if forge.label_issue(repo, issue, name, request.login, now):
            issue.updated_at = max(issue.updated_at, now)
    return Reply(200, forge.label_payloads(full_name, issue.labels))


def remove_label(forge: ForgeState, request: FakeRequest) -> Reply:
    """GitHub answers the labels left on the issue, or 404 when the issue does not carry it."""
    full_name, number, name = request.params
    assert request.login is not None  # the dispatcher answers 401 first
    issue = forge.issue(full_name, int(number))
    now = payloads.now_iso()
    if not forge.unlabel_issue(forge.repo(full_name), issue, name, request.login, now):
        raise payloads.Rejected(404, payloads.error("Label does not exist", status=404))
    issue.updated_at = max(issue.updated_at, now)
    return Reply(200, forge.label_payloads(full_name, issue.labels))


def check_assignee(forge: ForgeState, request: FakeRequest) -> Reply:
    full_name, login = request.params
    if not forge.can_push(forge.repo(full_name), login):
        raise payloads.Rejected(404, payloads.not_found())
    return Reply(204, raw=b"")


def get_user(forge: ForgeState, request: FakeRequest) -> Reply:
    assert request.login is not None  # the dispatcher answers 401 first
    return Reply(200, payloads.private_user(forge.url, forge.url, request.login))


ROUTES: list[Route[ForgeState]] = [
    route("GET", rf"{REPO}/issues/(\d+)/labels", list_issue_labels),
    route("POST", rf"{REPO}/issues/(\d+)/labels", add_labels),
    route("DELETE", rf"{REPO}/issues/(\d+)/labels/([^/]+)", remove_label),
    route("GET", rf"{REPO}/labels", list_repo_labels),
    route("GET", rf"{REPO}/assignees/([^/]+)", check_assignee),
    route("GET", r"/user", get_user),
]
