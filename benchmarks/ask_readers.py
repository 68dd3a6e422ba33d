"""Other readers of meaning for Ask, on both dev corpora (issue 28; docs/ask.md, "Other readers").

    .venv/bin/python benchmarks/ask_readers.py [--data DIR] [--home DIR] [--seq N]
                                               [--model-dir DIR --dimensions D --model-name NAME]

What was tried at stop 40 to lift Ask's MRR@5 on R's pages without hurting the runbooks, each
figure from the product's own code:

- ``pipeline``: ``ask`` on every dev question (``eval answers``' report) with today's ranking, and
  with 60 and 100 documents ranked instead of ``answering.DEPTH`` (40).
- ``rerank``: the forty pages each ask ranked (read back from ``ask_records``) ordered again by
  reciprocal rank fusion of cosine and words, and with late interaction added (each question
  token's best match among a page's token vectors, MiniLM's own, ColBERT's MaxSim; idf-weighted
  or plain).
- ``vector``: every page ranked by meaning only (max over its chunks' cosines; the asker's words
  embedded as Ask embeds them), then a page's mean vector, Rocchio feedback (the question's vector
  moved towards its nearest chunks), the subject embedded apart, and the issue's simple baseline:
  BM25 (words as the index stems them) fused by RRF with the best chunk's cosine.

``--seq 256`` makes the embedder read 256 tokens. ``--model-dir`` runs another ONNX encoder
(its ``model.int8.onnx`` and ``tokenizer.json``; mean pooling, as MiniLM): an all-mpnet-base-v2
export made the way ``scripts/build_onnx_embedder.py`` makes MiniLM's was measured this way
(``--dimensions 768 --model-name all-mpnet-base-v2``). The corpora are indexed once per embedder
into ``--home`` (default: a temporary folder) and reused by a later run with the same home.
About 3 minutes with MiniLM on two cores (indexing 1.5, late interaction 1.5), 12 with mpnet.
"""

from __future__ import annotations

import argparse
import json
import math
import tempfile
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple
from uuid import UUID

import numpy as np

import resolveflow.ask.answering as answering
from resolveflow.accounts import admin
from resolveflow.adapters.embedder.onnx_minilm import OnnxMiniLM
from resolveflow.adapters.embedder.protocol import EmbeddingSpace, Vectors
from resolveflow.ask.answering import AskService, ask
from resolveflow.ask.domain.question import read_question
from resolveflow.ask.evaluation import SOURCE, Question, outcome, read_questions, report
from resolveflow.bootstrap.app import migrate
from resolveflow.retrieval.chunking import embedding_text, query_text
from resolveflow.retrieval.ingest import Indexer
from resolveflow.retrieval.search import Searcher
from resolveflow.retrieval.sources import read_docs_dir
from resolveflow.store.database import Database
from resolveflow.store.embedded import embedded_database_url

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
CORPORA = {
    "runbooks": ("runbooks/corpus", "runbooks/questions-dev.jsonl"),
    "r-help": ("ask-rhelp-dev/corpus", "ask-rhelp-dev/questions.jsonl"),
}
SHOWN = ("mrr_at_5", "recall_at_5", "abstention_precision", "answerable_abstained")


class OtherEncoder(OnnxMiniLM):
    """Another mean-pooled ONNX encoder in MiniLM's runner (its own space and width)."""

    def __init__(self, model_dir: Path, dimensions: int, name: str, max_seq_length: int) -> None:
        super().__init__(max_seq_length=max_seq_length, model_dir=model_dir)
        self.dimensions = dimensions
        self.name = name

    @property
    def space(self) -> EmbeddingSpace:
        return EmbeddingSpace("local", f"{self.name}:onnx-int8", self.dimensions)

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        return super().embed_documents(texts)


@dataclass(frozen=True)
class Corpus:
    name: str
    tenant_id: UUID
    questions: list[Question]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--home", type=Path, default=None)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--model-dir", type=Path, default=None)
    parser.add_argument("--dimensions", type=int, default=768)
    parser.add_argument("--model-name", default="other")
    args = parser.parse_args()
    home = args.home or Path(tempfile.mkdtemp(prefix="rf-bench-readers-"))
    home.mkdir(parents=True, exist_ok=True)
    migrate(embedded_database_url(home))
    db = Database(embedded_database_url(home), max_size=4, statement_timeout_ms=600_000).open()
    embedder: OnnxMiniLM = (
        OtherEncoder(args.model_dir, args.dimensions, args.model_name, args.seq)
        if args.model_dir
        else OnnxMiniLM(max_seq_length=args.seq)
    )
    try:
        corpora = _indexed(db, embedder, args.data, home)
        # Today's ranking last: the reranking below reads the records of its asks.
        for label, depth in (("rank 60", 60), ("rank 100", 100), ("today", answering.DEPTH)):
            _print(label, {c.name: _pipeline(db, embedder, c, depth) for c in corpora})
        for c in corpora:
            pages = _pages(db, c.tenant_id)  # read once, for both
            _rerank(db, embedder, c, pages)
            _vector(db, embedder, c, pages)
    finally:
        db.close()


