"""Which readings launch a browser, and what the whole read path pays once per process.

Pages served on loopback and read through ``Web.fetch`` with a real Chromium renderer that
counts its renders: a page cut at the byte cap, or one whose words the extractors did not keep,
is never rendered; a script shell, menus and all, still is, and its cost is measured.
"""

from __future__ import annotations

import io
import random
import threading
from typing import Any

import anyio
import pytest
from localserver import respond, serve
from PIL import Image

from webward import Settings, StaticResolver, Web, _convert, _shell
from webward._proxy import Gate
from webward._render import ChromiumRenderer, Rendered
from webward._settings import LimitsSettings
from webward._telemetry import Telemetry
from webward._workers import NEARBY_BURST_S, NEARBY_SHARE, ConvertPool, Job, is_moderate
from webward.testing import MemoryAuditSink

pytestmark = pytest.mark.anyio

URL = "https://example.com/page"


class CountingRenderer(ChromiumRenderer):
    """Debian Chromium through Playwright, counting its renders."""

    def __init__(self) -> None:
        super().__init__()
        self.renders = 0

    async def render(self, url: str, *, screenshot: bool, gate: Gate) -> Rendered:
        self.renders += 1
        return await super().render(url, screenshot=screenshot, gate=gate)


def make_web(renderer: ChromiumRenderer, **kw: Any) -> Web:
    s = Settings().replace(
        {
            "network": {"allow_ranges": ["127.0.0.1/32"]},
            # 127.0.0.1 is on as-owner's list too, for the tests that read in that tier.
            "policy": {"default_tier": "connected", "robots": False, "allow": ["127.0.0.1"]},
            "limits": {"per_host_rate": 1000.0, "per_host_burst": 1000, "fetch_timeout_s": 40.0},
        }
    )
    kw.setdefault("audit", MemoryAuditSink())
    return Web(s, StaticResolver({}), renderer=renderer, **kw)


def headless(server: Any) -> int:
    return sum("HeadlessChrome" in r.headers.get("user-agent", "") for r in server.requests)


ARTICLE = "".join(
    f"<p>Paragraph {i} of the article that lies past the cut, long enough to be read.</p>"
    for i in range(40)
)


async def test_a_page_cut_at_the_byte_cap_before_its_text_is_not_rendered() -> None:
    """900 KB of inline styles and a script fill the first 1 MB: the plain reading is empty,
    yet no browser is launched (the text lies past the operator's cap, not behind a script);
    the reading says the page was cut, and what to do instead."""
    head = "<html><head><title>Cut</title><style>" + "a{color:red}" * 75_000 + "</style>"
    tail = "<script>" + "var data = [1, 2, 3];" * 10_000 + "</script></head>"
    page = (head + tail + "<body><article>" + ARTICLE + "</article></body></html>").encode()
    assert page.index(b"<body>") > 1_000_000 > page.index(b"<script>")  # cut inside the script
    audit = MemoryAuditSink()
    renderer = CountingRenderer()
    with serve(routes={"/": respond(200, page)}) as srv:
        async with make_web(renderer, audit=audit) as web:
            read = await web.fetch(srv.url("/"))
        assert headless(srv) == 0
    assert renderer.renders == 0
    assert audit.records[-1].render_contacted == ()
    assert read.truncated
    assert "this page holds no readable text" in read.content
    assert "text lies past the cut" in read.content
    assert "ask the operator to raise the limit" in read.content
    assert "[limits]" not in read.content  # the model reads it: the setting is the operator's
    assert "[truncated at 1 MB]" in read.content


async def test_a_wordy_page_the_extractors_keep_nothing_of_is_read_as_its_words() -> None:
    """An old-style page whose every word sits in a form of spans (dropped as page furniture,
    so both extractors keep nothing) and which carries scripts: not a shell. Its words are
    read, no browser is launched."""
    words = "Words of the notice, written in spans the way old sites wrote them. " * 8
    page = (
        "<html><head><title>Notice</title><script src='/app.js'></script></head><body>"
        f"<form id='aspnetForm'><div class='c'><span>{words}</span></div></form>"
        "<script>init();</script></body></html>"
    )
    audit = MemoryAuditSink()
    renderer = CountingRenderer()
    with serve(routes={"/": respond(200, page)}) as srv:
        async with make_web(renderer, audit=audit) as web:
            read = await web.fetch(srv.url("/"))
        assert headless(srv) == 0
    assert renderer.renders == 0
    assert audit.records[-1].render_contacted == ()
    assert "Words of the notice, written in spans the way old sites wrote them." in read.content


