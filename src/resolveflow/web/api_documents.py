"""``POST /api/v1/documents`` and ``DELETE /api/v1/documents``: a tenant's knowledge over HTTP.

A document arrives as a multipart upload (field ``file``; optional fields ``path``, ``source``,
``media_type``) or as JSON ``{path, content, media_type, encoding, source}`` (``encoding``
``base64`` for a PDF). It goes through the same conversion (``retrieval.loaders``) and the same
upsert as ``resolveflow index docs``, into the caller's own tenant only. Who may: any principal
with the requester, approver or admin role; a trusted runbook (front matter ``runbook: TAG``)
takes an approver or admin (docs/web.md says why).

The body is read as it streams in and refused past a cap (413) before anything is parsed, as the
webhook does: the cap is ``RESOLVEFLOW_DOCUMENT_MAX_BYTES`` with room for base64 and multipart
framing, and the decoded document itself must then fit in ``RESOLVEFLOW_DOCUMENT_MAX_BYTES``.

Its text is extracted in a worker process with a deadline (``retrieval.extraction``), waited for
on a thread, so a PDF or HTML bomb costs its worker and its deadline, never the event loop: other
requests, ``/healthz`` among them, are answered meanwhile. At most
``RESOLVEFLOW_DOCUMENT_EXTRACT_WORKERS`` uploads are extracted at once; the others wait for a
worker in the event loop (not on one of its threads), until the deadline, then get 503.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from typing import Annotated, Any, Literal

import anyio
from fastapi import APIRouter, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.datastructures import UploadFile
from starlette.types import Message

from resolveflow.bootstrap.app import extraction_limits
from resolveflow.domain.records import Principal, Role
from resolveflow.errors import InvalidInput, NotAuthorized, NotFound
from resolveflow.retrieval import loaders
from resolveflow.retrieval.document_bounds import stored_text
from resolveflow.retrieval.extraction import ExtractionLimits, extract
from resolveflow.retrieval.loaders import (
    DocumentTooLarge,
    ExtractorUnavailable,
    LoadedDocument,
    UnsupportedMediaType,
)
from resolveflow.retrieval.sources import source_document
from resolveflow.web.api import ViewerDep
from resolveflow.web.bodies import read_capped
from resolveflow.web.security import wired

router = APIRouter(prefix="/api/v1", tags=["documents"])

DEFAULT_SOURCE = "uploads"
_FRAMING_BYTES = 64 * 1024  # multipart boundaries and headers, the JSON around the content
_MAX_PATH = 500
_Source = Annotated[str, Field(min_length=1, max_length=100, pattern=r"^[\w.@-]+$")]


class DocumentIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: str = Field(min_length=1, max_length=_MAX_PATH, examples=["wiki/disk-pressure.html"])
    content: str = Field(description="The file's text, or its bytes in base64 (encoding).")
    media_type: str | None = Field(
        default=None, description="text/markdown, text/plain, text/html or application/pdf"
    )
    encoding: Literal["text", "base64"] = "text"
    source: _Source = DEFAULT_SOURCE


_UPLOAD_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["file"],
    "properties": {
        "file": {"type": "string", "format": "binary"},
        "path": {"type": "string", "maxLength": _MAX_PATH},
        "source": {"type": "string", "maxLength": 100},
        "media_type": {"type": "string"},
    },
}
_RESPONSES: dict[int | str, dict[str, Any]] = {
    400: {"description": "the file could not be read (one line says why)"},
    403: {"description": "the principal may not add documents"},
    413: {
        "description": "larger than RESOLVEFLOW_DOCUMENT_MAX_BYTES, or its text past a bound "
        "of RESOLVEFLOW_DOCUMENT_* (characters, time, memory)"
    },
    415: {"description": "not Markdown, text, HTML or PDF"},
    503: {"description": "every document extractor is busy; try again shortly"},
}


def may_ingest(principal: Principal) -> None:
    if not (principal.has(Role.REQUESTER) or principal.has(Role.APPROVER)):
        raise NotAuthorized("adding or removing documents needs a requester, approver or admin")


def may_mark_runbook(principal: Principal, loaded: loaders.LoadedDocument) -> None:
    """A trusted runbook (front matter ``runbook: TAG``) is vouched for by someone who may
    approve; anyone may add plain documents."""
    if loaded.runbook_tag and not principal.has(Role.APPROVER):
        raise NotAuthorized("marking a document as a trusted runbook needs an approver or admin")


@router.post(
    "/documents",
    status_code=201,
    responses=_RESPONSES,
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {
                "multipart/form-data": {"schema": _UPLOAD_SCHEMA},
                "application/json": {"schema": DocumentIn.model_json_schema()},
            },
        }
    },
)
async def add_document(request: Request, who: ViewerDep) -> Any:
    """Index one document (201), or say it is unchanged (200); the same upsert as the CLI."""
    may_ingest(who.principal)
    app = wired(request)
    max_bytes = app.settings.retrieval.document_max_bytes
    too_large = DocumentTooLarge(
        f"the document is larger than {max_bytes} bytes (RESOLVEFLOW_DOCUMENT_MAX_BYTES)"
    )
    body = await read_capped(request, max_bytes * 4 // 3 + _FRAMING_BYTES, too_large)
    incoming = await _parse(request, body)
    path = document_path(incoming.path)
    media_type = loaders.media_type_for(path, incoming.media_type)
    data = _content_bytes(incoming)
    loaded = await _extracted(request, path, data, media_type, extraction_limits(app.settings))
    may_mark_runbook(who.principal, loaded)
    doc = source_document(loaded, incoming.source)
    stats = await run_in_threadpool(app.indexer().upsert, who.principal.tenant_id, [doc])
    result = {
        "source": incoming.source,
        "path": path,
        "title": loaded.title,
        "media_type": media_type,
        "sections": len(loaded.sections),
        "written": stats.written,
        "unchanged": stats.unchanged,
        "chunks": stats.chunks,
    }
    return JSONResponse(result, status_code=201 if stats.written else 200)


@router.delete("/documents", responses={404: {"description": "no such document"}})
def remove_document(
    request: Request,
    who: ViewerDep,
    path: Annotated[str, Query(min_length=1, max_length=_MAX_PATH)],
    source: Annotated[str, Query(min_length=1, max_length=100)] = DEFAULT_SOURCE,
) -> dict[str, Any]:
    """Remove a document of the caller's tenant; searches stop finding it at once."""
    may_ingest(who.principal)
    stored_text(path, "path")
    stored_text(source, "source")
    removed = wired(request).indexer().remove(who.principal.tenant_id, source, [path])
    if not removed:
        raise NotFound(f"no document {path[:200]!r} in source {source[:100]!r}")
    return {"source": source, "removed": removed}


