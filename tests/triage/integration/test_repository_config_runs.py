"""A repository's ``.github/resolveflow.yml`` in real triage runs: read from the sandbox forge's
default branch through githubkit, parsed once per blob sha, narrowing the proposal's labels; a
file with a problem is not applied and the run's detail, page and ``runs show`` say why."""

from __future__ import annotations

import html
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pytest

from conftest import World, make_executor, make_world
from fixtures_cli import Cli, InProcessCli, _setup
from resolveflow.adapters.github.client import GitHubKitClient
from resolveflow.adapters.github.protocol import RepoName
from resolveflow.policy_file import parse_policy
from resolveflow.sandbox.forge.server import FakeGitHubServer, Status
from resolveflow.store.checkpoints import checkpoint_saver
from resolveflow.store.database import Database
from resolveflow.triage import runs as run_service
from resolveflow.triage.graph.build import TriageDeps, build_triage_graph
from resolveflow.triage.graph.runs import RunController
from resolveflow.triage.repository_config import ConfigCache

if TYPE_CHECKING:  # imported by pytest as a plugin first, so that its asserts are rewritten
    from fixtures_web import Web

pytest_plugins = ["fixtures_web"]

REPO = "acme/widgets"
PATH = ".github/resolveflow.yml"
POLICY = parse_policy(
    """
[repositories."acme/widgets"]
extra_labels = { human_review = ["bug", "question"] }

[[repositories."acme/widgets".rules]]
name = "crash"
when_title_prefix = "Widget crashes"
classification = "human_review"
labels = ["bug"]
"""
)
SECURITY = (
    "`.github/resolveflow.yml` line 3: labels.1: 'security' is not allowed for acme/widgets by"
    " the tenant's policy"
)


@dataclass
class Runs:
    db: Database
    world: World
    fake: FakeGitHubServer
    controller: RunController
    cache: ConfigCache

    def run(self, number: int = 1) -> dict[str, Any]:
        run_id = self.controller.start(self.world.requester(self.db), REPO, number)
        return run_service.describe_run(self.db, self.world.approver(self.db), run_id)


@pytest.fixture
def runs(
    db: Database, fake_github: FakeGitHubServer, github_client: GitHubKitClient
) -> Iterator[Runs]:
    world = make_world(db, repository=REPO)
    cache = ConfigCache()
    deps = TriageDeps(
        db=db,
        github=github_client,
        policy=lambda: POLICY,
        executor=lambda: make_executor(db, github_client),
        configs=cache,
    )
    pool = db.autocommit_pool()
    try:
        graph = build_triage_graph(deps, checkpoint_saver(pool))
        controller = RunController(db=db, graph=graph, lease_seconds=60, approval_ttl_seconds=3600)
        yield Runs(db, world, fake_github, controller, cache)
    finally:
        pool.close()


def labels(view: dict[str, Any]) -> list[str]:
    return list(view["proposal"]["action"]["labels"])


def test_without_a_file_the_tenants_policy_holds(runs: Runs) -> None:
    view = runs.run()
    assert labels(view) == ["bug", "needs-triage"]
    assert "config_sha" not in view["detail"] and runs.cache.parses == 0


def test_the_file_narrows_the_labels_and_is_parsed_once_per_sha(runs: Runs) -> None:
    sha = runs.fake.put_file(REPO, PATH, "# our taxonomy\nlabels: [bug]\n")
    first = runs.run()
    assert labels(first) == ["bug"]
    assert (
        "label 'needs-triage' is not allowed for this branch by the policy"
        in (first["detail"]["notes"])
    )
    assert first["detail"]["config_sha"] == sha and first["detail"]["config_errors"] == []
    runs.fake.add_issue(REPO, 2, "Widget crashes again", "Same crash.", user="octocat")
    second = runs.run(2)
    assert labels(second) == ["bug"]
    assert runs.cache.parses == 1  # the same blob: read from GitHub, not parsed again
    changed = runs.fake.put_file(REPO, PATH, "labels: [bug, needs-triage]\n")
    runs.fake.add_issue(REPO, 3, "Widget crashes a third time", "Again.", user="octocat")
    third = runs.run(3)
    assert runs.cache.parses == 2 and third["detail"]["config_sha"] == changed != sha
    assert labels(third) == ["bug", "needs-triage"]


def test_a_file_with_a_problem_is_not_applied_and_the_run_says_why(runs: Runs) -> None:
    runs.fake.put_file(REPO, PATH, "# widening\nlabels:\n  [bug, security]\n")
    view = runs.run()
    assert view["detail"]["config_errors"] == [SECURITY]
    assert labels(view) == ["bug", "needs-triage"]  # the tenant's policy alone, nothing looser


def test_an_unreadable_file_leaves_the_tenants_policy(runs: Runs) -> None:
    runs.fake.put_file(REPO, PATH, "labels: [bug]\n")
    runs.fake.inject(Status(403), method="GET", path="/contents/")
    view = runs.run()
    (error,) = view["detail"]["config_errors"]
    assert error.startswith("`.github/resolveflow.yml`: could not be read (")
    assert labels(view) == ["bug", "needs-triage"]


