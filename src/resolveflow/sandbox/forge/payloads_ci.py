"""JSON payloads for pull requests, check runs and workflow runs, for ``FakeGitHubServer``.

Same rule as ``payloads``: complete objects that pass githubkit's models
(``PullRequest``, ``Repository``, ``MinimalRepository``, ``CheckRun``, ``Integration``,
``WorkflowRun``, ``PullRequestMinimal``), every required field present with the right type.
HTML URLs follow github.com's layout (``{html}/{owner}/{repo}/pull/{n}``,
``{html}/{owner}/{repo}/runs/{check_run_id}``, ``{html}/{owner}/{repo}/actions/runs/{run_id}``) so
links copied into issue bodies can be recognised by the same patterns as real ones.
"""

from __future__ import annotations

import zlib

from resolveflow.sandbox.forge.model import CheckRunRecord, WorkflowRunRecord
from resolveflow.sandbox.forge.payloads import JSON, node_id, simple_user

GITHUB_ACTIONS_APP_ID = 15368
APP_CREATED_AT = "2018-07-30T09:30:17Z"
REPO_CREATED_AT = "2020-01-01T00:00:00Z"


def repo_id(full_name: str) -> int:
    """Stable numeric id per repository."""
    return zlib.crc32(full_name.encode()) & 0x7FFFFFFF or 1


def minimal_repository(api: str, html: str, full_name: str) -> JSON:
    """``MinimalRepository``: the repository embedded in workflow runs."""
    owner = full_name.partition("/")[0]
    rid = repo_id(full_name)
    url = f"{api}/repos/{full_name}"
    templated = {
        "archive_url": "/{archive_format}{/ref}",
        "assignees_url": "/assignees{/user}",
        "blobs_url": "/git/blobs{/sha}",
        "branches_url": "/branches{/branch}",
        "collaborators_url": "/collaborators{/collaborator}",
        "comments_url": "/comments{/number}",
        "commits_url": "/commits{/sha}",
        "compare_url": "/compare/{base}...{head}",
        "contents_url": "/contents/{+path}",
        "contributors_url": "/contributors",
        "deployments_url": "/deployments",
        "downloads_url": "/downloads",
        "events_url": "/events",
        "forks_url": "/forks",
        "git_commits_url": "/git/commits{/sha}",
        "git_refs_url": "/git/refs{/sha}",
        "git_tags_url": "/git/tags{/sha}",
        "hooks_url": "/hooks",
        "issue_comment_url": "/issues/comments{/number}",
        "issue_events_url": "/issues/events{/number}",
        "issues_url": "/issues{/number}",
        "keys_url": "/keys{/key_id}",
        "labels_url": "/labels{/name}",
        "languages_url": "/languages",
        "merges_url": "/merges",
        "milestones_url": "/milestones{/number}",
        "notifications_url": "/notifications{?since,all,participating}",
        "pulls_url": "/pulls{/number}",
        "releases_url": "/releases{/id}",
        "stargazers_url": "/stargazers",
        "statuses_url": "/statuses/{sha}",
        "subscribers_url": "/subscribers",
        "subscription_url": "/subscription",
        "tags_url": "/tags",
        "teams_url": "/teams",
        "trees_url": "/git/trees{/sha}",
    }
    payload: JSON = {
        "id": rid,
        "node_id": node_id("R", rid),
        "name": full_name.partition("/")[2],
        "full_name": full_name,
        "owner": simple_user(api, html, owner),
        "private": False,
        "html_url": f"{html}/{full_name}",
        "description": None,
        "fork": False,
        "url": url,
    }
    payload.update({key: url + suffix for key, suffix in templated.items()})
    return payload


def repository(api: str, html: str, full_name: str) -> JSON:
    """``Repository``: the repository embedded in a pull request's ``head`` and ``base``."""
    host = html.split("://", 1)[-1]
    payload = minimal_repository(api, html, full_name)
    payload.update(
        {
            "git_url": f"git://{host}/{full_name}.git",
            "ssh_url": f"git@{host}:{full_name}.git",
            "clone_url": f"{html}/{full_name}.git",
            "svn_url": f"{html}/{full_name}",
            "mirror_url": None,
            "homepage": None,
            "language": "Python",
            "license": None,
            "forks": 0,
            "forks_count": 0,
            "stargazers_count": 0,
            "watchers_count": 0,
            "watchers": 0,
            "size": 1024,
            "default_branch": "main",
            "open_issues_count": 0,
            "open_issues": 0,
            "is_template": False,
            "topics": [],
            "has_issues": True,
            "has_projects": True,
            "has_wiki": True,
            "has_pages": False,
            "has_discussions": False,
            "archived": False,
            "disabled": False,
            "visibility": "public",
            "pushed_at": REPO_CREATED_AT,
            "created_at": REPO_CREATED_AT,
            "updated_at": REPO_CREATED_AT,
        }
    )
    return payload


