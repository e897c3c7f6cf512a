"""Redis as webward's shared stores open it (the ``redis`` extra).

Three stores live in Redis when ``[state] redis_url`` is set, each with its own concern: the
limiter's state (``limits._redis``), the page cache (``_cache_redis``) and the provenance
sessions (``_provenance``). They open their clients here, so that all three fail fast the same
way, and name the server in messages by :func:`redact_url`: the URL may carry a password.

The limit store and the page cache also share one :class:`RedisHealth` per URL in a process
(:func:`redis_health`): a round trip that got no answer (a timeout, a connection refused or
broken) marks the server down, and for the store's timeout after it every round trip of
either store fails at once instead of waiting out a timeout of its own in turn; then one round
trip tries again. The first failure and the recovery are each logged once.
"""

from __future__ import annotations

import contextlib
import logging
import re
import threading
import time
import urllib.parse
from collections.abc import Iterator

import anyio
from redis.asyncio import Redis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import (
    AuthenticationError,
    NoPermissionError,
    OutOfMemoryError,
    ReadOnlyError,
    RedisError,
)
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from ._call import CALL_DEADLINE
from ._errors import STORE_HEALTH

__all__ = [
    "RedisError",
    "RedisHealth",
    "by_call_deadline",
    "failure_of",
    "redact_url",
    "redis_client",
    "redis_health",
    "url_options_problem",
]

log = logging.getLogger("webward.redis")


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
def by_call_deadline(bound_s: float | None = None) -> Iterator[None]:
    """Round trips to Redis inside this block end by the deadline of the call they serve
    (:data:`~webward._call.CALL_DEADLINE`), and by ``bound_s`` from now when that comes
    first, with a ``RedisError`` the stores word as any other: each has a timeout of its own
    (and one retry of a broken connection), but a call makes several."""
    deadline = CALL_DEADLINE.get()
    why = "no answer within the deadline of the call it served"
    own = None if bound_s is None else time.monotonic() + bound_s
    if own is not None and (deadline is None or own < deadline):
        deadline, why = own, f"no answer within {bound_s:g} s"
    if deadline is None:  # no call's (a readiness check, URLs a face declares)
        yield
        return
    with anyio.move_on_after(deadline - time.monotonic()) as scope:
        yield
    if scope.cancelled_caught:
        raise RedisTimeoutError(why)


def redis_client(url: str, timeout_s: float) -> Redis:
    """A client of the Redis at ``url``, as every webward store opens it."""
    # Short timeouts, one immediate retry of a connection error (a connection the server
    # dropped while idle) and no backoff: a Redis that is down must turn into a refusal
    # quickly, not hold the caller. A timeout is not retried: a server that did not answer in
    # time on one connection (frozen, a partition) does not on a new one, and the retry
    # doubled every round trip's wait (4 s, not 2).
    client: Redis = Redis.from_url(
        url,
        socket_connect_timeout=timeout_s,
        socket_timeout=timeout_s,
        retry=Retry(NoBackoff(), 1, supported_errors=(RedisConnectionError,)),
    )
    return client


def url_options_problem(url: str) -> str:
    """What redis-py finds wrong with the options in ``url``'s query (a name it does not take,
    a value it cannot read), or "": the config's check (``_settings``), since each was an
    unexpected TypeError or ValueError at the first call that needed Redis ("webward failed
    unexpectedly"). A connection is made ready as the stores make theirs, and not opened.
    Nothing of the URL is repeated."""
    try:
        Redis.from_url(url).connection_pool.make_connection()  # type: ignore[no-untyped-call]
    except TypeError as exc:
        name = re.search(r"argument '(\w+)'", str(exc))
        option = name.group(1) if name else "an option"
        return f"its query names {option}, which is no option of a Redis connection"
    except Exception:  # redis-py's ValueError or RedisError, which may quote the value
        return "an option in its query has a value redis-py cannot read"
    return ""


# The next step for a Redis that answers but refuses every write (:data:`_REFUSALS`).
_REFUSING_STEP = (
    "give it room (maxmemory), or point [state] redis_url at a primary whose user may write"
)
# redis-py's note of the command of a pipeline that met an error: a limiter key (a host
# name) and nothing the operator acts on.
_PIPELINE_NOTE = re.compile(r"^Command # \d+ \(.*?\) of pipeline caused error: ", re.DOTALL)


