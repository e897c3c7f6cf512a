"""Observability behind one seam: trace spans, Prometheus metrics and one log line per call.

The rest of webward calls only this module, with one line where a step happens:

- :func:`span` opens a child span (robots.txt, connect, read, convert, render, search provider,
  audit write) and :func:`http_span` an HTTP client span; :meth:`Telemetry.call` wraps one
  ``web_fetch`` / ``web_search`` call in its span; :func:`server_span` is the gateway's span,
  joined to the caller's trace through the request's ``traceparent`` header. MCP calls join
  the caller's trace through the SDK, which reads ``traceparent`` from the request's ``_meta``
  and opens its ``tools/call`` span around the tool.
- :meth:`Telemetry.audit_write` times the audit write and, once the call's record is final,
  counts the call and writes its log line.

**Tracing** is OpenTelemetry's. :func:`configure_tracing` installs the SDK with an OTLP
exporter only when the standard ``OTEL_*`` variables ask for one (``OTEL_TRACES_EXPORTER``, or
an ``OTEL_EXPORTER_OTLP_*ENDPOINT``); an application embedding webward may instead install its
own tracer provider. With neither, every span here is a shared null context: nothing is
imported, allocated or attached, so tracing that is off costs a dictionary lookup per call.

**Metrics** (servers only) live in a registry of their own per :class:`Telemetry`, served as
Prometheus text by :class:`MetricsEndpoint`. Label sets are bounded: hosts beyond the busiest
``metrics_top_hosts`` fold into ``host="other"``, agents beyond :data:`MAX_AGENT_LABELS` into
``agent="other"``.

**Refused credentials** (a request with no bearer token, a malformed ``Authorization`` or a
token no agent holds) name no agent, so they are no call and have no audit record:
:meth:`Telemetry.auth_refused` counts them by reason and says them on the ``webward`` logger,
one line per reason per :data:`_AUTH_QUIET_S` at most (:class:`_AuthRefusalLog`).

**The call log** is one JSON line per call: the audit record's wire fields (no page text, no
credentials; :class:`~webward.audit.AuditRecord` has no field for either) plus the trace and
span ids when tracing is on.
"""

from __future__ import annotations

import asyncio
import atexit
import bisect
import codecs
import concurrent.futures
import contextlib
import hashlib
import hmac
import http
import importlib
import json
import logging
import math
import os
import re
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from typing import IO, Any, Literal, TypeVar, get_args
from urllib.parse import urlsplit

import orjson

from ._addresses import is_loopback, names_this_machine
from ._call import render_refusal_reason
from ._errors import InvalidInput, Reason, WebwardError
from ._redact import redact_message, redact_secrets
from ._settings import Settings, is_agent_name
from ._tokens import bearer_token

__all__ = [
    "MAX_AGENT_LABELS",
    "AuthRefusal",
    "MetricsEndpoint",
    "Telemetry",
    "configure_tracing",
    "http_span",
    "server_span",
    "span",
    "stdout_taken",
    "tracing",
]

log = logging.getLogger("webward")

_R = TypeVar("_R")

#: Distinct agent label values before further agents fold into ``agent="other"``.
MAX_AGENT_LABELS = 50
#: Hosts remembered for the per-host metrics; past this the quietest fold into ``other``.
_MAX_TRACKED_HOSTS = 10_000
_LIMIT_REASONS = frozenset({"rate_limited", "backpressure", "circuit_open"})
#: Record shapes whose metric cells are remembered (AuditRecord.shape); cleared when full.
_MAX_SHAPES = 4096

#: Why a request was refused for its credentials, before any agent was known: no
#: ``Authorization`` header; one that is not a single ``Bearer <token>`` (another scheme, no
#: token, or two headers); a bearer token no agent holds. The label values of
#: ``webward_auth_refusals_total``, and all of them: the set is bounded whatever is sent.
AuthRefusal = Literal["missing", "malformed", "unknown"]


# ---- tracing ---------------------------------------------------------------------------


class _NoSpan:
    """What a span context yields when tracing is off: attributes go nowhere."""

    def set_attribute(self, key: str, value: Any) -> None:
        return None

    def set_attributes(self, attributes: Mapping[str, Any]) -> None:
        return None


_NULL: contextlib.nullcontext[Any] = contextlib.nullcontext(_NoSpan())
_TRACER: Any = None  # the OpenTelemetry tracer, once a real tracer provider is installed


def _tracer() -> Any:
    """The tracer, or None while no tracer provider is installed (the no-op path).

    Nobody can have installed a provider without importing ``opentelemetry.trace``, so until
    then this is one dictionary lookup. A provider, once set, cannot change: the tracer is
    kept.
    """
    global _TRACER
    if _TRACER is not None:
        return _TRACER
    trace = sys.modules.get("opentelemetry.trace")
    if trace is None:
        return None
    provider = trace.get_tracer_provider()
    if isinstance(provider, trace.ProxyTracerProvider | trace.NoOpTracerProvider):
        return None
    from . import __version__

    _TRACER = provider.get_tracer("webward", __version__)
    return _TRACER


def tracing() -> bool:
    """Whether spans are recorded (a tracer provider is installed): the hot paths open none
    otherwise, not even a null one."""
    return _tracer() is not None


def span(
    name: str, attributes: Mapping[str, Any] | None = None
) -> contextlib.AbstractContextManager[Any]:
    """A child span of the current one around a step; a null context when tracing is off."""
    tracer = _tracer()
    if tracer is None:
        return _NULL
    return _span(tracer, name, attributes, None, None)


def http_span(method: str, url: Any) -> contextlib.AbstractContextManager[Any]:
    """An HTTP client span (OpenTelemetry HTTP semantic conventions) for one request to
    ``url`` (a ``guard.ParsedURL``); set ``http.response.status_code`` on what it yields."""
    tracer = _tracer()
    if tracer is None:
        return _NULL
    from opentelemetry.trace import SpanKind

    attributes = {
        "http.request.method": method,
        "url.full": redact_secrets(url.url),
        "server.address": url.host,
        "server.port": url.port,
    }
    return _span(tracer, method, attributes, SpanKind.CLIENT, None)