def pull_request(
    api: str,
    html: str,
    full_name: str,
    *,
    issue_payload: JSON,
    pull_id: int,
    head_sha: str,
    head_ref: str,
    base_ref: str,
    base_sha: str,
    merged_at: str | None,
    draft: bool,
) -> JSON:
    """``PullRequest`` (``GET /repos/{o}/{r}/pulls/{n}``), built around the issue it shares."""
    number = issue_payload["number"]
    url = f"{api}/repos/{full_name}/pulls/{number}"
    issue_url = f"{api}/repos/{full_name}/issues/{number}"
    owner = full_name.partition("/")[0]
    repo = repository(api, html, full_name)
    links = {
        "self": url,
        "html": f"{html}/{full_name}/pull/{number}",
        "issue": issue_url,
        "comments": f"{issue_url}/comments",
        "review_comments": f"{url}/comments",
        "review_comment": f"{api}/repos/{full_name}/pulls/comments{{/number}}",
        "commits": f"{url}/commits",
        "statuses": f"{api}/repos/{full_name}/statuses/{head_sha}",
    }
    return {
        "url": url,
        "id": pull_id,
        "node_id": node_id("PR", pull_id),
        "html_url": links["html"],
        "diff_url": f"{links['html']}.diff",
        "patch_url": f"{links['html']}.patch",
        "issue_url": issue_url,
        "commits_url": links["commits"],
        "review_comments_url": links["review_comments"],
        "review_comment_url": links["review_comment"],
        "comments_url": links["comments"],
        "statuses_url": links["statuses"],
        "number": number,
        "state": issue_payload["state"],
        "locked": False,
        "title": issue_payload["title"],
        "user": issue_payload["user"],
        "body": issue_payload["body"],
        "labels": issue_payload["labels"],  # the Label shape, including archived_by: null
        "milestone": None,
        "active_lock_reason": None,
        "created_at": issue_payload["created_at"],
        "updated_at": issue_payload["updated_at"],
        "closed_at": issue_payload["closed_at"],
        "merged_at": merged_at,
        "merge_commit_sha": None,
        "assignee": issue_payload["assignee"],
        "assignees": issue_payload["assignees"],
        "requested_reviewers": [],
        "requested_teams": [],
        "head": {
            "label": f"{owner}:{head_ref}",
            "ref": head_ref,
            "sha": head_sha,
            "user": repo["owner"],
            "repo": repo,
        },
        "base": {
            "label": f"{owner}:{base_ref}",
            "ref": base_ref,
            "sha": base_sha,
            "user": repo["owner"],
            "repo": repo,
        },
        "_links": {name: {"href": href} for name, href in links.items()},
        "author_association": issue_payload["author_association"],
        "auto_merge": None,
        "draft": draft,
        "merged": merged_at is not None,
        "mergeable": None if merged_at else True,
        "rebaseable": None if merged_at else True,
        "mergeable_state": "unknown" if merged_at else "clean",
        "merged_by": issue_payload["user"] if merged_at else None,
        "comments": issue_payload["comments"],
        "review_comments": 0,
        "maintainer_can_modify": False,
        "commits": 1,
        "additions": 10,
        "deletions": 2,
        "changed_files": 1,
    }


def pull_request_minimal(
    api: str, full_name: str, *, pull_id: int, number: int, head: tuple[str, str], base: str
) -> JSON:
    """``PullRequestMinimal``: how check runs and workflow runs point at their pull requests."""
    name = full_name.partition("/")[2]
    repo = {"id": repo_id(full_name), "url": f"{api}/repos/{full_name}", "name": name}
    head_ref, head_sha = head
    return {
        "id": pull_id,
        "number": number,
        "url": f"{api}/repos/{full_name}/pulls/{number}",
        "head": {"ref": head_ref, "sha": head_sha, "repo": repo},
        "base": {"ref": base, "sha": "0" * 40, "repo": repo},
    }


