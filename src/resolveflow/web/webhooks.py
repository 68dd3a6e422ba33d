"""``POST /webhooks/github``: the signature is checked over the raw bytes before anything is parsed.

Answers: 202 when a new delivery was recorded (and, if it means work, its job queued in the same
transaction), 200 for a redelivery (nothing new happens), 401 for a missing or wrong signature,
400 for a verified but unusable body (or one over GitHub's 25 MB cap), 503 when no secret
is configured.
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse

from resolveflow.errors import ConfigError, InvalidInput
from resolveflow.service import webhooks
from resolveflow.web.security import wired

logger = logging.getLogger(__name__)
router = APIRouter(tags=["webhooks"])

MAX_BODY_BYTES = 25 * 1024 * 1024  # GitHub caps payloads at 25 MB


@router.post(
    "/webhooks/github",
    status_code=202,
    responses={
        200: {"description": "a redelivery: nothing new happens"},
        401: {"description": "missing or wrong X-Hub-Signature-256"},
        400: {"description": "verified, but not a usable delivery"},
    },
)
async def github_webhook(request: Request) -> Any:
    secret = wired(request).settings.webhooks.secret
    if secret is None:
        raise ConfigError("webhooks are not configured: set RESOLVEFLOW_GITHUB_WEBHOOK_SECRET")
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise InvalidInput("the body is larger than GitHub ever sends")
    body = await request.body()
    if len(body) > MAX_BODY_BYTES:
        raise InvalidInput("the body is larger than GitHub ever sends")
    signature = request.headers.get("X-Hub-Signature-256")
    if not webhooks.signature_valid(secret.get_secret_value().encode(), body, signature):
        logger.info("webhook signature refused", extra={"has_signature": signature is not None})
        raise webhooks.SignatureInvalid()
    delivery = webhooks.parse_delivery(
        request.headers.get("X-GitHub-Delivery"), request.headers.get("X-GitHub-Event"), body
    )
    receipt = await run_in_threadpool(webhooks.record_delivery, wired(request).db, delivery)
    return JSONResponse(
        {
            "delivery": delivery.delivery_id,
            "duplicate": not receipt.new,
            "queued": receipt.job_id is not None,
        },
        status_code=202 if receipt.new else 200,
    )
