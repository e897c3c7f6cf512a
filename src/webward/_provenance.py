"""URL provenance: each session remembers the URLs it has seen, so that an agent with
``provenance = "session"`` reads only those (``url_not_in_session``).

What a session has seen: the user's own input where the face sees it (the agent loop,
``webward ask``, ``webward fetch``), URLs the client application declares (the gateway's
``Webward-Session-Urls`` header, ``webward/urls`` in an MCP request's ``_meta``, never the
model's tool arguments), the hits of the session's searches, and the links and text of the
pages it read. A prompt injection can make a model *ask* for
``https://attacker.example/?q=<secret>``, but that URL, with that query, was seen nowhere.

Matching: a URL is remembered and looked up in its canonical form (:func:`canonical`): scheme
and host folded to lower case (IDNA to punycode), the default port dropped, the fragment
dropped; path and query are kept byte for byte, so the same URL with another query string is
another URL. Hosts ``[policy] allow`` names exactly (not by a wildcard) always pass. A
redirect's target needs no provenance: the server chose it, not the agent.

Stores: :class:`MemorySessionStore` for one process; :class:`RedisSessionStore` when
``[state] redis_url`` is set, so replicas agree. Both are bounded: at most
``limits.session_max_urls`` URLs per session (the oldest forgotten first), and a session
untouched for ``limits.session_max_age_s`` is forgotten whole. One process's memory also
holds at most ``limits.session_memory_max_bytes`` of sessions in all (many agents share a
gateway, and each may open sessions): past it the least recently used sessions are forgotten
whole, then the oldest URLs of the session being added to. Redis is bounded by those TTLs and
its own ``maxmemory``.
"""

from __future__ import annotations

import hashlib
import itertools
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import Any, Protocol
from urllib.parse import quote

from . import guard
from ._errors import InvalidInput, Reason, WebwardError, operator_step
from ._settings import Settings
from .limits import limits_unavailable

__all__ = [
    "REASON_URL_NOT_IN_SESSION",
    "SESSIONS_PREFIX",
    "MemorySessionStore",
    "SessionStore",
    "canonical",
    "check_session",
    "open_session_store",
    "scoped_session",
    "urls_in",
]

#: The fixed reason code of a fetch refused for want of provenance.
REASON_URL_NOT_IN_SESSION = Reason.URL_NOT_IN_SESSION
SESSIONS_PREFIX = "webward:session:"  # with the default [state] redis_prefix
# Sessions one process remembers at most (the least recently used goes first).
_MAX_SESSIONS = 10_000
# What one process's sessions may hold in all, in bytes (``[limits] session_memory_max_bytes``).
_MAX_BYTES = 64 * 1024 * 1024
# The memory counted for a remembered URL besides its text (canonical URLs are ASCII: a
# character is a byte): a str's header and an ordered dict's entry, about 140 bytes measured
# on CPython 3.11. And for a session besides its name: its entry and its empty ordered dict.
_URL_OVERHEAD = 150
_SESSION_OVERHEAD = 400
# An http(s) URL in running text ends at white space, quotes, angle brackets or a bracket
# it did not open; trailing sentence punctuation is not part of it. It may hold balanced
# parentheses (https://en.wikipedia.org/wiki/Python_(programming_language), where "(see
# https://a.example/x)" keeps the ")" out) and an IPv6 host in brackets: cut there, a user's
# own URL was declared as a prefix of itself, and reading it was refused as never seen.
_URL_CHAR = r"""[^\s<>"'`()\[\]{}]"""
_URL_RE = re.compile(
    rf"https?://(?:\[[0-9A-Fa-f:.]+\])?(?:{_URL_CHAR}|\({_URL_CHAR}*\))*", re.IGNORECASE
)
_TRAILING = ".,;:!?*_"


def canonical(url: str, max_chars: int = guard.DEFAULT_MAX_URL_CHARS) -> str | None:
    """The form a URL is remembered and matched in, or ``None`` if it is no http(s) URL (or
    one longer than ``max_chars``, the operator's ``[limits] max_url_chars``)."""
    try:
        return guard.parse_url(url, max_chars=max_chars).url
    except (WebwardError, ValueError):
        return None


