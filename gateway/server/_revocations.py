"""Re-fetching other issuers' revocation lists on a schedule (docs/certificates.md,
"Revocation of imports").

Every `interval_s`, each issuer whose imports carried the address of its
revocation list is re-checked: the list is fetched (bounded, no redirects),
verified with the issuer's pinned keys, and every certificate it lists is
revoked here, so no mandate relies on it again (`store.issuers.recheck`). An
issuer whose list cannot be fetched or does not verify is that pass's failure
of the loop (logged, counted, kept on the issuer as `check_error`); the others
are re-checked all the same. The loop is registered (gateway._loops), so a
loop that stops, or has not succeeded lately, makes /readyz say so.
"""

from __future__ import annotations

import asyncio
import random

from gateway._fetch import fetch_bounded
from gateway._loops import Loop
from gateway.web import Shared
from records import REVOCATIONS_MAX_BYTES, Store, utcnow
from schema.errors import HolonError
from schema.jsontext import NumberError, loads

__all__ = ["recheck_forever", "recheck_issuer", "revocation_loop"]

FETCH_TIMEOUT_S = 10.0
# Beyond its interval, how long the loop may go without a success before /readyz says so.
SLACK_S = 600.0


def revocation_loop(interval_s: float) -> Loop:
    return Loop("revocations", stale_after_s=max(3 * interval_s, interval_s + SLACK_S))


def recheck_issuer(store: Store, issuer: str, url: str) -> dict[str, object]:
    """Fetch `issuer`'s list from `url` and re-check its imports against it (blocking)."""
    try:
        raw = fetch_bounded(url, REVOCATIONS_MAX_BYTES, FETCH_TIMEOUT_S)
        document = loads(raw)
    except (HolonError, ValueError, NumberError, UnicodeDecodeError) as exc:
        message = exc.message if isinstance(exc, HolonError) else f"{url}: not JSON ({exc})"
        store.issuers.checked(issuer, at=utcnow(), error=message)
        raise
    return store.issuers.recheck(issuer, document)


async def recheck_forever(shared: Shared, interval_s: float, loop: Loop) -> None:
    """Re-check every issuer with a known revocation list about every `interval_s`."""
    rng = random.Random()
    while True:
        await asyncio.sleep(interval_s * rng.uniform(0.5, 1.0))
        try:
            issuers = await shared.run(shared.store.issuers.list)
        except Exception as exc:  # the store is away, say: the next pass tries again
            loop.failed("the list of issuers to re-check", exc)
            continue
        for issuer in issuers:
            url = issuer["revocations_url"]
            if not isinstance(url, str):
                continue
            name = str(issuer["issuer"])
            try:
                await shared.run(recheck_issuer, shared.store, name, url)
            except Exception as exc:  # unreachable, not a list, not the issuer's: logged
                loop.failed(f"issuer {name}", exc)
            else:
                loop.ok()
        loop.ok()