def server_span(
    method: str, route: str, headers: Iterable[tuple[bytes, bytes]]
) -> contextlib.AbstractContextManager[Any]:
    """The gateway's server span for one request (ASGI ``headers``), a child of the caller's
    span when the request carries a W3C ``traceparent`` header (and ``tracestate``)."""
    tracer = _tracer()
    if tracer is None:
        return _NULL
    from opentelemetry import propagate
    from opentelemetry.trace import SpanKind

    carrier: dict[str, str] = {}
    for name, value in headers:
        if name in (b"traceparent", b"tracestate") and name.decode() not in carrier:
            carrier[name.decode()] = value.decode("latin-1")
    parent = propagate.extract(carrier) if carrier else None
    attributes = {"http.request.method": method, "http.route": route, "url.path": route}
    return _span(tracer, f"{method} {route}", attributes, SpanKind.SERVER, parent)


@contextlib.contextmanager
def _span(
    tracer: Any, name: str, attributes: Mapping[str, Any] | None, kind: Any, parent: Any
) -> Iterator[Any]:
    from opentelemetry.trace import SpanKind, Status, StatusCode

    with tracer.start_as_current_span(
        name,
        context=parent,
        kind=kind if kind is not None else SpanKind.INTERNAL,
        attributes=attributes,
        # A refusal is an answer, not a crash: the span names its reason, without a traceback.
        record_exception=False,
        set_status_on_exception=False,
    ) as current:
        try:
            yield current
        except BaseException as exc:
            if isinstance(exc, WebwardError):
                current.set_attribute("error.type", exc.reason)
                # The message names the URLs of the call (asked, redirected to): their
                # secret query values leave the process REDACTED, as url.full's do.
                current.set_status(Status(StatusCode.ERROR, redact_message(exc.message)))
            else:
                # A call's span already names its reason (cancelled, internal_error): kept.
                if "error.type" not in (getattr(current, "attributes", None) or {}):
                    current.set_attribute("error.type", type(exc).__qualname__)
                current.set_status(Status(StatusCode.ERROR))
            raise


_configured = False
_configure_lock = threading.Lock()


_installed: Any = None  # the tracer provider configure_tracing installed, until flushed


def configure_tracing(environ: Mapping[str, str] | None = None) -> bool:
    """Install the OpenTelemetry SDK with an exporter if the ``OTEL_*`` variables ask for one.

    ``OTEL_TRACES_EXPORTER`` names the exporter (``otlp``, ``console`` or ``none``); unset, an
    ``OTEL_EXPORTER_OTLP_ENDPOINT`` or ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` means ``otlp``.
    The OTLP protocol is ``http/protobuf`` unless ``OTEL_EXPORTER_OTLP[_TRACES]_PROTOCOL``
    says ``grpc``; endpoint, headers, timeout, compression and batching follow their usual
    ``OTEL_*`` variables. A tracer provider the application installed itself is left alone.
    Returns whether webward installed one. Runs once per process.
    """
    global _configured
    env = os.environ if environ is None else environ
    with _configure_lock:
        if _configured:
            return False
        exporters = _exporters_asked(env)
        if not exporters:
            return False
        _configured = True
        try:
            from opentelemetry import trace
            from opentelemetry.sdk.resources import Resource
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.export import BatchSpanProcessor
        except ImportError:
            # Name only the variables that are set: those are what asked for the export.
            asking = [
                v
                for v in (
                    "OTEL_TRACES_EXPORTER",
                    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                    "OTEL_EXPORTER_OTLP_ENDPOINT",
                )
                if env.get(v, "").strip()
            ]
            raise InvalidInput(
                f"{' and '.join(asking)} ask{'s' if len(asking) == 1 else ''} for trace export, "
                "but the OpenTelemetry SDK is not installed: pip install 'webward[otel]', or "
                f"unset {' and '.join(asking)} (or set OTEL_SDK_DISABLED=true)"
            ) from None
        if not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
            return False  # the application installed its own
        from . import __version__

        attributes = {"service.version": __version__}
        if not env.get("OTEL_SERVICE_NAME"):
            attributes["service.name"] = "webward"
        sampler = None
        if not env.get("OTEL_TRACES_SAMPLER"):
            # Every call is traced, whatever a caller's traceparent says: under the SDK's
            # default (parent-based) sampler an agent sending "not sampled" would take its
            # own calls out of the traces. The operator's OTEL_TRACES_SAMPLER still rules.
            from opentelemetry.sdk.trace.sampling import ALWAYS_ON

            sampler = ALWAYS_ON
        # Shut down by flush_tracing, within a bound, rather than at exit by the SDK: with the
        # collector down, its exporter retried for seconds after the command was done.
        provider = TracerProvider(
            resource=Resource.create(attributes), sampler=sampler, shutdown_on_exit=False
        )
        for name in exporters:
            provider.add_span_processor(BatchSpanProcessor(_exporter(name, env)))
        trace.set_tracer_provider(provider)
        global _installed
        _installed = provider
        atexit.register(flush_tracing)  # a library user's process: the same bound at exit
        return True


def flush_tracing(timeout_s: float = 2.0) -> None:
    """Export the spans still waiting and stop the exporter webward installed, waiting at
    most ``timeout_s``: a collector that is down costs a command that long at its end, not
    the exporter's retries. The export goes on in a daemon thread that the exit ends."""
    global _installed
    provider, _installed = _installed, None
    if provider is None:
        return
    done = threading.Thread(target=provider.shutdown, name="webward-trace-flush", daemon=True)
    done.start()
    done.join(timeout_s)


def _exporters_asked(env: Mapping[str, str]) -> list[str]:
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return []
    named = env.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if not named:
        endpoint = env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or env.get(
            "OTEL_EXPORTER_OTLP_ENDPOINT"
        )
        return ["otlp"] if endpoint else []
    names = [n.strip() for n in named.split(",") if n.strip() and n.strip() != "none"]
    for n in names:
        if n not in ("otlp", "console"):
            raise InvalidInput(
                f"OTEL_TRACES_EXPORTER names {n!r}; webward exports traces with otlp or "
                "console (or none)"
            )
    return names


