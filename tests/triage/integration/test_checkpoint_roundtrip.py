"""A paused run's checkpoints, read back through a fresh connection, equal what the graph wrote:
field for field and type for type, ids and dates included."""

from __future__ import annotations

import copy
import uuid
from datetime import UTC, date, datetime, timedelta, timezone
from typing import Any, TypedDict

import psycopg
import pytest
from langgraph.graph import START, StateGraph
from langgraph.types import interrupt
from psycopg.rows import dict_row

from conftest import World, make_executor, make_world
from resolveflow.gate.store import proposals as proposal_store
from resolveflow.policy_file import DEFAULT_POLICY
from resolveflow.sandbox.forge.server import FakeGitHubServer
from resolveflow.store.checkpoints import checkpoint_saver
from resolveflow.store.database import Database
from resolveflow.triage import runs as run_service
from resolveflow.triage.graph.build import TriageDeps, build_triage_graph
from resolveflow.triage.graph.runs import RunController
from resolveflow.triage.store import runs as run_store

REPO = "acme/gadgets"
CREATED = "2023-02-28T23:59:58Z"  # the day before a month's end: a date parsed wrongly shows
UPDATED = "2024-02-29T12:00:01Z"  # a leap day
SHA = "c0ffee" * 6 + "beef"


class RecordingGraph:
    """The compiled graph, as RunController drives it, keeping every state it wrote: the
    ``values`` stream yields the state after each step, which is what each checkpoint holds."""

    def __init__(self, graph: Any) -> None:
        self.graph = graph
        self.written: list[dict[str, Any]] = []
        self.interrupts: list[Any] = []

    def invoke(self, value: Any, config: dict[str, Any], **options: Any) -> None:
        for state in self.graph.stream(value, config, stream_mode="values", **options):
            if "__interrupt__" in state:
                self.interrupts.extend(state["__interrupt__"])
            else:
                self.written.append(copy.deepcopy(state))

    def get_state(self, config: dict[str, Any]) -> Any:
        return self.graph.get_state(config)


def assert_identical(read: Any, written: Any, where: str = "state") -> None:
    """Equal, with the same type at every level (``1 == 1.0 == True`` would not do)."""
    assert type(read) is type(written), f"{where}: {type(read).__name__} != {type(written)}"
    if isinstance(written, dict):
        assert sorted(read) == sorted(written), f"{where}: keys {sorted(read)} != {sorted(written)}"
        for key, value in written.items():
            assert_identical(read[key], value, f"{where}[{key!r}]")
    elif isinstance(written, list | tuple):
        assert len(read) == len(written), f"{where}: {len(read)} items != {len(written)}"
        for index, (got, value) in enumerate(zip(read, written, strict=True)):
            assert_identical(got, value, f"{where}[{index}]")
    else:
        assert read == written, f"{where}: {read!r} != {written!r}"


def assert_plain_json(value: Any, where: str = "state") -> None:
    """The triage state is plain JSON (triage/graph/build.py): what msgpack and jsonb give back
    unchanged. A tuple would come back a list, a datetime an ISO string only if converted."""
    if isinstance(value, dict):
        for key, item in value.items():
            assert isinstance(key, str), f"{where}: key {key!r}"
            assert_plain_json(item, f"{where}[{key!r}]")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            assert_plain_json(item, f"{where}[{index}]")
    else:
        assert value is None or type(value) in (str, int, float, bool), f"{where}: {value!r}"


@pytest.fixture
def fresh_connection(database_url: str) -> Any:
    """Another connection than the one that wrote, as a restarted process would read."""
    with psycopg.connect(
        database_url, autocommit=True, prepare_threshold=0, row_factory=dict_row
    ) as conn:
        conn.execute("SET ROLE resolveflow_app")
        yield conn


def _deps(db: Database, github: Any) -> TriageDeps:
    return TriageDeps(
        db=db,
        github=github,
        policy=lambda: DEFAULT_POLICY,
        executor=lambda: make_executor(db, github),
    )


def _seed(fake: FakeGitHubServer) -> int:
    fake.add_repo(REPO, ["bug", "ci-failure", "needs-triage"])
    fake.add_pull_request(
        REPO,
        77,
        "Ünïcode títle — 修复 CI ✓",
        "Body with a tab\tand \"quotes\", a backslash \\ and 'emoji' 🚀\r\nsecond line",
        head_sha=SHA,
        created_at=CREATED,
        updated_at=UPDATED,
        user="octo-cat",
    )
    fake.add_check_run(REPO, SHA, "tests (3.12) — ünïcode", conclusion="failure", title="1 failed")
    return 77


