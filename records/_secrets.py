"""Encryption of agent secrets at rest (Fernet: AES-128-CBC + HMAC-SHA256).

The key comes from the gateway's settings, never from the database, so a copy
of the database alone reveals no secret.
"""

from __future__ import annotations

from cryptography.fernet import Fernet, InvalidToken

from schema.errors import EnvironmentFault

__all__ = ["SecretBox", "new_key"]


def new_key() -> bytes:
    return Fernet.generate_key()


class SecretBox:
    def __init__(self, key: bytes | str) -> None:
        try:
            self._fernet = Fernet(key)
        except (ValueError, TypeError):
            raise EnvironmentFault(
                "the secret key is not valid (expected 32 url-safe base64-encoded bytes)",
                hint="set HOLON_SECRET_KEY to a new key: see docs/settings.md",
            ) from None

    def encrypt(self, plaintext: str) -> bytes:
        return self._fernet.encrypt(plaintext.encode("utf-8"))

    def decrypt(self, ciphertext: bytes) -> str:
        try:
            return self._fernet.decrypt(ciphertext).decode("utf-8")
        except InvalidToken:
            raise EnvironmentFault(
                "an agent secret cannot be decrypted with the configured key "
                "(was HOLON_SECRET_KEY changed?)"
            ) from None