def _exporter(name: str, env: Mapping[str, str]) -> Any:
    if name == "console":
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter

        return ConsoleSpanExporter(out=sys.stderr)  # stdout may be the MCP protocol
    protocol = (
        env.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
        or env.get("OTEL_EXPORTER_OTLP_PROTOCOL")
        or "http/protobuf"
    ).strip()
    try:
        if protocol == "grpc":
            module = "opentelemetry.exporter.otlp.proto.grpc.trace_exporter"
        elif protocol == "http/protobuf":
            module = "opentelemetry.exporter.otlp.proto.http.trace_exporter"
        else:
            raise InvalidInput(
                f"OTEL_EXPORTER_OTLP_PROTOCOL is {protocol!r}; webward exports OTLP over "
                "http/protobuf or grpc"
            )
        exporter_class = importlib.import_module(module).OTLPSpanExporter
    except ImportError:
        package = "opentelemetry-exporter-otlp-proto-" + ("grpc" if protocol == "grpc" else "http")
        raise InvalidInput(
            f"OTLP over {protocol} needs the package {package}: pip install {package}"
        ) from None
    _check_headers(env)
    # Endpoint, headers, timeout: the OTEL_EXPORTER_OTLP_* variables.
    if protocol == "http/protobuf" and not any(env.get(v) for v in _CREDENTIAL_PROVIDERS):
        from ._otlp import bounded_session  # the otel extra's requests, as the exporter's

        return exporter_class(session=bounded_session())
    return exporter_class()


#: One header of OTEL_EXPORTER_OTLP_[TRACES_]HEADERS as the exporter takes it (its liberal
#: reading: a name, "=", a value of printable characters, spaces too, URL-encoded or not).
_HEADER_ENTRY = re.compile(
    r"[ \t]*[\x21\x23-\x27\x2a\x2b\x2d\x2e\x30-\x39\x41-\x5a\x5e-\x7a\x7c\x7e]+[ \t]*="
    r"[ \t]*[\x20\x21\x23-\x2b\x2d-\x3a\x3c-\x5b\x5d-\x7e]*[ \t]*"
)


def _check_headers(env: Mapping[str, str]) -> None:
    """Refuse headers for the collector that the exporter would leave out. It logged each
    such entry whole, at WARNING: "Authorization: Bearer <token>" (a colon for the "=")
    printed the collector's token on the server's stderr, then sent no credential."""
    variable = next(
        (
            v
            for v in ("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_EXPORTER_OTLP_HEADERS")
            if env.get(v)
        ),
        None,
    )
    if variable is None:
        return
    entries = [e for e in re.split(r"[ \t]*,[ \t]*", env[variable]) if e]
    for number, entry in enumerate(entries, 1):
        if not _HEADER_ENTRY.fullmatch(entry.strip()):
            raise InvalidInput(
                f"{variable} holds a header that is not name=value (entry {number} of "
                f"{len(entries)}); write each as name=value, the value URL-encoded "
                "(Authorization=Bearer%20TOKEN)"
            )


#: The variables with which the HTTP exporter makes a requests session of its own (a
#: credential provider's): that session is left as it is.
_CREDENTIAL_PROVIDERS = (
    "OTEL_PYTHON_EXPORTER_OTLP_HTTP_CREDENTIAL_PROVIDER",
    "OTEL_PYTHON_EXPORTER_OTLP_HTTP_TRACES_CREDENTIAL_PROVIDER",
)


# ---- one call ---------------------------------------------------------------------------


class Telemetry:
    """Metrics and the call log of one :class:`~webward.Web`; tracing is process-wide.

    ``metrics``: keep Prometheus metrics (servers). ``call_log``: ``"off"``, ``"stderr"`` or
    a file path to append one JSON line per call to.
    """

    def __init__(
        self, *, metrics: bool = False, call_log: str = "off", top_hosts: int = 20
    ) -> None:
        self.metrics = _Metrics(top_hosts) if metrics else None
        self._auth_log = _AuthRefusalLog()
        self._log: _CallLog | None = None
        if call_log not in ("", "off"):
            self._log = _CallLog(call_log)

    @classmethod
    def for_settings(cls, settings: Settings, *, server: bool, tracing: bool = True) -> Telemetry:
        """What ``[observability]`` asks for: servers keep metrics and log each call to
        stderr unless told otherwise; the command line and the library log nothing unless
        ``call_log`` is set. With ``tracing`` (webward's own commands and servers), also
        installs OTLP export if the ``OTEL_*`` variables ask: a ``Web`` in an application
        passes False, since the tracer provider is the application's to install, once a
        process (an SDK webward set up first took its place and name)."""
        if tracing:
            configure_tracing()
        obs = settings.observability
        call_log = obs.call_log or ("stderr" if server else "off")
        return cls(
            metrics=server and obs.metrics, call_log=call_log, top_hosts=obs.metrics_top_hosts
        )

    def call(self, tool: str, capability: str, agent: Any, work: Awaitable[_R]) -> Awaitable[_R]:
        """``work`` (one audited call), to be awaited inside the call's span; ``work`` itself
        when tracing is off, so the untraced path adds no coroutine."""
        tracer = _tracer()
        if tracer is None:
            return work
        return self._traced(tracer, tool, capability, agent, work)

    async def _traced(
        self, tracer: Any, tool: str, capability: str, agent: Any, work: Awaitable[_R]
    ) -> _R:
        attributes = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": tool,
            "webward.capability": capability,
            "webward.agent": str(agent),
        }
        with _span(tracer, tool, attributes, None, None) as current:
            result = await work
            window = getattr(result, "window", None)
            if window is not None:
                current.set_attributes(
                    {
                        "webward.window.offset": window.offset,
                        "webward.window.end": window.end,
                        "webward.window.total": window.total,
                    }
                )
            return result

    def audit_write(self, record: Any) -> contextlib.AbstractContextManager[Any]:
        """Around the audit write of ``record`` (an ``AuditRecord``): its span and latency;
        then the call's attributes, counters and log line, with the decision as it stood
        once the write was done (a failed write refuses the call: ``audit_unavailable``)."""
        tracer = _tracer()
        if self.metrics is None and self._log is None and tracer is None:
            return _NULL  # nothing to observe
        return _AuditWrite(self, record, tracer is not None)

    def _audit_written(self, outcome: Any, started: float) -> None:
        """The audit write of a call ended: its latency, counters and log line."""
        metrics = self.metrics
        if metrics is not None:
            metrics.audit_waiting -= 1
            metrics.audit_seconds.observe(time.perf_counter() - started)
            metrics.count_call(outcome)
        if self._log is not None:
            self._log.write(outcome)

    def counts_auth_refusals(self) -> None:
        """The face serving these metrics counts its refused credentials (the gateway, and
        mcp-http, with tokens): their series are shown from zero, so that ``rate()`` and an
        alert see the first refusal. A face that does not count them is left without the
        series, rather than with a zero that would read as "nobody is guessing tokens here"."""
        if self.metrics is not None:
            for reason in get_args(AuthRefusal):
                self.metrics.auth_refusals.cell(reason)

    def auth_refused(self, reason: AuthRefusal, client: str) -> None:
        """A request from ``client`` (its address) was refused for its credentials, before
        any agent was known: counted in ``webward_auth_refusals_total`` and said on the
        ``webward`` logger, at most one line per reason per :data:`_AUTH_QUIET_S`. Not a call:
        with no agent there is nothing to audit. The token is never handed here, so no part
        of it can reach the metrics or the log."""
        if self.metrics is not None:
            self.metrics.auth_refusals.cell(reason).inc()
        self._auth_log.refused(reason, client)

    def cache(self, hit: bool) -> None:
        """A page-cache lookup."""
        if self.metrics is not None:
            (self.metrics.cache_hits if hit else self.metrics.cache_misses).inc()

    def hop(self, host: str, status: int | None, error: WebwardError | None) -> None:
        """One hop to ``host`` ended: an answer that is neither a 5xx nor a 429 shows its
        circuit closed."""
        if self.metrics is not None:
            self.metrics.hosts.hop(host, status, error)

    @contextlib.contextmanager
    def converting(self) -> Iterator[None]:
        """A conversion in flight, in its span."""
        metrics = self.metrics
        if metrics is not None:
            metrics.converting.inc()
        try:
            with span("convert"):
                yield
        finally:
            if metrics is not None:
                metrics.converting.dec()

    @contextlib.contextmanager
    def rendering(self, purpose: str) -> Iterator[None]:
        """A headless render (``purpose``: ``fallback`` for a script shell's reading, or
        ``screenshot``), in its span; its seconds go to ``webward_render_seconds``."""
        started = time.monotonic()
        try:
            with span("render", {"webward.screenshot": purpose == "screenshot"}):
                yield
        finally:
            if self.metrics is not None:
                spent = time.monotonic() - started
                self.metrics.render_seconds.labels(purpose).observe(spent)

    def flush(self) -> None:
        """Write the call log lines still waiting for their turn of the loop."""
        if self._log is not None:
            self._log.flush()

    def logs_to(self, fd: int) -> bool:
        """Whether the call log is a file that ``fd`` is open on too (``/dev/stdout``)."""
        return self._log is not None and self._log.is_open_as(fd)

    def close(self) -> None:
        if self._log is not None:
            self._log.close()


