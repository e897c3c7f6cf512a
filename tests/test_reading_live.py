"""Live blogs: each update read with the time it was posted (webward._kinds.mark_updates)."""

from __future__ import annotations

from readings import P, assert_in_order, read_html

URL = "https://news.example.com/live/election"


def read(page: str) -> str:
    return read_html(page, URL)


def page(body: str) -> str:
    return (
        "<!DOCTYPE html><html><head><title>Election night: live updates</title></head><body>"
        '<nav class="navbar"><a href="/">Home</a> <a href="/news">News</a></nav>'
        f"<main>{body}</main>"
        '<aside class="related"><h3>Most read</h3><ol><li><a href="/a">Weather</a></li></ol>'
        "</aside></body></html>"
    )


LIVE = page(
    '<article><h1>Election night: live updates</h1><p class="standfirst">Follow the results '
    'as they come in.</p><div class="live-blog">'
    '<div class="live-post" id="u3"><time datetime="2026-11-03T23:40">23:40</time>'
    f"<h2>Polls close in the west</h2><p>Voting has ended in the last states. {P}</p></div>"
    '<div class="live-post" id="u2"><time datetime="2026-11-03T22:15">22:15</time>'
    "<p><strong>Turnout high.</strong> Officials report record turnout in several counties."
    "</p></div>"
    '<div class="live-post" id="u1"><time datetime="2026-11-03T21:00">21:00</time>'
    f"<p>Welcome to our live coverage. {P}</p></div></div></article>"
)


def test_each_live_update_reads_with_its_time() -> None:
    """The times, a line of their own above each update, went (trafilatura reads no div's own
    text on a page of paragraphs), and the updates read without their order in time."""
    reading = read(LIVE)
    assert_in_order(
        reading,
        "**23:40** (2026-11-03T23:40)",
        "## Polls close in the west",
        "**22:15** (2026-11-03T22:15)",
        "Turnout high.",
        "**21:00** (2026-11-03T21:00)",
        "Welcome to our live coverage.",
    )
    assert reading.count("23:40") == 2  # the shown time and the moment, once


def test_schema_org_live_blog_updates_with_relative_times() -> None:
    """A LiveBlogPosting's updates (microdata), each showing "5 min ago": the moment is read
    beside it."""
    updates = "".join(
        f'<div class="update" itemprop="liveBlogUpdate" itemscope '
        f'itemtype="https://schema.org/BlogPosting"><header><time itemprop="datePublished" '
        f'datetime="2026-11-03T{hour}:00Z">{ago}</time></header>'
        f'<div itemprop="articleBody"><p>{text} {P}</p></div></div>'
        for hour, ago, text in (
            ("23", "5 min ago", "Second update."),
            ("22", "1 hr ago", "First update."),
        )
    )
    reading = read(
        page(
            '<article itemscope itemtype="https://schema.org/LiveBlogPosting"><h1>Storm live'
            f"</h1>{updates}</article>"
        )
    )
    first = reading.find("**5 min ago** (2026-11-03T23:00Z)")
    second = reading.find("**1 hr ago** (2026-11-03T22:00Z)")
    assert -1 < first < reading.find("Second update.") < second < reading.find("First update.")


def test_a_listing_of_teasers_keeps_its_dates_to_the_extractor() -> None:
    """Teasers (each heading a link to its story) are no live updates: their dates are not
    made lines."""
    teasers = "".join(
        f'<div class="teaser"><time datetime="2026-11-0{n}">Nov {n}</time>'
        f'<h2><a href="/story/{n}">Story {n}</a></h2><p>Summary {n}. {P}</p></div>'
        for n in (1, 2, 3)
    )
    reading = read(page(f"<h1>Latest</h1>{teasers}"))
    assert "2026-11-0" not in reading
