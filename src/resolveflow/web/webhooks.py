"""``POST /webhooks/github`` (the global secret) and ``POST /webhooks/github/{tenant}`` (a tenant's
own secret, its deliveries for that tenant only).

The body is read as it streams in and refused at ``RESOLVEFLOW_WEBHOOK_MAX_BODY_BYTES`` (413):
a chunked body has no Content-Length to check first, and buffering it whole would let one request
take the server's memory. The signature is then checked over the raw bytes before anything is
parsed. Answers: 202 for a new delivery (``ignored`` says why it is not acted on, if it is not),
200 for a redelivery of a delivery id (nothing new happens), 401 for a missing or wrong signature
(or a tenant without a secret of its own), 400 for a signed body that is not a JSON object, 413
past the cap, 503 when no secret is configured or the job could not be queued (nothing was
recorded; a redelivery is processed as new).
"""

from __future__ import annotations

import logging
import time
from typing import Any
from uuid import UUID

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse

from resolveflow.errors import ConfigError
from resolveflow.metrics import WEBHOOK_ACK_SECONDS
from resolveflow.telemetry import span
from resolveflow.triage import webhook_secrets, webhooks
from resolveflow.web.bodies import read_capped
from resolveflow.web.security import wired

logger = logging.getLogger(__name__)
router = APIRouter(tags=["webhooks"])

_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {"description": "a redelivery: nothing new happens"},
    400: {"description": "signed, but not a JSON object, or headers missing"},
    401: {"description": "missing or wrong X-Hub-Signature-256"},
    413: {"description": "the body is larger than RESOLVEFLOW_WEBHOOK_MAX_BODY_BYTES"},
    503: {"description": "no secret configured, or the delivery could not be queued"},
}


@router.post("/webhooks/github", status_code=202, responses=_RESPONSES)
async def github_webhook(request: Request) -> Any:
    """Signed with the global secret, or with the GitHub App's (its deliveries go to the tenant
    its installation is mapped to)."""
    app = wired(request)
    secret = app.settings.webhooks.secret
    configured = await run_in_threadpool(app.github_app)
    app_secret = configured.webhook_secret if configured is not None else None
    if secret is None and app_secret is None:
        raise ConfigError("webhooks are not configured: set RESOLVEFLOW_GITHUB_WEBHOOK_SECRET")
    return await _receive(
        request,
        secret.get_secret_value().encode() if secret is not None else None,
        None,
        app_secret.encode() if app_secret is not None else None,
    )


@router.post("/webhooks/github/{tenant}", status_code=202, responses=_RESPONSES)
async def tenant_webhook(tenant: str, request: Request) -> Any:
    app = wired(request)
    found = await run_in_threadpool(
        webhook_secrets.verification_secret, app.db, app.token_cipher(), tenant
    )
    if found is None:  # no such tenant, or no secret of its own: as for a wrong signature
        logger.info("webhook refused: no tenant with a secret of its own by that name")
        raise webhooks.SignatureInvalid()
    tenant_id, secret = found
    return await _receive(request, secret, tenant_id)


async def _receive(
    request: Request, secret: bytes | None, tenant_id: UUID | None, app_secret: bytes | None = None
) -> Any:
    started = time.perf_counter()
    settings = wired(request).settings.webhooks
    incoming = webhooks.Incoming(
        body=await read_capped(
            request,
            settings.max_body_bytes,
            webhooks.BodyTooLarge(
                f"the body is larger than {settings.max_body_bytes} bytes "
                "(RESOLVEFLOW_WEBHOOK_MAX_BODY_BYTES)"
            ),
        ),
        signature=request.headers.get("X-Hub-Signature-256"),
        delivery_id=request.headers.get("X-GitHub-Delivery"),
        event=request.headers.get("X-GitHub-Event"),
        tenant_id=tenant_id,
    )
    with span("webhook.receive", event=incoming.event, tenant_id=str(tenant_id or "") or None):
        receipt = await run_in_threadpool(
            webhooks.accept,
            wired(request).db,
            incoming,
            secret,
            retention_days=settings.retention_days,
            app_secret=app_secret,
        )
    WEBHOOK_ACK_SECONDS.observe(time.perf_counter() - started)
    return JSONResponse(
        {
            "delivery": incoming.delivery_id,
            "duplicate": not receipt.new,
            "queued": receipt.job_id is not None,
            "ignored": receipt.ignored,
        },
        status_code=202 if receipt.new else 200,
    )
