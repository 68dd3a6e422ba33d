"""Gathering a triage run's evidence through the GitHub adapter (reads only).

Returns plain JSON (graph state must be JSON); ``domain.evidence.normalize`` validates it.
"""

from __future__ import annotations

import dataclasses
import re
from datetime import datetime
from typing import Any

from resolveflow.adapters.github import CheckRunData, GitHub, RepoName

MAX_LINKED_RUNS = 10  # issue text is untrusted: a thousand links must not mean a thousand calls


def _jsonable(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
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


def gather(github: GitHub, repository: str, number: int) -> dict[str, Any]:
    """Read the issue, every comment, the CI results and the repository's labels."""
    repo = RepoName.parse(repository)
    issue = github.get_issue(repo, number)
    comments = github.list_issue_comments(repo, number)
    runs: list[CheckRunData] = []
    if issue.is_pull_request:
        head = github.pull_request_head_sha(repo, number)
        runs = github.list_check_runs_for_ref(repo, head)
    else:
        workflow_ids, check_ids = linked_runs(
            repo, [issue.body, *(comment.body for comment in comments)]
        )
        runs = [github.get_workflow_run(repo, run_id) for run_id in workflow_ids]
        runs += [github.get_check_run(repo, run_id) for run_id in check_ids]
    return {
        "repository": repo.full_name.lower(),
        "issue": as_json(issue),
        "comments": [as_json(comment) for comment in comments],
        "check_runs": [as_json(run) for run in runs],
        "repository_labels": github.list_repository_labels(repo),
    }
