"""Question-and-answer pages: the question and each answer read as their own parts, the
accepted one and the votes said, comments kept (webward._kinds.mark_answers)."""

from __future__ import annotations

from readings import P, assert_in_order, read_html

from webward._convert import _MAX_KINDS_ELEMENTS

URL = "https://example.com/questions/1"


def read(page: str) -> str:
    return read_html(page, URL)


SO = f"""<!DOCTYPE html><html><head><title>python - How do I reverse a list? - Stack Overflow</title></head><body class="question-page">
<header class="s-topbar"><a>Stack Overflow</a><a>About</a><input placeholder="Search…"></header>
<div id="left-sidebar"><nav><ol><li><a>Home</a></li><li><a>Questions</a></li></ol></nav></div>
<div id="content" itemscope itemtype="https://schema.org/QAPage"><div id="question-header"><h1 itemprop="name" class="fs-headline1"><a href="/q/1" class="question-hyperlink">How do I reverse a list?</a></h1></div>
<div class="d-flex"><div>Asked <time itemprop="dateCreated" datetime="2010-10-15T07:00:00">10 years ago</time></div><div>Viewed 5m times</div></div>
<div id="mainbar" role="main" aria-label="question and answers">
<div class="question js-question" id="question" data-questionid="1" data-score="4123" itemprop="mainEntity" itemscope itemtype="https://schema.org/Question">
<div class="post-layout"><div class="votecell post-layout--left"><div class="js-voting-container d-flex"><button class="js-vote-up-btn" aria-label="Up vote"><svg aria-hidden="true"><path d="M1 1"/></svg></button><div class="js-vote-count flex--item" itemprop="upvoteCount" data-value="4123">4123</div><button class="js-vote-down-btn" aria-label="Down vote"></button></div></div>
<div class="postcell post-layout--right"><div class="s-prose js-post-body" itemprop="text"><p>How can I reverse a list in Python, without modifying the original? I tried a loop but it feels clumsy.</p><pre class="lang-py s-code-block"><code class="hljs language-python">xs = [1, 2, 3]</code></pre></div>
<div class="post-taglist"><a class="post-tag">python</a><a class="post-tag">list</a></div>
<div class="user-info"><div class="user-action-time">asked <span class="relativetime">Oct 15, 2010</span></div><div class="user-details"><a href="/users/9/erin">erin</a></div></div></div>
<span class="d-none" itemprop="commentCount">1</span>
<div class="post-layout--right js-post-comments-component"><div id="comments-1" class="comments js-comments-container"><ul class="comments-list js-comments-list"><li id="comment-11" class="comment js-comment" data-comment-score="12"><div class="js-comment-actions comment-actions"><div class="comment-score js-comment-score"><span class="cool">12</span></div></div><div class="comment-text js-comment-text-and-form"><div class="comment-body js-comment-edit-hide"><span class="comment-copy">Did you try slicing? It is the usual way.</span> <div class="d-inline-flex">- <a href="/users/3/carol" class="comment-user">carol</a></div> <span class="comment-date"><a class="comment-link" href="#comment11_1"><span class="relativetime-clean">Oct 15, 2010 at 7:01</span></a></span></div></div></li></ul></div>
<div id="comments-link-1" class="js-comments-menu"><a class="js-add-link comments-link" role="button">Add a comment</a></div></div>
</div></div>
<div id="answers"><div id="answers-header"><h2 class="mb0" data-answercount="2">2 Answers <span>Sorted by:</span></h2></div>
<div id="answer-2" class="answer js-answer accepted-answer js-accepted-answer" data-answerid="2" data-score="5321" itemprop="acceptedAnswer" itemscope itemtype="https://schema.org/Answer">
<div class="post-layout"><div class="votecell post-layout--left"><div class="js-voting-container d-flex"><button class="js-vote-up-btn"></button><div class="js-vote-count flex--item" itemprop="upvoteCount" data-value="5321">5321</div><button class="js-vote-down-btn"></button>
<div class="js-accepted-answer-indicator flex--item fc-green-400" title="Loading when this answer was accepted…" role="note" aria-label="Accepted"><div class="ta-center"><svg aria-hidden="true" class="svg-icon iconCheckmarkLg"><path d="m6 14 8 8L30 6v8L14 30l-8-8v-8Z"></path></svg></div></div></div></div>
<div class="answercell post-layout--right"><div class="s-prose js-post-body" itemprop="text"><p>Use <code>reversed()</code> for an iterator, or slicing for a reversed copy of the list:</p><pre class="lang-py s-code-block"><code class="hljs language-python">ys = xs[::-1]</code></pre><p>{P}</p></div>
<div class="user-info"><div class="user-action-time">answered <span class="relativetime">Oct 15, 2010</span></div><div class="user-details"><a href="/users/4/dave">dave</a></div></div></div>
<div class="post-layout--right js-post-comments-component"><div id="comments-2" class="comments js-comments-container"><ul class="comments-list js-comments-list"><li id="comment-21" class="comment js-comment"><div class="comment-text"><div class="comment-body"><span class="comment-copy">Slicing creates a copy, beware of memory on huge lists.</span> <div class="d-inline-flex">- <a class="comment-user">frank</a></div></div></div></li></ul></div></div>
</div></div>
<div id="answer-3" class="answer js-answer" data-answerid="3" data-score="12" itemprop="suggestedAnswer" itemscope itemtype="https://schema.org/Answer">
<div class="post-layout"><div class="votecell post-layout--left"><div class="js-voting-container d-flex"><div class="js-vote-count flex--item" itemprop="upvoteCount" data-value="12">12</div>
<div class="js-accepted-answer-indicator flex--item fc-green-400 d-none" role="note" aria-label="Accepted"><svg aria-hidden="true"></svg></div></div></div>
<div class="answercell post-layout--right"><div class="s-prose js-post-body" itemprop="text"><p>You can also call <code>xs.reverse()</code>, which reverses the list in place and returns None. {P}</p></div>
<div class="user-info"><div class="user-details"><a href="/users/5/gina">gina</a></div></div></div></div></div>
</div></div>
<div id="sidebar"><div class="s-sidebarwidget"><h4>The Overflow Blog</h4><ul><li><a>How we built a thing</a></li></ul></div><div><h4>Hot Network Questions</h4><ul><li><a>Why is the sky blue?</a></li></ul></div></div></div>
<footer><p>Site design / logo © 2026 Stack Exchange Inc</p></footer></body></html>"""
DISCOURSE = """<!DOCTYPE html><html><head><title>Nginx returns 502 after upgrade - Help - Example Forum</title>
<script type="application/ld+json">{"@context":"http://schema.org","@type":"QAPage","name":"Nginx returns 502 after upgrade","mainEntity":{"@type":"Question","name":"Nginx returns 502 after upgrade","text":"After upgrading to 3.2 every request to the site returns 502 Bad Gateway from nginx.","upvoteCount":3,"answerCount":1,"datePublished":"2026-01-03T10:00:00Z","author":{"@type":"Person","name":"alice"},"acceptedAnswer":{"@type":"Answer","text":"The upgrade moved the socket path. Point proxy_pass at the new socket and reload nginx.","upvoteCount":7,"datePublished":"2026-01-03T12:00:00Z","url":"https://forum.example.com/t/nginx-returns-502-after-upgrade/123/3","author":{"@type":"Person","name":"bob"}}}}</script></head><body class="crawler">
<header><a href="/"><img src="/logo.png" alt="Example Forum"></a></header>
<div id="main-outlet" class="wrap" role="main">
<div id="topic-title"><h1><a href="/t/nginx-returns-502-after-upgrade/123">Nginx returns 502 after upgrade</a></h1><div class="topic-category"><span class="category-name">Help</span></div></div>
<div itemscope itemtype="http://schema.org/DiscussionForumPosting">
<div id="post_1" class="topic-body crawler-post"><div class="crawler-post-meta"><span class="creator" itemprop="author" itemscope itemtype="http://schema.org/Person"><a itemprop="url" href="/u/alice"><span itemprop="name">alice</span></a></span><span class="crawler-post-infos"><time itemprop="datePublished" datetime="2026-01-03T10:00:00Z" class="post-time">January 3, 2026, 10:00am</time><span itemprop="position">1</span></span></div>
<div class="post" itemprop="text"><p>After upgrading to 3.2 every request to the site returns 502 Bad Gateway from nginx. The error log says the upstream socket does not exist.</p><pre><code>connect() to unix:/var/run/app.sock failed (2: No such file or directory)</code></pre></div>
<div itemprop="interactionStatistic" itemscope itemtype="http://schema.org/InteractionCounter"><meta itemprop="interactionType" content="http://schema.org/LikeAction"><meta itemprop="userInteractionCount" content="3"><span class="post-likes">3 Likes</span></div></div>
<div id="post_2" itemprop="comment" itemscope itemtype="http://schema.org/Comment" class="topic-body crawler-post"><div class="crawler-post-meta"><span class="creator" itemprop="author" itemscope itemtype="http://schema.org/Person"><a itemprop="url" href="/u/carol"><span itemprop="name">carol</span></a></span><span class="crawler-post-infos"><time itemprop="datePublished" datetime="2026-01-03T11:00:00Z" class="post-time">January 3, 2026, 11:00am</time><span itemprop="position">2</span></span></div>
<div class="post" itemprop="text"><p>Same here since the upgrade. Did you check whether the app service itself is running at all after the restart?</p></div></div>
<div id="post_3" itemprop="comment" itemscope itemtype="http://schema.org/Comment" class="topic-body crawler-post"><div class="crawler-post-meta"><span class="creator" itemprop="author" itemscope itemtype="http://schema.org/Person"><a itemprop="url" href="/u/bob"><span itemprop="name">bob</span></a></span><span class="crawler-post-infos"><time itemprop="datePublished" datetime="2026-01-03T12:00:00Z" class="post-time">January 3, 2026, 12:00pm</time><span itemprop="position">3</span></span></div>
<div class="post" itemprop="text"><p>The upgrade moved the socket path. Point <code>proxy_pass</code> at the new socket and reload nginx:</p><pre><code>proxy_pass http://unix:/run/app/app.sock;</code></pre><p>That fixed it on both of our servers.</p></div>
<div itemprop="interactionStatistic" itemscope itemtype="http://schema.org/InteractionCounter"><meta itemprop="interactionType" content="http://schema.org/LikeAction"><meta itemprop="userInteractionCount" content="7"><span class="post-likes">7 Likes</span></div></div>
</div></div>
<footer class="container wrap"><nav class="crawler-nav"><ul><li><a href="/">Home</a></li><li><a href="/categories">Categories</a></li></ul></nav><p class="powered-by-link">Powered by Discourse</p></footer></body></html>"""
QUORA = f"""<!DOCTYPE html><html><head><title>What is the best way to learn Rust? - AskHub</title></head><body>
<nav class="topnav"><a>Home</a><a>Spaces</a><a>Notifications</a></nav>
<main itemscope itemtype="https://schema.org/QAPage"><div itemprop="mainEntity" itemscope itemtype="https://schema.org/Question">
<h1 itemprop="name">What is the best way to learn Rust?</h1><div itemprop="text"><p>I know Python and some C. Which resources should I start with, and how long does it take to become productive?</p></div>
<div class="q-meta"><span itemprop="answerCount">2</span> answers</div>
<div itemprop="suggestedAnswer" itemscope itemtype="https://schema.org/Answer" class="q-box"><div class="author">Hana K., systems engineer</div><div itemprop="text"><p>Read the official book first, then do the Rustlings exercises. {P}</p></div><div class="actions"><span>Upvote · </span><meta itemprop="upvoteCount" content="130"><span>130</span></div></div>
<div itemprop="suggestedAnswer" itemscope itemtype="https://schema.org/Answer" class="q-box"><div class="author">Ivan P.</div><div itemprop="text"><p>Port a small tool you already wrote in Python; fighting the borrow checker on real code teaches fastest. {P}</p></div><div class="actions"><meta itemprop="upvoteCount" content="1"><span>1</span></div></div>
</div></main>
<div class="related"><h3>Related questions</h3><ul><li><a>Is Go easier than Rust?</a></li></ul></div></body></html>"""
FAQ = f"""<!DOCTYPE html><html><head><title>FAQ - Acme</title></head><body><main itemscope itemtype="https://schema.org/FAQPage"><h1>Frequently asked questions</h1>
<div itemscope itemprop="mainEntity" itemtype="https://schema.org/Question" class="faq-item"><h2 itemprop="name" class="question">How do I reset my password?</h2><div itemscope itemprop="acceptedAnswer" itemtype="https://schema.org/Answer" class="answer"><p itemprop="text">Open Settings, choose Security and press Reset password; a link arrives by email within a few minutes. {P}</p></div></div>
<div itemscope itemprop="mainEntity" itemtype="https://schema.org/Question" class="faq-item"><h2 itemprop="name" class="question">Can I change my username?</h2><div itemscope itemprop="acceptedAnswer" itemtype="https://schema.org/Answer" class="answer"><p itemprop="text">Yes, once every thirty days, from the Profile page under Account details. {P}</p></div></div>
</main></body></html>"""


