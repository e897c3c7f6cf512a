"""A scholarly paper's page (arXiv's abstract page, a journal's article) read with its
authors, which the extractors dropped as a line of links (webward._kinds.mark_authors)."""

from __future__ import annotations

from readings import assert_in_order, read_html

ABSTRACT = (
    "We present a sparse attention mechanism that scales linearly with document length. Our "
    "method combines local windows with a small set of global tokens chosen by a learned "
    "router, and matches dense attention on five long-document benchmarks while using a "
    "fraction of the memory. We release code and models for every experiment in the paper. "
) * 2


def arxiv(metas: str) -> str:
    """arXiv's abstract page, its authors a line of search links."""
    authors = ", ".join(
        f'<a href="https://arxiv.org/search/cs?searchtype=author&amp;query={last}">{name}</a>'
        for name, last in (("Jane Smith", "Smith"), ("Richard Doe", "Doe"), ("Kim Lee", "Lee"))
    )
    return (
        "<html><head><title>[2401.01234] Sparse Attention for Long Documents</title>"
        f"{metas}</head><body><header><a href='/'>arXiv</a></header><main><div id=content>"
        '<div id="abs"><div class="dateline">[Submitted on 3 Jan 2024]</div><h1 class="title '
        'mathjax"><span class="descriptor">Title:</span>Sparse Attention for Long Documents'
        f'</h1><div class="authors"><span class="descriptor">Authors:</span>{authors}</div>'
        '<blockquote class="abstract mathjax"><span class="descriptor">Abstract:</span>'
        f"{ABSTRACT}</blockquote></div></div></main></body></html>"
    )


METAS = (
    '<meta name="citation_title" content="Sparse Attention for Long Documents">'
    '<meta name="citation_author" content="Smith, Jane">'
    '<meta name="citation_author" content="Doe, Richard">'
    '<meta name="citation_author" content="Lee, Kim">'
)


def test_a_papers_authors_named_in_its_citation_metadata_are_read() -> None:
    """arXiv's authors are a line of links in ``<div class="authors">``: trafilatura dropped
    it by its links and its class, and the abstract read without who wrote it. The element
    listing the names the page's ``citation_author`` metadata gives is read, its words kept
    and its links left out of the reading (the links list keeps them)."""
    reading = read_html(arxiv(METAS), "https://arxiv.org/abs/2401.01234")
    assert_in_order(reading, "Authors: Jane Smith, Richard Doe, Kim Lee", "We present a sparse")
    # Without the metadata (a news article's byline of links) the extractor judges it.
    plain = read_html(arxiv(""), "https://arxiv.org/abs/2401.01234")
    assert "Richard Doe" not in plain and "We present a sparse" in plain


def test_a_citation_author_naming_no_one_first_is_passed_over() -> None:
    """A page's first ``citation_author`` may be empty or hold no word ("—"): the pass
    looked for that one's longest word and failed (``max`` of nothing), and every read of
    the page was refused as a bug in webward. The first that names someone is looked for."""
    for first in ("", "\u2014", "&amp;"):
        metas = f'<meta name="citation_author" content="{first}">' + METAS
        reading = read_html(arxiv(metas), "https://arxiv.org/abs/2401.01234")
        assert_in_order(reading, "Authors: Jane Smith, Richard Doe, Kim Lee", "We present")


def test_a_label_glued_to_its_words_reads_apart_and_title_leaves_the_heading() -> None:
    """arXiv writes each field's label as a span glued to the field ("<span>Abstract:</span>The
    dominant ..."), set apart by its stylesheet: the reading ran them together ("Authors:Jane
    Smith", "> Abstract:We present") and the paper's title read "# Title:Sparse Attention".
    A label ending in a colon right before a word has a space after it; "Title:" first in a
    heading goes. A label with its own space, and a colon in code, are left as they are."""
    reading = read_html(arxiv(METAS), "https://arxiv.org/abs/2401.01234")
    assert_in_order(
        reading,
        "# Sparse Attention for Long Documents\n",
        "Authors: Jane Smith, Richard Doe, Kim Lee",
        "> Abstract: We present a sparse",
    )
    assert "Title:" not in reading
    page = (
        f"<html><body><main><h1>Notes</h1><p>{ABSTRACT}</p><p><b>Memo: </b>Guards falsified "
        "records.</p><p><strong>Note:</strong><em>Read</em> the slice <code><span>x[1</span>"
        "<span>:</span><span>]</span></code> first.</p></main></body></html>"
    )
    reading = read_html(page, "https://example.org/notes")
    assert "**Memo:** Guards falsified" in reading
    assert "**Note:** *Read* the slice `x[1:]` first." in reading


def test_a_papers_table_of_labelled_metadata_is_read() -> None:
    """arXiv writes a paper's comments, subjects, "Cite as" and DOI in a table of labelled
    rows in ``<div class="metatable">``, which trafilatura dropped whole by its class (it
    drops a div whose class holds "meta"): the reading lost where to cite the paper. A
    table of labelled rows alone in a div is read; a table of other rows is left to the
    extractor's judgement."""
    table = (
        '<div class="metatable"><table summary="Additional metadata"><tr><td class="tablecell '
        'label">Comments:</td><td>12 pages, 4 figures</td></tr><tr><td class="tablecell label">'
        "Subjects:</td><td>Computation and Language (cs.CL)</td></tr><tr><td>Cite as:</td><td>"
        '<a href="https://arxiv.org/abs/2401.01234">arXiv:2401.01234</a> [cs.CL]</td></tr><tr>'
        '<td>&nbsp;</td><td><a href="https://doi.org/10.48550/arXiv.2401.01234">'
        "https://doi.org/10.48550/arXiv.2401.01234</a></td></tr></table></div>"
    )
    page = arxiv(METAS).replace("</blockquote>", f"</blockquote>{table}")
    reading = read_html(page, "https://arxiv.org/abs/2401.01234")
    assert_in_order(
        reading,
        "We present a sparse",
        "| Comments: | 12 pages, 4 figures |",
        "| Subjects: | Computation and Language (cs.CL) |",
        "| Cite as: | [arXiv:2401.01234]",
        "10.48550/arXiv.2401.01234",
    )
    # Rows whose first cell is no label (a sidebar's widget of figures) are left as they were.
    widget = table.replace("Subjects:", "Subjects").replace("Cite as:", "Cite as")
    plain = read_html(
        arxiv(METAS).replace("</blockquote>", f"</blockquote>{widget}"),
        "https://arxiv.org/abs/2401.01234",
    )
    assert "Computation and Language" not in plain
