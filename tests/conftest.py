"""Shared fixtures: a real embedded Postgres per test session, a fresh database per test.

Also the suite's tiers (docs/testing.md): markers by folder, and the data tier (tests that read
the real data sets in ``../shared/data``), which runs when that folder is there, is deselected
with one printed line when it is not, and is required by CI (``RESOLVEFLOW_TEST_DATA_TIER``).
"""

from __future__ import annotations

import enum
import json
import os
import shutil
import sys
import tempfile
import urllib.parse
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest

from resolveflow.accounts import admin
from resolveflow.accounts.auth import authenticate
from resolveflow.bootstrap.app import setup_libraries
from resolveflow.domain.records import Role, Tenant
from resolveflow.store.database import Database
from resolveflow.store.migrate import upgrade

pytest_plugins = ["fixtures_github", "fixtures_cli"]

TESTS = Path(__file__).resolve().parent
# Tests live in tests/<product or core>/<tier>/ (as the code does) and a few import another's
# helpers by module name (test names are unique across folders): every tier folder is importable.
for _tier in sorted(TESTS.glob("*/*/")):
    if _tier.name in {"unit", "integration", "e2e", "web"} and str(_tier) not in sys.path:
        sys.path.append(str(_tier))
TEST_DATA = TESTS / "data"  # small fixtures that ship with the repository (tests/data/README.md)
# Read at import, before any test scrubs RESOLVEFLOW_* from the environment.
_SHARED_OVERRIDE = os.environ.get("RESOLVEFLOW_TEST_SHARED_DATA", "")
SHARED_DATA = Path(_SHARED_OVERRIDE) if _SHARED_OVERRIDE else TESTS.parents[1] / "shared" / "data"
SHARED_DATA_SHOWN = _SHARED_OVERRIDE or "../shared/data"
# Another Postgres server than the embedded one (docs/testing.md, "Any Postgres"): a superuser URL
# of a server with pgvector installed; each test gets its own database on it, as on pgserver.
_EXTERNAL_POSTGRES = os.environ.get("RESOLVEFLOW_TEST_POSTGRES_URL", "")


class DataTier(enum.Enum):
    """``RESOLVEFLOW_TEST_DATA_TIER``: ``auto`` runs the tier when the data is there; ``required``
    (set by .ci/run) refuses to start without it."""

    AUTO = "auto"
    REQUIRED = "required"


def _data_tier() -> DataTier:
    value = os.environ.get("RESOLVEFLOW_TEST_DATA_TIER", "auto")
    try:
        return DataTier(value)
    except ValueError:
        raise pytest.UsageError(
            f"RESOLVEFLOW_TEST_DATA_TIER={value!r}: expected one of auto, required"
        ) from None


# Markers by folder; --strict-markers makes pyproject.toml declare each.
_FOLDER_MARKERS = {"unit": "unit", "integration": "integration", "e2e": "e2e", "web": "web"}
_SKIPPED_DATA_TESTS = pytest.StashKey[int]()
_DESELECTED_FUZZ_TESTS = pytest.StashKey[int]()
_DESELECTED_REAL_MODEL_TESTS = pytest.StashKey[int]()
_COUNT_NAMES = {
    _SKIPPED_DATA_TESTS: "data_skipped",
    _DESELECTED_FUZZ_TESTS: "fuzz_deselected",
    _DESELECTED_REAL_MODEL_TESTS: "real_model_deselected",
}