def test_a_stack_exchange_page_reads_question_then_each_answer_marked() -> None:
    """Stack Exchange's markup (classes and schema.org microdata): the question's body and both
    answers ran together with nothing saying where an answer began or which was accepted."""
    reading = read(SO)
    assert_in_order(
        reading,
        "**Question (4123 votes)**",
        "How can I reverse a list",
        "Did you try slicing?",
        "**Answer (accepted, 5321 votes)**",
        "ys = xs[::-1]",
        "**Answer (12 votes)**",
        "xs.reverse()",
    )
    assert "```python\nys = xs[::-1]\n```" in reading  # code blocks intact

    assert "Add a comment" not in reading
    # Each comment says what it is, and its votes (no heading over a list a reading may drop).
    assert "- Comment (12 votes): Did you try slicing?" in reading


def test_a_solved_discourse_topic_marks_its_accepted_reply() -> None:
    """Discourse's crawler view names the accepted answer only in its QAPage JSON-LD: it is
    found in the page by its first words, and the topic's other replies are answers too."""
    reading = read(DISCOURSE)
    assert_in_order(
        reading,
        "**Question**",
        "After upgrading to 3.2",
        "**Answer**",
        "Same here since the upgrade",
        "**Answer (accepted, 7 votes)**",
        "The upgrade moved the socket path",
    )