def stdout_taken(settings: Settings, whose: str, carries: str) -> InvalidInput:
    """The refusal of a call log that is the stdout of a face whose stdout ``carries`` its
    answer (``whose``: "this server's", "this command's"): its lines went in between."""
    return InvalidInput(
        f"the call log {settings.observability.call_log} is {whose} stdout, which carries "
        f"{carries}; set [observability] call_log (or WEBWARD_CALL_LOG) to stderr, off or a file"
    )


class _AuditWrite:
    """:meth:`Telemetry.audit_write`: a class rather than a generator, since every call
    enters it. The span (when tracing) ends first, so that a refusal by the audit store is
    described on the call's span, as the record the call log gets."""

    __slots__ = ("_record", "_span", "_started", "_telemetry")

    def __init__(self, telemetry: Telemetry, record: Any, traced: bool) -> None:
        self._telemetry, self._record = telemetry, record
        self._span: contextlib.AbstractContextManager[Any] | None = (
            span("audit write") if traced else None
        )
        self._started = 0.0

    def __enter__(self) -> None:
        if self._span is not None:
            _describe_call(self._record)
            self._span.__enter__()
        self._started = time.perf_counter()
        if self._telemetry.metrics is not None:
            self._telemetry.metrics.audit_waiting += 1

    def __exit__(self, kind: Any, exc: BaseException | None, tb: Any) -> None:
        try:
            if self._span is not None:
                self._span.__exit__(kind, exc, tb)
        finally:
            outcome = self._record
            if isinstance(exc, WebwardError):
                outcome = _refused_by(outcome, exc)
                if self._span is not None:
                    _describe_call(outcome)
            self._telemetry._audit_written(outcome, self._started)


def _describe_call(record: Any) -> None:
    from opentelemetry.trace import Status, StatusCode, get_current_span

    current = get_current_span()
    attributes: dict[str, Any] = {
        "webward.tier": record.tier,
        "webward.decision": record.decision,
        "webward.reason": record.reason,
    }
    if record.status is not None:
        attributes["webward.status"] = record.status
    if record.bytes is not None:
        attributes["webward.bytes"] = record.bytes
    if record.provider is not None:
        attributes["webward.provider"] = record.provider
    current.set_attributes(attributes)
    if record.decision in ("refused", "failed"):
        current.set_attribute("error.type", record.reason)
        current.set_status(Status(StatusCode.ERROR))


def _refused_by(record: Any, error: WebwardError) -> Any:
    import dataclasses

    return dataclasses.replace(record, decision="refused", reason=error.reason)


# ---- refused credentials ------------------------------------------------------------------

#: At most one log line per reason of refused credentials this often (seconds): as the trace
#: exporter's failures are said (cli._EXPORTER_QUIET_S), so that a client guessing tokens in a
#: loop cannot flood the log. The counter keeps every refusal.
_AUTH_QUIET_S = 60.0

_AUTH_SAID: Mapping[str, str] = {
    "missing": "no Authorization header",
    "malformed": "an Authorization header that is not one bearer token",
    "unknown": "a bearer token no agent holds",
}

#: A client address as logged: the characters of an IPv4 or IPv6 address (a zone id, a
#: bracket) and of a host name; anything else, a line break above all, is a "?".
_ADDRESS_CHARS = frozenset("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.:-_%[]")


def _shown_address(client: str) -> str:
    shown = "".join(c if c in _ADDRESS_CHARS else "?" for c in client[:64])
    return shown or "unknown"


