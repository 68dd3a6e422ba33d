"""Extraction in worker processes (``retrieval.extraction``, issue 26 finding 2): a job past its
deadline is killed and answered in one line, a job past its memory ceiling too, a caller waits
for a busy worker no longer than the deadline, a worker that died while idle is replaced, and the
settings' upper nesting bound still converts. Real worker processes, no stand-ins."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from typing import Any

import psutil
import pytest

from document_bombs import dense_html
from resolveflow.retrieval import extraction
from resolveflow.retrieval.extraction import ExtractionLimits, Extractor
from resolveflow.retrieval.loaders import (
    HTML,
    TEXT,
    DocumentTooLarge,
    ExtractorUnavailable,
    TextLimits,
    UnreadableDocument,
)

SLACK = 20.0  # a worker's start (the imports) on a loaded machine


@pytest.fixture
def extractor() -> Iterator[Extractor]:
    pool = Extractor(1)
    yield pool
    pool.close()


def _workers(pool: Extractor) -> list[int]:
    return [worker._proc.pid for worker in pool._idle]


def test_a_job_past_its_deadline_is_killed_and_the_next_gets_a_fresh_worker(
    extractor: Extractor,
) -> None:
    extractor.extract("warm.md", b"# Warm", TEXT, ExtractionLimits())
    (first,) = _workers(extractor)
    started = time.monotonic()
    with pytest.raises(DocumentTooLarge, match=r"^slow.html: .*longer than 1 s .*SECONDS\)$"):
        extractor.extract(
            "slow.html", dense_html(1_000_000), HTML, ExtractionLimits(timeout_seconds=1)
        )
    assert time.monotonic() - started < 1 + SLACK
    assert not psutil.pid_exists(first) or psutil.Process(first).status() == psutil.STATUS_ZOMBIE
    assert extractor.extract("after.md", b"# After", TEXT, ExtractionLimits()).title == "After"
    assert _workers(extractor) != [first]


def test_a_job_past_its_memory_ceiling_is_one_line_and_memory_stays_under_it(
    extractor: Extractor,
) -> None:
    ceiling = 200 * 1024 * 1024
    limits = ExtractionLimits(memory_bytes=ceiling, timeout_seconds=300)
    with pytest.raises(DocumentTooLarge, match="needs more than 200 MB of memory"):
        extractor.extract("big.html", dense_html(2_000_000), HTML, limits)
    assert 0 < extractor.peak_rss_bytes <= ceiling
    assert _workers(extractor) == []  # its heap is not reused
    assert extractor.extract("after.md", b"# After", TEXT, limits).title == "After"


def test_a_worker_that_dies_mid_job_under_a_ceiling_is_the_memory_line(
    extractor: Extractor, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past RLIMIT_AS a parser's failed allocation in C can abort the worker (SIGABRT) instead of
    raising MemoryError (CI saw it once): the reader reports the ceiling, not a mystery."""

    def aborts(self: Any, header: Any, data: bytes, deadline: float, cap: int) -> Any:
        self._proc.send_signal(signal.SIGABRT)
        raise extraction._Gone

    monkeypatch.setattr(extraction._Worker, "run", aborts)
    ceiling = ExtractionLimits(memory_bytes=200 * 1024 * 1024)
    with pytest.raises(DocumentTooLarge, match="needs more than 200 MB of memory"):
        extractor.extract("big.html", b"<p>x</p>", HTML, ceiling)
    # how large the dead worker grew is still known (its usage read when it was reaped)
    assert 0 < extractor.peak_rss_bytes <= 200 * 1024 * 1024
    with pytest.raises(UnreadableDocument, match="the extraction stopped unexpectedly"):
        extractor.extract("big.html", b"<p>x</p>", HTML, ExtractionLimits(memory_bytes=0))
    assert _workers(extractor) == []  # each dead worker was reaped, none kept


def test_a_caller_waits_for_a_busy_worker_no_longer_than_the_deadline(
    extractor: Extractor,
) -> None:
    extractor.extract("warm.md", b"# Warm", TEXT, ExtractionLimits())
    outcome: list[BaseException] = []

    def slow() -> None:
        try:
            extractor.extract("slow.html", dense_html(2_000_000), HTML,
                              ExtractionLimits(timeout_seconds=6))  # fmt: skip
        except DocumentTooLarge as exc:
            outcome.append(exc)

    holder = threading.Thread(target=slow)
    holder.start()
    time.sleep(1.0)
    started = time.monotonic()
    with pytest.raises(ExtractorUnavailable, match="busy"):
        extractor.extract("next.md", b"# Next", TEXT, ExtractionLimits(timeout_seconds=1))
    assert 0.9 < time.monotonic() - started < 1 + SLACK
    holder.join(60)
    assert len(outcome) == 1


def test_a_worker_that_died_while_idle_is_replaced(extractor: Extractor) -> None:
    extractor.extract("warm.md", b"# Warm", TEXT, ExtractionLimits())
    (first,) = _workers(extractor)
    os.kill(first, signal.SIGKILL)
    psutil.Process(first).wait(10)
    assert extractor.extract("again.md", b"# Again", TEXT, ExtractionLimits()).title == "Again"


def test_the_upper_nesting_bound_of_the_setting_still_converts(extractor: Extractor) -> None:
    limits = ExtractionLimits(text=TextLimits(max_depth=400))
    page = b"<div>" * 380 + b"<table><tr><td>" * 6 + b"bottom words"
    assert "bottom words" in extractor.extract("deep.html", page, HTML, limits).body