def _indexed(db: Database, embedder: OnnxMiniLM, data: Path, home: Path) -> list[Corpus]:
    key = f"{embedder.space.model}:{embedder.max_seq_length}"
    saved_file = home / "tenants.json"
    saved: dict[str, dict[str, str]] = (
        json.loads(saved_file.read_text()) if saved_file.exists() else {}
    )
    tenants = saved.setdefault(key, {})
    corpora = []
    for name, (folder, questions) in CORPORA.items():
        if name not in tenants:
            tenant = admin.add_tenant(db, f"readers-{name}-{len(saved)}-{len(tenants)}")
            Indexer(db, embedder).upsert(tenant.id, list(read_docs_dir(data / folder, SOURCE)))
            tenants[name] = str(tenant.id)
            saved_file.write_text(json.dumps(saved))
        corpora.append(Corpus(name, UUID(tenants[name]), read_questions(data / questions)))
    return corpora


def _pipeline(db: Database, embedder: OnnxMiniLM, corpus: Corpus, depth: int) -> dict[str, Any]:
    before = answering.DEPTH
    answering.DEPTH = depth  # the one knob varied; put back below
    try:
        service = AskService(db, Searcher(db, embedder))
        outcomes = [
            outcome(q, ask(service, corpus.tenant_id, q.question)) for q in corpus.questions
        ]
    finally:
        answering.DEPTH = before
    figures = report(outcomes).as_json()
    return {key: figures[key] for key in SHOWN}


def _print(label: str, figures: dict[str, dict[str, Any]]) -> None:
    cells = "  ".join(
        f"{name}: " + ", ".join(f"{k} {v}" for k, v in found.items())
        for name, found in figures.items()
    )
    print(f"{label:<34} {cells}", flush=True)


def _mrr(ranked: Sequence[Sequence[str]], answers: Sequence[Sequence[str]]) -> float:
    total = 0.0
    for order, right in zip(ranked, answers, strict=True):
        for rank, path in enumerate(order[:5], start=1):
            if path in right:
                total += 1 / rank
                break
    return round(total / len(answers), 4)


@dataclass
class _Pages:
    """A tenant's chunks as arrays: path, title, section, text and vector of each."""

    paths: list[str]
    titles: list[str]
    sections: list[str]
    texts: list[str]
    vectors: np.ndarray
    lexemes: list[Counter[str]]


def _pages(db: Database, tenant_id: UUID) -> _Pages:
    with db.owner_connection() as conn:
        rows = conn.execute(
            "SELECT d.external_id, d.title, c.section, c.text, c.embedding::text AS vector, "
            "array(SELECT lexeme || ':' || coalesce(array_length(positions, 1), 1) "
            "      FROM unnest(c.tsv)) AS lexemes "
            "FROM chunks c JOIN documents d ON d.id = c.document_id "
            "WHERE c.tenant_id = %s ORDER BY d.external_id, c.ordinal",
            (tenant_id,),
        ).fetchall()
    return _Pages(
        [r["external_id"] for r in rows],
        [r["title"] for r in rows],
        [r["section"] for r in rows],
        [r["text"] for r in rows],
        np.array([json.loads(r["vector"]) for r in rows], dtype=np.float32),
        [
            Counter({x.rsplit(":", 1)[0]: int(x.rsplit(":", 1)[1]) for x in r["lexemes"]})
            for r in rows
        ],
    )


class _Reranked(NamedTuple):
    """One of the forty pages an ask ranked: its scores as recorded, and MaxSim's two readings."""

    path: str
    score: float  # today's rank score
    cosine: float
    fused: float
    maxsim_idf: float
    maxsim: float


