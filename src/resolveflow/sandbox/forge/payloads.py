"""JSON payload builders and GitHub wire conventions for ``FakeGitHubServer``.

githubkit validates every response against GitHub's OpenAPI schema (version 2026-03-10 in
githubkit-schemas 26.x), so the fake must send *complete* objects: every field the schema marks
required, with the right type, even when ResolveFlow never reads it. The shapes below follow
githubkit's ``SimpleUser``, ``PrivateUser``, ``Label``, ``IssueComment`` and ``Issue`` models and
are checked by ``tests/core/integration/test_github_adapter.py`` and ``test_sandbox_forge.py``. The
second half parses request bodies and query strings the way GitHub does (400, 422, pagination).
"""

from __future__ import annotations

import base64
import json
import math
import zlib
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote, urlencode

JSON = dict[str, Any]

DOCS = "https://docs.github.com/rest"
SECONDARY_RATE_LIMIT_MESSAGE = (
    "You have exceeded a secondary rate limit. Please wait a few minutes before you try again. "
    "If you reach out to GitHub Support for help, please include the request ID."
)
PRIMARY_RATE_LIMIT_MESSAGE = (
    "API rate limit exceeded for user. (But here's the good news: Authenticated requests get a "
    "higher rate limit. Check out the documentation for more details.)"
)
DEFAULT_PER_PAGE = 30
MAX_PER_PAGE = 100
NEW_LABEL_COLOR = "ededed"  # what GitHub gives a label it creates while adding it to an issue


def now_iso() -> str:
    """GitHub's timestamp format: UTC, seconds precision, ``Z`` suffix."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def node_id(prefix: str, number: int) -> str:
    """Opaque GraphQL-style id; only its type (string) matters to the schema."""
    return prefix + "_" + base64.b64encode(str(number).encode()).decode().rstrip("=")


def user_id(login: str) -> int:
    """Stable numeric id per login so the same user always looks the same."""
    return zlib.crc32(login.encode()) & 0x7FFFFFFF or 1


def error(message: str, *, docs: str = DOCS, status: int | None = None) -> JSON:
    """GitHub's ``BasicError`` body."""
    payload: JSON = {"message": message, "documentation_url": docs}
    if status is not None:
        payload["status"] = str(status)
    return payload


def validation_failed(resource: str, field: str, code: str = "missing_field") -> JSON:
    """GitHub's 422 ``ValidationError`` body."""
    payload = error("Validation Failed", status=422)
    payload["errors"] = [{"resource": resource, "field": field, "code": code}]
    return payload


def simple_user(api: str, html: str, login: str) -> JSON:
    """``SimpleUser``: the author object embedded in comments and issues."""
    uid = user_id(login)
    user_api = f"{api}/users/{quote(login)}"
    return {
        "login": login,
        "id": uid,
        "node_id": node_id("U", uid),
        "avatar_url": f"https://avatars.githubusercontent.com/u/{uid}?v=4",
        "gravatar_id": "",
        "url": user_api,
        "html_url": f"{html}/{quote(login)}",
        "followers_url": f"{user_api}/followers",
        "following_url": f"{user_api}/following{{/other_user}}",
        "gists_url": f"{user_api}/gists{{/gist_id}}",
        "starred_url": f"{user_api}/starred{{/owner}}{{/repo}}",
        "subscriptions_url": f"{user_api}/subscriptions",
        "organizations_url": f"{user_api}/orgs",
        "repos_url": f"{user_api}/repos",
        "events_url": f"{user_api}/events{{/privacy}}",
        "received_events_url": f"{user_api}/received_events",
        "type": "Bot" if login.endswith("[bot]") else "User",
        "site_admin": False,
        "user_view_type": "public",
    }


def private_user(api: str, html: str, login: str) -> JSON:
    """``PrivateUser``: what ``GET /user`` returns for the authenticated account."""
    stamp = now_iso()
    payload = simple_user(api, html, login)
    payload.update(
        {
            "name": login,
            "company": None,
            "blog": "",
            "location": None,
            "email": None,
            "hireable": None,
            "bio": None,
            "twitter_username": None,
            "public_repos": 0,
            "public_gists": 0,
            "followers": 0,
            "following": 0,
            "created_at": stamp,
            "updated_at": stamp,
            "private_gists": 0,
            "total_private_repos": 0,
            "owned_private_repos": 0,
            "disk_usage": 0,
            "collaborators": 0,
            "two_factor_authentication": True,
        }
    )
    return payload


