"""A tenant's mailboxes, from the policy file: where each sends, what its replies look like, and
to whom a reply may go.

::

    [tenants.acme.mailboxes."support@acme.example"]
    smtp_host = "smtp.acme.example"
    smtp_port = 587
    security = "starttls"               # starttls | tls | plain (loopback only)
    username = "support@acme.example"   # the secret is stored encrypted: mail credentials set
    auth = "password"                   # password | xoauth2
    greeting = "Hello {name},"          # {name}: the requester's first name, else "there"
    signature = "Best regards,\\nAcme Support\\nhttps://acme.example/help"
    allowed_domains = ["acme.example"]  # recipients beyond the requester and the thread
    sent_folder = "Sent"                # IMAP folder reconciliation searches (unset: a person)
    imap_host = "imap.acme.example"
    imap_port = 993

The address is the table's key (lower case); the From of every message sent from it. The policy
file keeps this table raw (``policy_file``): mail reads it here, ``tenant_mailboxes``.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, RootModel, field_validator, model_validator

from resolveflow.mail.domain.addresses import mailbox_key
from resolveflow.policy_file import PolicyFile

ADDRESS_PATTERN = r"^[^@\s]+@[^@\s]+\.[^@\s]+$"


class MailboxPolicy(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    smtp_host: str = Field(min_length=1, max_length=255)
    smtp_port: int = Field(default=587, ge=1, le=65535)
    security: Literal["starttls", "tls", "plain"] = "starttls"
    username: str | None = Field(default=None, max_length=320)
    auth: Literal["password", "xoauth2"] = "password"
    greeting: str = Field(default="Hello {name},", max_length=200)
    signature: str = Field(default="", max_length=2000)
    allowed_domains: tuple[str, ...] = ()
    sent_folder: str | None = Field(default=None, max_length=200)
    imap_host: str | None = Field(default=None, max_length=255)
    imap_port: int = Field(default=993, ge=1, le=65535)

    @field_validator("sent_folder")
    @classmethod
    def _folder(cls, value: str | None) -> str | None:
        # an IMAP quoted string: one line of ASCII (non-ASCII names need modified UTF-7)
        if value is not None and (not value.isascii() or any(c in value for c in "\r\n\0")):
            raise ValueError("sent_folder must be one line of ASCII characters")
        return value

    @field_validator("allowed_domains")
    @classmethod
    def _domains(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        cleaned = tuple(sorted({d.strip().lower().lstrip("@") for d in value if d.strip()}))
        for domain in cleaned:
            if "." not in domain or any(c.isspace() or c == "@" for c in domain):
                raise ValueError(f"not a domain name: {domain!r}")
        return cleaned

    def greeting_for(self, first_name: str | None) -> str:
        return self.greeting.replace("{name}", first_name or "there")


class TenantMailboxes(RootModel[dict[str, MailboxPolicy]]):
    """A tenant's ``mailboxes`` table: each address (compared without case) to its policy."""

    model_config = ConfigDict(frozen=True)

    @model_validator(mode="after")
    def _addresses(self) -> TenantMailboxes:
        for address in self.root:
            if not re.match(ADDRESS_PATTERN, address):
                raise ValueError(f"a mailbox is an address like support@acme.example: {address!r}")
        if len({mailbox_key(a) for a in self.root}) != len(self.root):
            raise ValueError("a mailbox is listed twice (addresses are compared without case)")
        return self


def tenant_mailboxes(policy: PolicyFile, tenant: str) -> dict[str, MailboxPolicy]:
    """The tenant's mailboxes by address in lower case (none when the file names no such
    tenant); ``ConfigError`` for a bad one."""
    found = policy.tenants.get(tenant)
    if found is None:
        return {}
    read = policy.section(TenantMailboxes, found.mailboxes, f"tenants.{tenant}.mailboxes")
    return {mailbox_key(address): mailbox for address, mailbox in read.root.items()}


def check_mailboxes(policy: PolicyFile) -> None:
    """Every tenant's mailboxes, read now (a ``SectionCheck`` of ``parse_policy``)."""
    for tenant in policy.tenants:
        tenant_mailboxes(policy, tenant)