class _AuthRefusalLog:
    """The WARNING lines of refused credentials: the first of each reason at once, then at
    most one per :data:`_AUTH_QUIET_S`, which says how many of that reason went unlogged
    since the last. A flood is a few lines a minute; the refusals of a flood that stops are
    counted in the next line of their reason, whenever it comes (no timer: the counter has
    them at once). ``clock``: seconds, monotonic (a test's own)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._said: dict[str, float] = {}  # reason -> when its last line was written
        self._unsaid: dict[str, int] = {}  # reason -> refusals since then, not logged
        self._lock = threading.Lock()  # a library user's Web may serve from more threads

    def refused(self, reason: str, client: str) -> None:
        now = self._clock()
        with self._lock:
            said = self._said.get(reason)
            if said is not None and now - said < _AUTH_QUIET_S:
                self._unsaid[reason] = self._unsaid.get(reason, 0) + 1
                return
            self._said[reason] = now
            unsaid = self._unsaid.pop(reason, 0)
        more = f"; {unsaid} more for this reason since the last such line" if unsaid else ""
        log.warning(
            "a request was refused for its credentials: reason=%s (%s), client %s; no agent, "
            "so no audit record%s",
            reason,
            _AUTH_SAID.get(reason, reason),
            _shown_address(client),
            more,
        )


#: How long a call log line may wait on an asyncio loop, for the lines after it.
_CALL_LOG_DELAY_S = 0.05
#: Records handed to the call log's writer thread and not written yet, at most: past this (a
#: reader of stderr that stopped reading) new lines are dropped and counted, not held. A
#: record holds its URLs (up to a few kB): 100,000 of them held 260 MB; 10,000 is a second of
#: a busy gateway's calls, in at most tens of MB.
_MAX_UNWRITTEN = 10_000

_Pending = list[tuple[Any, tuple[tuple[str, str], ...]]]


class _CallLog:
    """One JSON line per call, on stderr or appended to a file.

    On an asyncio loop the records of the calls that end within :data:`_CALL_LOG_DELAY_S`
    of the first go together to a writer thread of the log's own, which makes their lines
    in one pass and writes them in one system call (and one wake-up of whoever reads
    stderr). Made at each call and written at each turn of the loop, the lines took 13 % of
    the gateway's CPU on cached reads; made and written together, 8 to 9 %
    (bench/gateway.py --observability). The write is the thread's: a reader of stderr that
    lags (a log shipper under back-pressure) blocks the thread, not the event loop, and past
    :data:`_MAX_UNWRITTEN` lines waiting for it the newest are dropped and the count logged
    (the audit store, not this log, is the record). Without a running asyncio loop (trio, a
    thread) each line is written at once. :meth:`flush` writes everything waiting and
    returns once it is written (``Web.aclose`` and :meth:`close` call it).
    """

    def __init__(self, where: str) -> None:
        self._path = None if where == "stderr" else where
        self._file: IO[str] | None = None
        self._lock = threading.Lock()  # the records waiting, the writer and its counts
        self._stream_lock = threading.Lock()  # the stream: one write at a time, in order
        # Records whose lines are not written yet, each with its trace and span ids when
        # tracing: handed to the writer together, at most _CALL_LOG_DELAY_S later.
        self._pending: _Pending = []
        self._writer: concurrent.futures.ThreadPoolExecutor | None = None
        self._unwritten = 0  # records handed to the writer, not written yet
        self._dropped = 0  # records dropped since the last report
        if self._path is not None:
            try:
                self._file = self._open()
            except OSError as exc:
                raise InvalidInput(
                    f"the call log {where} cannot be opened ({exc.strerror or exc}); set "
                    "[observability] call_log (or WEBWARD_CALL_LOG) to a writable file, "
                    "stderr or off"
                ) from None

    def is_open_as(self, fd: int) -> bool:
        """Whether the log's file is the one ``fd`` is open on."""
        if self._file is None:
            return False
        try:
            return os.path.samestat(os.fstat(self._file.fileno()), os.fstat(fd))
        except (OSError, ValueError):
            return False

    def _open(self) -> IO[str]:
        assert self._path is not None
        # Kept open; close() closes it. Owner-only, as the state dir's stores are: it holds
        # the same targets and queries as the audit log.
        fd = os.open(self._path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        return open(fd, "a", encoding="utf-8")

    def write(self, record: Any) -> None:
        trace: tuple[tuple[str, str], ...] = ()
        if _tracer() is not None:
            from opentelemetry.trace import get_current_span

            context = get_current_span().get_span_context()
            if context.is_valid:  # taken now: the line is made outside the call's span
                trace = (
                    ("traceId", f"{context.trace_id:032x}"),
                    ("spanId", f"{context.span_id:016x}"),
                )
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no asyncio loop here: written at once
            loop = None
        with self._lock:
            self._pending.append((record, trace))
            if len(self._pending) > 1 and loop is not None:
                return  # the hand-over the first record scheduled takes this one too
        if loop is None:
            self.flush()
        else:
            loop.call_later(_CALL_LOG_DELAY_S, self._hand_over)

    def _hand_over(self) -> None:
        """On the loop: the records waiting go to the writer thread."""
        with self._lock:
            pending, self._pending = self._pending, []
            if not pending:
                return
            if self._unwritten + len(pending) > _MAX_UNWRITTEN:
                self._dropped += len(pending)
                return
            self._unwritten += len(pending)
            if self._writer is None:
                self._writer = concurrent.futures.ThreadPoolExecutor(
                    max_workers=1, thread_name_prefix="webward-call-log"
                )
            writer = self._writer
        writer.submit(self._write_handed, pending)

    def _write_handed(self, pending: _Pending) -> None:
        """On the writer thread: the lines of ``pending``, then the count of any dropped."""
        try:
            self._emit(pending)
        finally:
            with self._lock:
                self._unwritten -= len(pending)
                dropped, self._dropped = self._dropped, 0
            if dropped:
                log.warning(
                    "the call log dropped %d lines: its reader did not keep up (the audit "
                    "store holds every call)",
                    dropped,
                )

    def _emit(self, pending: _Pending) -> None:
        text = "".join([record.to_json_line(trace) for record, trace in pending])
        with self._stream_lock:
            try:
                if self._path is not None:
                    self._file = self._current()
                stream = self._file if self._file is not None else sys.stderr
                if stream is sys.stderr and not _utf8(stream):
                    text = _ascii_json(text)  # "caf\xe9" in an ASCII locale is no JSON
                stream.write(text)
                stream.flush()
            except (OSError, ValueError):
                pass  # a closed or full log must not refuse the call: the audit is the record

    def _current(self) -> IO[str]:
        """The file at the path, opened again when the one open is no longer there: after
        :meth:`close` (a server started again), or once a log rotation moved or removed it
        (logrotate's default renames the file and creates a new one: every line after it
        went on into the renamed file, then nowhere once that was removed). One ``stat`` a
        batch of lines, as logging's WatchedFileHandler does."""
        assert self._path is not None
        if self._file is not None:
            try:
                here = os.path.samestat(os.stat(self._path), os.fstat(self._file.fileno()))
            except OSError:  # the path is gone: a new file is made there
                here = False
            if here:
                return self._file
            with contextlib.suppress(OSError):
                self._file.close()
            self._file = None
        self._file = self._open()
        return self._file

    def flush(self) -> None:
        """Write every line waiting, those handed to the writer first; return once written."""
        with self._lock:
            writer = self._writer
        if writer is not None:
            with contextlib.suppress(RuntimeError):  # shut down by a close meanwhile
                writer.submit(int).result()  # what the writer holds is written first
        with self._lock:
            pending, self._pending = self._pending, []
        if pending:
            self._emit(pending)

    def close(self) -> None:
        self.flush()
        with self._lock:
            writer, self._writer = self._writer, None
        if writer is not None:
            writer.shutdown(wait=True)
        with self._stream_lock:
            if self._file is not None:
                self._file.close()
                self._file = None


# ---- metrics ----------------------------------------------------------------------------


_CALL_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
_AUDIT_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0, 5.0)