def _count(config: pytest.Config, key: pytest.StashKey[int], n: int) -> None:
    """Keep a tier's count for the summary line. Under pytest-xdist (scripts/test runs a worker
    per core) the workers collect and the controller prints, so a worker also sends it back."""
    config.stash[key] = n
    workeroutput = getattr(config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput[_COUNT_NAMES[key]] = n


def _gather(node: Any, key: pytest.StashKey[int]) -> None:
    """On the controller: every worker collects the whole suite, so each sends the same count."""
    n = getattr(node, "workeroutput", {}).get(_COUNT_NAMES[key], 0)
    config = node.config
    config.stash[key] = max(config.stash.get(key, 0), n)


def pytest_configure(config: pytest.Config) -> None:
    if config.option.basetemp is None:
        # A private temporary root per run: pytest's default root is shared by every run on the
        # machine and prunes older runs' folders, embedded Postgres data included, mid-run.
        config.option.basetemp = tempfile.mkdtemp(prefix="resolveflow-tests-")
        config.add_cleanup(lambda: shutil.rmtree(config.option.basetemp, ignore_errors=True))
    if _data_tier() is DataTier.REQUIRED and not SHARED_DATA.is_dir():
        raise pytest.UsageError(
            f"the data tier is required (RESOLVEFLOW_TEST_DATA_TIER=required) but "
            f"{SHARED_DATA_SHOWN} was not found"
        )
    config.pluginmanager.register(_DataTierPlugin(), "resolveflow-data-tier")
    config.pluginmanager.register(
        _OptInTierPlugin("fuzz", _DESELECTED_FUZZ_TESTS), "resolveflow-fuzz-tier"
    )
    config.pluginmanager.register(
        _OptInTierPlugin("real_model", _DESELECTED_REAL_MODEL_TESTS), "resolveflow-real-model-tier"
    )


@pytest.hookimpl(tryfirst=True)  # before -m selects on the markers added here
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        parts = item.path.relative_to(TESTS).parts if item.path.is_relative_to(TESTS) else ()
        # tests/<product or core>/<tier>/test_*.py: the tier folder gives the marker
        if len(parts) > 2 and parts[1] in _FOLDER_MARKERS:
            item.add_marker(_FOLDER_MARKERS[parts[1]])
        if item.path.name.startswith("test_browser_"):
            item.add_marker("browser")
        if "shared_data" in getattr(item, "fixturenames", ()):
            item.add_marker("data")


class _DataTierPlugin:
    """Deselects the data tier, after -m and -k have chosen, when ../shared/data is missing."""

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(
        self, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        if SHARED_DATA.is_dir():
            return
        skipped = [item for item in items if item.get_closest_marker("data")]
        if skipped:
            items[:] = [item for item in items if not item.get_closest_marker("data")]
            config.hook.pytest_deselected(items=skipped)
        _count(config, _SKIPPED_DATA_TESTS, len(skipped))

    def pytest_report_header(self) -> str | None:
        return f"data tier: runs ({SHARED_DATA_SHOWN} found)" if SHARED_DATA.is_dir() else None

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        _gather(node, _SKIPPED_DATA_TESTS)

    def pytest_terminal_summary(self, terminalreporter: Any, config: pytest.Config) -> None:
        skipped = config.stash.get(_SKIPPED_DATA_TESTS, 0)
        if skipped:
            terminalreporter.write_line(
                f"data tier skipped: {SHARED_DATA_SHOWN} not found ({skipped} tests); "
                ".ci/run requires it",
                yellow=True,
                bold=True,
            )


class _OptInTierPlugin:
    """A tier that runs only when ``-m`` names it: ``fuzz`` (long property-based runs) and
    ``real_model`` (a real llama.cpp server: minutes of CPU, so not in the default suite; .ci/run
    runs both). Otherwise its tests are deselected with one line, like the data tier."""

    def __init__(self, marker: str, key: pytest.StashKey[int]) -> None:
        self.marker, self.key = marker, key

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(
        self, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        if self.marker in (config.option.markexpr or ""):
            return
        chosen = [item for item in items if item.get_closest_marker(self.marker)]
        if chosen:
            items[:] = [item for item in items if not item.get_closest_marker(self.marker)]
            config.hook.pytest_deselected(items=chosen)
        _count(config, self.key, len(chosen))

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        _gather(node, self.key)

    def pytest_terminal_summary(self, terminalreporter: Any, config: pytest.Config) -> None:
        deselected = config.stash.get(self.key, 0)
        if deselected:
            terminalreporter.write_line(
                f"{self.marker.replace('_', '-')} tier deselected ({deselected} tests): "
                f"run it with -m {self.marker}"
            )


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The real data sets; a test that asks for this fixture is in the data tier."""
    return SHARED_DATA


class IssueSet:
    """Records in the shape of shared/data/hf-datasets: ``issues.jsonl`` and ``pulls.jsonl``."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._records: dict[str, dict[str, dict[str, Any]]] = {}

    def records(self, kind: str) -> dict[str, dict[str, Any]]:
        """``kind`` is ``issues`` or ``pulls``; records by id, read once."""
        if kind not in self._records:
            with (self.folder / f"{kind}.jsonl").open(encoding="utf-8") as lines:
                rows = map(json.loads, lines)
                self._records[kind] = {row["id"]: row for row in rows}
        return self._records[kind]


# Invented records (the real texts may not be copied), with the ids of the real ones tests name.
HF_SYNTHETIC = IssueSet(TEST_DATA / "hf-datasets-synthetic")
HF_REAL = IssueSet(SHARED_DATA / "hf-datasets")


@pytest.fixture
def hf_datasets(request: pytest.FixtureRequest) -> IssueSet:
    """The synthetic set, or with ``on_synthetic_and_real_hf_data`` also the real one."""
    return HF_REAL if getattr(request, "param", "synthetic") == "real" else HF_SYNTHETIC


# A test decorated with this runs on the synthetic set, and on the real set in the data tier.
on_synthetic_and_real_hf_data = pytest.mark.parametrize(
    "hf_datasets", ["synthetic", pytest.param("real", marks=pytest.mark.data)], indirect=True
)


@pytest.fixture(autouse=True)
def _scrub_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests never see the developer's real settings or secrets."""
    for name in list(os.environ):
        if name.startswith("RESOLVEFLOW_"):
            monkeypatch.delenv(name)


@pytest.fixture(scope="session")
def pg_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    if _EXTERNAL_POSTGRES:
        yield ExternalPostgres(_EXTERNAL_POSTGRES)
        return
    import pgserver

    server = pgserver.get_server(tmp_path_factory.mktemp("pg") / "data", cleanup_mode="stop")
    yield server
    server.cleanup()


class ExternalPostgres:
    """pgserver's ``get_uri`` over a server someone else started (``.ci/run`` starts Debian's)."""

    def __init__(self, url: str) -> None:
        self._url = urllib.parse.urlsplit(url)

    def get_uri(self, database: str = "postgres") -> str:
        return self._url._replace(path=f"/{database}").geturl()


@pytest.fixture(scope="session")
def template_db(pg_server: object) -> str:
    # One template per pytest-xdist worker: on a shared server (RESOLVEFLOW_TEST_POSTGRES_URL) a
    # worker must not drop the template another is copying.
    # Roles are the whole server's: templates are upgraded one at a time (the migrations create
    # the runtime role), under a lock taken in the postgres database every worker connects to.
    name = f"rf_template_{os.environ.get('PYTEST_XDIST_WORKER', 'main')}"
    with psycopg.connect(pg_server.get_uri(), autocommit=True) as root:  # type: ignore[attr-defined]
        root.execute("SELECT pg_advisory_lock(729301)")
        root.execute(f"DROP DATABASE IF EXISTS {name}")
        root.execute(f"CREATE DATABASE {name}")
        with psycopg.connect(
            pg_server.get_uri(name),  # type: ignore[attr-defined]
            autocommit=True,
            row_factory=psycopg.rows.dict_row,
        ) as conn:
            upgrade(conn, after=setup_libraries)
        root.execute("SELECT pg_advisory_unlock(729301)")
    return name


def _copy_of_template(pg_server: object, template_db: str) -> Iterator[str]:
    """A fresh database copied from the migrated template; dropped afterwards."""
    name = f"t_{uuid.uuid4().hex[:12]}"
    root = pg_server.get_uri()  # type: ignore[attr-defined]
    with psycopg.connect(root, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name} TEMPLATE {template_db}")
    yield pg_server.get_uri(name)  # type: ignore[attr-defined]
    with psycopg.connect(root, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.fixture
def database_url(pg_server: object, template_db: str) -> Iterator[str]:
    yield from _copy_of_template(pg_server, template_db)


@pytest.fixture(scope="module")
def module_database(pg_server: object, template_db: str) -> Iterator[str]:
    """One database for a module whose tests read one world built once (``scope="module"``)."""
    yield from _copy_of_template(pg_server, template_db)


@pytest.fixture
def db(database_url: str) -> Iterator[Database]:
    with Database(database_url, max_size=20, connect_timeout=5) as database:
        yield database


def tables_containing(conn: psycopg.Connection[Any], text: str) -> list[str]:
    """Every table of the schema in which some row, read as text, contains ``text``: a secret
    given to the product must be in none of them in clear."""
    names = [
        row[0]
        for row in conn.execute(
            "SELECT quote_ident(table_name) FROM information_schema.tables "
            "WHERE table_schema = 'public' AND table_type = 'BASE TABLE'"
        ).fetchall()
    ]
    found = []
    for name in names:
        query = f"SELECT count(*) FROM {name} AS r WHERE r::text LIKE %s"  # names from the catalog
        row = conn.execute(query, [f"%{text}%"]).fetchone()  # type: ignore[arg-type]
        if row and row[0]:
            found.append(str(name))
    return found


@pytest.fixture
def superuser(database_url: str) -> Iterator[psycopg.Connection[tuple[object, ...]]]:
    """A superuser connection, for tests that tamper with rows the application may not change."""
    with psycopg.connect(database_url, autocommit=True) as conn:
        yield conn


def expire_lease(superuser: psycopg.Connection[Any], execution_id: uuid.UUID) -> None:
    """Backdate an execution's lease, and its attempts' request deadlines, so that both have run
    out (no waiting for the clock)."""
    superuser.execute(
        "UPDATE executions SET lease_expires_at = clock_timestamp() - interval '1 second'"
        " WHERE id = %s",
        [execution_id],
    )
    pass_deadlines(superuser, execution_id)


def pass_deadlines(superuser: psycopg.Connection[Any], execution_id: uuid.UUID) -> None:
    """Backdate the request deadlines of an execution's attempts."""
    superuser.execute(
        "UPDATE execution_attempts SET deadline_at = clock_timestamp() - interval '1 second'"
        " WHERE execution_id = %s",
        [execution_id],
    )


def make_due(superuser: psycopg.Connection[Any], execution_id: uuid.UUID) -> None:
    """Bring a deferred execution's ``not_before`` (Retry-After, rate-limit reset) to now."""
    superuser.execute(
        "UPDATE executions SET not_before = clock_timestamp() WHERE id = %s", [execution_id]
    )


def seconds_until_due(superuser: psycopg.Connection[Any], execution_id: uuid.UUID) -> float:
    row = superuser.execute(
        "SELECT extract(epoch FROM not_before - clock_timestamp()) FROM executions WHERE id = %s",
        [execution_id],
    ).fetchone()
    assert row is not None
    return float(row[0])


@dataclass
class World:
    tenant: Tenant
    requester_token: str
    approver_token: str
    repository: str

    def requester(self, db: Database):  # type: ignore[no-untyped-def]
        return authenticate(db, self.requester_token)

    def approver(self, db: Database):  # type: ignore[no-untyped-def]
        return authenticate(db, self.approver_token)


def make_world(db: Database, tenant: str = "acme", repository: str = "acme/widgets") -> World:
    t = admin.add_tenant(db, tenant)
    requester = admin.add_principal(db, tenant, "rita", [Role.REQUESTER])
    approver = admin.add_principal(db, tenant, "alex", [Role.APPROVER])
    admin.add_repository(db, tenant, repository)
    return World(t, requester.token, approver.token, repository)


@pytest.fixture
def world(db: Database) -> World:
    return make_world(db)


def classified_run(
    db: Database,
    world: World,
    issue: int,
    *,
    repository: str | None = None,
    branch: str = "human_review",
    rule: str = "fallback",
) -> uuid.UUID:
    """A triage run as the graph records one before it proposes: its row, requested by the
    world's requester, and its classification on ``branch`` (what its proposal's decisions
    count as)."""
    from resolveflow.triage.store import runs as run_store

    run_id = uuid.uuid4()
    with db.tenant(world.tenant.id) as conn:
        run_store.insert_run(
            conn,
            run_id=run_id,
            tenant_id=world.tenant.id,
            workflow="triage",
            repository=repository or world.repository,
            issue_number=issue,
            requested_by=world.requester(db).id,
        )
        run_store.insert_classification(
            conn,
            tenant_id=world.tenant.id,
            run_id=run_id,
            classification=branch,
            rule=rule,
            reason="test",
            branch=branch,
            route_reason=None,
        )
    return run_id


def labelled_history(
    repository: str, history: dict[str, list[tuple[str, str]]], first_id: int = 1
) -> list[Any]:
    """Closed issues of ``repository``, a day apart from 2024-01-01, each with its one label
    (``history``: label -> (title, body) of its issues), numbered from ``first_id``."""
    from datetime import UTC, datetime, timedelta

    from resolveflow.retrieval.records import SourceDocument

    start = datetime(2024, 1, 1, tzinfo=UTC)
    documents: list[SourceDocument] = []
    for label, issues in history.items():
        for title, body in issues:
            n = len(documents) + first_id
            documents.append(
                SourceDocument(
                    source=f"github:{repository}",
                    external_id=str(n),
                    kind="issue",
                    title=title,
                    body=body,
                    labels=(label,),
                    state="closed",
                    created_at=start + timedelta(days=n),
                    repository=repository,
                )
            )
    return documents


def propose_and_approve(
    db: Database,
    world: World,
    *,
    comment: str | None = "Thanks for the report! We are looking into it.",
    labels: list[str] | None = None,
    issue: int = 1,
    ttl_seconds: int = 3600,
):  # type: ignore[no-untyped-def]
    """Create a proposal as the requester and approve it as the approver; return the result."""
    from resolveflow.gate import approvals, proposals

    proposal = proposals.create_proposal(
        db,
        world.requester(db),
        repository=world.repository,
        issue=issue,
        comment=comment,
        labels=labels or [],
    )
    return proposal, approvals.approve(
        db, world.approver(db), proposal.id, proposal.digest, ttl_seconds
    )


def make_executor(db: Database, github, **overrides):  # type: ignore[no-untyped-def]
    from resolveflow.gate.executor import Executor
    from resolveflow.gate.lease import GateSettings

    settings = GateSettings(
        **{"lease_seconds": 30.0, "unavailable_retry_seconds": 0.5, **overrides}
    )
    return Executor(db, github, settings)


def make_reconciler(db: Database, github, **overrides):  # type: ignore[no-untyped-def]
    from resolveflow.gate.lease import GateSettings
    from resolveflow.gate.reconcile import Reconciler

    return Reconciler(db, github, GateSettings(**{"lease_seconds": 30.0, **overrides}))


def execution_state(db: Database, world: World, execution_id):  # type: ignore[no-untyped-def]
    from resolveflow.gate.store import executions

    with db.tenant(world.tenant.id) as conn:
        return executions.execution_by_id(conn, world.tenant.id, execution_id)


def attempt_outcomes(db: Database, world: World, execution_id) -> list[tuple[str, str | None]]:  # type: ignore[no-untyped-def]
    from resolveflow.gate.store import executions

    with db.tenant(world.tenant.id) as conn:
        rows = executions.attempts_for_execution(conn, world.tenant.id, execution_id)
    return [(row.step, row.outcome) for row in rows]
