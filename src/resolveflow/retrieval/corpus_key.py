"""The key of a docs folder's index: what ``eval answers`` finds the index it kept by.

A digest of every supported file's relative path and bytes (``sources.folder_files``: the files
``DocsFolder`` would read, links never followed), of the embedder's space, and of the index format:
the source of every module of resolveflow that reading a folder and ingesting it import, found by
following their imports, and the schema's migrations. A change to the code that extracts, chunks
or writes documents makes a new key, so the next run indexes again; a change to ranking or
answering does not.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
from functools import cache
from pathlib import Path

from resolveflow.adapters.embedder.protocol import EmbeddingSpace
from resolveflow.retrieval.sources import DEFAULT_MAX_BYTES, folder_files

# What reading a docs folder and indexing it start from; their imports are followed. The
# extraction worker is started by its name, not imported.
INGESTION_MODULES = (
    "resolveflow.retrieval.sources",
    "resolveflow.retrieval.ingest",
    "resolveflow.retrieval.extraction_worker",
)
_PACKAGE = "resolveflow"
_MIGRATIONS = Path(__file__).parents[1] / "store" / "migrations"


def corpus_key(folder: Path, space: EmbeddingSpace, max_bytes: int = DEFAULT_MAX_BYTES) -> str:
    digest = hashlib.sha256()
    for part in (index_format(), space.provider, space.model, str(space.dimensions)):
        _add(digest, part.encode())
    for name, content in folder_files(folder, max_bytes):
        _add(digest, name.encode())
        _add(digest, content)
    return digest.hexdigest()


def _add(digest: hashlib._Hash, part: bytes) -> None:
    """Each part with its length first: no two sequences of parts hash alike."""
    digest.update(len(part).to_bytes(8, "big"))
    digest.update(part)


@cache
def index_format() -> str:
    """A digest of the source of the modules the ingestion path imports, in name order, and of
    the schema (the migrations) the index is written to."""
    digest = hashlib.sha256()
    sources = sorted(_imported(INGESTION_MODULES).items())
    sources += [(path.name, path) for path in sorted(_MIGRATIONS.glob("*.sql"))]
    for name, path in sources:
        _add(digest, name.encode())
        _add(digest, path.read_bytes())
    return digest.hexdigest()


def _imported(roots: tuple[str, ...]) -> dict[str, Path]:
    """Every module of the package that ``roots`` import, directly or not (imports inside
    functions too), with its source file."""
    found: dict[str, Path] = {}
    waiting = list(roots)
    while waiting:
        name = waiting.pop()
        path = _source(name)
        if name in found or path is None:
            continue
        found[name] = path
        waiting.extend(_imports_of(path))
    return found


def _source(name: str) -> Path | None:
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or spec.origin is None or not spec.origin.endswith(".py"):
        return None
    return Path(spec.origin)


def _imports_of(path: Path) -> list[str]:
    names: list[str] = []
    for node in ast.walk(ast.parse(path.read_bytes())):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            # ``from package import module`` names a module too.
            names += [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
    return [name for name in names if name == _PACKAGE or name.startswith(_PACKAGE + ".")]
