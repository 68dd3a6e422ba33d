"""Gathering a triage run's evidence through the GitHub adapter (reads only).

Returns plain JSON (graph state must be JSON); ``triage.domain.evidence.normalize`` validates it.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from datetime import datetime
from typing import Any

from resolveflow.adapters.github.protocol import CheckRunData, GitHub, RepoName
from resolveflow.errors import ProviderRejected

MAX_LINKED_RUNS = 10  # issue text is untrusted: a thousand links must not mean a thousand calls


def _jsonable(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, str):
        return value.replace("\x00", "")  # Postgres jsonb cannot hold NUL; GitHub text can
    if isinstance(value, tuple | list):
        return [_jsonable(item) for item in value]
    if isinstance(value, dict):
        return {key: _jsonable(item) for key, item in value.items()}
    return value


def as_json(record: Any) -> dict[str, Any]:
    data: dict[str, Any] = _jsonable(dataclasses.asdict(record))
    return data


def linked_runs(repo: RepoName, texts: list[str]) -> tuple[list[int], list[int]]:
    """Workflow-run and check-run ids linked from ``texts``, for this repository only."""
    owner, name = re.escape(repo.owner), re.escape(repo.name)
    pattern = re.compile(rf"/{owner}/{name}/(actions/)?runs/(\d+)(?:/jobs?/(\d+))?", re.IGNORECASE)
    workflow_runs: dict[int, None] = {}
    check_runs: dict[int, None] = {}
    for text in texts:
        for match in pattern.finditer(text):
            is_actions, run_id, job_id = match.group(1), int(match.group(2)), match.group(3)
            if job_id is not None:
                check_runs[int(job_id)] = None  # a job's page is a check run of the run
            if is_actions:
                workflow_runs[run_id] = None
            else:
                check_runs[run_id] = None
    return list(workflow_runs)[:MAX_LINKED_RUNS], list(check_runs)[:MAX_LINKED_RUNS]


# Comments by these may point at CI runs; anyone else's links are ignored, so a passer-by cannot
# turn an issue "deterministic" by linking some old failed run of the repository.
TRUSTED_ASSOCIATIONS = frozenset({"OWNER", "MEMBER", "COLLABORATOR"})


def gather(github: GitHub, repository: str, number: int) -> dict[str, Any]:
    """Read the issue, every comment, the CI results and the repository's labels."""
    repo = RepoName.parse(repository)
    issue = github.get_issue(repo, number)
    comments = github.list_issue_comments(repo, number)
    runs: list[CheckRunData] = []
    notes: list[str] = []
    if issue.is_pull_request:
        head = github.pull_request_head_sha(repo, number)
        runs = github.list_check_runs_for_ref(repo, head)
    else:
        texts = [issue.body] + [
            c.body
            for c in comments
            if c.author == issue.author or c.author_association in TRUSTED_ASSOCIATIONS
        ]
        workflow_ids, check_ids = linked_runs(repo, texts)
        runs, notes = _read_linked(github, repo, workflow_ids, check_ids)
    return {
        "repository": repo.full_name.lower(),
        "issue": as_json(issue),
        "comments": [as_json(comment) for comment in comments],
        "check_runs": [as_json(run) for run in runs],
        "repository_labels": github.list_repository_labels(repo),
        "notes": notes,
    }


def _read_linked(
    github: GitHub, repo: RepoName, workflow_ids: list[int], check_ids: list[int]
) -> tuple[list[CheckRunData], list[str]]:
    """Linked runs that cannot be read (deleted, mistyped, hostile) are skipped with a note;
    one bad link must not fail the whole run."""
    runs: list[CheckRunData] = []
    notes: list[str] = []
    reads: list[tuple[Callable[[RepoName, int], CheckRunData], int, str]] = [
        (github.get_workflow_run, run_id, "workflow run") for run_id in workflow_ids
    ]
    reads += [(github.get_check_run, run_id, "check run") for run_id in check_ids]
    for read, run_id, kind in reads:
        try:
            runs.append(read(repo, run_id))
        except ProviderRejected as exc:
            notes.append(f"linked {kind} {run_id} could not be read ({exc.status}); skipped")
    return runs, notes