def test_schema_org_answers_nested_in_their_question_are_marked() -> None:
    reading = read(QUORA)
    assert reading.index("**Answer (130 votes)**") < reading.index("Read the official book")
    assert reading.index("**Answer (1 vote)**") < reading.index("Port a small tool")


def test_a_faq_is_no_question_and_answer_page() -> None:
    """A FAQ (schema.org FAQPage, many questions each with its answer) reads as its headings,
    no "Answer" marks."""
    reading = read(FAQ)
    assert "## How do I reset my password?" in reading
    assert "Answer" not in reading and "Question" not in reading


def test_a_short_question_with_tags_is_read() -> None:
    """A short question beside its tags and a commenter's name looks like a list of links to
    trafilatura when it reads the page's container: the question's body is read where
    trafilatura reads a post, and stays."""
    page = (
        "<html><head><title>How do I reverse a list?</title></head><body>"
        '<div id="content"><div id="question-header"><h1><a href="/q/1">How do I reverse a '
        'list?</a></h1></div><div id="mainbar" role="main"><div class="question" id="question">'
        '<div class="votecell"><div class="js-vote-count">4123</div></div><div class="postcell">'
        '<div class="s-prose js-post-body" itemprop="text"><p>How can I reverse a list in '
        "Python, without modifying the original?</p><pre><code>xs = [1, 2, 3]</code></pre></div>"
        '<div class="post-taglist"><a class="post-tag">python</a><a class="post-tag">list</a>'
        '</div><div class="comments"><ul class="comments-list"><li class="comment">'
        '<span class="comment-copy">Did you try slicing?</span> - <a class="comment-user">carol'
        "</a></li></ul></div></div></div>"
        '<div id="answers"><h2>2 Answers</h2><div class="answer js-answer accepted-answer">'
        '<div class="votecell"><div class="js-vote-count">5321</div></div><div class="answercell">'
        '<div class="s-prose js-post-body"><p>Use <code>reversed()</code> for an iterator or '
        f"slicing for a copy:</p><pre><code>ys = xs[::-1]</code></pre><p>{P}</p></div></div></div>"
        '<div class="answer js-answer"><div class="votecell"><div class="js-vote-count">12</div>'
        '</div><div class="answercell"><div class="s-prose js-post-body"><p>You can also call '
        f"<code>xs.reverse()</code> which reverses in place. {P}</p></div></div></div>"
        "</div></div></div></body></html>"
    )
    reading = read(page)
    assert_in_order(
        reading,
        "**Question (4123 votes)**",
        "How can I reverse a list in Python",
        "Did you try slicing?",
        "**Answer (accepted, 5321 votes)**",
        "**Answer (12 votes)**",
    )


