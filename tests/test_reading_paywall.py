"""A paywall's prompt over an article is not read as the article's words
(webward._kinds.drop_paywall_prompts)."""

from __future__ import annotations

from readings import P, read_html

URL = "https://news.example.com/2026/budget"


def read(page: str) -> str:
    return read_html(page, URL)


def article(inside: str) -> str:
    return (
        "<html><head><title>City budget approved</title></head><body><main><article>"
        '<h1>City budget approved</h1><p class="lead">The council voted 7-2 on Tuesday.</p>'
        f"<p>{P}</p>{inside}</article></main></body></html>"
    )


def test_a_paywall_prompt_inside_the_article_is_not_read() -> None:
    """The prompt sat between the article's paragraphs, and read as a section of it."""
    prompt = (
        '<div class="paywall-overlay"><h2>Subscribe to keep reading</h2><p>Get unlimited '
        'access for $1 a week. Cancel anytime.</p><a class="btn" href="/subscribe">Subscribe '
        'now</a></div><div class="article-body truncated" style="max-height:200px;'
        f'overflow:hidden"><p>The budget raises library funding by 4 percent. {P}</p></div>'
    )
    reading = read(article(prompt))
    assert "The budget raises library funding" in reading
    assert "Subscribe" not in reading and "$1 a week" not in reading


def test_the_text_a_paywall_class_wraps_is_read() -> None:
    """A paywall's class on the article's own text (the words it hides from non-subscribers)
    is no prompt: those words are read, a mention of subscribers included."""
    body = (
        f'<div class="paywall"><p>The budget raises library funding by 4 percent. {P}</p>'
        f"<p>Subscribers to the city newsletter were told first. {P}</p></div>"
    )
    reading = read(article(body))
    assert "Subscribers to the city newsletter" in reading
