"""Encryption of agent secrets at rest (Fernet: AES-128-CBC + HMAC-SHA256).

The key comes from the gateway's settings, never from the database, so a copy
of the database alone reveals no secret.
"""

from __future__ import annotations

from cryptography.fernet import Fernet, InvalidToken

from schema.errors import EnvironmentFault

__all__ = ["KEY_RECIPE", "SecretBox", "new_key"]

# The fix, in one line, wherever a missing or wrong key is reported.
KEY_RECIPE = (
    "set HOLON_SECRET_KEY, the same on every process sharing the store; make one with: "
    "python -c 'from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())'"
)


def new_key() -> bytes:
    return Fernet.generate_key()


class SecretBox:
    def __init__(self, key: bytes | str) -> None:
        try:
            self._fernet = Fernet(key)
        except (ValueError, TypeError):
            raise EnvironmentFault(
                "the secret key is not valid (expected 32 url-safe base64-encoded bytes)",
                hint=KEY_RECIPE,
            ) from None

    def encrypt(self, plaintext: str) -> bytes:
        return self._fernet.encrypt(plaintext.encode("utf-8"))

    def decrypt(self, ciphertext: bytes, what: str = "an agent secret") -> str:
        try:
            return self._fernet.decrypt(ciphertext).decode("utf-8")
        except InvalidToken:
            raise EnvironmentFault(
                f"{what} cannot be decrypted with the configured key "
                "(was HOLON_SECRET_KEY changed, or does this process have another one?)",
                hint="use the key the store was set up with on every process that shares it",
            ) from None
