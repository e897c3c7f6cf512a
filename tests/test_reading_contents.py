"""A page's table of contents is not read after its text (webward._kinds.drop_contents), nor
are lines sending the reader elsewhere (webward._convert._drop_promo_lines)."""

from __future__ import annotations

from readings import P, assert_in_order, read_html

URL = "https://docs.example.com/docs/create-a-page"


def read(page: str) -> str:
    return read_html(page, URL)


def docusaurus(toc: str) -> str:
    return (
        "<html><head><title>Create a Page</title></head><body>"
        '<div class="main-wrapper"><main class="docMainContainer"><div class="container">'
        '<div class="row"><div class="col docItemCol"><div class="theme-doc-markdown markdown">'
        f"<header><h1>Create a Page</h1></header><p>{P}</p>"
        '<h2 id="create-page">Create your first page</h2>'
        '<div class="theme-admonition alert"><div class="admonitionHeading">tip</div>'
        '<div class="admonitionContent"><p>Use the dev server for hot reload.</p></div></div>'
        f"<p>{P}</p></div></div>"
        f'<div class="col col--3">{toc}</div></div></div></main></div></body></html>'
    )


def test_docusaurus_on_this_page_is_not_read() -> None:
    """Docusaurus's "On this page" (the desktop one beside the text and the mobile one above
    it) read after the text as a list of links to headings already read."""
    toc = (
        '<div class="tableOfContents_bqdL thin-scrollbar theme-doc-toc-desktop">'
        '<ul class="table-of-contents table-of-contents__left-border">'
        '<li><a href="#create-page" class="table-of-contents__link toc-highlight">Create your '
        "first page</a></li></ul></div>"
    )
    reading = read(docusaurus(toc))
    assert "## Create your first page" in reading
    assert "#create-page)" not in reading and "[Create your first page]" not in reading


def test_a_contents_box_with_other_links_or_words_stays() -> None:
    """Named a table of contents but linking elsewhere: not one of this page."""
    toc = '<div class="toc"><ul><li><a href="/docs/routing">Routing</a></li></ul></div>'
    reading = read(docusaurus(toc))
    assert "[Routing]" in reading


def test_a_line_sending_the_reader_elsewhere_is_not_read() -> None:
    """A news site puts "**SEE MORE:** [another story](…)" and "Related: [...](…)" between an
    article's paragraphs, and a post ends "Follow us on Instagram, Facebook and Pinterest
    for more recipes!": trafilatura kept them as the article's paragraphs (two tuning pages
    of extraction-dev, whose texts leave them out). They go; a line of another label over a
    link ("Source: [Reuters](…)") and a sentence that mentions following stay."""
    page = (
        "<html><head><title>Protests</title></head><body><main><article><h1>Protests</h1>"
        f"<p>{P} The march began at noon.</p><p><strong>SEE MORE</strong>: <a href='/hk'>Hong "
        f"Kong protests: 800 students under siege</a></p><p>{P} Police closed the bridge.</p>"
        "<p><b>Related:</b> <a href='/rockets'>SpaceX's rockets in pictures</a></p><p>Source: "
        "<a href='https://reuters.example/'>Reuters</a></p><p>Readers who follow us know the "
        f"<a href='/story'>story</a>. {P}</p><p>Follow us on <a href='https://instagram.example"
        "/x'>Instagram</a>, <a href='https://facebook.example/x'>Facebook</a> and <a href="
        "'https://pinterest.example/x'>Pinterest</a> for more!</p></article></main></body></html>"
    )
    reading = read_html(page, "https://news.example.com/2026/protests")
    assert_in_order(
        reading, "The march began at noon.", "Police closed the bridge.", "Source: [Reuters]"
    )
    assert "Readers who follow us know the [story]" in reading
    for gone in ("SEE MORE", "Hong Kong", "Related", "SpaceX", "Follow us", "Instagram"):
        assert gone not in reading
