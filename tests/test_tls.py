"""HTTPS through the pinned transport: the connection goes to the validated IP, and TLS is
still verified against the host name, which is also sent as SNI.

The server is a real TLS server on 127.0.0.1 with a certificate from a throw-away local CA
(trustme); the test names resolve to 127.0.0.1 through ``StaticResolver``.
"""

from __future__ import annotations

import socketserver
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import trustme
from localserver import LocalServer, accept_counter, respond

from webward import Refused, Settings, StaticResolver, UpstreamError, Web
from webward.testing import MemoryAuditSink

pytestmark = pytest.mark.anyio


@contextmanager
def serve_tls(cert: trustme.LeafCert, server: LocalServer) -> Iterator[list[str | None]]:
    """Run ``server``'s routes over TLS on 127.0.0.1; yields the SNI names clients sent."""
    sni: list[str | None] = []
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    cert.configure_cert(ctx)

    def on_sni(sock: Any, name: str | None, context: Any) -> None:
        sni.append(name)

    ctx.sni_callback = on_sni

    class _Handler(socketserver.BaseRequestHandler):
        def handle(self) -> None:
            try:
                tls = ctx.wrap_socket(self.request, server_side=True)
            except (ssl.SSLError, OSError):
                return  # the client refused our certificate: no HTTP request is read
            with tls:
                server._handle(tls)

    class _Server(socketserver.ThreadingTCPServer):
        allow_reuse_address = True
        daemon_threads = True

    tcp = _Server(("127.0.0.1", 0), _Handler)
    server.port = tcp.server_address[1]
    thread = threading.Thread(target=tcp.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield sni
    finally:
        tcp.shutdown()
        tcp.server_close()


def web(ca: trustme.CA | None) -> Web:
    settings = Settings().replace(
        {
            "network": {"allow_ranges": ["127.0.0.1/32"]},
            "policy": {"default_tier": "connected", "robots": False},
        }
    )
    context = None
    if ca is not None:
        context = ssl.create_default_context()
        ca.configure_trust(context)
    resolver = StaticResolver({"tls.example": ["127.0.0.1"], "rebind.example": ["127.0.0.2"]})
    return Web(settings, resolver, audit=MemoryAuditSink(), ssl_context=context)


async def test_https_is_verified_against_the_host_name_with_sni() -> None:
    """The pinned connection to 127.0.0.1 still does TLS for tls.example: SNI and the
    certificate check use the name, and the Host header carries it too."""
    ca = trustme.CA()
    server = LocalServer(routes={"/": respond(200, "<p>over tls</p>")})
    with serve_tls(ca.issue_cert("tls.example"), server) as sni:
        async with web(ca) as w:
            page = await w.fetch(f"https://tls.example:{server.port}/")
    assert "over tls" in page.content
    assert page.final_url == f"https://tls.example:{server.port}/"
    assert sni == ["tls.example"]
    assert server.requests[0].headers["host"] == f"tls.example:{server.port}"


async def test_a_certificate_for_another_name_is_refused() -> None:
    """A trusted certificate for another name fails the host-name check: an upstream error,
    and no HTTP request ever reaches the server."""
    ca = trustme.CA()
    server = LocalServer(routes={"/": respond(200, "should not be read")})
    with serve_tls(ca.issue_cert("other.example"), server) as sni:
        async with web(ca) as w:
            with pytest.raises(UpstreamError) as err:
                await w.fetch(f"https://tls.example:{server.port}/")
    assert sni == ["tls.example"]
    assert err.value.reason == "tls"
    assert "certificate" in err.value.message and "tls.example" in err.value.message
    assert server.requests == []


async def test_an_untrusted_certificate_is_refused_by_default() -> None:
    """Without an ssl_context the system trust store decides: a local CA is not trusted."""
    ca = trustme.CA()
    server = LocalServer(routes={"/": respond(200, "should not be read")})
    with serve_tls(ca.issue_cert("tls.example"), server):
        async with web(None) as w:
            with pytest.raises(UpstreamError) as err:
                await w.fetch(f"https://tls.example:{server.port}/")
    assert err.value.reason == "tls"
    assert server.requests == []
    # The operator is told how to trust a private CA; the model only what failed.
    assert "SSL_CERT_FILE=/path/to/ca.pem" in err.value.message
    assert "SSL_CERT_FILE" not in err.value.for_model


async def test_ssl_cert_file_trusts_a_private_ca(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The step the refusal names works: the CA in SSL_CERT_FILE is trusted."""
    ca = trustme.CA()
    ca.cert_pem.write_to_path(str(tmp_path / "ca.pem"))
    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "ca.pem"))
    server = LocalServer(routes={"/": respond(200, "read under a private CA")})
    with serve_tls(ca.issue_cert("tls.example"), server):
        async with web(None) as w:
            page = await w.fetch(f"https://tls.example:{server.port}/")
    assert "read under a private CA" in page.content


async def test_https_to_a_name_resolving_internal_never_connects() -> None:
    """The pinning comes before TLS: an internal answer is refused with no connection."""
    ca = trustme.CA()
    with accept_counter("127.0.0.2") as internal:
        async with web(ca) as w:
            with pytest.raises(Refused) as err:
                await w.fetch(f"https://rebind.example:{internal.port}/")
        assert internal.accepts == 0
    assert err.value.reason == "internal_address"


def _unverifying(kind: str) -> ssl.SSLContext:
    context = ssl.create_default_context()
    context.check_hostname = False
    if kind == "no-verification":
        context.verify_mode = ssl.CERT_NONE
    elif kind == "optional":
        context.verify_mode = ssl.CERT_OPTIONAL
    return context


@pytest.mark.parametrize("kind", ["no-verification", "no-host-name-check", "optional"])
def test_a_context_that_does_not_verify_is_refused_at_construction(kind: str) -> None:
    """docs/guard.md: ssl_context is a way to trust another CA, never to turn verification
    off. A context that does not check the certificate or the host name was taken silently
    (a self-signed certificate for another name was read as a page): it is refused when the
    Web is made, saying what to pass instead, before anything connects."""
    with pytest.raises(ValueError) as err:
        Web(Settings(), StaticResolver({}), audit=MemoryAuditSink(), ssl_context=_unverifying(kind))
    message = str(err.value)
    assert "does not verify" in message
    assert "verify_mode=CERT_REQUIRED and check_hostname=True" in message
    assert "load_verify_locations" in message


def test_a_context_that_is_no_context_is_refused() -> None:
    with pytest.raises(TypeError) as err:
        Web(Settings(), StaticResolver({}), audit=MemoryAuditSink(), ssl_context="ca.pem")  # type: ignore[arg-type]
    assert "ssl.SSLContext" in str(err.value)


@pytest.mark.parametrize(
    ("content", "problem"),
    [(None, "which does not exist"), ("not a certificate\n", "which holds no PEM certificate")],
)
async def test_an_ssl_cert_file_that_cannot_be_loaded_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, content: str | None, problem: str
) -> None:
    """OpenSSL skips an SSL_CERT_FILE it cannot load without a word, and the refusal's step
    was to set SSL_CERT_FILE: the operator who had set it (to a mistyped path, or a file that
    is no PEM) was told to do what they had done. The step now names the file and why."""
    ca_file = tmp_path / "ca.pem"
    if content is not None:
        ca_file.write_text(content, encoding="utf-8")
    monkeypatch.setenv("SSL_CERT_FILE", str(ca_file))
    ca = trustme.CA()
    server = LocalServer(routes={"/": respond(200, "should not be read")})
    with serve_tls(ca.issue_cert("tls.example"), server):
        async with web(None) as w:
            with pytest.raises(UpstreamError) as err:
                await w.fetch(f"https://tls.example:{server.port}/")
    assert err.value.reason == "tls"
    assert f"SSL_CERT_FILE in webward's environment names {str(ca_file)!r}, {problem}" in (
        err.value.message
    )
    assert "SSL_CERT_FILE" not in err.value.for_model
    assert server.requests == []
