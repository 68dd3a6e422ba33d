"""Pull requests, check runs and workflow runs: seeding functions and the REST routes over them.

Routes (``ROUTES``):

- ``GET /repos/{o}/{r}/pulls/{n}``: the pull request seeded with ``add_pull_request`` (or
  ``add_issue(..., is_pull_request=True)``, which gets a generated head sha).
- ``GET /repos/{o}/{r}/commits/{ref}/check-runs``: ``{total_count, check_runs}``, paginated with
  ``Link``. Like GitHub, ``ref`` may be a sha or a pull request's head branch, an unknown ref is a
  422 "No commit found", and the default ``filter=latest`` keeps only the newest run per name.
- ``GET /repos/{o}/{r}/check-runs/{id}`` and ``GET /repos/{o}/{r}/actions/runs/{id}``.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterable
from typing import Any

from resolveflow.sandbox.forge import payloads
from resolveflow.sandbox.forge import payloads_ci as ci_payloads
from resolveflow.sandbox.forge.model import (
    CheckRunRecord,
    FakeRequest,
    PullRecord,
    RepoRecord,
    Timestamp,
    WorkflowRunRecord,
    check_choice,
    fake_sha,
    timestamp,
)
from resolveflow.sandbox.forge.routing import REPO, Route, route
from resolveflow.sandbox.forge.state import ForgeState
from resolveflow.sandbox.loopback import Reply

CHECK_STATUSES = frozenset(
    {"queued", "in_progress", "completed", "waiting", "requested", "pending"}
)
CHECK_CONCLUSIONS = frozenset(
    {"success", "failure", "neutral", "cancelled", "skipped", "timed_out", "action_required"}
)


# --- seeding (each takes the lock) ---------------------------------------------------------


def add_pull_request(
    forge: ForgeState,
    full_name: str,
    number: int,
    title: str = "",
    body: str = "",
    *,
    head_sha: str,
    labels: Iterable[str] = (),
    user: str = "octocat",
    state: str | None = None,
    created_at: Timestamp = None,
    updated_at: Timestamp = None,
    closed_at: Timestamp = None,
    merged_at: Timestamp = None,
    author_association: str = "CONTRIBUTOR",
    head_ref: str | None = None,
    base_ref: str = "main",
    draft: bool = False,
) -> None:
    """Seed pull request ``number``: an issue with ``pull_request`` plus the pull object.

    ``state`` defaults to ``closed`` when ``merged_at`` is given (and ``closed_at`` to the
    merge time), else ``open``; ``head_ref`` defaults to ``patch-{number}``.
    """
    merged = timestamp(merged_at)
    state = state or ("closed" if merged else "open")
    if merged and state != "closed":
        raise ValueError("a merged pull request must be closed")
    with forge.lock:
        pull = PullRecord(
            forge.new_id(), head_sha, head_ref or f"patch-{number}", base_ref, merged, draft
        )
        forge.store_issue(
            full_name,
            number,
            title,
            body,
            labels=labels,
            user=user,
            state=state,
            created_at=created_at,
            updated_at=updated_at,
            closed_at=closed_at or merged,
            author_association=author_association,
            is_pull_request=True,
            pull=pull,
        )


def add_check_run(
    forge: ForgeState,
    full_name: str,
    head_sha: str,
    name: str,
    *,
    status: str = "completed",
    conclusion: str | None = "success",
    summary: str | None = None,
    title: str | None = None,
    details_url: str | None = None,
    started_at: Timestamp = None,
    completed_at: Timestamp = None,
) -> int:
    """Seed a check run on commit ``head_sha``; returns its id.

    ``summary``/``title`` become ``output.summary``/``output.title``. A run that is not
    ``completed`` has no conclusion and no ``completed_at`` (whatever was passed).
    """
    check_choice("status", status, CHECK_STATUSES)
    done = status == "completed"
    check_choice("conclusion", conclusion if done else None, CHECK_CONCLUSIONS)
    now = payloads.now_iso()
    started = timestamp(started_at, now) or now
    with forge.lock:
        repo = forge.repos.setdefault(full_name, RepoRecord(full_name))
        run_id = forge.new_id()
        repo.check_runs[run_id] = CheckRunRecord(
            id=run_id,
            head_sha=head_sha,
            name=name,
            status=status,
            conclusion=conclusion if done else None,
            title=title,
            summary=summary,
            details_url=details_url,
            started_at=started,
            completed_at=timestamp(completed_at, max(now, started)) if done else None,
            check_suite_id=zlib.crc32(f"{full_name}@{head_sha}".encode()) & 0x7FFFFFFF,
        )
        repo.commits.add(head_sha)
        return run_id


def add_workflow_run(
    forge: ForgeState,
    full_name: str,
    name: str,
    *,
    head_sha: str | None = None,
    status: str = "completed",
    conclusion: str | None = "failure",
    display_title: str | None = None,
    head_branch: str = "main",
    event: str = "push",
    path: str | None = None,
    actor: str = "octocat",
    created_at: Timestamp = None,
    updated_at: Timestamp = None,
) -> int:
    """Seed a GitHub Actions workflow run; returns its id.

    ``head_sha`` defaults to a generated sha, ``display_title`` to ``name``, ``path`` to
    ``.github/workflows/{name}.yml``. A run that is not ``completed`` has no conclusion.
    """
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "ci"
    workflow_path = path or f".github/workflows/{slug}.yml"
    now = payloads.now_iso()
    created = timestamp(created_at, now) or now
    with forge.lock:
        repo = forge.repos.setdefault(full_name, RepoRecord(full_name))
        run_id = forge.new_id()
        sha = head_sha or fake_sha(full_name, "workflow-run", run_id)
        run_number = 1 + sum(r.path == workflow_path for r in repo.workflow_runs.values())
        repo.workflow_runs[run_id] = WorkflowRunRecord(
            id=run_id,
            name=name,
            head_sha=sha,
            head_branch=head_branch,
            status=status,
            conclusion=conclusion if status == "completed" else None,
            display_title=display_title if display_title is not None else name,
            event=event,
            path=workflow_path,
            run_number=run_number,
            workflow_id=zlib.crc32(f"{full_name}:{workflow_path}".encode()) & 0x7FFFFFFF,
            created_at=created,
            updated_at=timestamp(updated_at, max(now, created)) or now,
            actor=actor,
        )
        repo.commits.add(sha)
        return run_id


# --- routes (lock held) --------------------------------------------------------------------


def get_pull(forge: ForgeState, request: FakeRequest) -> Reply:
    full_name, number = request.params
    issue = forge.issue(full_name, int(number))
    if issue.pull is None:
        raise payloads.Rejected(404, payloads.not_found())
    base_sha = fake_sha(full_name, issue.pull.base_ref)
    payload = ci_payloads.pull_request(
        forge.url,
        forge.url,
        full_name,
        issue_payload=forge.issue_payload(full_name, issue),
        pull_id=issue.pull.id,
        head_sha=issue.pull.head_sha,
        head_ref=issue.pull.head_ref,
        base_ref=issue.pull.base_ref,
        base_sha=base_sha,
        merged_at=issue.pull.merged_at,
        draft=issue.pull.draft,
    )
    return Reply(200, payload)


def list_check_runs(forge: ForgeState, request: FakeRequest) -> Reply:
    full_name, ref = request.params
    repo = forge.repo(full_name)
    sha = _resolve_ref(forge, repo, ref)
    runs = sorted(
        (run for run in repo.check_runs.values() if run.head_sha == sha), key=lambda r: r.id
    )
    query = request.args
    if "check_name" in query:
        runs = [run for run in runs if run.name == query["check_name"]]
    if "status" in query:
        runs = [run for run in runs if run.status == query["status"]]
    if query.get("filter", "latest") == "latest":  # GitHub's default: newest run per name
        newest = {run.name: run for run in runs}
        runs = [run for run in runs if newest[run.name] is run]
    items = [_check_run_payload(forge, full_name, run) for run in runs]
    page, link = payloads.paginate(
        items, base_url=forge.url, path=request.path, query=request.query
    )
    body = ci_payloads.check_runs_page(len(items), page)
    return Reply(200, body, headers={"Link": link} if link else {})


def get_check_run(forge: ForgeState, request: FakeRequest) -> Reply:
    full_name, run_id = request.params
    run = forge.repo(full_name).check_runs.get(int(run_id))
    if run is None:
        raise payloads.Rejected(404, payloads.not_found())
    return Reply(200, _check_run_payload(forge, full_name, run))


def get_workflow_run(forge: ForgeState, request: FakeRequest) -> Reply:
    full_name, run_id = request.params
    run = forge.repo(full_name).workflow_runs.get(int(run_id))
    if run is None:
        raise payloads.Rejected(404, payloads.not_found())
    pulls = _pulls_for(forge, full_name, run.head_sha)
    payload = ci_payloads.workflow_run(
        forge.url, forge.url, full_name, run=run, pull_requests=pulls
    )
    return Reply(200, payload)


ROUTES: list[Route[ForgeState]] = [
    route("GET", rf"{REPO}/pulls/(\d+)", get_pull),
    route("GET", rf"{REPO}/commits/(.+)/check-runs", list_check_runs),
    route("GET", rf"{REPO}/check-runs/(\d+)", get_check_run),
    route("GET", rf"{REPO}/actions/runs/(\d+)", get_workflow_run),
]


# --- helpers (lock held) -------------------------------------------------------------------


def _resolve_ref(forge: ForgeState, repo: RepoRecord, ref: str) -> str:
    """A seeded sha (or unique prefix of 7+), or an open pull request's head branch."""
    if ref in repo.commits:
        return ref
    if len(ref) >= 7 and re.fullmatch(r"[0-9a-f]+", ref):
        matches = [sha for sha in repo.commits if sha.startswith(ref)]
        if len(matches) == 1:
            return matches[0]
    for issue in repo.issues.values():
        if issue.pull is not None and issue.state == "open" and issue.pull.head_ref == ref:
            return issue.pull.head_sha
    message = f"No commit found for SHA: {ref}"
    raise payloads.Rejected(422, payloads.error(message, status=422))


def _pulls_for(forge: ForgeState, full_name: str, head_sha: str) -> list[dict[str, Any]]:
    """Open pull requests whose head is ``head_sha``, as check runs list them."""
    return [
        ci_payloads.pull_request_minimal(
            forge.url,
            full_name,
            pull_id=issue.pull.id,
            number=issue.number,
            head=(issue.pull.head_ref, issue.pull.head_sha),
            base=issue.pull.base_ref,
        )
        for issue in forge.repo(full_name).issues.values()
        if issue.pull is not None and issue.state == "open" and issue.pull.head_sha == head_sha
    ]


def _check_run_payload(forge: ForgeState, full_name: str, run: CheckRunRecord) -> dict[str, Any]:
    pulls = _pulls_for(forge, full_name, run.head_sha)
    return ci_payloads.check_run(forge.url, forge.url, full_name, run=run, pull_requests=pulls)
