"""robots.txt (RFC 9309), read with Protego under webward's own user-agent token.

The rules, as the RFC has them:

- 2xx: the file is parsed (its first :data:`MAX_ROBOTS_BYTES`; the RFC asks parsers to read at
  least 500 KiB) and the group for the token ``webward`` (else ``*``) decides;
- 3xx left over, and 4xx (404 included): the file is "unavailable", every path is allowed;
- 5xx, and a robots.txt that cannot be read (the fetch raised: a refused redirect to an
  internal address, a timeout, a reset): "unreachable", every path is disallowed. A 429 is
  treated like a 5xx (the host asked us to slow down; reading pages at once would not).

A host that cannot be resolved, connected to or shaken hands with (TLS) is not a robots.txt
answer at all: the page could not be read either, so that upstream failure is passed on as it
is (``could not connect to HOST``, exit 1), not dressed up as a robots refusal, and nothing is
cached.

The fetch itself is injected (``fetch_robots(url) -> (status, body)``): the core passes its
own, which goes through the same guard, pinned transport and redirect rules (at most five
hops) as a page read, and with the calling agent's tier and policy (``check(url, via=...)``
takes the caller's fetch), so a robots.txt redirect cannot carry a read to a host that
caller may not reach. Answers are cached per origin (scheme, host, port) for ``ttl_s``;
"unreachable" for only ``error_ttl_s``, so a passing outage does not block a host for long.
A robots.txt that could not be read because the *caller's* allow or deny list refused a
redirect hop (``host_not_allowed``, ``host_denied``) is unreachable for that call only and
not cached: another tier or agent may reach it.
If the fetch is refused by webward's own rate limit or open circuit, that refusal is passed on
as it is (it says when to retry) and nothing is cached.

A :class:`RobotsStore` (the command line's is ``cache.db`` in the state dir) keeps answers
beyond the process, so that a new ``webward fetch`` does not ask for the file again.

The parsed answers a process keeps are bounded in memory, not only in number: Protego holds a
file's rules as objects and patterns, up to 80 times the file's size (40 MB for 500 KiB of
wildcard rules), and one agent can make a gateway read robots.txt files from as many host
names as it likes. Each answer is charged an estimate of what it holds (:func:`_weight`), and
the least recently used go past :data:`MAX_CACHE_WEIGHT`. A large file is parsed in a worker
thread: 500 KiB of rules take Protego 0.3 s, which the event loop serving every other call
must not spend.
"""

from __future__ import annotations

import re
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Protocol
from urllib.parse import urlsplit, urlunsplit

import anyio
from anyio.lowlevel import RunVar
from protego import Protego

from ._errors import InvalidInput, Reason, Refused, UpstreamError, WebwardError, operator_step
from ._policy import REASON_HOST_DENIED, REASON_HOST_NOT_ALLOWED

__all__ = [
    "MAX_ROBOTS_BYTES",
    "REASON_ROBOTS",
    "REASON_ROBOTS_UNREACHABLE",
    "USER_AGENT_TOKEN",
    "FetchRobots",
    "RobotsChecker",
    "RobotsStore",
    "robots_url",
]

#: Fixed reason codes.
REASON_ROBOTS = Reason.ROBOTS
REASON_ROBOTS_UNREACHABLE = Reason.ROBOTS_UNREACHABLE

#: webward's product token in robots.txt groups (the full User-Agent lives with the core).
USER_AGENT_TOKEN = "webward"
#: How much of a robots.txt is parsed (RFC 9309, 2.5: at least 500 kibibytes).
MAX_ROBOTS_BYTES = 500 * 1024

#: ``fetch_robots(robots_url) -> (status, body)``; raises ``WebwardError`` when it cannot.
FetchRobots = Callable[[str], Awaitable[tuple[int, bytes]]]

_DEFAULT_PORTS = {"http": 80, "https": 443}
# Upstream failures that mean the host itself is out of reach (see the module docstring).
_HOST_UNREACHABLE = frozenset({Reason.DNS, Reason.CONNECT, Reason.TLS})
# webward's own stores failing on the robots.txt read's way out: not the site's answer, so
# neither said as one (with advice to turn robots.txt off) nor cached for a minute after the
# store is back.
_OWN_STORES = frozenset({Reason.LIMITS_UNAVAILABLE, Reason.AUDIT_UNAVAILABLE})
# Refusals by the lists of the caller (its tier's or its agent's allow and deny lists): what
# another caller meets may differ, so the robots.txt answer they make is this call's alone
# (cached, one agent's deny list refused every agent the host, and named that list to them).
_CALLERS_OWN = frozenset({REASON_HOST_NOT_ALLOWED, REASON_HOST_DENIED})


