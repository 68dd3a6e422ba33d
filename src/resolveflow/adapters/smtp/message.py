"""An approved ``email.send`` action as the exact bytes that leave, built with the standard
library's ``EmailMessage`` (headers are set through its API, never concatenated as text).

Bcc recipients go to the envelope only: a Bcc header would show every recipient who was meant to
be hidden. Each attachment's bytes must still hash to the SHA-256 the approver saw.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from datetime import UTC, datetime
from email.message import EmailMessage
from email.policy import SMTP as SMTP_POLICY
from email.utils import format_datetime

from resolveflow.adapters.smtp.protocol import OutgoingMessage
from resolveflow.errors import DigestMismatch
from resolveflow.gate.domain.actions.email_send import EmailSendAction


def build_message(
    action: EmailSendAction,
    execution_id: str,
    attachments: Mapping[str, bytes],
    *,
    now: datetime | None = None,
) -> OutgoingMessage:
    """The message for ``action``; ``attachments`` maps each attachment's sha256 to its bytes."""
    message = EmailMessage(policy=SMTP_POLICY)
    message_id = action.message_id(execution_id)
    message["From"] = action.mailbox
    message["To"] = ", ".join(action.to)
    if action.cc:
        message["Cc"] = ", ".join(action.cc)
    message["Subject"] = action.subject
    message["Date"] = format_datetime(now or datetime.now(UTC))
    message["Message-ID"] = message_id
    if action.in_reply_to:
        message["In-Reply-To"] = action.in_reply_to
    if action.references:
        message["References"] = " ".join(action.references)
    message.set_content(action.text)
    if action.html is not None:
        message.add_alternative(action.html, subtype="html")
    for item in action.attachments:
        content = _checked(attachments, item.sha256, item.size, item.name)
        maintype, subtype = item.media_type.split("/", 1)
        message.add_attachment(content, maintype=maintype, subtype=subtype, filename=item.name)
    return OutgoingMessage(
        envelope_from=action.mailbox,
        envelope_to=action.envelope_recipients,
        message_id=message_id,
        raw=message.as_bytes(),
    )


def _checked(attachments: Mapping[str, bytes], sha256: str, size: int, name: str) -> bytes:
    content = attachments.get(sha256)
    if content is None or len(content) != size or hashlib.sha256(content).hexdigest() != sha256:
        raise DigestMismatch(f"attachment {name!r} is missing or is not the file that was approved")
    return content
