"""aiohttp, imported without loading the system's CA certificates into contexts holon
never uses.

`aiohttp.connector` builds two default TLS contexts when it is imported, and each loads
the system's CA store: about 45 ms of the 70 ms aiohttp costs every process that calls
an agent (`holon test` included). holon never uses them: the transport passes a context
of its own to every https request (`agents/_transports.py`, built on the first one).
So for this one import the CA paths are not loaded, and the class is let be after.

Were those default contexts ever used, they would trust no certificate: a request would
fail verification, never pass without it (tests/agents/test_aiohttp_import.py).
"""

from __future__ import annotations

import ssl
import sys

_fresh = "aiohttp.connector" not in sys.modules
if _fresh:
    # `ssl.create_default_context` loads the CA store through this method, and the
    # unverified context calls it directly: shadowed on the Python class for the import.
    ssl.SSLContext.set_default_verify_paths = lambda self: None  # type: ignore[method-assign]
try:
    import aiohttp
    from aiohttp.abc import AbstractResolver, ResolveResult
finally:
    if _fresh:
        del ssl.SSLContext.set_default_verify_paths

__all__ = ["AbstractResolver", "ResolveResult", "aiohttp"]