class _HasURL(Protocol):
    @property
    def url(self) -> str: ...


class RobotsStore(Protocol):
    """Answers kept outside the process: ``kind`` is ``rules`` (``text`` is the file),
    ``allow`` (no usable file) or ``unreachable`` (``text`` says why). Never raises."""

    async def get(self, origin: str) -> tuple[float, str, str] | None:
        """``(seconds left, kind, text)`` for ``origin``, or ``None``."""
        ...

    async def put(self, origin: str, ttl_s: float, kind: str, text: str) -> None:
        """Keep an answer for ``ttl_s`` seconds."""
        ...


_MAX_VERDICTS = 128  # robots.txt verdicts remembered per origin; cleared when full
_MAX_VERDICT_CHARS = 8 * 1024  # ... or when their URLs come to this many characters
#: What the parsed answers a process keeps may hold together (estimated by :func:`_weight`):
#: 1,024 origins of files of 4 KiB, or two of 500 KiB of wildcard rules.
MAX_CACHE_WEIGHT = 128 * 1024 * 1024
# Parsed in a worker thread past this many characters (a typical file is a few kilobytes).
_THREAD_PARSE_CHARS = 32 * 1024


# How an unreachable robots.txt that leads where webward never reads is said (and known).
_LEADS_AWAY = "it leads where webward never reads"


@dataclass(frozen=True)
class _Entry:
    expires: float
    rules: Protego | None  # None: every path allowed (4xx)
    unreachable: str = ""  # non-empty: every path disallowed, and why
    text: str = ""  # the parsed file, for a RobotsStore
    # What the rules answered for each URL asked (the rules are fixed while the entry lives;
    # a page read again, from the cache or not, asks again: 10 us a call in Protego).
    verdicts: dict[tuple[str, str], bool] = field(default_factory=dict, compare=False, repr=False)
    # The characters of the URLs in ``verdicts`` (one item, so that the frozen entry counts).
    verdict_chars: list[int] = field(default_factory=lambda: [0], compare=False, repr=False)

    def allows(self, url: str, token: str) -> bool:
        """Whether the rules let ``token`` read ``url`` (no rules: every path)."""
        key = (url, token)
        allowed = self.verdicts.get(key)
        if allowed is None:
            allowed = self.rules is None or bool(self.rules.can_fetch(url, token))
            chars = self.verdict_chars
            if len(self.verdicts) >= _MAX_VERDICTS or chars[0] > _MAX_VERDICT_CHARS:
                self.verdicts.clear()
                chars[0] = 0
            self.verdicts[key] = allowed
            chars[0] += len(url)
        return allowed


def _weight(entry: _Entry) -> int:
    """About what ``entry`` holds, in bytes, for the cache's bound: tracemalloc of Protego's
    parse of 500 KiB files of each shape found up to 17 bytes a character of the file, and
    about 320 more a wildcard; with room for its remembered verdicts."""
    text = entry.text
    verdicts = _MAX_VERDICT_CHARS + 128 * _MAX_VERDICTS
    return 1024 + verdicts + 20 * len(text) + 400 * text.count("*")


# One large parse at a time: each holds the GIL most of its 0.3 s, and eight at once left the
# event loop waiting its turn behind all of them (and held eight parses' memory). One limiter
# per event loop run: a limiter belongs to the loop (and the anyio backend) that first used it.
_PARSES: RunVar[anyio.CapacityLimiter] = RunVar("webward_robots_parses")


async def _parsed(expires: float, text: str) -> _Entry | None:
    if len(text) <= _THREAD_PARSE_CHARS:
        return _parse_rules(expires, text)
    try:
        limiter = _PARSES.get()
    except LookupError:
        limiter = anyio.CapacityLimiter(1)
        _PARSES.set(limiter)
    return await anyio.to_thread.run_sync(_parse_rules, expires, text, limiter=limiter)


def _parse_rules(expires: float, text: str) -> _Entry | None:
    try:
        return _Entry(expires, Protego.parse(text), text=text)
    except Exception:  # Protego is lenient; a parser bug must not open the door
        return None


