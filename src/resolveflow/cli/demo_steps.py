"""The demo's steps over HTTP, as a client of the running app: signed webhooks in, runs out.

``demo_run`` owns the processes (Postgres, the forge, the web server and worker); this module
only talks to them: it delivers what GitHub would send when an issue is opened, waits for the
worker's runs, approves one, and says what happened, for people or as one JSON document.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import secrets
import time
from collections.abc import Callable
from typing import Any, TypeVar

import httpx
from rich.text import Text

from resolveflow.cli import plain
from resolveflow.cli.output import console
from resolveflow.errors import ResolveFlowError

WAIT_SECONDS = 90.0
SETTLED = ("sent", "partial", "failed", "unknown")
T = TypeVar("T")
_ISSUE_NUMBER = re.compile(r"/issues/(\d+)$")


def deliver_issue(url: str, secret: str, repository: str, number: int) -> None:
    """What GitHub sends when an issue is opened, signed with the webhook secret."""
    body = json.dumps(
        {
            "action": "opened",
            # updated_at tells this event from a replay of it (docs/web.md, webhooks)
            "issue": {
                "number": number,
                "updated_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            },
            "repository": {"full_name": repository},
            "sender": {"login": "octocat"},
        }
    ).encode()
    signature = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    response = httpx.post(
        f"{url}/webhooks/github",
        content=body,
        headers={
            "X-GitHub-Event": "issues",
            "X-GitHub-Delivery": secrets.token_hex(16),
            "X-Hub-Signature-256": signature,
            "Content-Type": "application/json",
        },
        timeout=10,
    )
    response.raise_for_status()


def poll(what: str, check: Callable[[], T | None]) -> T:
    deadline = time.monotonic() + WAIT_SECONDS
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.25)
    raise ResolveFlowError(f"the demo gave up waiting for {what}")


def triaged(api: httpx.Client, repository: str, numbers: list[int]) -> list[dict[str, Any]]:
    """Waits until the worker has taken a run for each issue past classification; their pages."""

    def check() -> list[dict[str, Any]] | None:
        runs: list[dict[str, Any]] = api.get("/api/v1/runs", params={"limit": 500}).json()
        by_target = {run["target"]: run for run in runs if run["status"] != "running"}
        found = [by_target.get(f"{repository}#{number}") for number in numbers]
        return [run for run in found if run] if all(found) else None

    issues = ", ".join(f"#{number}" for number in numbers)
    return [run_summary(api, run["run_id"]) for run in poll(f"the runs of {issues}", check)]


def run_summary(api: httpx.Client, run_id: str) -> dict[str, Any]:
    """A run as the demo reports it: issue, branch, rule, what is proposed, the investigation."""
    page = api.get(f"/api/v1/runs/{run_id}").json()
    action = (page.get("proposal") or {}).get("action") or {}
    return {
        "issue": int(page["target"].rpartition("#")[2]),
        "title": page["issue"]["title"],
        "run_id": run_id,
        "run_page": f"{str(api.base_url).rstrip('/')}/runs/{run_id}",
        "status": page["status"],
        "classification": page["classification"],
        "rule": page["rule"],
        "branch": page["branch"],
        "comment": action.get("comment"),
        "labels": action.get("labels") or [],
        "digest": page["digest"],
        "investigation": _investigation(page["investigation"]),
    }


def _investigation(found: dict[str, Any]) -> dict[str, Any] | None:
    """The latest investigation: whether a model was asked, and what it cites (for the ``none``
    provider, the retrieved issues at or above the relevance floor: docs/review.md)."""
    if not found["investigations"]:
        return None
    record = found["investigations"][-1]
    related = [
        snippet
        for snippet in record["snippets"]
        if snippet["relevance"] >= record["relevance_floor"]
    ]
    numbers = [_ISSUE_NUMBER.search(snippet["url"] or "") for snippet in related]
    return {
        "provider": record["provider"],
        "model_calls": len(found["model_calls"]),
        "outcome": record["outcome"],
        "reason": record["reason"],
        "cited_issues": [int(match.group(1)) for match in numbers if match],
        "related": [
            {"title": snippet["title"], "url": snippet["url"], "relevance": snippet["relevance"]}
            for snippet in related
        ],
    }


def approve_and_wait(api: httpx.Client, run: dict[str, Any]) -> dict[str, Any]:
    """Approve the run's exact digest as the demo's maintainer; wait until the post settles."""
    decided = api.post(f"/api/v1/runs/{run['run_id']}/approve", json={"digest": run["digest"]})
    decided.raise_for_status()

    def settled() -> dict[str, Any] | None:
        proposal = api.get(f"/api/v1/runs/{run['run_id']}").json()["proposal"]
        execution = proposal.get("execution") or {}
        return proposal if execution.get("state") in SETTLED else None

    proposal = poll("the post", settled)
    execution = api.get(f"/api/v1/executions/{proposal['execution']['id']}").json()
    me = api.get("/api/v1/me").json()
    approval = proposal["approval"]
    return {
        "issue": run["issue"],
        "run_id": run["run_id"],
        "digest": proposal["digest"],
        "approved_by": me["subject"] if approval["principal_id"] == me["id"] else None,
        "approved_at": approval["decided_at"],
        "execution_id": execution["id"],
        "execution_state": execution["state"],
        "comment_url": execution["comment_url"],
        "labels_done": execution["labels_done"],
    }


# --- for people ----------------------------------------------------------------------------


def describe_run(run: dict[str, Any]) -> Text:
    """Two lines: the issue, then how it was classified and what is proposed, in the pages'
    words (``cli/plain.py``): "for a person to review (no rule matched)", never the values."""
    line = Text(f"#{run['issue']}  ", style="bold")
    line.append(run["title"])
    if run.get("arrived", "").endswith("after the inbox was up"):
        line.append("  (new: arrived by webhook)", style="yellow")
    classification = plain.words(run["classification"], "Classification")
    line.append(f"\n    {classification} ({plain.words(run['rule'], 'rule')})")
    investigation = run["investigation"]
    if investigation is not None:
        cited = ", ".join(f"#{number}" for number in investigation["cited_issues"])
        model = "no model" if investigation["model_calls"] == 0 else "a model"
        review = plain.words(investigation["outcome"], "ReviewOutcome")
        line.append(f": cites {cited or 'nothing'} ({model}; {review})")
    proposed = (["a comment"] if run["comment"] else []) + [
        f"label {label}" for label in run["labels"]
    ]
    status = plain.words(run["status"], "RunStatus")
    line.append(f" -> {' + '.join(proposed) or 'nothing'}; {status}")
    return line


def print_runs(runs: list[dict[str, Any]]) -> None:
    console.print(Text("Runs, one per open issue:", style="bold"))
    for run in runs:
        console.print(describe_run(run), soft_wrap=True)


def print_comment(run: dict[str, Any], heading: str) -> None:
    """The proposed comment verbatim: no panel, no wrapping, nothing cut."""
    console.print()
    console.print(Text(heading, style="bold"), soft_wrap=True)
    console.print(Text("-" * 8, style="dim"))
    console.print(Text(run["comment"] or ""), soft_wrap=True)
    console.print(Text("-" * 8, style="dim"))


def print_outcome(summary: dict[str, Any]) -> None:
    """What was approved, by whom, and where it was posted (``--once``)."""
    approved = summary["approved"]
    target = f"{summary['repository']}#{approved['issue']}"
    labels = ", ".join(approved["labels_on_issue"]) or "none"
    console.print()
    console.print(
        Text(f"Approved by {approved['approved_by']}: the comment above, for {target}", "bold"),
        soft_wrap=True,
    )
    console.print(Text(f"  digest {approved['digest']}"), soft_wrap=True)
    if approved["execution_state"] != "sent":
        ended = plain.state(approved["execution_state"])
        console.print(Text(f"Not posted: the execution ended {ended}"))
        return
    console.print(
        Text(f"Posted as @{approved['posted_as']}, once: {approved['comment_url']}", "green"),
        soft_wrap=True,
    )
    console.print(Text(f"  labels on the issue now: {labels}"), soft_wrap=True)
