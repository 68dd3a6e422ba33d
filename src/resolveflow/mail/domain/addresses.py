"""How mailbox addresses are compared, with nothing else: every command installs the mail kind's
read rules, which need this and not the policy's models (``mailbox.py``)."""

from __future__ import annotations


def mailbox_key(address: str) -> str:
    """Mailboxes are compared without case (the policy key, grants, the From)."""
    return address.strip().lower()