SHELL_WITH_MENUS = (
    "<html><head><title>App</title></head><body><header><nav>"
    + " ".join(f"<a href='/s{i}'>Section {i}</a>" for i in range(30))
    + "</nav></header><div id='app'></div><footer>Copyright, terms, privacy, contact, jobs."
    "</footer><script>document.getElementById('app').innerHTML = '<h1>Rendered</h1><p>' + "
    "'Text the page script wrote. '.repeat(12) + '</p>';</script></body></html>"
)


async def test_a_script_shell_with_server_made_menus_is_rendered_and_its_cost_measured() -> None:
    """Menus and a footer around an empty app root are no words of the page's own: the shell
    is rendered, once, and the render's seconds reach webward_render_seconds."""
    renderer = CountingRenderer()
    telemetry = Telemetry(metrics=True)
    with serve(routes={"/": respond(200, SHELL_WITH_MENUS)}) as srv:
        async with make_web(renderer, telemetry=telemetry) as web:
            read = await web.fetch(srv.url("/"))
        assert headless(srv) >= 1
    assert renderer.renders == 1
    assert "Text the page script wrote." in read.content
    assert telemetry.metrics is not None
    registry = telemetry.metrics.registry
    count = registry.get_sample_value("webward_render_seconds_count", {"purpose": "fallback"})
    total = registry.get_sample_value("webward_render_seconds_sum", {"purpose": "fallback"})
    assert count == 1 and total is not None and total > 0


FURNITURE_PAGE = (
    "<html><head><title>Notice</title><script async src='/analytics.js'></script></head>"
    "<body><header><div>"
    + "The office is closed on Friday for the move; orders placed before noon ship Monday. " * 4
    + "</div></header></body></html>"
)


@pytest.mark.parametrize("tier", ["as-owner", "connected"])
async def test_a_page_whose_words_sit_in_its_header_is_read_as_them_not_refused(
    tier: str,
) -> None:
    """A page with scripts whose only words are in its <header>: tier as-owner (which runs no
    scripts) gets those words under a note saying where they are and what it did not run,
    not a refusal calling it a script shell; tier connected renders it, and when the browser
    finds no other text either, gets the words under a note, never an empty reading."""
    renderer = CountingRenderer()
    with serve(routes={"/": respond(200, FURNITURE_PAGE)}) as srv:
        async with make_web(renderer) as web:
            read = await web.fetch(srv.url("/"), tier=tier)
    assert "The office is closed on Friday" in read.content
    assert "in its header, menus, sidebars and footer" in read.content
    assert renderer.renders == (1 if tier == "connected" else 0)
    said = "which this read did not run" if tier == "as-owner" else "with or without its scripts"
    assert said in read.content


async def test_the_furniture_note_says_so_when_the_render_failed() -> None:
    """The render fails (its whole deadline far too short here): the note does not claim the
    page has no text with its scripts; it says they could not be run."""
    renderer = ChromiumRenderer(render_timeout_s=0.01)
    with serve(routes={"/": respond(200, FURNITURE_PAGE)}) as srv:
        async with make_web(renderer) as web:
            read = await web.fetch(srv.url("/"), tier="connected")
    assert "The office is closed on Friday" in read.content
    assert "could not be run for this read" in read.content
    assert "with or without its scripts" not in read.content


async def test_a_screenshot_of_a_script_shell_takes_one_browser() -> None:
    """A screenshot of a page the read renders anyway (a script shell): the fallback's render
    pictures it too, so one browser runs, not two (and the picture shows the text read)."""
    renderer = CountingRenderer()
    with serve(routes={"/": respond(200, SHELL_WITH_MENUS)}) as srv:
        async with make_web(renderer) as web:
            read = await web.fetch(srv.url("/"), include_screenshot=True, tier="full")
            again = await web.fetch(srv.url("/"), include_screenshot=True, tier="full")
    assert "Text the page script wrote." in read.content
    assert read.screenshot is not None and again.screenshot is not None
    assert renderer.renders == 2  # one each: the second read's text came from the cache


# ---- once per process ------------------------------------------------------------------------


def article_page(topic: str) -> str:
    paragraphs = "".join(
        f"<p>{topic} paragraph {i}: a sentence of the article, and another one after it.</p>"
        for i in range(30)
    )
    return (
        f"<html><head><title>{topic}</title></head><body><nav><a href='/'>Home</a></nav>"
        f"<article><h1>{topic}</h1>{paragraphs}</article></body></html>"
    )


