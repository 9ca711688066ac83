"""Routes of API tokens: create (shown once), list, revoke; operator tokens only.

The token itself is in the body of the one response that creates it, and
nowhere else: not in a listing, not in a log line (nothing here logs a body),
not in an error. A token created here works at once; one revoked here stops
working on every gateway process within the token cache's TTL (one second by
default), an expired one at the instant it expires. The operations are
declared in gateway/operations/_registry.py.
"""

from __future__ import annotations

from gateway.operations import TOKENS_CREATE, TOKENS_LIST, TOKENS_REVOKE
from gateway.web import endpoint

ENDPOINTS = [endpoint(TOKENS_CREATE), endpoint(TOKENS_LIST), endpoint(TOKENS_REVOKE)]