def _utf8(stream: Any) -> bool:
    """Whether ``stream`` writes UTF-8 (a stream with no encoding is taken to)."""
    encoding = getattr(stream, "encoding", None) or "utf-8"
    return codecs.lookup(encoding).name == "utf-8"


_NON_ASCII = re.compile(r"[^\x00-\x7f]")


def _ascii_json(text: str) -> str:
    """JSON ``text`` with every character past ASCII as its ``\\uXXXX`` escape (a pair for one
    past U+FFFF): the same JSON, readable in any locale. Such characters stand only inside
    strings, where an escape means them."""
    return _NON_ASCII.sub(lambda m: json.dumps(m.group())[1:-1], text)


class _Cell:
    """One counter's value for one label set."""

    __slots__ = ("created", "value")

    def __init__(self) -> None:
        self.value = 0.0
        self.created = time.time()

    def inc(self, amount: float = 1.0) -> None:
        self.value += amount


class _HistogramCell:
    """One histogram's buckets for one label set: ``counts[i]`` observations fell in bucket
    ``i`` alone (the last is +Inf); they are summed up to each bound when scraped."""

    __slots__ = ("bounds", "counts", "created", "sum")

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)
        self.sum = 0.0
        self.created = time.time()

    def observe(self, value: float) -> None:
        # The first bound at or above the value: Prometheus buckets are "less or equal".
        self.counts[bisect.bisect_left(self.bounds, value)] += 1
        self.sum += value


class _Family:
    """A counter or histogram family of the hot path, as a Prometheus collector.

    Updated from the event loop's thread only (plain numbers, no lock): the calls of one
    ``Web`` all run on its loop. Scraped, it yields the samples prometheus_client's own
    ``Counter`` or ``Histogram`` would (``_total``; ``_bucket``, ``_count``, ``_sum``; and
    ``_created``).
    """

    kind = ""

    def __init__(self, name: str, documentation: str, labels: tuple[str, ...] = ()) -> None:
        self._name, self._doc, self._labels = name, documentation, labels
        self._cells: dict[tuple[str, ...], Any] = {}
        if not labels:  # an unlabelled metric is shown from the start, at zero
            self.cell()

    def cell(self, *values: str) -> Any:
        cell = self._cells.get(values)
        if cell is None:
            cell = self._cells[values] = self._new_cell()
        return cell

    def _new_cell(self) -> Any:
        raise NotImplementedError

    def describe(self) -> Iterator[Any]:
        from prometheus_client.metrics_core import Metric

        yield Metric(self._name, self._doc, self.kind)

    def collect(self) -> Iterator[Any]:
        from prometheus_client.metrics_core import Metric

        metric = Metric(self._name, self._doc, self.kind)
        for values, cell in list(self._cells.items()):
            self._add_samples(metric, dict(zip(self._labels, values, strict=True)), cell)
        yield metric

    def _add_samples(self, metric: Any, labels: dict[str, str], cell: Any) -> None:
        raise NotImplementedError


class _Counter(_Family):
    kind = "counter"

    def cell(self, *values: str) -> _Cell:
        cell: _Cell = super().cell(*values)
        return cell

    def _new_cell(self) -> _Cell:
        return _Cell()

    def _add_samples(self, metric: Any, labels: dict[str, str], cell: _Cell) -> None:
        metric.add_sample(f"{self._name}_total", labels, cell.value)
        metric.add_sample(f"{self._name}_created", labels, cell.created)


class _Histogram(_Family):
    kind = "histogram"

    def __init__(
        self, name: str, documentation: str, labels: tuple[str, ...], buckets: tuple[float, ...]
    ) -> None:
        self._bounds = tuple(float(b) for b in buckets)
        super().__init__(name, documentation, labels)

    def cell(self, *values: str) -> _HistogramCell:
        cell: _HistogramCell = super().cell(*values)
        return cell

    def _new_cell(self) -> _HistogramCell:
        return _HistogramCell(self._bounds)

    def _add_samples(self, metric: Any, labels: dict[str, str], cell: _HistogramCell) -> None:
        from prometheus_client.utils import floatToGoString

        go_float: Callable[[float], str] = floatToGoString  # "+Inf", "0.005": as the client
        total = 0
        for bound, count in zip((*cell.bounds, math.inf), cell.counts, strict=True):
            total += count
            le = {**labels, "le": go_float(bound)}
            metric.add_sample(f"{self._name}_bucket", le, float(total))
        metric.add_sample(f"{self._name}_count", labels, float(total))
        metric.add_sample(f"{self._name}_sum", labels, cell.sum)
        metric.add_sample(f"{self._name}_created", labels, cell.created)