async def _extracted(
    request: Request, path: str, data: bytes, media_type: str, limits: ExtractionLimits
) -> LoadedDocument:
    """The document's text from a worker process, waited for on a thread (see the docstring)."""
    state = request.app.state
    turns = getattr(state, "document_extractions", None)
    if turns is None:  # no await since the lookup: one event loop, so no other request races
        turns = state.document_extractions = anyio.Semaphore(limits.workers)
    acquired = False
    with anyio.move_on_after(limits.timeout_seconds):  # the wait only, never the extraction
        await turns.acquire()
        acquired = True
    if not acquired:
        raise ExtractorUnavailable(
            "every document extractor is busy; try again shortly "
            "(RESOLVEFLOW_DOCUMENT_EXTRACT_WORKERS)"
        )
    try:
        return await run_in_threadpool(extract, path, data, media_type, limits)
    finally:
        turns.release()


def document_path(raw: str) -> str:
    """A relative path with ``/``: the document's id within its source, never a place on disk."""
    stored_text(raw, "path")
    parts = raw.split("/")
    if (
        "\\" in raw
        or raw.startswith("/")
        or any(part in ("", ".", "..") for part in parts)
        or len(raw) > _MAX_PATH
    ):
        raise InvalidInput("path must be relative, with '/' between names and no '.' or '..'")
    return raw


@dataclass(frozen=True)
class _Incoming:
    path: str
    content: str | bytes
    media_type: str | None
    encoding: str
    source: str


async def _parse(request: Request, body: bytes) -> _Incoming:
    kind = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if kind == "application/json":
        return _from_json(body)
    if kind == "multipart/form-data":
        return await _from_form(request, body)
    raise UnsupportedMediaType(
        "send the document as multipart/form-data (field 'file') or as application/json"
    )


def _from_json(body: bytes) -> _Incoming:
    try:
        doc = DocumentIn.model_validate(json.loads(body))
    except RecursionError:  # e.g. 100,000 times "[": json recurses once per level
        raise InvalidInput("the body is not a JSON object with path and content") from None
    except (ValueError, UnicodeDecodeError) as exc:  # json's errors are ValueErrors
        if isinstance(exc, ValidationError) and exc.errors():
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"]) or "body"
            raise InvalidInput(f"{where}: {first['msg']}") from None
        raise InvalidInput("the body is not a JSON object with path and content") from None
    return _Incoming(**doc.model_dump())


async def _from_form(request: Request, body: bytes) -> _Incoming:
    form = await _replayed(request, body).form(max_files=1, max_fields=10)
    try:
        upload = form.get("file")
        if not isinstance(upload, UploadFile):
            raise InvalidInput("the multipart body needs a file in the field 'file'")
        fields = {name: form.get(name) for name in ("path", "source", "media_type")}
        if not all(value is None or isinstance(value, str) for value in fields.values()):
            raise InvalidInput("path, source and media_type must be text fields")
        path = fields["path"] or upload.filename or ""
        source = fields["source"] or DEFAULT_SOURCE
        try:
            checked: str = DocumentIn(path=str(path), content="", source=str(source)).source
        except ValidationError:
            raise InvalidInput("path or source is not valid") from None
        media_type = fields["media_type"] or upload.content_type
        return _Incoming(
            path=str(path),
            content=await upload.read(),
            media_type=str(media_type) if media_type else None,
            encoding="bytes",
            source=checked,
        )
    finally:
        await form.close()


def _content_bytes(incoming: _Incoming) -> bytes:
    if isinstance(incoming.content, bytes):
        return incoming.content
    if incoming.encoding == "base64":
        try:
            return base64.b64decode(incoming.content, validate=True)
        except (binascii.Error, ValueError):
            raise InvalidInput("content is not valid base64") from None
    return incoming.content.encode("utf-8", errors="surrogatepass")


def _replayed(request: Request, body: bytes) -> Request:
    """The same request with its body already read (and capped), for Starlette's form parser."""
    sent = False

    async def receive() -> Message:
        nonlocal sent
        if sent:
            return {"type": "http.disconnect"}
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return Request(request.scope, receive)