def test_answers_after_a_long_question_are_read() -> None:
    """trafilatura reads the first post body it finds (the question) for the article; with a
    long question no second reading runs, and every answer went. The question and answers'
    container is read whole when the reading lost some of their marks."""
    long_question = SO.replace(
        "I tried a loop but it feels clumsy.</p>",
        "I tried a loop but it feels clumsy.</p>" + f"<p>{P * 3}</p>" * 20,
    )
    reading = read(long_question)
    assert_in_order(
        reading,
        "**Question (4123 votes)**",
        "How can I reverse a list",
        "**Answer (accepted, 5321 votes)**",
        "ys = xs[::-1]",
        "**Answer (12 votes)**",
        "xs.reverse()",
    )
    assert "\n5321\n" not in reading  # the vote counts the marks say already


def test_the_kinds_passes_skip_a_page_of_too_many_elements() -> None:
    """The marks search the whole tree, so a page past _MAX_KINDS_ELEMENTS elements is read
    without them, though it names every word their gates look for: such a page of 330,000
    one-word elements spent 0.4 s in them, past the 0.5 s a page has (bench/convert.py). The
    same page without the padding is marked."""
    padding = "<span></span>" * (_MAX_KINDS_ELEMENTS + 1)
    padded = SO.replace("</body>", f"<div hidden>{padding}</div></body>")
    assert "**Answer (accepted, 5321 votes)**" in read(SO)
    reading = read(padded)
    assert "**Answer" not in reading and "How can I reverse a list" in reading