@lru_cache(maxsize=4096)  # pure, and asked on every read (a cached page's too): remembered
def robots_url(url: str) -> tuple[str, str, str]:
    """``(origin, robots_url, host_for_messages)`` of an absolute http(s) URL."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS or not parts.hostname:
        raise InvalidInput(f"{url!r} is not an absolute http or https URL")
    host = parts.hostname.lower()
    try:
        port = parts.port
    except ValueError:
        raise InvalidInput(f"{url!r} has an invalid port") from None
    shown = f"[{host}]" if ":" in host else host
    if port is not None and port != _DEFAULT_PORTS[scheme]:
        shown = f"{shown}:{port}"
    origin = f"{scheme}://{shown}"
    return origin, f"{origin}/robots.txt", shown


_SLASHES = re.compile(r"//+")


def _slashes_merged(url: str) -> str:
    """``url`` with runs of slashes in its path merged into one, for matching rules only.

    Most servers serve ``//private`` as ``/private`` (nginx merges slashes by default, and
    Apache maps files that way), so a rule for ``/private`` must see it too; the guard sends
    ``/\\private`` as ``//private``. The request itself keeps its path as the guard
    normalised it, and is matched as sent too (a rule may name ``//`` itself). The query is
    matched as sent: servers do not merge its slashes."""
    parts = urlsplit(url)
    if "//" not in parts.path:
        return url
    return urlunsplit(parts._replace(path=_SLASHES.sub("/", parts.path)))


class RobotsChecker:
    """Answers "may webward read this URL?" from the origin's robots.txt, cached.

    ``fetch`` is the core's guarded fetch; ``clock`` gives seconds (inject a fake one in
    tests). Raises :class:`Refused` with reason ``robots`` or ``robots_unreachable``.
    """

    def __init__(
        self,
        fetch: FetchRobots,
        *,
        clock: Callable[[], float] = time.monotonic,
        ttl_s: float = 3600.0,
        error_ttl_s: float = 60.0,
        token: str = USER_AGENT_TOKEN,
        max_origins: int = 1024,
        max_weight: int = MAX_CACHE_WEIGHT,
        store: RobotsStore | None = None,
    ) -> None:
        self._fetch = fetch
        self._store = store
        self._clock = clock
        self._ttl_s = ttl_s
        self._error_ttl_s = error_ttl_s
        self._token = token
        self._max_origins = max_origins
        self._max_weight = max_weight
        self._cache: OrderedDict[str, _Entry] = OrderedDict()
        self._weight = 0  # of the entries in _cache (_weight)
        self._locks: dict[str, anyio.Lock] = {}

    async def check(self, url: str | _HasURL, *, via: FetchRobots | None = None) -> None:
        """Return if robots.txt lets webward read ``url``; raise :class:`Refused` if not.

        ``via`` is the calling agent's fetch (its tier and policy on every redirect hop);
        without it the fetch given to the constructor is used."""
        target = url if isinstance(url, str) else url.url
        origin, robots, host = robots_url(target)
        entry = await self._entry(origin, robots, via or self._fetch)
        if entry.unreachable:
            advice = (
                "a tier that does not consult robots.txt ([policy.tiers.NAME] robots = false) "
                "reads without it"
                if entry.unreachable.startswith(_LEADS_AWAY)
                else "try again later"
            )
            raise Refused(
                f"refused: robots.txt of {host} could not be read ({entry.unreachable}), so "
                f"webward treats every path there as disallowed; {advice}",
                reason=REASON_ROBOTS_UNREACHABLE,
            )
        # Either form disallowed refuses: the merged one for a rule of /private asked as
        # //private, the path as sent for a rule that names a run of slashes itself
        # (Disallow: /*// against duplicate-slash URLs), which no merged path matches.
        merged = _slashes_merged(target)
        if not (
            entry.allows(target, self._token)
            and (merged == target or entry.allows(merged, self._token))
        ):
            parts = urlsplit(target)
            path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
            raise Refused(
                operator_step(
                    f"refused: robots.txt of {host} disallows {path} for {self._token}; the "
                    "site asks not to be read there",
                    "an operator can let a tier skip robots.txt ([policy.tiers.NAME] robots = "
                    "false)",
                ),
                reason=REASON_ROBOTS,
            )

    def forget(self, url: str) -> None:
        """Drop the cached answer for the origin of ``url``."""
        self._drop(robots_url(url)[0])

    def _drop(self, origin: str) -> None:
        entry = self._cache.pop(origin, None)
        if entry is not None:
            self._weight -= _weight(entry)

    def _remember(self, origin: str, entry: _Entry) -> None:
        """Keep ``entry`` as the newest; the least recently used go past either bound."""
        self._drop(origin)
        self._cache[origin] = entry
        self._weight += _weight(entry)
        while len(self._cache) > 1 and (
            len(self._cache) > self._max_origins or self._weight > self._max_weight
        ):
            self._drop(next(iter(self._cache)))

    async def _entry(self, origin: str, robots: str, fetch: FetchRobots) -> _Entry:
        cached = self._cached(origin)
        if cached is not None:
            return cached
        # One fetch per origin at a time: concurrent reads of one host wait for the first.
        lock = self._locks.get(origin)
        if lock is None:
            lock = self._locks[origin] = anyio.Lock()
        try:
            async with lock:
                cached = self._cached(origin)
                if cached is not None:
                    return cached
                entry = await self._stored(origin)
                if entry is None:
                    entry, keep = await self._load(robots, fetch)
                    if not keep:
                        return entry
                    await self._keep(origin, entry)
                self._remember(origin, entry)
                return entry
        finally:
            if not lock.locked() and lock.statistics().tasks_waiting == 0:
                self._locks.pop(origin, None)

    def _cached(self, origin: str) -> _Entry | None:
        entry = self._cache.get(origin)
        if entry is None:
            return None
        if self._clock() >= entry.expires:
            self._drop(origin)
            return None
        self._cache.move_to_end(origin)  # least recently used go first, not least recently made
        return entry

    async def _stored(self, origin: str) -> _Entry | None:
        if self._store is None:
            return None
        found = await self._store.get(origin)
        if found is None:
            return None
        left, kind, text = found
        expires = self._clock() + left
        if kind == "rules":
            return await _parsed(expires, text)
        if kind == "unreachable":
            return _Entry(expires, None, unreachable=text or "unknown")
        return _Entry(expires, None) if kind == "allow" else None

    async def _keep(self, origin: str, entry: _Entry) -> None:
        if self._store is None:
            return
        ttl = entry.expires - self._clock()
        if entry.unreachable:
            await self._store.put(origin, ttl, "unreachable", entry.unreachable)
        elif entry.rules is not None:
            await self._store.put(origin, ttl, "rules", entry.text)
        else:
            await self._store.put(origin, ttl, "allow", "")

    async def _load(self, robots: str, fetch: FetchRobots) -> tuple[_Entry, bool]:
        """The answer for one robots.txt, and whether it may be cached for every caller."""
        now = self._clock()
        try:
            status, body = await fetch(robots)
        except WebwardError as exc:
            if exc.code in ("rate_limited", "circuit_open") or exc.reason in _OWN_STORES:
                raise  # our own limits or stores: the caller learns what; nothing is cached
            if isinstance(exc, UpstreamError) and exc.reason in _HOST_UNREACHABLE:
                raise  # the host is out of reach: an upstream failure, not a robots answer
            text = exc.for_model.rstrip(".")  # it reaches the model: no operator step
            if isinstance(exc, Refused) and exc.reason not in _CALLERS_OWN:
                # The guard's or the scheme's refusal of where it leads: lasting, and its own
                # sentence (with its own advice) is cut to what happened.
                text = f"{_LEADS_AWAY}: {text.removeprefix('refused: ').split(';')[0]}"
            entry = _Entry(now + self._error_ttl_s, None, unreachable=text)
            # Refused by this caller's allow or deny list: another may read it, not cached.
            return entry, exc.reason not in _CALLERS_OWN
        return await self._parse(now, status, body), True

    async def _parse(self, now: float, status: int, body: bytes) -> _Entry:
        if 200 <= status < 300:
            text = body[:MAX_ROBOTS_BYTES].decode("utf-8", errors="replace")
            entry = await _parsed(now + self._ttl_s, text)
            if entry is None:
                return _Entry(now + self._error_ttl_s, None, unreachable="it could not be parsed")
            return entry
        if status == 429 or status >= 500:
            return _Entry(now + self._error_ttl_s, None, unreachable=f"HTTP {status}")
        return _Entry(now + self._ttl_s, None)  # 3xx left over, 4xx: unavailable, allow all