def _rerank(db: Database, embedder: OnnxMiniLM, corpus: Corpus, pages: _Pages) -> None:
    """The forty pages each ask ranked, ordered again: RRF of cosine and words; MaxSim added."""
    with db.owner_connection() as conn:
        ids = {
            str(r["id"]): r["external_id"]
            for r in conn.execute(
                "SELECT id, external_id FROM documents WHERE tenant_id = %s", (corpus.tenant_id,)
            ).fetchall()
        }
        records = conn.execute(
            "SELECT question, retrieved FROM ask_records WHERE tenant_id = %s "
            "ORDER BY created_at DESC LIMIT %s",
            (corpus.tenant_id, len(corpus.questions)),
        ).fetchall()
    ranking = {r["question"]: r["retrieved"] for r in records}
    answerable = [q for q in corpus.questions if q.answers]
    tokens = _TokenReader(embedder, pages)
    rows: list[list[_Reranked]] = []
    for question in answerable:
        asked = read_question(question.question)
        query_ids, query_tokens = tokens.read(query_text(asked.search_text))
        idf = np.array([tokens.idf(t) for t in query_ids])
        row = []
        for hit in ranking[question.question.strip()]:
            path = ids[hit["document_id"]]
            best = (query_tokens @ tokens.page(path).T).max(axis=1)
            weighted = float((best * idf).sum() / idf.sum())
            row.append(
                _Reranked(
                    path, hit["score"], hit["cosine"], hit["fused"], weighted, float(best.mean())
                )
            )
        rows.append(row)
    answers = [q.answers for q in answerable]

    def by(key: Callable[[_Reranked], float]) -> float:
        return _mrr([[r.path for r in sorted(row, key=key, reverse=True)] for row in rows], answers)

    def rrf(row: list[_Reranked]) -> list[str]:
        by_cosine = sorted(row, key=lambda r: -r.cosine)
        by_fused = sorted(row, key=lambda r: -r.fused)
        score = {r.path: 1 / (60 + by_cosine.index(r)) + 1 / (60 + by_fused.index(r)) for r in row}
        return sorted(score, key=lambda p: -score[p])

    print(
        f"{corpus.name}: rerank  today {by(lambda r: r.score)}, "
        f"rrf {_mrr([rrf(row) for row in rows], answers)}, "
        f"maxsim alone idf {by(lambda r: r.maxsim_idf)} plain {by(lambda r: r.maxsim)}, "
        + ", ".join(
            f"today + {b} maxsim {by(lambda r, b=b: r.score + b * r.maxsim)}" for b in (0.5, 1.0)
        )
        + "  (today + b x plain MaxSim)",
        flush=True,
    )


class _TokenReader:
    """Token vectors of the encoder's last layer (before pooling), in 128-token windows."""

    def __init__(self, embedder: OnnxMiniLM, pages: _Pages) -> None:
        self.loaded = embedder._load()  # the runner's own tokenizer and session
        self.pages = pages
        self.cache: dict[str, np.ndarray] = {}
        self.chunks_of: dict[str, list[int]] = defaultdict(list)
        for i, path in enumerate(pages.paths):
            self.chunks_of[path].append(i)
        df: Counter[int] = Counter()
        for text in pages.texts:
            df.update(set(self.loaded.tokenizer.encode(text, add_special_tokens=False).ids))
        self.df, self.chunks = df, len(pages.texts)

    def idf(self, token: int) -> float:
        seen = self.df[token]
        return math.log(1 + (self.chunks - seen + 0.5) / (seen + 0.5))

    def read(self, text: str, window: int = 128) -> tuple[list[int], np.ndarray]:
        ids = self.loaded.tokenizer.encode(text).ids
        first, body, last = ids[0], ids[1:-1], ids[-1]
        out_ids: list[int] = []
        parts = []
        for start in range(0, max(1, len(body)), window - 2):
            part = [first, *body[start : start + window - 2], last]
            array = np.asarray([part], dtype=np.int64)
            (hidden,) = self.loaded.session.run(
                None, {"input_ids": array, "attention_mask": np.ones_like(array)}
            )
            out_ids.extend(part[1:-1])
            parts.append(np.asarray(hidden, dtype=np.float32)[0][1:-1])
        vectors = np.concatenate(parts)
        return out_ids, vectors / (np.linalg.norm(vectors, axis=1, keepdims=True) + 1e-9)

    def page(self, path: str) -> np.ndarray:
        if path not in self.cache:
            pages = self.pages
            chunks = self.chunks_of[path]
            self.cache[path] = np.concatenate(
                [
                    self.read(embedding_text(pages.titles[i], pages.sections[i], pages.texts[i]))[1]
                    for i in chunks
                ]
            )
        return self.cache[path]


