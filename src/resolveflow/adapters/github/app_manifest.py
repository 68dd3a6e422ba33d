"""The GitHub App manifest for GitHub's one-click App creation (``resolveflow github-app
manifest``): the permissions ResolveFlow needs and the URLs GitHub calls back.

A person posts the manifest from a form to ``{web}/settings/apps/new`` (or an organization's
``/organizations/{org}/settings/apps/new``); GitHub shows the App, and after "Create" redirects
the browser to ``redirect_url?code=...``, where ResolveFlow converts the code into the App's
credentials (``POST /app-manifests/{code}/conversions``) and stores them encrypted.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from resolveflow.errors import InvalidInput

WEBHOOK_PATH = "/webhooks/github"
CALLBACK_PATH = "/github-app/callback"

# Issues and pull requests: read what is triaged and write comments, labels and closes; checks
# and contents: read CI results and the files investigations cite; metadata: every App has it.
PERMISSIONS = {
    "issues": "write",
    "pull_requests": "write",
    "checks": "read",
    "contents": "read",
    "metadata": "read",
}
# What starts work (issues opened, comments for the index, pull requests for CI reads), and
# installation events arrive whatever is listed here.
EVENTS = ["issues", "issue_comment", "pull_request", "check_run"]


def app_manifest(base_url: str, name: str = "ResolveFlow") -> dict[str, Any]:
    """The manifest for a deployment reachable at ``base_url`` (https, or http on loopback)."""
    base = base_url.strip().rstrip("/")
    parts = urlsplit(base)
    loopback = parts.hostname in ("127.0.0.1", "localhost", "::1")
    if parts.scheme not in ("https", "http") or not parts.hostname or parts.query:
        raise InvalidInput(f"--url must be the deployment's base URL (https://...), not {base!r}")
    if parts.scheme == "http" and not loopback:
        raise InvalidInput("--url must be https: GitHub sends webhooks and the browser there")
    if not name.strip() or len(name) > 34:
        raise InvalidInput("--name must be 1-34 characters (GitHub's limit for an App's name)")
    return {
        "name": name.strip(),
        "url": base,
        "hook_attributes": {"url": base + WEBHOOK_PATH, "active": True},
        "redirect_url": base + CALLBACK_PATH,
        "public": False,
        "default_permissions": dict(PERMISSIONS),
        "default_events": list(EVENTS),
    }