def test_a_paused_runs_checkpoints_read_back_exactly_as_written(
    db: Database, fake_github: FakeGitHubServer, github_client: Any, fresh_connection: Any
) -> None:
    world: World = make_world(db, repository=REPO)
    number = _seed(fake_github)
    pool = db.autocommit_pool()
    try:
        recording = RecordingGraph(
            build_triage_graph(_deps(db, github_client), checkpoint_saver(pool))
        )
        controller = RunController(
            db=db, graph=recording, lease_seconds=60, approval_ttl_seconds=60
        )
        requester = world.requester(db)
        run_id = controller.start(requester, REPO, number)
    finally:
        pool.close()

    # Read back by a graph on a new saver and connection: nothing cached from the writer.
    reader = build_triage_graph(_deps(db, github_client), checkpoint_saver(fresh_connection))
    config = {"configurable": {"thread_id": str(run_id)}}
    history = list(reader.get_state_history(config))  # newest first
    read = [snapshot.values for snapshot in reversed(history) if snapshot.values]
    # One per step: the input, fetch_evidence, normalize, classify, build_proposal.
    assert len(read) == len(recording.written) == 5
    for step, (got, wrote) in enumerate(zip(read, recording.written, strict=True)):
        assert_plain_json(wrote, f"written[{step}]")
        assert_identical(got, wrote, f"checkpoint[{step}]")

    paused = reader.get_state(config)
    assert tuple(paused.next) == ("await_approval",)
    assert RunController(db=db, graph=reader, lease_seconds=60, approval_ttl_seconds=60).at_pause(
        run_id
    )
    state = paused.values
    assert_identical(state, recording.written[-1], "paused")

    # The ids are the records' ids, as strings that parse back to the same UUIDs.
    with db.tenant(world.tenant.id) as conn:
        proposal = proposal_store.latest_for_run(conn, world.tenant.id, run_id)
        snapshot = run_store.snapshot_for_run(conn, world.tenant.id, run_id)
    assert proposal is not None and snapshot is not None
    assert uuid.UUID(state["run_id"]) == run_id and state["run_id"] == str(run_id)
    assert uuid.UUID(state["tenant_id"]) == world.tenant.id
    assert uuid.UUID(state["requested_by"]) == requester.id
    assert uuid.UUID(state["proposal_id"]) == proposal.id
    assert state["digest"] == proposal.digest and len(state["digest"]) == 64
    assert (state["repository"], state["issue_number"]) == (REPO, number)
    assert state["facts"] == snapshot.facts
    assert state["raw"] is None  # the evidence snapshot holds it; checkpoints stay small
    [pause] = [i for task in paused.tasks for i in task.interrupts]
    assert_identical(pause.value, {"proposal_id": state["proposal_id"], "digest": proposal.digest})
    assert [i.value for i in recording.interrupts] == [pause.value]

    # The evidence, dates included, as fetched: in the checkpoint after fetch_evidence.
    fetched = next(values for values in read if values.get("raw"))["raw"]
    assert fetched == snapshot.raw
    issue = fetched["issue"]
    assert datetime.fromisoformat(issue["created_at"]) == datetime(
        2023, 2, 28, 23, 59, 58, tzinfo=UTC
    )
    assert datetime.fromisoformat(issue["updated_at"]) == datetime(
        2024, 2, 29, 12, 0, 1, tzinfo=UTC
    )
    assert issue["title"] == "Ünïcode títle — 修复 CI ✓"
    assert issue["body"].endswith("'emoji' 🚀\r\nsecond line")
    # Each checkpoint's own time is an aware instant, in write order.
    stamps = [datetime.fromisoformat(s.created_at) for s in reversed(history)]
    assert all(stamp.tzinfo is not None for stamp in stamps) and stamps == sorted(stamps)

    # And the state read back drives the run on: approved from the reader, posted once.
    resumer = RunController(db=db, graph=reader, lease_seconds=60, approval_ttl_seconds=60)
    resumer.approve(world.approver(db), run_id, state["digest"])
    assert run_service.describe_run(db, world.approver(db), run_id)["status"] == "completed"
    assert len(fake_github.comments(REPO, number)) == 1
    assert fake_github.issue_labels(REPO, number) == ["ci-failure"]


class Held(TypedDict, total=False):
    """Each value its own channel: primitives are stored inline in the checkpoint's jsonb,
    everything else as a msgpack blob, so both ways are read back."""

    aware: datetime
    utc: datetime
    naive: datetime
    day: date
    uuid: uuid.UUID
    uuid_text: str
    nested: dict[str, Any]
    big: int
    float: float
    zero: int
    false: bool
    none: None
    text: str


# Values a paused graph may hold besides plain JSON, on the same saver the runs use.
RICH_VALUES: Held = {
    "aware": datetime(
        2024, 2, 29, 23, 59, 59, 999999, tzinfo=timezone(timedelta(hours=5, minutes=30))
    ),
    "utc": datetime(2023, 12, 31, 23, 59, 59, tzinfo=UTC),
    "naive": datetime(2024, 1, 1, 0, 0),
    "day": date(2024, 2, 29),
    "uuid": uuid.UUID("0b4e7a0e-5bb1-4a8e-9a7c-3f1c2e6f9d01"),
    "uuid_text": "0B4E7A0E-5BB1-4A8E-9A7C-3F1C2E6F9D01",  # case kept: a string is not normalised
    "nested": {"at": [datetime(2020, 1, 1, tzinfo=UTC), {"id": uuid.UUID(int=1)}], "n": 2**53 + 1},
    "big": 2**63 - 1,
    "float": 0.1,
    "zero": 0,
    "false": False,
    "none": None,
    "text": "ünïcode 修复 🚀 \\ \" '",
}


def test_dates_and_ids_in_a_paused_graph_keep_their_types(
    db: Database, fresh_connection: Any
) -> None:
    def hold(state: Held) -> Held:
        interrupt("paused")
        return {}

    graph = StateGraph(Held)
    graph.add_node("hold", hold)
    graph.add_edge(START, "hold")
    config = {"configurable": {"thread_id": f"roundtrip-{uuid.uuid4()}"}}
    pool = db.autocommit_pool()
    try:
        writer = graph.compile(checkpointer=checkpoint_saver(pool))
        writer.invoke(copy.deepcopy(RICH_VALUES), config)
    finally:
        pool.close()
    reader = graph.compile(checkpointer=checkpoint_saver(fresh_connection))
    paused = reader.get_state(config)
    assert tuple(paused.next) == ("hold",)
    assert_identical(paused.values, RICH_VALUES)
    assert paused.values["aware"].utcoffset() == timedelta(hours=5, minutes=30)
    assert paused.values["naive"].tzinfo is None