def label(
    api: str, full_name: str, *, label_id: int, name: str, color: str, description: str | None
) -> JSON:
    """``Label``. This schema version requires ``archived_at`` and ``archived_by`` (both null)."""
    return {
        "id": label_id,
        "node_id": node_id("LA", label_id),
        "url": f"{api}/repos/{full_name}/labels/{quote(name)}",
        "name": name,
        "description": description,
        "color": color,
        "default": False,
        "archived_at": None,
        "archived_by": None,
    }


def reactions(url: str) -> JSON:
    """``ReactionRollup`` with every counter at zero."""
    counters = ("total_count", "+1", "-1", "laugh", "confused", "heart", "hooray", "eyes", "rocket")
    return {"url": url, **dict.fromkeys(counters, 0)}


def comment(
    api: str,
    html: str,
    full_name: str,
    *,
    number: int,
    comment_id: int,
    body: str,
    user: JSON,
    author_association: str = "NONE",
    created_at: str | None = None,
) -> JSON:
    """``IssueComment`` as returned by the list and create endpoints."""
    stamp = created_at or now_iso()
    url = f"{api}/repos/{full_name}/issues/comments/{comment_id}"
    return {
        "id": comment_id,
        "node_id": node_id("IC", comment_id),
        "url": url,
        "html_url": f"{html}/{full_name}/issues/{number}#issuecomment-{comment_id}",
        "body": body,
        "user": user,
        "created_at": stamp,
        "updated_at": stamp,
        "issue_url": f"{api}/repos/{full_name}/issues/{number}",
        "author_association": author_association,
        "performed_via_github_app": None,
        "reactions": reactions(f"{url}/reactions"),
    }


def issue(
    api: str,
    html: str,
    full_name: str,
    *,
    issue_id: int,
    number: int,
    title: str,
    body: str | None,
    state: str,
    user: JSON,
    labels: list[JSON],
    assignees: list[JSON] | None = None,
    comment_count: int,
    is_pull_request: bool,
    created_at: str,
    updated_at: str | None = None,
    closed_at: str | None = None,
    author_association: str = "NONE",
    merged_at: str | None = None,
    state_reason: str | None = None,
    closed_by: JSON | None = None,
) -> JSON:
    """``Issue`` (also used for pull requests, which GitHub serves through the issues API).

    A pull request carries a ``pull_request`` object (with ``merged_at``) and ``draft``; that
    object is how clients tell the two apart in ``GET /repos/{o}/{r}/issues``.
    """
    url = f"{api}/repos/{full_name}/issues/{number}"
    kind = "pull" if is_pull_request else "issues"
    payload: JSON = {
        "id": issue_id,
        "node_id": node_id("PR" if is_pull_request else "I", issue_id),
        "url": url,
        "repository_url": f"{api}/repos/{full_name}",
        "labels_url": f"{url}/labels{{/name}}",
        "comments_url": f"{url}/comments",
        "events_url": f"{url}/events",
        "timeline_url": f"{url}/timeline",
        "html_url": f"{html}/{full_name}/{kind}/{number}",
        "number": number,
        "state": state,
        "state_reason": state_reason
        or ("completed" if state == "closed" and not is_pull_request else None),
        "title": title,
        "body": body,
        "user": user,
        "labels": labels,
        "assignee": assignees[0] if assignees else None,
        "assignees": assignees or [],
        "milestone": None,
        "locked": False,
        "active_lock_reason": None,
        "comments": comment_count,
        "closed_at": closed_at,
        "created_at": created_at,
        "updated_at": updated_at or now_iso(),
        "author_association": author_association,
        "performed_via_github_app": None,
        "reactions": reactions(f"{url}/reactions"),
    }
    if closed_by is not None:
        payload["closed_by"] = closed_by
    if is_pull_request:
        pr = f"{api}/repos/{full_name}/pulls/{number}"
        payload["pull_request"] = {
            "url": pr,
            "html_url": f"{html}/{full_name}/pull/{number}",
            "diff_url": f"{html}/{full_name}/pull/{number}.diff",
            "patch_url": f"{html}/{full_name}/pull/{number}.patch",
            "merged_at": merged_at,
        }
        payload["draft"] = False
    return payload


# --- request parsing and pagination (GitHub's wire conventions) ---------------------------


