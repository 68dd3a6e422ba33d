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

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any, cast

from githubkit import Response
from githubkit.exception import RequestFailed
from githubkit_schemas.latest.models import Issue as GitHubIssue

from resolveflow.adapters.base import Call, writes
from resolveflow.adapters.github.conversions import created_issue, issue_data
from resolveflow.adapters.github.intent_form import (
    INTENT_FIELDS,
    labels_body,
    plain_only,
    refuses_object_form,
    remember_plain,
    state_body,
)
from resolveflow.adapters.github.protocol import (
    CreatedIssue,
    IntentNote,
    IssueData,
    LabelWrite,
    PostedComment,
    RepoName,
)
from resolveflow.adapters.github.reads import GitHubReads
from resolveflow.adapters.github.session import logger
from resolveflow.adapters.github.validation import (
    check_intent,
    check_label_writes,
    check_new_issue,
    check_target,
    repo_call,
)
from resolveflow.errors import InvalidInput, ProviderRejected

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
        note: IntentNote | None = None,
        suggest: bool = False,
        token: str | None = None,
    ) -> IssueData:
        """Close the issue with ``state_reason: duplicate`` (and the original's id, when known);
        closing an issue that is already closed changes nothing on GitHub. With ``note`` or
        ``suggest``, ``state`` goes in the object form (plain where the forge refuses it)."""
        call = repo_call(
            "close_issue_as_duplicate", "PATCH", repo, f"issues/{issue_number}", write=True
        )
        check_target(repo, issue_number)
        if note is not None:
            check_intent(note)

        def body(object_form: bool) -> dict[str, Any]:
            fields: dict[str, Any] = {
                "state": state_body(note, suggest, object_form),
                "state_reason": "duplicate",
            }
            if duplicate_of is not None:
                fields["duplicate_issue_id"] = duplicate_of
            return fields

        wants_object = note is not None or suggest
        return self._patch_issue(
            call, token, repo, issue_number, body, wants_object, None, suggest=suggest
        )

    @writes
    def set_issue_labels(
        self,
        repo: RepoName,
        issue_number: int,
        labels: list[LabelWrite],
        *,
        if_match: str | None = None,
        token: str | None = None,
    ) -> list[str]:
        """Replace the issue's labels with ``labels`` (see the protocol); the labels after."""
        call = repo_call("set_issue_labels", "PATCH", repo, f"issues/{issue_number}", write=True)
        check_target(repo, issue_number)
        check_label_writes(labels)

        def body(object_form: bool) -> dict[str, Any]:
            return {"labels": labels_body(labels, object_form)}

        wants_object = any(label.note is not None or label.suggest for label in labels)
        suggest = any(label.suggest for label in labels)
        issue = self._patch_issue(
            call, token, repo, issue_number, body, wants_object, if_match, suggest=suggest
        )
        return list(issue.labels)

    def _patch_issue(
        self,
        call: Call,
        token: str | None,
        repo: RepoName,
        issue_number: int,
        body: Callable[[bool], dict[str, Any]],
        wants_object: bool,
        if_match: str | None,
        *,
        suggest: bool = False,
    ) -> IssueData:
        """One ``PATCH`` of the issue, in the object form when wanted and the forge takes it;
        refused as such (422 naming the field), sent once more in the plain form, and the host
        remembered so its next write goes plain at once. A refusal wrote nothing: safe to send
        again. A suggestion never goes plain: the plain form would apply what was approved as
        a suggestion for the maintainer to accept, so it is refused instead."""
        host = str(self._config.base_url)
        github = self._github(token)
        url = f"/repos/{repo.owner}/{repo.name}/issues/{issue_number}"
        headers = {"If-Match": if_match} if if_match else None
        refused: list[bool] = []
        fields = frozenset(body(False)) & INTENT_FIELDS

        def request(object_form: bool) -> Callable[[], Response[GitHubIssue, Any]]:
            def send() -> Response[GitHubIssue, Any]:
                try:
                    return github.request(
                        "PATCH",
                        url,
                        json=body(object_form),
                        headers=headers,
                        response_model=GitHubIssue,
                    )
                except RequestFailed as exc:
                    if object_form and refuses_object_form(exc.response.raw_response, fields):
                        refused.append(True)
                    raise

            return send

        if suggest and plain_only(host):
            raise _no_suggestions(call)
        object_form = wants_object and not plain_only(host)
        try:
            response = self._send(call, token, request(object_form))
        except ProviderRejected:
            if not refused:
                raise
            remember_plain(host)
            if suggest:
                raise _no_suggestions(call) from None
            logger.info("GitHub refused the object form of an issue update; sending it plain")
            response = self._send(call, token, request(False))
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


def _no_suggestions(call: Call) -> ProviderRejected:
    return ProviderRejected(
        f"{call}: this GitHub does not take suggestions (it refused the object form of the "
        "issue update), so nothing was written: approve a version without suggestions "
        "(github_suggestions off in the repository's file)",
        status=422,
        **call.context(),
    )
