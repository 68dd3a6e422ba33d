"""Files on a repository's default branch: seeding functions and the contents route.

Route (``ROUTES``): ``GET /repos/{o}/{r}/contents/{path}``, a file as GitHub's ``content-file``
(base64 content, its blob sha as git computes it), or 404 when the default branch has no such
file. Directories, symlinks and submodules are not modelled.
"""

from __future__ import annotations

import base64
import hashlib
from urllib.parse import quote

from resolveflow.sandbox.forge import payloads
from resolveflow.sandbox.forge.model import FakeRequest
from resolveflow.sandbox.forge.routing import REPO, Route, route
from resolveflow.sandbox.forge.state import ForgeState
from resolveflow.sandbox.loopback import Reply

JSON = payloads.JSON


def blob_sha(content: bytes) -> str:
    """Git's id of a blob: the same content always has the same sha, as on GitHub."""
    return hashlib.sha1(b"blob %d\0" % len(content) + content, usedforsecurity=False).hexdigest()


# --- seeding (each takes the lock) ---------------------------------------------------------


def put_file(forge: ForgeState, full_name: str, path: str, content: str | bytes) -> str:
    """Commit ``content`` at ``path`` on the default branch (replacing it); returns its sha."""
    data = content.encode() if isinstance(content, str) else content
    with forge.lock:
        forge.repo(full_name).files[path] = data
    return blob_sha(data)


def remove_file(forge: ForgeState, full_name: str, path: str) -> None:
    """Delete ``path`` from the default branch (nothing when it is not there)."""
    with forge.lock:
        forge.repo(full_name).files.pop(path, None)


# --- routes (lock held) --------------------------------------------------------------------


def get_content(forge: ForgeState, request: FakeRequest) -> Reply:
    full_name, path = request.params
    content = forge.repo(full_name).files.get(path)
    if content is None:
        raise payloads.Rejected(404, payloads.not_found())
    return Reply(200, file_payload(forge.url, full_name, path, content))


def file_payload(base: str, full_name: str, path: str, content: bytes) -> JSON:
    """GitHub's ``content-file``, every field its schema requires (base64 in lines of 60, as
    GitHub sends it)."""
    sha = blob_sha(content)
    encoded = base64.b64encode(content).decode()
    lines = "\n".join(encoded[i : i + 60] for i in range(0, len(encoded), 60))
    api = f"{base}/repos/{full_name}/contents/{quote(path)}?ref=main"
    html = f"{base}/{full_name}/blob/main/{quote(path)}"
    git = f"{base}/repos/{full_name}/git/blobs/{sha}"
    return {
        "type": "file",
        "encoding": "base64",
        "size": len(content),
        "name": path.rsplit("/", 1)[-1],
        "path": path,
        "content": lines + "\n" if lines else "",
        "sha": sha,
        "url": api,
        "git_url": git,
        "html_url": html,
        "download_url": f"{base}/raw/{full_name}/main/{quote(path)}",
        "_links": {"self": api, "git": git, "html": html},
    }


ROUTES: list[Route[ForgeState]] = [
    route("GET", rf"{REPO}/contents/(.+)", get_content),
]
