"""The production ``GitHub`` adapter, built on githubkit 0.16 over httpx.

Why it looks the way it does:

- **Never retried here.** githubkit retries rate limits and 5xx by default; a retried POST can post
  a comment (or open an issue) twice. ``auto_retry=False``; retrying is the executor's decision,
  after reconciling.
- **Errors say what may have happened**, per the contract in ``adapters.github.protocol``: rate
  limited and rejected mean nothing was written; outcome-unknown means a write may have landed;
  unavailable means the request was never sent. When in doubt we say outcome-unknown, never "not
  sent".
- **Connections are pooled across threads.** githubkit opens (and closes) a fresh ``httpx.Client``
  per request unless used as a context manager, and that context is per thread. We hand it one
  shared, thread-safe ``httpx.HTTPTransport`` whose ``close()`` is ignored, so keep-alive
  connections survive between calls and threads; ``GitHubKitClient.close()`` closes the pool.
- **Responses are validated** through githubkit's typed REST methods and ``.parsed_data``.
- **Tokens never appear in messages or logs**; every message is scrubbed before raising.
- **Failures are classified** in ``errors`` (HTTP status, headers and httpx exceptions to the
  domain errors above, plus token masking); ``session`` catches, scrubs and logs them.
- **Reads are validated too.** A read whose 2xx body fails the schema (missing field, wrong type,
  an HTML page from a proxy) raises a plain ``ProviderError`` naming the call; 404/410 raise
  ``ProviderRejected``; 5xx raise ``ProviderOutcomeUnknown`` (nothing to reconcile for a read).
- **Nothing caller-supplied reaches a URL unchecked.** githubkit interpolates path parameters
  unescaped, so owner/name, numbers and git refs are validated before anything is sent.
- **Timeouts are per phase.** httpx applies ``timeout_seconds`` separately to waiting for a pooled
  connection, connecting, writing and each read, so one call can last a few multiples of it
  (pool + connect + write + read) before it fails; size leases for that, not for one timeout.

Layout: ``session`` (construction, auth, pool, paging, error translation) <- ``reads`` (the read
methods) <- this module (the writes); ``validation`` checks arguments, ``conversions`` turns
githubkit's models into the protocol's dataclasses.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any, cast

from githubkit import Response
from githubkit_schemas.latest.models import Issue as GitHubIssue

from resolveflow.adapters.base import writes
from resolveflow.adapters.github.conversions import created_issue, issue_data
from resolveflow.adapters.github.protocol import CreatedIssue, IssueData, PostedComment, RepoName
from resolveflow.adapters.github.reads import GitHubReads
from resolveflow.adapters.github.validation import check_new_issue, check_target, repo_call
from resolveflow.errors import InvalidInput

if TYPE_CHECKING:
    from resolveflow.adapters.github.session import LabelPages

__all__ = ["GitHubKitClient"]


class GitHubKitClient(GitHubReads):
    """``GitHub`` protocol implementation; safe to share between threads.

    Construction, the pool and error translation come from ``GitHubSession``, the reads from
    ``GitHubReads``; the writes below are never retried here.
    """

    @writes
    def post_comment(
        self, repo: RepoName, issue_number: int, body: str, *, token: str | None = None
    ) -> PostedComment:
        """Create one comment and return what GitHub stored."""
        call = repo_call(
            "post_comment", "POST", repo, f"issues/{issue_number}/comments", write=True
        )
        check_target(repo, issue_number)
        if not body:
            raise InvalidInput("A comment body must not be empty.")
        issues = self._github(token).rest.issues
        response = self._send(
            call,
            token,
            partial(issues.create_comment, repo.owner, repo.name, issue_number, body=body),
        )
        comment = self._parse(call, token, response)
        stored = comment.body if isinstance(comment.body, str) else body
        return PostedComment(
            id=comment.id, url=comment.html_url, body=stored, created_at=comment.created_at
        )

    @writes
    def close_issue_as_duplicate(
        self,
        repo: RepoName,
        issue_number: int,
        duplicate_of: int | None,
        *,
        token: str | None = None,
    ) -> IssueData:
        """Close the issue with ``state_reason: duplicate`` (and the original's id, when known);
        closing an issue that is already closed changes nothing on GitHub."""
        call = repo_call(
            "close_issue_as_duplicate", "PATCH", repo, f"issues/{issue_number}", write=True
        )
        check_target(repo, issue_number)
        issues = self._github(token).rest.issues

        def request() -> Response[GitHubIssue, Any]:
            # The answer is the issue (githubkit's model for it adds optional suggestions).
            if duplicate_of is None:
                sent = issues.update(
                    repo.owner, repo.name, issue_number, state="closed", state_reason="duplicate"
                )
            else:
                sent = issues.update(
                    repo.owner,
                    repo.name,
                    issue_number,
                    state="closed",
                    state_reason="duplicate",
                    duplicate_issue_id=duplicate_of,
                )
            return Response(sent.raw_response, GitHubIssue)

        response = self._send(call, token, request)
        return issue_data(self._parse(call, token, response))

    @writes
    def add_labels(
        self, repo: RepoName, issue_number: int, labels: list[str], *, token: str | None = None
    ) -> list[str]:
        """Add labels (GitHub creates unknown ones); returns the issue's labels afterwards."""
        call = repo_call("add_labels", "POST", repo, f"issues/{issue_number}/labels", write=True)
        check_target(repo, issue_number)
        if not labels or not all(isinstance(name, str) and name for name in labels):
            raise InvalidInput("add_labels needs at least one non-empty label name.")
        issues = self._github(token).rest.issues
        request = partial(
            issues.add_labels, repo.owner, repo.name, issue_number, labels=list(labels)
        )
        response = self._send(call, token, cast("LabelPages", request))
        return [label.name for label in self._parse(call, token, response)]

    @writes
    def create_issue(
        self,
        repo: RepoName,
        *,
        title: str,
        body: str,
        labels: list[str],
        assignees: list[str],
        token: str | None = None,
    ) -> CreatedIssue:
        """Open one issue (``POST /repos/{o}/{r}/issues``) and return what GitHub stored.

        GitHub silently drops labels and assignees the token may not set (no push access), so
        the caller compares ``labels``/``assignees`` of the result with what it asked for.
        """
        call = repo_call("create_issue", "POST", repo, "issues", write=True)
        check_target(repo, 1)
        check_new_issue(title, body, labels, assignees)
        issues = self._github(token).rest.issues
        request = partial(
            issues.create,
            repo.owner,
            repo.name,
            title=title,
            body=body,
            labels=list(labels),
            assignees=list(assignees),
        )
        response = self._send(call, token, request)
        return created_issue(self._parse(call, token, response))
