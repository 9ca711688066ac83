"""Fetching a public document (an issuer's key set or revocation list) over http(s): bounded
in size and time, no redirects followed, so a document is read from the address named."""

from __future__ import annotations

from schema.errors import EnvironmentFault, InputError, Location

__all__ = ["fetch_bounded"]


def fetch_bounded(url: str, max_bytes: int, timeout_s: float) -> bytes:
    """The body of a 200 answer to GET `url`, at most `max_bytes`, no redirects followed;
    EnvironmentFault when it cannot be had, InputError naming the URL when it is too big."""
    import httpx

    try:
        with (
            httpx.Client(timeout=timeout_s, follow_redirects=False) as http,
            http.stream("GET", url, headers={"Accept": "application/json"}) as response,
        ):
            if response.status_code != 200:
                raise EnvironmentFault(
                    f"{url} answered {response.status_code}", details={"url": url}
                )
            body = bytearray()
            for chunk in response.iter_bytes():
                body += chunk
                if len(body) > max_bytes:
                    raise InputError(
                        f"{url} is over {max_bytes} bytes", location=Location(file=url)
                    )
            return bytes(body)
    except httpx.HTTPError as exc:
        raise EnvironmentFault(
            f"cannot fetch {url}: {exc or type(exc).__name__}", details={"url": url}
        ) from None