# The next step for a Redis that refuses the URL's credentials (none given, or wrong ones),
# with no URL in it: a message's URLs lose their userinfo, and an example's would too.
_AUTH_STEP = (
    "give its password in [state] redis_url, before the host: :PASSWORD@ (USER:PASSWORD@ "
    "for an ACL user)"
)
# Redis's answer to HELLO from a client whose URL gives no password is a paragraph about
# the protocol; said in these words instead.
_NO_PASSWORD = "it asks for a password, and the URL gives none"
# What a Redis that refuses the URL's credentials answers (NOAUTH, WRONGPASS), as said: a
# trip not made while the server is known down carries only the text.
_AUTH_TEXTS = (_NO_PASSWORD, "Authentication required", "invalid username-password pair")
_HELLO_NOAUTH = re.compile(r"HELLO must be called with the client already authenticated[^;]*")


# The next step for a database number the server does not have (its SELECT refused).
_DATABASE_STEP = (
    "give [state] redis_url a database number the server has (0 to 15, unless its databases "
    "setting allows more)"
)
# The next step for a rediss:// URL whose connection never completed: a TLS handshake sent
# to a plain Redis waits for an answer that never comes, as a server that is down does.
_TLS_STEP = (
    "bring it back; a rediss:// URL speaks TLS, so if that port serves plain Redis, use redis://"
)
# The next step for a key at one of webward's names holding what webward never writes there (a
# list where a limiter's JSON goes, a string where a session's sorted set goes): the server is
# up, and another program (or another deployment) writes into webward's keys.
_FOREIGN_STEP = (
    "another program writes keys under webward's [state] redis_prefix in that database; give "
    "webward a database or a redis_prefix of its own"
)
_FOREIGN_TEXTS = ("WRONGTYPE", "holds values webward never writes")
# The next step for a Redis that takes no more connections (its maxclients, which the
# replicas' pools and every other client share): it is up, and answers the clients it has.
_CLIENTS_STEP = "raise its maxclients, or give the other clients of that Redis fewer connections"


def failure_of(exc: BaseException | str, where: str = "") -> tuple[str, str | None]:
    """What a store's ``limits_unavailable`` says of ``exc`` (from the Redis at ``where``,
    redacted): its text, without redis-py's note of the pipeline command, and the next step
    when bringing the server back is not it: a Redis that refuses every write (full under
    noeviction, a read-only replica, a user without the right), the URL's credentials or its
    database number, one that may not speak the URL's TLS, a key of webward's holding what
    another program wrote, or one that takes no more clients."""
    text = _PIPELINE_NOTE.sub("", _text_of(exc) if isinstance(exc, BaseException) else exc)
    step = _REFUSING_STEP if isinstance(exc, _REFUSALS) else None
    if isinstance(exc, AuthenticationError) or any(t in text for t in _AUTH_TEXTS):
        step = _AUTH_STEP
    elif "DB index is out of range" in text:
        step = _DATABASE_STEP
    elif any(t in text for t in _FOREIGN_TEXTS):
        step = _FOREIGN_STEP
    elif "max number of clients reached" in text:
        step = _CLIENTS_STEP
    elif where.startswith("rediss://") and "Timeout connecting" in text:
        step = _TLS_STEP
    return text, step


