"""Encryption at rest for principals' own GitHub tokens: AES-256-GCM, bound to the principal.

Keys are configured as Fernet keys (32 url-safe base64 bytes, what ``Fernet.generate_key()``
prints), comma-separated, primary first. Each is stretched with HKDF into an AES-256-GCM key and a
key id; a ciphertext is ``v1.<key id>.<base64url(nonce | sealed token)>``, so the primary encrypts
and every configured key still decrypts what it wrote (rotation). The tenant and principal ids are
the associated data: a ciphertext copied into another principal's row does not decrypt.

Rows from before this format (Fernet, bound to nobody) are only ever unwrapped by
``decrypt_legacy``, to encrypt them again in this format. The keys never reach the database.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING
from uuid import UUID

from resolveflow.errors import ConfigError, Forbidden

if TYPE_CHECKING:
    # cryptography loads when a cipher is made or used, not with every store import (every
    # command that reads tenants or principals imports this module for its types).
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

KEY_SETTING = "RESOLVEFLOW_TOKEN_ENCRYPTION_KEY"
_VERSION = "v1"
_SHAPE = re.compile(r"^v1\.([0-9a-f]{8})\.([A-Za-z0-9_-]+)$")
_NONCE_BYTES = 12
# Distinct HKDF labels: the same configured bytes never serve two purposes.
_AEAD_INFO = b"resolveflow/github-token/aes-256-gcm/v1"
_KEY_ID_INFO = b"resolveflow/github-token/key-id/v1"


class TokenUnreadable(Forbidden):
    """A stored GitHub token cannot be decrypted with any configured key; sign in again."""


@dataclass(frozen=True)
class TokenOwner:
    """Whose token a ciphertext is: its tenant and principal ids are the associated data."""

    tenant_id: UUID
    principal_id: UUID
    subject: str  # named in errors only; not part of the associated data

    def associated_data(self) -> bytes:
        return f"resolveflow github token {_VERSION}|{self.tenant_id}|{self.principal_id}".encode()


def _derive(raw: bytes, info: bytes, length: int) -> bytes:
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.kdf.hkdf import HKDF

    return HKDF(algorithm=hashes.SHA256(), length=length, salt=None, info=info).derive(raw)


def _parse_keys(keys: str) -> list[bytes]:
    from cryptography.fernet import Fernet

    parts = [part.strip() for part in keys.split(",") if part.strip()]
    if not parts:
        raise ConfigError(f"{KEY_SETTING} is empty")
    try:
        for part in parts:
            Fernet(part.encode("ascii"))  # the shape check, with its own clear failure
        return [base64.urlsafe_b64decode(part.encode("ascii")) for part in parts]
    except (ValueError, UnicodeEncodeError):
        raise ConfigError(
            f"{KEY_SETTING} must be Fernet keys (32 url-safe base64 bytes), primary first; "
            "make one with: python -c 'from cryptography.fernet import Fernet; "
            "print(Fernet.generate_key().decode())'"
        ) from None


class TokenCipher:
    def __init__(self, keys: str) -> None:
        from cryptography.fernet import Fernet, MultiFernet
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        raw_keys = _parse_keys(keys)
        self._aeads: dict[str, AESGCM] = {}
        for raw in raw_keys:
            key_id = _derive(raw, _KEY_ID_INFO, 4).hex()
            if key_id in self._aeads:
                raise ConfigError(f"{KEY_SETTING} lists the same key twice")
            self._aeads[key_id] = AESGCM(_derive(raw, _AEAD_INFO, 32))
        self.primary_key_id = _derive(raw_keys[0], _KEY_ID_INFO, 4).hex()
        self._legacy = MultiFernet([Fernet(base64.urlsafe_b64encode(raw)) for raw in raw_keys])

    @staticmethod
    def generate_key() -> str:
        from cryptography.fernet import Fernet

        return Fernet.generate_key().decode("ascii")

    def encrypt(self, token: str, owner: TokenOwner) -> str:
        nonce = os.urandom(_NONCE_BYTES)
        sealed = self._aeads[self.primary_key_id].encrypt(
            nonce, token.encode("utf-8"), owner.associated_data()
        )
        body = base64.urlsafe_b64encode(nonce + sealed).decode("ascii").rstrip("=")
        return f"{_VERSION}.{self.primary_key_id}.{body}"

    def decrypt(self, ciphertext: str, owner: TokenOwner) -> str:
        from cryptography.exceptions import InvalidTag

        match = _SHAPE.match(ciphertext)
        if match is None:
            raise TokenUnreadable(
                f"the GitHub token stored for {owner.subject} is not in the current format; "
                f"start ResolveFlow with {KEY_SETTING} set, or run `resolveflow tokens "
                "reencrypt`, to convert it"
            )
        key_id, body = match.groups()
        aead = self._aeads.get(key_id)
        if aead is None:
            raise TokenUnreadable(
                f"the GitHub token stored for {owner.subject} was encrypted with key {key_id}, "
                f"which is not in {KEY_SETTING}; add that key back, or give the token again"
            )
        try:
            blob = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
            plain = aead.decrypt(blob[:_NONCE_BYTES], blob[_NONCE_BYTES:], owner.associated_data())
            return plain.decode("utf-8")
        except (InvalidTag, ValueError, binascii.Error, UnicodeError):
            raise TokenUnreadable(
                f"the GitHub token stored for {owner.subject} does not decrypt for that principal "
                "(altered, or copied from another principal's row); give the token again"
            ) from None

    def is_current(self, ciphertext: str) -> bool:
        """Whether the primary key wrote this, in the current format."""
        match = _SHAPE.match(ciphertext)
        return match is not None and match.group(1) == self.primary_key_id

    def decrypt_legacy(self, ciphertext: str, subject: str) -> str:
        """A token stored before tokens were bound to their principal (Fernet, any key)."""
        from cryptography.fernet import InvalidToken

        try:
            return self._legacy.decrypt(ciphertext.encode("ascii")).decode("utf-8")
        except (InvalidToken, UnicodeError):
            raise TokenUnreadable(
                f"the GitHub token stored for {subject} before this release cannot be decrypted "
                f"with {KEY_SETTING}; sign in again or give the token again"
            ) from None