#: The session id of a stateless MCP-over-HTTP call that names none (no ``_meta``, no
#: ``Mcp-Session-Id``): every such call of the agent on that server is this one session.
SESSIONLESS = "agent"


def is_sessionless(session: str) -> bool:
    """Whether ``session`` (a scoped key) is an agent's :data:`SESSIONLESS` MCP session: the
    agent's scope holds no ``:`` and a named session is ``app:<name>``, so no other key is
    three parts ending in it."""
    face, _, rest = session.partition(":")
    scope, _, name = rest.partition(":")
    return face == "mcp" and name == SESSIONLESS and bool(scope)


def scoped_session(face: str, agent: str, name: str) -> str:
    """The session ``name`` of ``agent`` on a server ``face`` (``mcp``, ``gateway``): its
    key in the session store, ``name`` checked first, so that the limit a client is told is
    the one it meets whatever its agent's name. The agent's name is percent-encoded, so that
    no agent name with a ``:`` in it (``dave:app`` naming session ``s``) meets another
    agent's session (``dave`` naming ``app:s``). A key that would be longer than a session
    name may be holds a hash of the agent's name, and of the session's, instead: the same
    name always gives the same key."""
    check_session(name)
    scope = quote(agent, safe="")
    if len(scope) > _MAX_SCOPE:
        scope = "h-" + _digest(agent)
    key = f"{face}:{scope}:{name}"
    return key if len(key) <= _MAX_NAME else f"{face}:{scope}:h-{_digest(name)}"


_MAX_NAME = 512
_MAX_SCOPE = 64


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def check_session(session: object) -> None:
    """A session name is 1 to 512 printable characters (faces prefix their own scope)."""
    if session is not None and (
        not isinstance(session, str)
        or not 0 < len(session) <= _MAX_NAME
        or not session.isprintable()
    ):
        raise InvalidInput(f"session must be a name of 1 to {_MAX_NAME} printable characters")


def urls_in(text: str, max_chars: int = guard.DEFAULT_MAX_URL_CHARS) -> list[str]:
    """The canonical http(s) URLs written in ``text`` (user input, a page, search hits), of
    at most ``max_chars`` (a read's limit: one past it could not be read anyway)."""
    found: list[str] = []
    for match in _URL_RE.finditer(text):
        url = canonical(match.group().rstrip(_TRAILING), max_chars)
        if url is not None:
            found.append(url)
    return found


class SessionStore(Protocol):
    """Where sessions keep the URLs they have seen."""

    async def add(self, session: str, urls: Iterable[str]) -> None:
        """Remember canonical ``urls`` for ``session``."""
        ...

    async def has(self, session: str, url: str) -> bool:
        """Whether ``session`` has seen the canonical ``url``."""
        ...

    async def aclose(self) -> None: ...


class _Session:
    """A session in memory: its owner, when it was last added to, its URLs (oldest first)
    and what it costs in bytes, kept as it changes so that forgetting it whole is O(1)."""

    __slots__ = ("cost", "owner", "touched", "urls")

    def __init__(self, name: str, touched: float) -> None:
        self.owner = _owner(name)
        self.touched = touched
        self.urls: OrderedDict[str, None] = OrderedDict()
        self.cost = len(name) + _SESSION_OVERHEAD


def _owner(session: str) -> str:
    """Whose ``session`` is: the agent of a server's key (:func:`scoped_session`), whichever
    face it came through (one agent on two faces is one owner: as two, each held half the
    bound and together evicted everyone else's), or ``""`` for a name the library's caller
    chose (one owner: the caller)."""
    parts = session.split(":", 2)
    return parts[1] if len(parts) == 3 else ""


class _Owned:
    """One owner's sessions, least recently added to first, and what they cost together."""

    __slots__ = ("cost", "sessions")

    def __init__(self) -> None:
        self.sessions: OrderedDict[str, None] = OrderedDict()
        self.cost = 0