def test_an_answers_comments_lost_by_the_reading_bring_the_whole_reading() -> None:
    """trafilatura kept an answer's text and dropped the list of comments under it (a list
    ending the answer's body, before its author's card), though the question's stayed: every
    mark was read, so the reading stood without them. A comment's line counts as a mark, and
    the Q&A's own reading, which keeps them all, stands in."""
    more = (
        '<li id="comment-22" class="comment js-comment"><div class="comment-text"><div class='
        '"comment-body"><span class="comment-copy">See <a href="https://docs.python.org/3/">the '
        'docs</a>.</span> <div class="d-inline-flex">- <a class="comment-user" href="/users/7/'
        'hal">hal</a></div></div></div></li><li id="comment-23" class="comment js-comment"><div'
        ' class="comment-text"><div class="comment-body"><span class="comment-copy">+1</span> '
        '<div class="d-inline-flex">- <a class="comment-user" href="/users/8/ivy">ivy</a></div>'
        "</div></div></li>"
    )
    at = SO.index('</li></ul></div></div>\n</div></div>\n<div id="answer-3"') + len("</li>")
    reading = read(SO[:at] + more + SO[at:])
    assert_in_order(
        reading,
        "**Question (4123 votes)**",
        "- Comment (12 votes): Did you try slicing?",
        "**Answer (accepted, 5321 votes)**",
        "- Comment: Slicing creates a copy",
        "- Comment: See [the docs]",
        "- Comment: +1",
        "**Answer (12 votes)**",
    )