class RedisHealth:
    """Whether the Redis at one URL answers, as the round trips of this process found it.

    :meth:`trips` wraps a store's round trips: a trip that got no answer (a timeout, a
    connection refused or broken: :data:`_NO_ANSWER`) marks the server down, and for
    ``timeout_s`` after that every trip fails at once with the error that marked it (a frozen
    Redis answered ten calls to one host one after another, 2 s and a retry each, until the
    call deadline ended them as the site's timeout). Then the next trip tries again, and
    the others fail at once while it runs; its answer marks the server up. An error Redis
    answers with (a full Redis's OOM) is an answer: no trip is failed at once for it.

    The first failure (the server never answered, or stopped answering) and the recovery
    after it are each said once in the log, naming the server without its password. So is an
    answer that refuses the store as a whole (:data:`_REFUSALS`: full under ``noeviction``, a
    read-only replica, a user without the right), and the first write after it that passes:
    a full Redis refused every call, and the log said nothing of it.
    """

    def __init__(self, where: str, timeout_s: float) -> None:
        self._where = where
        self._timeout_s = timeout_s
        self._failure: str | None = None  # why it is down, or None
        self._retry_at = 0.0  # time.monotonic() before which a trip fails at once
        self._failures = 0  # how many trips found it down: a trip tells what it saw begin
        self._refusal: str | None = None  # why it refuses writes (it answers), or None
        self._lock = threading.Lock()

    def check(self) -> int:
        """Raise at once while the server is known down; else let one trip try again.
        Returns what :meth:`recheck` compares with."""
        if self._failure is None:
            return self._failures
        with self._lock:
            failure = self._failure
            if failure is not None:
                now = time.monotonic()
                if now < self._retry_at:
                    raise _KnownDown(f"{failure}; not asked again for {self._timeout_s:g} s")
                self._retry_at = now + self._timeout_s  # this one tries; the others fail
            return self._failures

    def recheck(self, seen: int) -> None:
        """Raise at once if another trip found the server down since :meth:`check` answered
        ``seen`` (while this one waited for a lock)."""
        failure = self._failure
        if failure is not None and self._failures != seen:
            raise _KnownDown(f"{failure}; not asked again for {self._timeout_s:g} s")

    def answered(self, wrote: bool = False) -> None:
        """A trip was answered: the server is up (said in the log if it was down). A trip
        that ``wrote`` also ends a refusal (:meth:`refused`); a read does not, since a full
        Redis still answers reads, and the log would say each call's turn."""
        if self._failure is None and (self._refusal is None or not wrote):
            return
        with self._lock:
            was, self._failure = self._failure, None
            refusal = self._refusal
            if wrote:
                self._refusal = None
        if was is not None:
            log.warning("the Redis at %s answers again", self._where, extra=STORE_HEALTH)
        elif wrote and refusal is not None:
            log.warning("the Redis at %s takes writes again", self._where, extra=STORE_HEALTH)

    def refused(self, exc: BaseException) -> None:
        """A trip was answered with a refusal of every write (``exc``, one of
        :data:`_REFUSALS`): said once in the log, until a write passes."""
        self.answered()
        if self._refusal is not None:
            return
        with self._lock:
            was, self._refusal = self._refusal, failure_of(exc)[0]
        if was is None:
            log.warning(
                "the Redis at %s refuses writes (%s); calls that need it are refused until it "
                "takes them: %s",
                self._where,
                self._refusal,
                _REFUSING_STEP,
                extra=STORE_HEALTH,
            )

    def failed(self, exc: BaseException) -> None:
        """A trip got no answer (``exc``): the server is down for ``timeout_s``."""
        text = _text_of(exc)
        with self._lock:
            was, self._failure = self._failure, text
            self._retry_at = time.monotonic() + self._timeout_s
            self._failures += 1
        if was is None:
            log.warning(
                "the Redis at %s failed (%s); calls that need it are refused until it answers",
                self._where,
                text,
                extra=STORE_HEALTH,
            )

    @contextlib.contextmanager
    def trips(self, bound_s: float | None = None) -> Iterator[Trip]:
        """The round trips of one store operation: failed at once while the server is known
        down, ended by the call's deadline (:func:`by_call_deadline`) and by ``bound_s``
        from now, whichever comes first, and their outcome noted. Everything inside counts,
        a wait for a lock of the store's included. Yields a :class:`Trip`: what
        :meth:`recheck` takes, and where the store says it wrote."""
        trip = Trip(self.check())
        # Cut short by the bound (a call's deadline, the bound with a wait for a lock in it):
        # not the server's silence as such, so by_call_deadline raises it past the marking.
        with by_call_deadline(bound_s):
            try:
                yield trip
            except _KnownDown:  # a check inside (after a wait for a lock): nothing new
                raise
            except _NO_ANSWER as exc:  # the server's silence, as the client found it
                self.failed(exc)
                raise
            except _REFUSALS as exc:  # an answer refusing every write (a full Redis's OOM)
                self.refused(exc)
                raise
            except RedisError:  # an answer, if an error (one key's)
                self.answered()
                raise
            self.answered(trip.wrote)


class Trip:
    """One :meth:`RedisHealth.trips`: ``seen`` for :meth:`RedisHealth.recheck`, and
    ``wrote``, set by the store when a write of it passed."""

    def __init__(self, seen: int) -> None:
        self.seen = seen
        self.wrote = False


def _text_of(exc: BaseException) -> str:
    return _HELLO_NOAUTH.sub(_NO_PASSWORD, str(exc).strip().rstrip(".")) or type(exc).__name__


class _KnownDown(RedisConnectionError):
    """A trip not made: the server gave no answer a moment ago (:meth:`RedisHealth.check`)."""


# Errors that mean the server did not answer (a redis ConnectionError, a TimeoutError);
# anything else is an answer, an error one included.
_NO_ANSWER = (RedisConnectionError, RedisTimeoutError, OSError)
# Answers that refuse every write, not one key's: a full Redis under noeviction, a read-only
# replica (a failover that left the URL on one), a user without the right.
_REFUSALS = (OutOfMemoryError, ReadOnlyError, NoPermissionError)

_HEALTH: dict[str, RedisHealth] = {}
_HEALTH_LOCK = threading.Lock()


def redis_health(url: str, timeout_s: float) -> RedisHealth:
    """The :class:`RedisHealth` of the Redis at ``url`` in this process, shared by the
    stores that live there (the limits, the page cache)."""
    with _HEALTH_LOCK:
        health = _HEALTH.get(url)
        if health is None:
            health = _HEALTH[url] = RedisHealth(redact_url(url), timeout_s)
        return health
