"""An approved message's fields (``MessageFields``) as the exact bytes that leave, built with the standard
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

from resolveflow.adapters.smtp.protocol import MessageFields, OutgoingMessage
from resolveflow.errors import DigestMismatch


def build_message(
    fields: MessageFields, attachments: Mapping[str, bytes], *, now: datetime | None = None
) -> OutgoingMessage:
    """The message of ``fields``; ``attachments`` maps each attachment's sha256 to its bytes."""
    message = EmailMessage(policy=SMTP_POLICY)
    message_id = fields.message_id
    message["From"] = fields.mailbox
    message["To"] = ", ".join(fields.to)
    if fields.cc:
        message["Cc"] = ", ".join(fields.cc)
    message["Subject"] = fields.subject
    message["Date"] = format_datetime(now or datetime.now(UTC))
    message["Message-ID"] = message_id
    if fields.in_reply_to:
        message["In-Reply-To"] = fields.in_reply_to
    if fields.references:
        message["References"] = " ".join(fields.references)
    message.set_content(fields.text)
    if fields.html is not None:
        message.add_alternative(fields.html, subtype="html")
    for item in fields.attachments:
        content = _checked(attachments, item.sha256, item.size, item.name)
        maintype, subtype = item.media_type.split("/", 1)
        message.add_attachment(content, maintype=maintype, subtype=subtype, filename=item.name)
    return OutgoingMessage(
        envelope_from=fields.mailbox,
        envelope_to=fields.envelope_to,
        message_id=message_id,
        raw=message.as_bytes(),
    )


def _checked(attachments: Mapping[str, bytes], sha256: str, size: int, name: str) -> bytes:
    content = attachments.get(sha256)
    if content is None or len(content) != size or hashlib.sha256(content).hexdigest() != sha256:
        raise DigestMismatch(f"attachment {name!r} is missing or is not the file that was approved")
    return content