def test_a_replys_quote_keeps_who_is_quoted() -> None:
    """Discourse writes a reply's quote of another post as ``<aside class="quote"><div
    class="title"><img> alice:</div><blockquote>``: the title went (a div of a class
    trafilatura drops, holding no paragraph), and the quote read as no one's words. A short
    line ending in a colon right before a quote, first in its parent, reads as the quote's
    first line; a line of more words, or one not ending in a colon, stays where it was."""
    quote = (
        '<aside class="quote no-group" data-username="alice" data-post="1"><div class="title">'
        '<div class="quote-controls"></div><img alt="" width="24" height="24" src="/a.png" '
        'class="avatar"> alice:</div><blockquote><p>Builds take forty minutes on the CI runner '
        "since the upgrade.</p></blockquote></aside>"
    )
    posts = "".join(
        f'<div class="topic-post"><article id="post_{n}"><div class="cooked">{body}<p>{P}</p>'
        "</div></article></div>"
        for n, body in enumerate(
            ("<p>Builds are slow.</p>", f"{quote}<p>Try caching the dependencies.</p>")
        )
    )
    page = (
        "<html><head><title>Slow builds - Example Forum</title></head><body><main><h1>Slow "
        f"builds</h1>{posts}</main></body></html>"
    )
    reading = read_html(page, "https://forum.example.org/t/slow-builds/42")
    assert_in_order(
        reading,
        "> alice:\n>\n> Builds take forty minutes",
        "Try caching the dependencies.",
    )
    unnamed = read_html(page.replace(" alice:", " alice"), "https://forum.example.org/t/1")
    assert "> alice" not in unnamed


def _rendered_post(n: int, user: str, name: str, date: str, body: str) -> str:
    """One post of a Discourse topic as its app renders it: a header of the poster's name and
    user name (two links, each in a span of its own) and the post's date, the day alone on
    screen and the whole date in its title."""
    return (
        f'<div class="topic-post"><article id="post_{n}" class="boxed"><div class="row"><div '
        f'class="topic-avatar"><a class="main-avatar" href="/u/{user}" aria-hidden="true"><img '
        f'alt="" src="/a/{user}.png" class="avatar"></a></div><div class="topic-body">'
        '<div role="heading" aria-level="2" class="topic-meta-data"><div class="names">'
        f'<span class="first full-name"><a href="/u/{user}">{name}</a></span><span class='
        f'"second username"><a href="/u/{user}">{user}</a></span></div><div class="post-infos">'
        f'<a class="post-date" href="/t/pool-timeout/123/{n}"><span title="{date}" class='
        f'"relative-date">{date.split(",")[0]}</span></a></div></div><div class="regular '
        f'contents"><div class="cooked">{body}</div><section class="post-menu-area"><nav class='
        '"post-controls"><div class="actions"><button class="like" title="like this post">'
        '</button><button class="reply"><span class="d-button-label">Reply</span></button>'
        "</div></nav></section></div></div></div></article></div>"
    )


def test_a_rendered_topics_posts_read_under_their_headers() -> None:
    """Discourse's rendered topic writes each post's header as ``<div role="heading">`` of the
    poster's name and user name (two links, each in a span its stylesheet lays apart) and
    the post's date (the day alone on screen, the whole date in the element's title):
    trafilatura dropped it as a div of links, and the topic read as its posts' words with
    nothing saying who wrote which. Each header reads as a bold line of its words, the
    names apart and the date whole. Two bare links to one place elsewhere (an editor's
    split of one word) stay glued."""
    posts = "".join(
        _rendered_post(n, user, name, date, f"<p>{words} {P}</p>")
        for n, user, name, date, words in (
            (1, "alice", "Alice Martin", "Nov 14, 2023 10:13 am", "Since upgrading to 2.3"),
            (2, "bob", "Bob Chen", "Nov 14, 2023 11:02 am", "This is the keep-alive change."),
            (3, "alice", "Alice Martin", "Nov 15, 2023 9:40 am", "That was it, thank you."),
        )
    )
    page = (
        "<html><head><title>Pool timeout after upgrading to 2.3 - Help - Example Forum</title>"
        '</head><body><div id="main-outlet"><div id="topic-title"><h1><a href="/t/pool-timeout/'
        '123" class="fancy-title">Pool timeout after upgrading to 2.3</a></h1><a href="/c/help">'
        'Help</a></div><div class="posts"><section id="topic"><div class="post-stream">'
        f"{posts}</div></section></div><p>Our <a href='/m'>mis</a><a href='/m'>sion</a> is "
        "help.</p></div></body></html>"
    )
    reading = read_html(page, "https://forum.example.org/t/pool-timeout/123")
    assert_in_order(
        reading,
        "**Alice Martin alice Nov 14, 2023 10:13 am**\n\nSince upgrading to 2.3",
        "**Bob Chen bob Nov 14, 2023 11:02 am**\n\nThis is the keep-alive change.",
        "**Alice Martin alice Nov 15, 2023 9:40 am**\n\nThat was it, thank you.",
    )
    split = "<html><body><main><h1>Ours</h1><p>" + P + "Our <a href='/m'>mis</a><a href='/m'>"
    assert "[mis](https://forum.example.org/m)[sion]" in read_html(
        split + "sion</a> is help.</p></main></body></html>", "https://forum.example.org/about"
    )