def _vector(db: Database, embedder: OnnxMiniLM, corpus: Corpus, pages: _Pages) -> None:
    """Every page ranked by meaning only, and the variants of the query and the page."""
    docs = sorted(set(pages.paths))
    index = {d: i for i, d in enumerate(docs)}
    owner = np.array([index[p] for p in pages.paths])
    vectors = pages.vectors
    means = np.zeros((len(docs), vectors.shape[1]), dtype=np.float32)
    np.add.at(means, owner, vectors)
    means /= np.linalg.norm(means, axis=1, keepdims=True)
    answerable = [q for q in corpus.questions if q.answers]
    asked = [read_question(q.question) for q in answerable]
    queries = embedder.embed_documents([query_text(a.search_text) for a in asked])
    subjects = embedder.embed_documents(
        [query_text(q.question.split("\n\n", 1)[0]) for q in answerable]
    )
    bm25 = _BM25([Counter() for _ in docs])
    for lexemes, i in zip(pages.lexemes, owner, strict=True):
        bm25.bags[i].update(lexemes)
    bm25.fit()
    with db.owner_connection() as conn:
        query_lexemes = [
            [
                r["lexeme"]
                for r in conn.execute(
                    "SELECT DISTINCT lexeme FROM "
                    "unnest(to_tsvector('english', rf_lexical_text(%s)))",
                    (a.search_text,),
                ).fetchall()
            ]
            for a in asked
        ]

    def best(query: np.ndarray) -> np.ndarray:
        scores = np.full(len(docs), -9.0, dtype=np.float32)
        np.maximum.at(scores, owner, vectors @ query)
        return scores

    def rocchio(query: np.ndarray, k: int, alpha: float) -> np.ndarray:
        nearest = np.argsort(-(vectors @ query))[:k]
        moved = query + alpha * vectors[nearest].mean(axis=0)
        return best(moved / np.linalg.norm(moved))

    def ranks(scores: np.ndarray) -> np.ndarray:
        order = np.argsort(-scores)
        out = np.empty(len(scores))
        out[order] = np.arange(1, len(scores) + 1)
        return out

    variants: dict[str, Callable[[int], np.ndarray]] = {
        "best chunk": lambda i: best(queries[i]),
        "page mean": lambda i: means @ queries[i],
        "best + mean": lambda i: best(queries[i]) + 0.5 * (means @ queries[i]),
        "rocchio 3 x 0.3": lambda i: rocchio(queries[i], 3, 0.3),
        "rocchio 5 x 0.5": lambda i: rocchio(queries[i], 5, 0.5),
        "rocchio 10 x 1": lambda i: rocchio(queries[i], 10, 1.0),
        "+ subject": lambda i: best(queries[i]) + best(subjects[i]),
        "bm25 alone": lambda i: bm25.scores(query_lexemes[i]),
        "bm25 rrf best chunk": lambda i: (
            1 / (60 + ranks(best(queries[i]))) + 1 / (60 + ranks(bm25.scores(query_lexemes[i])))
        ),
    }
    answers = [q.answers for q in answerable]
    figures = {
        name: _mrr(
            [[docs[j] for j in np.argsort(-score(i))[:5]] for i in range(len(answerable))],
            answers,
        )
        for name, score in variants.items()
    }
    print(f"{corpus.name}: vector only  " + ", ".join(f"{k} {v}" for k, v in figures.items()))


class _BM25:
    """BM25 over whole pages (k1 1.2, b 0.75) on the lexemes the index stored."""

    def __init__(self, bags: list[Counter[str]]) -> None:
        self.bags = bags
        self.idf: dict[str, float] = {}
        self.lengths = np.zeros(0)
        self.postings: dict[str, list[tuple[int, int]]] = defaultdict(list)

    def fit(self) -> None:
        pages = len(self.bags)
        for i, bag in enumerate(self.bags):
            for lexeme, count in bag.items():
                self.postings[lexeme].append((i, count))
        self.idf = {
            t: math.log(1 + (pages - len(p) + 0.5) / (len(p) + 0.5))
            for t, p in self.postings.items()
        }
        self.lengths = np.array([sum(b.values()) for b in self.bags], dtype=np.float64)

    def scores(self, lexemes: list[str]) -> np.ndarray:
        out = np.zeros(len(self.bags))
        norm = 0.25 + 0.75 * self.lengths / self.lengths.mean()
        for lexeme in lexemes:
            for i, count in self.postings.get(lexeme, ()):
                out[i] += self.idf[lexeme] * count * 2.2 / (count + 1.2 * norm[i])
        return out


if __name__ == "__main__":
    main()