class _Metrics:
    """The Prometheus registry of one Web (names: docs/operations.md)."""

    def __init__(self, top_hosts: int) -> None:
        try:
            import prometheus_client as prom
        except ImportError:
            raise InvalidInput(
                "metrics need the package prometheus-client: pip install prometheus-client, "
                "or set [observability] metrics = false"
            ) from None
        self.registry = prom.CollectorRegistry(auto_describe=True)
        r = self.registry
        # The metrics every call touches are plain numbers (_Counter, _Histogram), made into
        # samples only when scraped: a Prometheus client metric takes a lock per update, and
        # a cached read made nine updates. The samples are the same.
        self.calls = _Counter(
            "webward_calls",
            "Calls through the door, by capability, decision, reason and agent.",
            ("capability", "decision", "reason", "agent"),
        )
        self.duration = _Histogram(
            "webward_call_duration_seconds",
            "How long calls took, up to their audit write (timed as webward_audit_write_seconds).",
            ("capability", "decision"),
            _CALL_BUCKETS,
        )
        self.bytes = _Counter(
            "webward_read_bytes", "Bytes read from the web (on the wire).", ("capability",)
        )
        cache_hits = _Counter("webward_page_cache_hits", "Page reads served from the page cache.")
        cache_misses = _Counter(
            "webward_page_cache_misses", "Page reads the page cache could not serve."
        )
        audit_seconds = _Histogram(
            "webward_audit_write_seconds",
            "How long audit writes took (group commit included).",
            (),
            _AUDIT_BUCKETS,
        )
        # Requests refused for their credentials (Telemetry.auth_refused): no agent, no call.
        self.auth_refusals = _Counter(
            "webward_auth_refusals",
            "Requests refused for their credentials before any agent was known (no call, no "
            "audit record), by reason: missing, malformed, unknown.",
            ("reason",),
        )
        # A render's requests the gate refused, one per host its call's record lists (an
        # internal address a page's image or script tried): the call itself is "allowed",
        # so webward_calls_total, on which an operator alerts, never showed them.
        self.render_refusals = _Counter(
            "webward_render_refusals",
            "Hosts the gate refused requests of a headless render to, as the call's audit "
            "record lists them (renderRefused), by reason.",
            ("reason",),
        )
        hot: tuple[_Family, ...] = (
            self.calls,
            self.auth_refusals,
            self.render_refusals,
            self.duration,
            self.bytes,
            cache_hits,
            cache_misses,
            audit_seconds,
        )
        for family in hot:
            r.register(family)
        self.cache_hits, self.cache_misses = cache_hits.cell(), cache_misses.cell()
        self.audit_seconds = audit_seconds.cell()
        self.audit_waiting = 0  # audit writes waiting for their commit, read when scraped
        prom.Gauge(
            "webward_audit_queue_depth", "Audit writes waiting for their commit.", registry=r
        ).set_function(lambda: self.audit_waiting)
        self.converting = prom.Gauge(
            "webward_conversions_in_flight", "Bodies being converted to text now.", registry=r
        )
        self.render_seconds = prom.Histogram(
            "webward_render_seconds",
            "Headless renders and how long they took, by purpose (fallback, screenshot).",
            ["purpose"],
            buckets=_CALL_BUCKETS,
            registry=r,
        )
        self.hosts = _HostMetrics(top_hosts)
        r.register(self.hosts)
        self._children: dict[tuple[str, ...], tuple[_Cell, _HistogramCell, _Cell, bool]] = {}
        self._by_shape: dict[Any, tuple[_Cell, _HistogramCell, _Cell, bool]] = {}
        self._agents: set[str] = set()
        self._agents_lock = threading.Lock()

    def count_call(self, record: Any) -> None:
        # Records of calls alike (AuditRecord.shape) count into the same cells: found once.
        shape = getattr(record, "shape", None)
        children = self._by_shape.get(shape) if shape is not None else None
        if children is None:
            key = (
                record.capability, record.decision, _reason_label(record.reason),
                self._agent_label(record.agent),
            )  # fmt: skip
            children = self._children.get(key)
            if children is None:
                children = self._children[key] = (
                    self.calls.cell(*key),
                    self.duration.cell(key[0], key[1]),
                    self.bytes.cell(key[0]),
                    record.reason in _LIMIT_REASONS,
                )
            if shape is not None:
                if len(self._by_shape) >= _MAX_SHAPES:
                    self._by_shape.clear()
                self._by_shape[shape] = children
        calls, duration, read, limited = children
        calls.value += 1
        if record.duration_ms is not None:
            duration.observe(record.duration_ms / 1000)
        if record.bytes:
            read.value += record.bytes
        if limited:
            self.hosts.refused(_limited_key(record), record.reason)
        for entry in record.render_refused:
            reason = _render_refusal_reason(entry)
            if reason is not None:
                self.render_refusals.cell(reason).value += 1

    def _agent_label(self, agent: str) -> str:
        if agent in self._agents:
            return agent
        if not is_agent_name(agent):
            # A call refused for its agent's name is audited under that name, as given; its
            # escape sequences and bidi controls reached /metrics raw (a terminal reading
            # `curl /metrics` ran them), and it took one of the agents' label values.
            return "invalid"
        with self._agents_lock:
            if len(self._agents) >= MAX_AGENT_LABELS:
                return "other"
            self._agents.add(agent)
        return agent

    def exposition(self) -> bytes:
        from prometheus_client import generate_latest

        return generate_latest(self.registry)


#: The HTTP statuses registered (RFC 9110 and the like): their reasons are label values as
#: they are; any other status a server sends is folded into its class (``http_5xx``).
_REGISTERED_STATUSES = frozenset(f"http_{s.value}" for s in http.HTTPStatus)


def _render_refusal_reason(entry: str) -> str | None:
    """The reason of one entry of a record's renderRefused as a label value (None for the
    count of the rest): a reason no registry holds is ``other``, the host before it the page's."""
    reason = render_refusal_reason(entry)
    return reason if reason is None or reason in _REASONS else "other"


_REASONS = frozenset(Reason)


def _reason_label(reason: str) -> str:
    """A call's reason as a label value: the fixed codes as they are, and an HTTP status no
    registry knows as its class. A hostile server answers any three digits (``http_777``),
    and each was a series of its own per agent: hundreds a site could make at will."""
    if reason.startswith("http_") and reason not in _REGISTERED_STATUSES:
        digits = reason[5:]
        if len(digits) == 3 and digits.isascii() and digits.isdigit():
            return f"http_{digits[0]}xx"
    return reason


def _limited_key(record: Any) -> str:
    """The host (or ``provider:NAME``) whose limits refused the call."""
    if record.provider:
        return f"provider:{record.provider}"
    url = record.redirects[-1] if record.redirects else record.target
    try:
        return urlsplit(url).hostname or "other"
    except ValueError:
        return "other"


