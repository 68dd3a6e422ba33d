"""``/healthz`` (the process answers: no database, no outside call) and ``/readyz`` (it can do
its work, and so can its worker under ``serve --with-worker``: ``bootstrap/health.py``), for load
balancers and orchestrators. Neither needs a token
and neither says more than a check's name and one line."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from resolveflow.bootstrap.health import readiness
from resolveflow.web.security import wired

router = APIRouter(tags=["health"])


@router.get("/healthz")
def healthz() -> dict[str, str]:
    """The process is up and serving requests."""
    return {"status": "ok"}


@router.get(
    "/readyz",
    responses={503: {"description": "a check failed: the body names it"}},
)
def readyz(request: Request) -> JSONResponse:
    """Ready for traffic: the database answers, migrations are current, the queue is readable,
    and the worker in this process, if it runs one, is working. The notifications check, when a
    webhook is configured, is shown but does not decide readiness."""
    app = wired(request)
    checks = readiness(app.db, app.worker_status, notifications=app.settings.notify.url is not None)
    ready = all(check.ok for check in checks if check.required)
    body: dict[str, Any] = {
        "status": "ready" if ready else "not ready",
        "checks": {check.name: {"ok": check.ok, "detail": check.detail} for check in checks},
    }
    return JSONResponse(body, status_code=200 if ready else 503)
