"""``bootstrap/app.App`` is the one place that builds long-lived objects: once per process, shared by
every thread, closed once. No database is opened here (the pool opens on first use)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from resolveflow.adapters.embedder.hashing import HashingEmbedder
from resolveflow.bootstrap import app as wiring
from resolveflow.bootstrap.app import App
from resolveflow.config import EmbeddingSettings, GitHubSettings, Settings
from resolveflow.errors import ConfigError
from resolveflow.store.database import Database


@pytest.fixture
def app() -> Iterator[App]:
    wired = App(
        settings=Settings(embedding=EmbeddingSettings(provider="fake")),
        db=Database("postgresql://127.0.0.1:9/unused"),
    )
    yield wired
    wired.close()


def test_shared_objects_are_built_once_even_when_threads_ask_together(
    app: App, monkeypatch: pytest.MonkeyPatch
) -> None:
    built: list[HashingEmbedder] = []

    def build(settings: Settings) -> HashingEmbedder:
        built.append(HashingEmbedder())
        return built[-1]

    monkeypatch.setattr(wiring, "build_embedder", build)
    start = threading.Barrier(8)
    searchers: list[Any] = []

    def ask() -> None:
        start.wait()
        searchers.append(app.searcher())

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(built) == 1 and len({id(s) for s in searchers}) == 1
    assert app.indexer().embedder is app.embedder() is searchers[0].embedder is built[0]


def test_close_closes_what_was_built_once(app: App, monkeypatch: pytest.MonkeyPatch) -> None:
    closed: list[str] = []

    class Model:
        def close(self) -> None:
            closed.append("model")

    monkeypatch.setattr(wiring, "build_model", lambda settings: Model())
    assert app.model() is app.model()
    app.close()
    app.close()
    assert closed == ["model"]


def test_sign_in_needs_the_oauth_app() -> None:
    bare = App(settings=Settings(), db=Database("postgresql://127.0.0.1:9/unused"))
    with pytest.raises(ConfigError, match="RESOLVEFLOW_GITHUB_OAUTH_CLIENT_ID"):
        bare.github_oauth()
    configured = App(
        settings=Settings(
            github=GitHubSettings(oauth_client_id="id", oauth_client_secret="secret")
        ),
        db=Database("postgresql://127.0.0.1:9/unused"),
    )
    assert configured.github_oauth().client_id == "id"
    assert configured.token_cipher() is None and configured.token_lookup() is None