async def test_extractor_options_are_built_once_per_process(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two article reads through the whole path build trafilatura's options once, not per page."""
    import trafilatura.core
    import trafilatura.settings

    builds: list[object] = []

    class Counting(trafilatura.settings.Extractor):  # type: ignore[misc]
        def __init__(self, **kw: Any) -> None:
            builds.append(kw)
            super().__init__(**kw)

    monkeypatch.setattr(trafilatura.settings, "Extractor", Counting)
    monkeypatch.setattr(trafilatura.core, "Extractor", Counting)
    _convert._extractor.cache_clear()
    routes = {"/a": respond(200, article_page("Tides")), "/b": respond(200, article_page("Kelp"))}
    with serve(routes=routes) as srv:
        async with make_web(CountingRenderer()) as web:
            first = await web.fetch(srv.url("/a"))
            second = await web.fetch(srv.url("/b"))
    assert "Tides paragraph 3" in first.content and "Kelp paragraph 3" in second.content
    assert len(builds) == 1
    _convert._extractor.cache_clear()  # the next test builds its own, not the counting one


# ---- the worker hop ---------------------------------------------------------------------------


def test_moderate_pages_are_html_within_the_tag_and_byte_bounds() -> None:
    assert is_moderate(article_page("Tides").encode() * 3, "text/html")
    assert not is_moderate(b"<p>x</p>" * 2_000, "text/html")  # 4,000 tags: block soup
    assert not is_moderate(b"%PDF-1.4\n" + b"x" * 100, "text/html")  # sniffed: a PDF
    assert is_moderate(b"words " * 100_000, "text/markdown")  # linear: Markdown, JSON, text
    assert not is_moderate(b"\x89PNG\r\n\x1a\n" + bytes(100), "image/png")


async def test_an_article_is_converted_without_the_hop_to_a_worker() -> None:
    """A 60 KB article (moderate) is read without starting the conversion zygote."""
    page = article_page("Tides") * 20
    assert len(page) > 16_384
    with serve(routes={"/": respond(200, page)}) as srv:
        async with make_web(CountingRenderer()) as web:
            read = await web.fetch(srv.url("/"))
            assert web._converter._zygote is None
    assert "Tides paragraph 3" in read.content


async def test_once_the_workers_run_they_take_the_moderate_pages(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A server starts its workers before serving: from then on a moderate page goes to them,
    leaving this process's interpreter to the event loop."""
    here: list[str] = []
    real = _convert.convert

    def counted(*args: Any, **kw: Any) -> Any:
        here.append(args[2])  # only conversions in this process come through here
        return real(*args, **kw)

    monkeypatch.setattr(_convert, "convert", counted)
    page = article_page("Tides") * 20
    with serve(routes={"/": respond(200, page)}) as srv:
        async with make_web(CountingRenderer()) as web:
            await web.start_workers()
            read = await web.fetch(srv.url("/"))
            assert web._converter._zygote is not None
    assert "Tides paragraph 3" in read.content
    assert here == []


async def test_once_the_workers_run_the_event_loop_converts_only_while_it_has_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Once the workers run, a large Markdown page goes to them (1 MB took a second in a
    thread, past any deadline); small pages and images stay here, not held up by a busy pool,
    but only while such conversions have taken little of the event loop's time: after a
    burst (a 16 KB table takes 0.1 s), small pages go to the workers too."""
    here: list[str] = []
    real = _convert.convert

    def counted(*args: Any, **kw: Any) -> Any:
        here.append(args[2].rsplit("/", 1)[-1].split("?")[0])  # only conversions here
        return real(*args, **kw)

    monkeypatch.setattr(_convert, "convert", counted)
    noise = io.BytesIO()  # a real PNG over 16 KB: noise does not compress
    Image.frombytes("RGB", (100, 100), random.Random(0).randbytes(30_000)).save(noise, "PNG")
    routes = {
        "/small.html": respond(200, article_page("Tides")[:4_000]),
        "/large.md": respond(200, "# Tides\n\n" + "Tides come and go. " * 6_000, "text/markdown"),
        "/small.md": respond(200, "# Tides\n\nTides come and go.\n", "text/markdown"),
        "/large.png": respond(200, noise.getvalue(), "image/png"),
    }
    with serve(routes=routes) as srv:
        async with make_web(CountingRenderer()) as web:
            await web.start_workers()
            for name in routes:
                await web.fetch(srv.url(name))
            assert here == ["small.html", "small.md", "large.png"]
            here.clear()
            web._converter.kept(1.0)  # the event loop has just spent a second converting
            for name in routes:
                await web.fetch(srv.url(f"{name}?again"))
            assert here == ["large.png"]


async def test_the_event_loops_share_of_conversions_is_paid_back_over_time() -> None:
    now = [0.0]
    pool = ConvertPool(workers=1, queue=1, memory_mb=512, clock=lambda: now[0])
    small = b"<html><body><p>a small page</p></body></html>"
    pool.kept(10.0)
    assert pool.keeps(small, "text/html")  # no workers yet: a small page always stays
    await pool.start()
    try:
        assert not pool.keeps(small, "text/html")
        now[0] += (10.0 - NEARBY_BURST_S) / NEARBY_SHARE + 0.01
        assert pool.keeps(small, "text/html")
        pool.kept(NEARBY_BURST_S)
        assert not pool.keeps(small, "text/plain")
        assert not pool.keeps(b"words " * 10_000, "text/markdown")  # large: the workers'
    finally:
        await pool.aclose()


async def test_before_the_workers_run_large_markdown_is_converted_nearby(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Until a page needs the workers, a large Markdown page converts in a thread here (a
    command-line read starts no worker), as a moderate HTML page does."""
    here: list[str] = []
    real = _convert.convert

    def counted(*args: Any, **kw: Any) -> Any:
        here.append(args[2])
        return real(*args, **kw)

    monkeypatch.setattr(_convert, "convert", counted)
    page = "# Tides\n\n" + "Tides come and go. " * 6_000
    with serve(routes={"/": respond(200, page, "text/markdown")}) as srv:
        async with make_web(CountingRenderer()) as web:
            read = await web.fetch(srv.url("/"))
            assert web._converter._zygote is None
    assert here == [srv.url("/")] and "Tides come and go." in read.content


async def test_one_moderate_page_at_a_time_is_converted_nearby(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """While one moderate page converts in this process, the next is left to the workers."""
    started, release = threading.Event(), threading.Event()
    real = _convert.convert

    def held(*args: Any, **kw: Any) -> Any:
        started.set()
        release.wait(10)
        return real(*args, **kw)

    monkeypatch.setattr(_convert, "convert", held)
    limits = LimitsSettings()
    job = Job(article_page("Tides").encode(), "text/html", URL, False, False, limits)
    pool = ConvertPool.from_limits(limits)
    results: list[Any] = []
    async with anyio.create_task_group() as tg:

        async def first() -> None:
            results.append(await pool.convert_nearby(job))

        tg.start_soon(first)
        while not started.is_set():
            await anyio.sleep(0.01)
        assert await pool.convert_nearby(job) is None  # busy: for the pool
        release.set()
    assert results[0] is not None and "Tides paragraph 3" in results[0].text
    assert await pool.convert_nearby(job) is not None  # free again
    assert pool._zygote is None  # the pool never started a process
    await pool.aclose()


def test_a_page_without_scripts_whose_words_sit_in_page_furniture_is_read_as_them() -> None:
    """Both extractors drop a <header> outside an article as page furniture. A page written
    wholly in them, with no script to make it a shell, reads as its words rather than as
    nothing; with a script it stays scant, for the fetch core to render."""
    unit = "<header><h1>Heading of a part</h1><p>Words of the part, in a header.</p></header>"
    page = f"<html><head><title>Parts</title></head><body>{unit * 20}</body></html>".encode()
    limits = LimitsSettings()
    read = _convert.convert(
        page, "text/html", URL, truncated=False, include_links=False, limits=limits
    )
    assert read.text.count("Words of the part, in a header.") == 20
    assert read.text.count("Heading of a part") == 20
    shell = page.replace(b"<body>", b"<body><script>render();</script>")
    read = _convert.convert(
        shell, "text/html", URL, truncated=False, include_links=False, limits=limits
    )
    assert _shell.scant(read.text)


def test_an_article_kept_in_noscript_is_what_a_reader_without_scripts_gets() -> None:
    """webward reads as a browser without scripts does: an article a page keeps in
    <noscript> is its reading, with or without a script beside it (as-owner, which never
    renders, read nothing); a short "enable JavaScript" line leaves a shell scant, for the
    fetch core to render."""
    article = "<p>" + "The real article about llamas living in the Andes. " * 6 + "</p>"
    limits = LimitsSettings()
    for head in ("", '<script src="/app.js"></script>'):
        page = f"<html><head>{head}</head><body><noscript>{article}</noscript></body></html>"
        read = _convert.convert(
            page.encode(), "text/html", URL, truncated=False, include_links=False, limits=limits
        )
        assert read.text.count("The real article about llamas") == 6
    shell = (
        "<html><body><noscript>Please enable JavaScript to use this app.</noscript>"
        '<div id="root"></div><script src="/app.js"></script></body></html>'
    )
    read = _convert.convert(
        shell.encode(), "text/html", URL, truncated=False, include_links=False, limits=limits
    )
    assert _shell.scant(read.text)
