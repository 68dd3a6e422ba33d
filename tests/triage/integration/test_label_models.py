"""The process's label models (``triage/parts.py::LabelModels``) against the embedded Postgres:
learned once while the repository's labelled history stands still, again when it moves (a
label given or taken away in the index), one training at a time however many runs ask, and a run
that finds a training under way waits for it no longer than it is told to."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

from conftest import World
from resolveflow.adapters.embedder.hashing import HashingEmbedder
from resolveflow.retrieval.ingest import Indexer
from resolveflow.retrieval.records import SourceDocument
from resolveflow.store.database import Database
from resolveflow.triage.labels import Example, LabelModel
from resolveflow.triage.parts import LabelModels

REPO = "acme/widgets"
START = datetime(2024, 1, 1, tzinfo=UTC)


def _issue(number: int, text: str, labels: tuple[str, ...]) -> SourceDocument:
    return SourceDocument(
        source=f"github:{REPO}",
        external_id=str(number),
        kind="issue",
        title=text,
        body=text,
        labels=labels,
        state="open",
        created_at=START + timedelta(days=number),
        repository=REPO,
    )


HISTORY = [_issue(n, f"crash traceback error {n}", ("bug",)) for n in range(1, 5)] + [
    _issue(n, f"please add an option {n}", ("enhancement",)) for n in range(5, 9)
]


class CountingTrainer:
    """``LabelModel.train``, counted; held at a gate when asked, to catch a training mid-way."""

    def __init__(self) -> None:
        self.calls = 0
        self.gate = threading.Event()
        self.gate.set()
        self.entered = threading.Event()  # set when a training has begun

    def __call__(self, examples: Sequence[Example]) -> LabelModel:
        self.calls += 1
        self.entered.set()
        assert self.gate.wait(60)
        return LabelModel.train(examples)


def _index(db: Database, world: World, documents: list[SourceDocument]) -> None:
    Indexer(db, HashingEmbedder()).upsert(world.tenant.id, documents)


def test_a_standing_history_is_learned_once_and_a_moved_one_again(
    db: Database, world: World
) -> None:
    _index(db, world, HISTORY)
    trainer = CountingTrainer()
    models = LabelModels(db, wait_seconds=None, train=trainer)
    tenant = world.tenant.id

    first = models.learned(tenant, REPO)
    assert [models.learned(tenant, "Acme/Widgets") for _ in range(5)] == [first] * 5
    assert trainer.calls == models.trainings == 1 and first.examples == 8

    # An unlabelled issue and a pull request arrive: the labelled history has not moved.
    _index(db, world, [_issue(20, "a question", ())])
    assert models.learned(tenant, REPO) is first and trainer.calls == 1

    # A label given: learned again, once.
    _index(db, world, [_issue(20, "a question", ("bug",))])
    given = models.learned(tenant, REPO)
    assert given is not first and given.examples == 9
    assert models.learned(tenant, REPO) is given and trainer.calls == 2

    # The only label of an issue taken away (the newest indexed time may not move): again.
    _index(db, world, [_issue(3, "crash traceback error 3", ())])
    assert models.learned(tenant, REPO).examples == 8 and trainer.calls == 3


def test_many_runs_at_once_share_one_training(db: Database, world: World) -> None:
    _index(db, world, HISTORY)
    trainer = CountingTrainer()
    trainer.gate.clear()
    models = LabelModels(db, wait_seconds=None, train=trainer)
    with ThreadPoolExecutor(8) as pool:
        asked = [pool.submit(models.learned, world.tenant.id, REPO) for _ in range(8)]
        time.sleep(0.2)  # let them all ask before the training may finish (not a timing test)
        trainer.gate.set()
        learned = {id(future.result()) for future in asked}
    assert (len(learned), trainer.calls, models.trainings) == (1, 1, 1)


def test_a_run_that_finds_a_training_under_way_goes_on_with_the_model_before(
    db: Database, world: World
) -> None:
    _index(db, world, HISTORY)
    trainer = CountingTrainer()
    models = LabelModels(db, wait_seconds=0, train=trainer)
    tenant = world.tenant.id
    before = models.learned(tenant, REPO)  # the first is always waited for

    trainer.gate.clear()
    trainer.entered.clear()
    _index(db, world, [_issue(30, "crash traceback error 30", ("bug",))])
    assert models.learned(tenant, REPO) is before  # the training is held: the model before
    assert trainer.entered.wait(60)
    assert models.learned(tenant, REPO) is before and trainer.calls == 2  # not started twice
    trainer.gate.set()
    deadline = time.monotonic() + 60  # a ceiling for a loaded machine, not a measurement
    while models.trainings < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    after = models.learned(tenant, REPO)
    assert after is not before and after.examples == 9 and trainer.calls == 2
