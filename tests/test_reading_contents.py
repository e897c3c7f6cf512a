"""A page's table of contents is not read after its text (webward._kinds.drop_contents)."""

from __future__ import annotations

from readings import P, read_html

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