def github_actions_app(api: str, html: str) -> JSON:
    """``Integration``: the GitHub Actions app that owns workflow check runs."""
    return {
        "id": GITHUB_ACTIONS_APP_ID,
        "slug": "github-actions",
        "node_id": node_id("MDM6QXBw", GITHUB_ACTIONS_APP_ID),
        "owner": simple_user(api, html, "github"),
        "name": "GitHub Actions",
        "description": "Automate your workflow from idea to production",
        "external_url": "https://help.github.com/en/actions",
        "html_url": f"{html}/apps/github-actions",
        "created_at": APP_CREATED_AT,
        "updated_at": APP_CREATED_AT,
        "permissions": {"actions": "write", "checks": "write", "contents": "write"},
        "events": ["check_run", "check_suite", "pull_request", "push", "workflow_dispatch"],
    }


def check_run(
    api: str,
    html: str,
    full_name: str,
    *,
    run: CheckRunRecord,
    pull_requests: list[JSON],
) -> JSON:
    """``CheckRun``; ``output.title``/``output.summary`` carry what the run reported."""
    url = f"{api}/repos/{full_name}/check-runs/{run.id}"
    html_url = f"{html}/{full_name}/runs/{run.id}"
    return {
        "id": run.id,
        "name": run.name,
        "node_id": node_id("CR", run.id),
        "head_sha": run.head_sha,
        "external_id": "",
        "url": url,
        "html_url": html_url,
        "details_url": run.details_url or html_url,
        "status": run.status,
        "conclusion": run.conclusion,
        "started_at": run.started_at,
        "completed_at": run.completed_at,
        "output": {
            "title": run.title,
            "summary": run.summary,
            "text": None,
            "annotations_count": 0,
            "annotations_url": f"{url}/annotations",
        },
        "check_suite": {"id": run.check_suite_id},
        "app": github_actions_app(api, html),
        "pull_requests": pull_requests,
    }


def check_runs_page(total_count: int, runs: list[JSON]) -> JSON:
    """The object ``GET .../commits/{ref}/check-runs`` answers (not a bare list)."""
    return {"total_count": total_count, "check_runs": runs}


def workflow_run(
    api: str,
    html: str,
    full_name: str,
    *,
    run: WorkflowRunRecord,
    pull_requests: list[JSON],
) -> JSON:
    """``WorkflowRun`` (``GET /repos/{o}/{r}/actions/runs/{id}``)."""
    url = f"{api}/repos/{full_name}/actions/runs/{run.id}"
    workflow_url = f"{api}/repos/{full_name}/actions/workflows/{run.workflow_id}"
    suite_id = run.id + 7_000_000
    actor = simple_user(api, html, run.actor)
    repo = minimal_repository(api, html, full_name)
    return {
        "id": run.id,
        "name": run.name,
        "node_id": node_id("WFR", run.id),
        "check_suite_id": suite_id,
        "check_suite_node_id": node_id("CS", suite_id),
        "head_branch": run.head_branch,
        "head_sha": run.head_sha,
        "path": run.path,
        "display_title": run.display_title,
        "run_number": run.run_number,
        "run_attempt": 1,
        "event": run.event,
        "status": run.status,
        "conclusion": run.conclusion,
        "workflow_id": run.workflow_id,
        "url": url,
        "html_url": f"{html}/{full_name}/actions/runs/{run.id}",
        "pull_requests": pull_requests,
        "created_at": run.created_at,
        "updated_at": run.updated_at,
        "run_started_at": run.created_at,
        "actor": actor,
        "triggering_actor": actor,
        "referenced_workflows": [],
        "jobs_url": f"{url}/jobs",
        "logs_url": f"{url}/logs",
        "check_suite_url": f"{api}/repos/{full_name}/check-suites/{suite_id}",
        "artifacts_url": f"{url}/artifacts",
        "cancel_url": f"{url}/cancel",
        "rerun_url": f"{url}/rerun",
        "previous_attempt_url": None,
        "workflow_url": workflow_url,
        "head_commit": {
            "id": run.head_sha,
            "tree_id": run.head_sha[::-1],
            "message": run.display_title,
            "timestamp": run.created_at,
            "author": {"name": run.actor, "email": f"{run.actor}@users.noreply.github.com"},
            "committer": {"name": "GitHub", "email": "noreply@github.com"},
        },
        "repository": repo,
        "head_repository": repo,
    }
