"""Redis as webward's shared stores open it (the ``redis`` extra).

Three stores live in Redis when ``[state] redis_url`` is set, each with its own concern: the
limiter's state (``limits._redis``), the page cache (``_cache_redis``) and the provenance
sessions (``_provenance``). They open their clients here, so that all three fail fast the same
way, and name the server in messages by :func:`redact_url`: the URL may carry a password.
"""

from __future__ import annotations

import contextlib
import time
import urllib.parse
from collections.abc import Iterator

import anyio
from redis.asyncio import Redis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import RedisError
from redis.exceptions import TimeoutError as RedisTimeoutError

from ._call import CALL_DEADLINE

__all__ = ["RedisError", "by_call_deadline", "redact_url", "redis_client"]


def redact_url(url: str) -> str:
    """``url`` without its user name and password: what messages may show of a Redis URL."""
    try:
        parts = urllib.parse.urlsplit(url)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return "redis://[unparseable url]"
    if ":" in host:
        host = f"[{host}]"
    return f"{parts.scheme}://{host}{port}{parts.path}"


@contextlib.contextmanager
def by_call_deadline() -> Iterator[None]:
    """Round trips to Redis inside this block end by the deadline of the call they serve
    (:data:`~webward._call.CALL_DEADLINE`), with a ``RedisError`` the stores word as any
    other: each has a timeout of its own, and one retry, but a call makes several."""
    deadline = CALL_DEADLINE.get()
    if deadline is None:  # no call's (a readiness check, URLs a face declares)
        yield
        return
    with anyio.move_on_after(deadline - time.monotonic()) as scope:
        yield
    if scope.cancelled_caught:
        raise RedisTimeoutError("no answer within the deadline of the call it served")


def redis_client(url: str, timeout_s: float) -> Redis:
    """A client of the Redis at ``url``, as every webward store opens it."""
    # Short timeouts, one immediate retry (a connection the server dropped while idle) and no
    # backoff: a Redis that is down must turn into a refusal quickly, not hold the caller.
    client: Redis = Redis.from_url(
        url,
        socket_connect_timeout=timeout_s,
        socket_timeout=timeout_s,
        retry=Retry(NoBackoff(), 1),
    )
    return client