def test_the_contents_read_returns_the_blob_and_none_for_a_missing_file(
    fake_github: FakeGitHubServer, github_client: GitHubKitClient
) -> None:
    repo = RepoName.parse(REPO)
    assert github_client.get_repository_file(repo, PATH) is None
    text = "labels: [bug]\n" * 20  # longer than one base64 line of 60
    sha = fake_github.put_file(REPO, PATH, text)
    found = github_client.get_repository_file(repo, PATH)
    assert found is not None and (found.sha, found.content.decode()) == (sha, text)


# --- the run page and runs show ------------------------------------------------------------


def test_the_run_page_shows_the_config_error(web: Web) -> None:
    web.fake.put_file(REPO, PATH, "labels: [needs-triage, security]\n")
    response = web.client.post(
        "/api/v1/runs", json={"issue": f"{REPO}#1"}, headers=web.api(web.world.requester_token)
    )
    assert response.status_code == 201, response.text
    run_id = response.json()["run_id"]
    page = web.client.get(
        f"/runs/{run_id}",
        headers={"Accept": "text/html", **web.api(web.world.approver_token)},
    )
    assert page.status_code == 200
    assert 'id="config-errors"' in page.text
    assert (
        "`.github/resolveflow.yml` line 1: labels.1: 'security' is not allowed for acme/widgets"
        " by the tenant's policy"
    ) in html.unescape(page.text)


def test_runs_show_prints_the_config_error(cli: Cli, fake_github: FakeGitHubServer) -> None:
    inline = InProcessCli(cli.env)
    rita, alex = _setup(inline)
    fake_github.put_file(REPO, PATH, "suggestions:\n  review_request: always\n")
    started = inline.json("triage", f"{REPO}#1", token=rita)
    shown = inline.run("runs", "show", started["run_id"], token=alex).stdout
    assert (
        "config error: `.github/resolveflow.yml` line 2: suggestions.review_request: 'always' is"
        " louder than the tenant's policy allows for acme/widgets ('on'); a repository can only"
        " make a kind quieter"
    ) in " ".join(shown.split())
    assert "the tenant's policy alone held" in shown
    as_json = inline.json("runs", "show", str(uuid.UUID(started["run_id"])), token=alex)
    assert len(as_json["detail"]["config_errors"]) == 1


# --- a hostile file: ignored with its reason, the run goes on -------------------------------

NESTED = "[" * 32_000 + "]" * 32_000  # 64 KB; PyYAML's recursive composer ran out of stack
NESTED_ERROR = "`.github/resolveflow.yml` line 1: 0.0.0.0.0.0.0: nested deeper than 6 levels"


def _page(web: Web, run_id: str) -> str:
    page = web.client.get(
        f"/runs/{run_id}", headers={"Accept": "text/html", **web.api(web.world.approver_token)}
    )
    assert page.status_code == 200
    return html.unescape(page.text)


def test_a_nested_file_is_ignored_with_its_reason_through_the_api(web: Web) -> None:
    web.fake.put_file(REPO, PATH, NESTED)
    response = web.client.post(
        "/api/v1/runs", json={"issue": f"{REPO}#1"}, headers=web.api(web.world.requester_token)
    )
    assert response.status_code == 201, response.text  # was 500: RecursionError
    view = run_service.describe_run(
        web.db, web.world.approver(web.db), uuid.UUID(response.json()["run_id"])
    )
    assert view["status"] == "awaiting_approval"
    assert view["detail"]["config_errors"] == [NESTED_ERROR]
    assert labels(view) == ["needs-triage"]  # the built-in policy's
    assert NESTED_ERROR in _page(web, response.json()["run_id"])


def test_a_nested_file_is_ignored_in_a_webhook_run(web: Web) -> None:
    from fixtures_web import issue_payload  # after pytest loaded it as a plugin (see above)

    web.fake.put_file(REPO, PATH, NESTED)
    assert web.webhook("issues", issue_payload(1)).status_code == 202
    web.work()
    (run,) = run_service.list_runs(web.db, web.world.approver(web.db))
    assert run["status"] == "awaiting_approval"  # was failed: RecursionError
    view = run_service.describe_run(web.db, web.world.approver(web.db), uuid.UUID(run["run_id"]))
    assert view["detail"]["config_errors"] == [NESTED_ERROR]


def test_a_nested_file_is_parsed_once_and_each_run_says_why(runs: Runs) -> None:
    runs.fake.put_file(REPO, PATH, NESTED)
    first = runs.run()
    runs.fake.add_issue(REPO, 2, "Widget crashes again", "Same crash.", user="octocat")
    second = runs.run(2)
    for view in (first, second):
        assert view["detail"]["config_errors"] == [NESTED_ERROR]
        assert labels(view) == ["bug", "needs-triage"]  # the tenant's policy alone
    assert runs.cache.parses == 1  # the refusal is cached like a good file