class Rejected(Exception):
    """The request is invalid the way GitHub reports it: ``status`` with a JSON ``payload``."""

    def __init__(self, status: int, payload: JSON) -> None:
        super().__init__(payload.get("message"))
        self.status = status
        self.payload = payload


def not_found() -> JSON:
    return error("Not Found", status=404)


def json_body(raw: bytes) -> Any:
    """Parse a request body; GitHub answers 400 "Problems parsing JSON" to garbage."""
    try:
        return json.loads(raw or b"{}")
    except ValueError as exc:
        raise Rejected(400, error("Problems parsing JSON", status=400)) from exc


def comment_body(body: Any) -> str:
    """``{"body": "..."}``; a missing or empty body is a 422 like on GitHub."""
    text = body.get("body") if isinstance(body, dict) else None
    if not isinstance(text, str) or not text:
        raise Rejected(422, validation_failed("IssueComment", "body"))
    return text


def label_names(body: Any) -> list[str]:
    """Every body shape GitHub accepts: ``{"labels": [...]}`` or a bare list, of names or
    ``{"name": ...}`` objects. An empty list is a 422 (the schema requires at least one)."""
    items = body.get("labels") if isinstance(body, dict) else body
    if not isinstance(items, list) or not items:
        raise Rejected(422, validation_failed("Label", "labels"))
    names = [item.get("name") if isinstance(item, dict) else item for item in items]
    if not all(isinstance(name, str) and name for name in names):
        raise Rejected(422, validation_failed("Label", "name", code="invalid"))
    return [str(name) for name in names]


@dataclass(frozen=True)
class NewIssue:
    """The fields of ``POST /repos/{o}/{r}/issues`` the forge acts on (milestone and type are
    ignored: the forge has neither)."""

    title: str
    body: str | None
    labels: list[str]
    assignees: list[str]


def new_issue(body: Any) -> NewIssue:
    """Parse a create-issue body. ``title`` (a string or a number, as the schema allows) is
    required and non-empty; ``labels`` are names or ``{"name": ...}``; ``assignees`` are logins,
    and the deprecated single ``assignee`` is honoured too. Anything else shaped wrong is a 422."""
    fields = body if isinstance(body, dict) else {}
    title = fields.get("title")
    if isinstance(title, int) and not isinstance(title, bool):
        title = str(title)
    if not isinstance(title, str) or not title.strip():
        raise Rejected(422, validation_failed("Issue", "title"))
    text = fields.get("body")
    if text is not None and not isinstance(text, str):
        raise Rejected(422, validation_failed("Issue", "body", code="invalid"))
    labels = label_names({"labels": fields["labels"]}) if fields.get("labels") else []
    logins = fields.get("assignees") or []
    if fields.get("assignee") and isinstance(logins, list):  # the deprecated single form
        logins = [*logins, fields["assignee"]]
    if not isinstance(logins, list) or not all(isinstance(x, str) and x for x in logins):
        raise Rejected(422, validation_failed("Issue", "assignees", code="invalid"))
    return NewIssue(title, text, labels, [str(login) for login in logins])


def int_param(query: dict[str, list[str]], name: str, default: int) -> int:
    try:
        return int(query[name][-1])
    except (KeyError, ValueError):
        return default


def paginate(
    items: list[JSON], *, base_url: str, path: str, query: dict[str, list[str]]
) -> tuple[list[JSON], str]:
    """Slice by ``per_page`` (default 30, max 100) and ``page``; return GitHub's ``Link`` value.

    Like GitHub, ``first``/``prev`` appear after page 1 and ``next``/``last`` before the last page;
    a single page gets no ``Link`` header at all (empty string).
    """
    per_page = min(MAX_PER_PAGE, max(1, int_param(query, "per_page", DEFAULT_PER_PAGE)))
    page = max(1, int_param(query, "page", 1))
    last = max(1, math.ceil(len(items) / per_page))

    def link(target: int, rel: str) -> str:
        params = {key: values[-1] for key, values in query.items()}
        params["page"] = str(target)
        return f'<{base_url}{path}?{urlencode(params)}>; rel="{rel}"'

    rels: list[str] = []
    if page > 1:
        rels += [link(min(page - 1, last), "prev"), link(1, "first")]
    if page < last:
        rels += [link(page + 1, "next"), link(last, "last")]
    return items[(page - 1) * per_page : page * per_page], ", ".join(rels)
