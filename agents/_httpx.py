"""The three names the transports take from httpx, imported without httpx's command line.

httpx's package imports its command line (`httpx._main`) whenever click, rich and
pygments are installed, as they are here for other reasons: about half of httpx's import
time, paid by every process that calls an agent (`holon test` included) for a command
holon never runs. httpx imports it inside a `try` and does without it when the import
fails, so it is kept out for this one import of the package and let in again after.
"""

from __future__ import annotations

import sys

_CLI = "httpx._main"
_kept_out = "httpx" not in sys.modules and _CLI not in sys.modules
if _kept_out:
    sys.modules[_CLI] = None  # type: ignore[assignment]  # None: "cannot be imported"
try:
    from httpx import URL, InvalidURL, create_ssl_context
finally:
    if _kept_out and sys.modules.get(_CLI, _CLI) is None:
        del sys.modules[_CLI]

__all__ = ["URL", "InvalidURL", "create_ssl_context"]
