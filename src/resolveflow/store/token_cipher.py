"""Encryption at rest for users' GitHub tokens (Fernet: AES-128-CBC with HMAC-SHA256).

The key comes from settings and never reaches the database. Several keys may be given, newest
first: tokens are encrypted with the first and decrypted with any, so keys can be rotated.
"""

from __future__ import annotations

from cryptography.fernet import Fernet, InvalidToken, MultiFernet

from resolveflow.errors import ConfigError, Forbidden


class TokenUnreadable(Forbidden):
    """A stored GitHub token cannot be decrypted with the configured key(s); sign in again."""


class TokenCipher:
    def __init__(self, keys: str) -> None:
        parts = [part.strip() for part in keys.split(",") if part.strip()]
        if not parts:
            raise ConfigError("RESOLVEFLOW_TOKEN_ENCRYPTION_KEY is empty")
        try:
            self._fernet = MultiFernet([Fernet(part.encode("ascii")) for part in parts])
        except (ValueError, UnicodeEncodeError):
            raise ConfigError(
                "RESOLVEFLOW_TOKEN_ENCRYPTION_KEY must be Fernet keys (32 url-safe base64 bytes); "
                "make one with: python -c 'from cryptography.fernet import Fernet; "
                "print(Fernet.generate_key().decode())'"
            ) from None

    @staticmethod
    def generate_key() -> str:
        return Fernet.generate_key().decode("ascii")

    def encrypt(self, token: str) -> str:
        return self._fernet.encrypt(token.encode("utf-8")).decode("ascii")

    def decrypt(self, ciphertext: str) -> str:
        try:
            return self._fernet.decrypt(ciphertext.encode("ascii")).decode("utf-8")
        except (InvalidToken, UnicodeError):
            raise TokenUnreadable() from None
