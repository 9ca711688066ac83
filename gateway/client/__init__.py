"""How the CLI reaches holon: the `Service` every command talks to, and `HttpService`,
that service over a running gateway's HTTP API (`--gateway URL`, a token).

A door, beside the server it talks to over the wire, never by import: above the
operation table, whose declarations make its requests, and above the store's
service (gateway.service), the other implementation of `Service`.
"""

from gateway.client._http import HttpService
from gateway.client._service import Service

__all__ = ["HttpService", "Service"]
