"""A live run through the web app (``POST /api/v1/runs``, the fake GitHub over HTTP, the parts as
``bootstrap/app.py`` wires them) of an issue whose original is in the tenant's index: the run
names the original in its duplicate part and its comment, and offers the close-after-grace, which
``POST /api/v1/runs/{id}/close-duplicate`` turns into one ``github.issue_close_duplicate``
proposal (a second is refused, naming it). A report unlike any earlier one gets neither."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from resolveflow.retrieval.records import SourceDocument

if TYPE_CHECKING:  # imported by pytest as a plugin first, so that its asserts are rewritten
    from fixtures_web import Web

pytest_plugins = ["fixtures_web"]

REPO = "acme/widgets"
TITLE = "Export drops the last row of every parquet shard"
BODY = (
    "When I export widgets to parquet, the last row of every shard is missing.\n\n"
    "ValueError: row count mismatch in shard writer"
)


def _original() -> SourceDocument:
    return SourceDocument(
        source=f"github:{REPO}",
        external_id="5",
        kind="issue",
        title=TITLE,
        body=BODY,
        state="open",
        created_at=datetime(2024, 1, 5, tzinfo=UTC),
        url=f"https://github.com/{REPO}/issues/5",
        repository=REPO,
    )


def _run(web: Web, number: int) -> dict[str, Any]:
    response = web.client.post(
        "/api/v1/runs",
        json={"issue": f"{REPO}#{number}"},
        headers=web.api(web.world.requester_token),
    )
    assert response.status_code == 201, response.text
    shown = web.client.get(
        f"/api/v1/runs/{response.json()['run_id']}", headers=web.api(web.world.approver_token)
    )
    assert shown.status_code == 200, shown.text
    view: dict[str, Any] = shown.json()
    return view


def _parts(view: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {part["name"]: part for part in view["detail"]["parts"]}


def _offer(web: Web, view: dict[str, Any]) -> Any:
    return web.client.post(
        f"/api/v1/runs/{view['run_id']}/close-duplicate",
        headers=web.api(web.world.approver_token),
    )


def test_a_live_run_of_a_duplicate_names_it_and_offers_the_close(web: Web) -> None:
    web.fake.add_issue(REPO, 5, TITLE, BODY, user="octocat")
    web.fake.add_issue(REPO, 9, TITLE, BODY, user="someone")
    web.fake.add_issue(
        REPO,
        10,
        "Quarterly roadmap sync notes",
        "Priorities for the quarter, owners of each milestone, and the next two meeting dates.",
        user="someone",
    )
    web.app.indexer().upsert(web.world.tenant.id, [_original()])

    view = _run(web, 9)
    duplicate = _parts(view)["duplicate"]
    assert duplicate["kept"] and duplicate["original"] == 5
    assert "row count mismatch" in duplicate["items"][0]["why"]  # the shared error line
    comment = view["proposal"]["action"]["comment"]
    assert f"This looks like a duplicate of [#5](https://github.com/{REPO}/issues/5)" in comment
    assert view["detail"]["close_duplicate"] == {
        "issue": f"{REPO}#9",
        "original": 5,
        "score": duplicate["score"],
    }

    created = _offer(web, view)
    assert created.status_code == 201, created.text
    action = created.json()["action"]
    assert action["kind"] == "github.issue_close_duplicate"
    assert (action["original"], action["target"]["issue"]) == (5, 9)
    again = _offer(web, view)
    assert again.status_code == 409 and created.json()["id"] in again.text

    unlike = _run(web, 10)
    assert not _parts(unlike)["duplicate"]["kept"]
    assert "close_duplicate" not in unlike["detail"]
    refused = _offer(web, unlike)
    assert refused.status_code in (400, 422)
    assert "offers no close as a duplicate" in refused.text
