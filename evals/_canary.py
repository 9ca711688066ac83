"""Where canary cases come from: the suite's holdout source, never an eval's instances.

A canary is a case the gateway sends an agent inside its live traffic and
grades as an eval cell. Its case comes from the capability's active suite,
from the one source an author never sees:

- a **generated holdout** draws a fresh instance per canary, from seeds of
  the canaries' own key (an HMAC of the store's holdout secret under a
  label of their own), so a canary is never one of an eval's instances:
  answers an agent memorised from an eval (whatever it learnt of them) buy
  nothing here, and a canary's case tells nothing about the eval's;
- a **fixed holdout file** lends its cases, one per draw, chosen by the
  same key (the file is what the suite has; it is as secret as an eval's
  holdout, and canaries show no author any of it);
- a **pool** lends only the subset of the epoch the agent's record was
  measured on, cases its agent was sent already: a case of a later subset
  would show an author that epoch's inputs before any eval of it;
- a suite with **no holdout** has no canaries: its public cases are the
  author's to read, and an agent that knows them can answer them well and
  everything else badly.

Draws are numbered: the n-th canary of a suite is the same case for the same
secret, so a canary's case can be rebuilt from its number and never needs
storing. A generated canary's case id is `canary-N`; a lent one keeps its
id (its checks may read it). Both are the operator's, never an author's.
"""

from __future__ import annotations

import hashlib
import hmac

from evals.suites import Case, Suite, epoch_holdout, generated_case, holdout_seed
from schema.canonical import canonical_json

__all__ = ["canary_case", "has_canaries"]

# The label the canaries' key is derived under: not an eval's key, whatever the epoch.
_LABEL = b"holon canaries v1"


def has_canaries(suite: Suite) -> bool:
    """Whether canaries can be drawn for `suite` (it has a holdout, generated or stored)."""
    return suite.holdout_generator is not None or bool(suite.holdout_file)


def canary_case(suite: Suite, secret: bytes, draw: int, *, epoch: int = 0) -> Case | None:
    """The `draw`-th canary case of `suite` (None: the suite has no holdout to lend); a
    pool lends from its subset of `epoch`, the epoch the agent's record was measured on."""
    key = hmac.new(secret, _LABEL, hashlib.sha256).digest()
    case_id = f"canary-{draw}"
    if suite.holdout_generator is not None:
        # Epoch -1: no eval's epoch, and under a key no eval uses.
        return generated_case(suite, holdout_seed(key, suite.id, suite.version, -1, draw), case_id)
    lent = epoch_holdout(suite, secret, epoch)
    if not lent:
        return None
    mac = hmac.new(key, canonical_json([suite.id, suite.version, draw]).encode(), hashlib.sha256)
    return lent[int.from_bytes(mac.digest()[:8], "big") % len(lent)]