class MemorySessionStore:
    """Sessions in this process: bounded in URLs per session, idle age, session count and
    the bytes all sessions hold together (a running total, never recounted).

    When a bound is passed, the owner (an agent, over every face) that holds more than half of it
    makes the room, whoever is adding: its least recently used sessions, or the oldest URLs of
    its only one. One token that names a new session per request, or fills one session,
    forgets its own, not every other agent's."""

    def __init__(
        self,
        max_urls: int,
        max_age_s: float,
        *,
        max_sessions: int = _MAX_SESSIONS,
        max_bytes: int = _MAX_BYTES,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._max_urls, self._max_age_s, self._max_sessions = max_urls, max_age_s, max_sessions
        self._max_bytes = max_bytes
        self._clock = clock
        # Least recently added to first: the order sessions are forgotten in.
        self._sessions: OrderedDict[str, _Session] = OrderedDict()
        self._owned: dict[str, _Owned] = {}  # the same sessions, by owner
        self._total = 0  # the cost of every session held
        self._lock = threading.Lock()

    def _live(self, session: str, now: float) -> _Session | None:
        entry = self._sessions.get(session)
        if entry is not None and now - entry.touched > self._max_age_s:
            self._forget(session)
            return None
        return entry

    def _forget(self, session: str) -> None:
        entry = self._sessions.pop(session)
        self._total -= entry.cost
        owned = self._owned[entry.owner]
        del owned.sessions[session]
        owned.cost -= entry.cost
        if not owned.sessions:
            del self._owned[entry.owner]

    def _charge(self, entry: _Session, cost: int) -> None:
        entry.cost += cost
        self._owned[entry.owner].cost += cost
        self._total += cost

    def _forget_oldest_url(self, entry: _Session) -> None:
        url, _ = entry.urls.popitem(last=False)
        self._charge(entry, -(len(url) + _URL_OVERHEAD))

    def _heavy(self, *, by_bytes: bool) -> str | None:
        """The owner holding more than half of the bound (sessions, or bytes): at most one.
        Owners are the agents, few: a look at each, when a bound is passed."""
        for owner, owned in self._owned.items():
            if (
                owned.cost > self._max_bytes // 2
                if by_bytes
                else len(owned.sessions) > self._max_sessions // 2
            ):
                return owner
        return None

    def _make_room(self, session: str, entry: _Session) -> bool:
        """Forget something to get back under the bytes bound; ``False`` when nothing is left
        to forget but the session being added to, empty. The owner over half the bound (the
        one adding, or not) gives first: its least recently used session, or the oldest URLs
        of its only one. Else the least recently used session of all, and last this
        session's own oldest URLs."""
        heavy = self._heavy(by_bytes=True)
        if heavy is not None:
            owned = self._owned[heavy]
            first = next(iter(owned.sessions))
            if len(owned.sessions) > 1 and first != session:
                self._forget(first)
                return True
            alone = self._sessions[first]
            if alone.urls:
                self._forget_oldest_url(alone)
                return True
            if first != session:
                self._forget(first)
                return True
        oldest = next(iter(self._sessions))
        if oldest != session:
            self._forget(oldest)
        elif entry.urls:
            self._forget_oldest_url(entry)
        else:
            return False  # a bound below one session's own cost: the session is kept, empty
        return True

    def _shrink(self, session: str, entry: _Session) -> None:
        """Back under the bytes bound (see :meth:`_make_room`)."""
        while self._total > self._max_bytes and self._make_room(session, entry):
            pass

    async def add(self, session: str, urls: Iterable[str]) -> None:
        given = iter(urls)
        head = next(given, None)
        if head is None:  # nothing seen: no session made (an empty one costs room too)
            return
        urls = itertools.chain((head,), given)
        with self._lock:
            now = self._clock()
            # Sessions idle too long are forgotten from the front (the least recently added
            # to), so that the bound never forgets a live session while they hold memory; each
            # is forgotten once, O(1) amortised.
            while self._sessions:
                first = next(iter(self._sessions))
                if now - self._sessions[first].touched <= self._max_age_s:
                    break
                self._forget(first)
            entry = self._live(session, now)
            if entry is None:
                entry = self._sessions[session] = _Session(session, now)
                owned = self._owned.setdefault(entry.owner, _Owned())
                owned.sessions[session] = None
                owned.cost += entry.cost
                self._total += entry.cost
            entry.touched = now
            self._sessions.move_to_end(session)
            self._owned[entry.owner].sessions.move_to_end(session)
            while len(self._sessions) > self._max_sessions:
                heavy = self._heavy(by_bytes=False)
                own = self._owned[heavy].sessions if heavy is not None else self._sessions
                first = next(iter(own))
                self._forget(first if first != session else next(iter(self._sessions)))
            self._shrink(session, entry)  # a new session's name may be what passes the bound
            seen = entry.urls
            # Bounded URL by URL, whatever each URL's length: a page with many links never
            # makes the store hold more than its bounds and one URL, even for a moment.
            for url in urls:
                if url in seen:
                    seen.move_to_end(url)
                    continue
                seen[url] = None
                self._charge(entry, len(url) + _URL_OVERHEAD)
                if len(seen) > self._max_urls:
                    self._forget_oldest_url(entry)
                self._shrink(session, entry)

    async def has(self, session: str, url: str) -> bool:
        with self._lock:
            entry = self._live(session, self._clock())
            return entry is not None and url in entry.urls

    async def aclose(self) -> None:
        pass


class RedisSessionStore:
    """Sessions in Redis, one sorted set per session (score: when a URL was last seen), so
    every replica sees every URL. Any Redis failure refuses (``limits_unavailable``):
    governance fails closed."""

    def __init__(
        self, url: str, max_urls: int, max_age_s: float, *, prefix: str = "webward:"
    ) -> None:
        # imported only when configured
        from ._redis_client import redact_url, redis_client, redis_health

        self._where = redact_url(url)
        self._client: Any = redis_client(url, 2.0)
        # The limits' and the page cache's: a Redis that just gave no answer refuses a
        # session's check at once, and is said once in the log. The sessions' own round trips
        # waited out 2 s each, call after call, and said nothing: an agent with provenance
        # asks the session before the limits, so these were the only trips it made.
        self._health = redis_health(url, 2.0)
        self._max_urls, self._ttl = max_urls, max(1, int(max_age_s))
        self._keys = prefix + "session:"  # [state] redis_prefix: a deployment's own keys

    async def add(self, session: str, urls: Iterable[str]) -> None:
        from ._redis_client import RedisError, failure_of  # the redis extra's module

        now = time.time()
        members = {url: now for url in urls}
        if not members:
            return
        name = self._keys + session
        try:
            with self._health.trips() as trip:
                async with self._client.pipeline(transaction=True) as pipe:
                    pipe.zadd(name, members)
                    pipe.zremrangebyrank(name, 0, -self._max_urls - 1)  # keep the newest only
                    pipe.expire(name, self._ttl)
                    await pipe.execute()
                trip.wrote = True
        except (RedisError, OSError) as exc:
            raise limits_unavailable(self._where, *failure_of(exc, self._where)) from None

    async def has(self, session: str, url: str) -> bool:
        from ._redis_client import RedisError, failure_of  # the redis extra's module

        try:
            with self._health.trips():
                return await self._client.zscore(self._keys + session, url) is not None
        except (RedisError, OSError) as exc:
            raise limits_unavailable(self._where, *failure_of(exc, self._where)) from None

    async def aclose(self) -> None:
        await self._client.aclose()


def open_session_store(settings: Settings) -> SessionStore:
    """Redis when ``[state] redis_url`` is set (replicas agree), else this process's memory."""
    limits = settings.limits
    if settings.state.redis_url:
        return RedisSessionStore(
            settings.state.redis_url,
            limits.session_max_urls,
            limits.session_max_age_s,
            prefix=settings.state.redis_prefix,
        )
    return MemorySessionStore(
        limits.session_max_urls,
        limits.session_max_age_s,
        max_bytes=limits.session_memory_max_bytes,
    )


def refusal_message(url: str, agent: str, session: str | None) -> str:
    """The one sentence of a ``url_not_in_session`` refusal: why, and what the operator can
    change."""
    why = (
        "the call names no session"
        if session is None
        else f"session {session} has not seen it in the user's input, a search hit or a page "
        "it read"
    )
    return operator_step(
        f"refused: {url} is not a URL this session has seen ({why}), and agent {agent} reads "
        "only such URLs, which stops a page's text from sending the agent to unseen URLs",
        "declare the URL for the session, add its host to [policy] allow, or set "
        f'provenance = "off" in [agents.{agent}]',
    )