class _HostMetrics:
    """Per-host limiter refusals and breaker state, with a bounded label set.

    Exact counts are kept per host (at most :data:`_MAX_TRACKED_HOSTS`; past that the
    quietest half is folded into ``other``); a scrape shows the ``top`` busiest hosts by
    name and sums the rest into ``host="other"``. A host that drops out of the top moves its
    counts into ``other``: sum by host over ``rate()`` stays right.
    """

    def __init__(self, top: int) -> None:
        self._top = max(1, top)
        self._activity: dict[str, int] = {}
        self._refusals: dict[tuple[str, str], int] = {}
        self._open: dict[str, bool] = {}
        self._folded: dict[str, int] = {}  # refusals by reason of hosts no longer tracked
        self._lock = threading.Lock()

    def hop(self, host: str, status: int | None, error: WebwardError | None) -> None:
        with self._lock:
            self._touch(host)
            if status is not None and status < 500 and status != 429:
                self._open[host] = False

    def refused(self, host: str, reason: str) -> None:
        with self._lock:
            self._touch(host)
            self._refusals[(host, reason)] = self._refusals.get((host, reason), 0) + 1
            if reason == "circuit_open":
                self._open[host] = True

    def _touch(self, host: str) -> None:
        activity = self._activity
        if host in activity:  # a host seen before (a cached page's): no new host to fold
            activity[host] += 1
            return
        activity[host] = 1
        if len(activity) > _MAX_TRACKED_HOSTS:
            quiet = sorted(self._activity, key=self._activity.__getitem__)
            gone = set(quiet[: len(quiet) // 2]) - {host}
            for name in gone:
                del self._activity[name]
                self._open.pop(name, None)
            # One pass over the refusals for all the hosts folded (a pass per host was 0.6 s
            # on the event loop with 10,000 hosts refused).
            for key in [k for k in self._refusals if k[0] in gone]:
                self._folded[key[1]] = self._folded.get(key[1], 0) + self._refusals.pop(key)

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

        refusals = CounterMetricFamily(
            "webward_host_refusals",
            "Calls refused by a host's own limits (rate_limited, backpressure, circuit_open); "
            'hosts beyond the busiest N are host="other".',
            labels=["host", "reason"],
        )
        breaker = GaugeMetricFamily(
            "webward_breaker_open",
            '1 while a host\'s circuit breaker was last seen open, else 0; for host="other", '
            "how many of the other hosts have it open.",
            labels=["host"],
        )
        with self._lock:
            busiest = sorted(self._activity, key=self._activity.__getitem__, reverse=True)
            shown = set(busiest[: self._top])
            other: dict[str, int] = dict(self._folded)
            for (host, reason), count in sorted(self._refusals.items()):
                if host in shown:
                    refusals.add_metric([host, reason], count)
                else:
                    other[reason] = other.get(reason, 0) + count
            others_open = 0
            for host, is_open in sorted(self._open.items()):
                if host in shown:
                    breaker.add_metric([host], 1.0 if is_open else 0.0)
                elif is_open:
                    others_open += 1
        for reason, count in sorted(other.items()):
            refusals.add_metric(["other", reason], count)
        if len(busiest) > self._top or others_open:
            breaker.add_metric(["other"], float(others_open))
        yield refusals
        yield breaker

    def describe(self) -> Iterator[Any]:
        return iter(())


# ---- GET /metrics ------------------------------------------------------------------------


class MetricsEndpoint:
    """``GET /metrics`` as a plain ASGI app: Prometheus text of ``metrics_of()``'s registry.

    Guarded by ``[observability] metrics_token_sha256`` (a bearer token's SHA-256) when set;
    otherwise only loopback clients are served. ``metrics_of`` returns the Telemetry of the
    running Web, or None before it opens.
    """

    def __init__(self, settings: Settings, metrics_of: Callable[[], Telemetry | None]) -> None:
        self._digest = settings.observability.metrics_token_sha256.strip().lower()
        self._metrics_of = metrics_of

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        status, body, content_type, extra = self._answer(scope)
        headers = [
            (b"content-type", content_type),
            (b"content-length", str(len(body)).encode("ascii")),
            (b"cache-control", b"no-store"),
            *extra,
        ]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    def _answer(self, scope: Any) -> tuple[int, bytes, bytes, list[tuple[bytes, bytes]]]:
        if scope.get("method") != "GET":
            problem = _metrics_error(
                405, "invalid_input", f"{scope.get('method')} is not allowed here; use GET"
            )
            problem[3].append((b"allow", b"GET"))
            return problem
        if self._digest:
            refused = self._token_refused(scope)
            if refused is not None:
                # A guess at the metrics token is token guessing too: counted and logged as
                # the gateway's refused credentials are (never any part of the token).
                telemetry = self._metrics_of()
                if telemetry is not None:
                    client = scope.get("client")
                    telemetry.auth_refused(refused, str(client[0]) if client else "")
                problem = _metrics_error(
                    401,
                    "refused",
                    "a bearer token is required for /metrics: send Authorization: Bearer <token>",
                )
                problem[3].append((b"www-authenticate", b'Bearer realm="webward-metrics"'))
                return problem
        else:
            client = scope.get("client")
            host = str(client[0]) if client else ""
            if not is_loopback(host) or not names_this_machine(scope):
                return _metrics_error(
                    403,
                    "refused",
                    "/metrics answers loopback clients only, asked for by address or as "
                    "localhost; set [observability] metrics_token_sha256 to serve it to others "
                    "with a bearer token",
                )
        telemetry = self._metrics_of()
        if telemetry is None or telemetry.metrics is None:
            return _metrics_error(
                404, "invalid_input", "metrics are off here ([observability] metrics = false)"
            )
        from prometheus_client import CONTENT_TYPE_LATEST

        return 200, telemetry.metrics.exposition(), CONTENT_TYPE_LATEST.encode("ascii"), []

    def _token_refused(self, scope: Any) -> AuthRefusal | None:
        """Why the request's credential does not open /metrics; None when it does."""
        for name, value in scope.get("headers", ()):
            if name == b"authorization":
                token = bearer_token(value.decode("latin-1"))
                if not token:
                    return "malformed"
                digest = hashlib.sha256(token.encode("utf-8")).hexdigest()
                return None if hmac.compare_digest(digest, self._digest) else "unknown"
        return "missing"


def _metrics_error(
    status: int, code: str, message: str
) -> tuple[int, bytes, bytes, list[tuple[bytes, bytes]]]:
    body = orjson.dumps({"error": {"code": code, "message": message}})
    return status, body, b"application/json", []


def with_metrics(app: Any, endpoint: MetricsEndpoint, path: str = "/metrics") -> Any:
    """``app`` with ``GET path`` answered by ``endpoint`` (the MCP HTTP server's front)."""

    async def front(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"] == path:
            await endpoint(scope, receive, send)
            return
        await app(scope, receive, send)

    return front
