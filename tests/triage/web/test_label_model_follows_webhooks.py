"""The label model follows what maintainers label, as it arrives (``triage/parts.py::LabelModels``):
a label applied on GitHub reaches the index through the signed ``issues`` webhook and the worker's
index update, and the next run of the same process proposes it, without waiting for any age to
pass; runs with nothing new in the labelled history learn nothing again (trainings counted).
Through the real web app, job queue and worker, and the fake GitHub over HTTP."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from uuid import UUID

import httpx
import pytest
from fastapi.testclient import TestClient

from conftest import labelled_history, make_world
from fixtures_github import SERVICE_TOKEN
from fixtures_web import REPO, Web, issue_payload, web_settings
from resolveflow.bootstrap.app import open_app
from resolveflow.sandbox.forge.oauth import FakeGitHubWithOAuth
from resolveflow.triage import runs as run_service
from resolveflow.web import create_app

pytest_plugins = ["fixtures_web"]

# What this repository's maintainers labelled before (invented here). "performance" was given
# twice: too few for a label to be learned (three are needed).
HISTORY = {
    "bug": [
        "Crash when saving a widget: saving raises a KeyError",
        "Wrong row count after filter: filter returns the wrong number of rows",
        "open fails on Windows paths with FileNotFoundError",
        "Segfault on empty input: an empty file makes the loader crash",
    ],
    "enhancement": [
        "Support exporting to parquet: it would be great to export widgets",
        "Add an option to skip empty rows: a new option please",
        "Allow custom separators: please add support for custom separators",
        "Feature: a progress bar while loading would be a nice feature",
    ],
    "performance": [
        "Loading is very slow: loading a big file takes minutes, slow and sluggish",
        "Filtering is slow on large tables: slow, takes ages, sluggish",
    ],
}
SLOW = "Saving is slow and sluggish: slow on every big table, it takes ages"


@pytest.fixture
def web(queue_ready: str, oauth_github: FakeGitHubWithOAuth) -> Iterator[Web]:
    """The wired app; a run waits as long as a relearning takes (a generous ceiling, so that a
    loaded machine cannot make the run go on with the model before)."""
    settings = web_settings(queue_ready, oauth_github.url, label_model_wait_seconds=120)
    with open_app(settings, auto_migrate=False) as app:
        world = make_world(app.db)
        with TestClient(create_app(app), base_url="https://testserver") as client:
            yield Web(app, world, oauth_github, client)


def _index_history(web: Web) -> None:
    issues = {
        label: [(t.partition(": ")[0], t.partition(": ")[2]) for t in texts]
        for label, texts in HISTORY.items()
    }
    documents = labelled_history(REPO, issues, first_id=100)
    web.app.indexer().upsert(web.world.tenant.id, documents)


def _opened(web: Web, number: int, title: str, body: str) -> dict[str, Any]:
    """An issue opened on GitHub, its signed webhook, and the worker's jobs: the run it starts."""
    web.fake.add_issue(REPO, number, title, body)
    assert web.webhook("issues", issue_payload(number)).status_code == 202
    web.work()
    approver = web.world.approver(web.db)
    runs = run_service.list_runs(web.db, approver)
    [run_id] = [r["run_id"] for r in runs if r["target"] == f"{REPO}#{number}"]
    return run_service.describe_run(web.db, approver, UUID(run_id))


def _labels_part(view: dict[str, Any]) -> dict[str, Any]:
    [part] = [p for p in view["detail"]["parts"] if p["name"] == "labels"]
    return part


def test_a_label_applied_through_the_webhook_is_known_to_the_next_run(web: Web) -> None:
    _index_history(web)
    models = web.app.label_models()
    web.fake.add_issue(REPO, 7, "Export is slow", "Export is slow and sluggish, it takes ages")

    first = _opened(web, 20, SLOW, "Every save of a big table is slow and takes ages.")
    assert models.trainings == 1
    assert "performance" not in models.learned(web.world.tenant.id, REPO).model.labels
    assert "performance" not in first["proposal"]["action"]["labels"]

    # Nothing labelled since: the next run, and the index updates of the issues opened (which
    # carry no label), learn nothing again.
    _opened(web, 21, "Docs typo", "The page spells it wrong.")
    assert models.trainings == 1

    # A maintainer labels issue 7 on GitHub; the webhook brings it to the index.
    response = httpx.post(
        f"{web.fake.url}/repos/{REPO}/issues/7/labels",
        json={"labels": ["performance"]},
        headers={"Authorization": f"token {SERVICE_TOKEN}"},
        timeout=5.0,
    )
    assert response.status_code == 200
    assert web.webhook("issues", issue_payload(7, "labeled")).status_code == 202
    web.work()

    later = _opened(web, 22, SLOW, "Every save of a big table is slow and takes ages.")
    assert models.trainings == 2
    assert "performance" in models.learned(web.world.tenant.id, REPO).model.labels
    assert _labels_part(later)["items"][0]["ref"] == "performance"
    assert "performance" in later["proposal"]["action"]["labels"]
    assert models.trainings == 2