def test_a_short_text_under_a_title_naming_a_year_but_no_day_keeps_its_words() -> None:
    """A short date reads as its title's whole date ("3h" under "Nov 14, 2023 10:13 am", as
    before), but a title naming a year and no day is no date: "300 m" under "Built in 2019"
    read "Built in 2019", the tower's height lost for its tooltip."""
    page = (
        "<html><body><main><h1>Towers</h1><p>" + P + " The tower stands <span title='Built in "
        "2019'>300 m</span> tall; <span title='Apple 2020 report'>Apple</span> paid for it; its "
        "last visit <span title='Nov 14, 2023 10:13 am'>3h</span>.</p></main></body></html>"
    )
    reading = read_html(page, "https://example.org/towers")
    assert "stands 300 m tall; Apple paid for it" in reading
    assert "last visit Nov 14, 2023 10:13 am." in reading


def test_a_topic_read_as_a_thread_keeps_its_title() -> None:
    """Where trafilatura keeps one post of a topic, the thread's own reading stands in (each
    post, in order), and it began at the first post's header: the topic's title, the page's
    ``<h1>`` above the posts, was lost. It heads the thread's reading now."""
    bodies = (
        "<p>Since upgrading to 2.3 our workers hit <code>PoolTimeout</code> after a few minutes "
        "under load. The pool is configured with <code>max_connections=20</code> and we run "
        "eight workers on each host.</p><p>Has anyone seen this? The traceback points at the "
        "acquire call, and the pool metrics show every connection checked out.</p>",
        "<p>This is the keep-alive change in 2.3: responses that are not read to the end keep "
        "their connection checked out. Make sure every response is closed, or use the client "
        "as a context manager.</p><p>We fixed the docs for this last week; the changelog entry "
        "explains it in more detail.</p>",
        "<p>That was it. We had a code path that returned early on a 404 without reading the "
        "body. Closing the response fixed the timeouts, and the pool stays at four or five.</p>",
    )
    posts = "".join(
        _rendered_post(n, user, user.title(), f"Nov {13 + n}, 2023 10:13 am", body)
        for n, user, body in zip((1, 2, 3), ("alice", "bob", "alice"), bodies, strict=True)
    )
    page = (
        "<html><head><title>Pool timeout after upgrading to 2.3 - Help - Example Forum</title>"
        '</head><body><div id="main-outlet"><div id="topic-title"><h1><a href="/t/pool-timeout/'
        '123" class="fancy-title">Pool timeout after upgrading to 2.3</a></h1><a href="/c/help">'
        'Help</a></div><div class="posts"><section id="topic"><div class="post-stream">'
        f"{posts}</div></section></div></div></body></html>"
    )
    reading = read_html(page, "https://forum.example.org/t/pool-timeout/123")
    assert_in_order(
        reading,
        "# Pool timeout after upgrading to 2.3\n\n**Alice alice Nov 14, 2023 10:13 am**",
        "Since upgrading to 2.3",
        "**Bob bob Nov 15, 2023 10:13 am**\n\nThis is the keep-alive change",
        "That was it.",
    )
