"""Rules for kinds of pages whose structure the extractors read without its meaning.

A question-and-answer page (Stack Overflow and the Stack Exchange sites, a Discourse topic
marked solved, a schema.org ``QAPage`` anywhere): the extractors read the question and the
answers as one run of paragraphs, with nothing saying where an answer begins, which one
was accepted, or how it was voted, and they drop every comment (trafilatura discards
anything of class ``comments``). :func:`mark_answers` writes a short heading at the head of
the question and of each answer ("**Answer (accepted, 42 votes)**") and lets their comments
be read, before the page is cleaned; the extractors then keep each part under its heading.

Site-independent signals only: schema.org's microdata (``itemtype`` ``Question`` and
``Answer``, ``itemprop`` ``acceptedAnswer`` / ``suggestedAnswer`` / ``upvoteCount``) and its
JSON-LD (a ``QAPage`` whose answers are found in the page by their first words), and the
class names Stack Exchange's engine and its clones write (``question``, ``answer``,
``accepted-answer``, ``js-vote-count``).

A product page: :func:`mark_prices` marks the element that shows the offer's price (see
there), so that its line is read where trafilatura would drop it. A live blog:
:func:`mark_updates` opens each update with the time it was posted. A page's table of
contents (:func:`drop_contents`) and a paywall's prompt over an article
(:func:`drop_paywall_prompts`) are dropped rather than read as its text.

Each runs only where the page's source holds what it looks for, and on a page of bounded
size (``_convert.html_to_markdown``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from lxml import etree  # type: ignore[import-untyped]

# A page is read as a Q&A only with one question on it: a FAQ (schema.org's FAQPage, or an
# accordion of class "question"/"answer" pairs) holds many, each its own answer, and reads
# well as its headings.
_MAX_ANSWERS = 200  # answers marked at most (a page shows 30 to 50)
_MAX_JSON_LD_CHARS = 200_000  # a JSON-LD script read at most
_MAX_JSON_LD = 8  # JSON-LD scripts read at most
_MAX_CLIMB = 6  # levels from an answer's text up to its post, looked through at most
_MAX_SEARCHED = 5_000  # elements compared with a JSON-LD answer's words at most
_KEY_WORDS = 8  # a JSON-LD answer's first words, looked for in the page
_MIN_ANSWER_WORDS = 3  # words an answer holds at least

_TOKEN = re.compile(r"[^\s]+")
_WORD = re.compile(r"\w+")
_VOTES = re.compile(r"[+-\u2212]?\d[\d,]{0,12}")
_SCHEMA = re.compile(r"^https?://schema\.org/(\w+)$", re.IGNORECASE)
# Class tokens of an answer's vote count (Stack Exchange's; older themes', Askbot's, OSQA's).
_VOTE_CLASSES = frozenset(("js-vote-count", "vote-count-post", "vote-count", "votes-count"))
# Class tokens that hide an element in the frameworks these sites use (Stack Exchange writes
# every answer's "accepted" check mark and hides it with d-none on all but the accepted one).
_HIDING_CLASSES = frozenset(("d-none", "hidden", "hide", "is-hidden", "sr-only"))
# The elements that may be a question or an answer (by microdata or class), and those of a
# schema.org type: found by libxml2 in one pass (a walk in Python over 50,000 elements,
# reading each one's attributes, took 0.2 s).
_PARTS = frozenset(("div", "article", "section", "li", "main", "td"))
_CANDIDATES = etree.XPath(
    "//*[@itemtype or @itemprop or contains(@class, 'nswer') or contains(@class, 'uestion')]"
)
_TYPED = etree.XPath("//*[@itemtype]")
_JSON_LD = etree.XPath("//script[@type='application/ld+json']")
_BODY_CLASS = re.compile(r"^(?:js-)?post-?(?:body|text)$")
_MARK = re.compile(r"(?:Question|Answer)(?: \(|$)")
_INLINE = frozenset(("span", "a", "b", "i", "em", "strong", "meta", "link"))


@dataclass
class Found:
    """The elements each pass looks at, in document order, found in one walk of the page
    (:func:`find`) rather than by a search of the whole tree each: the candidates for a
    question or an answer, the elements of a schema.org type, the JSON-LD scripts, the time
    stamps, and the elements whose class or id may name a table of contents or a paywall.
    Once a pass changes the tree they may be out of date (an element moved or dropped):
    ``current`` is then false, and the later passes search the tree themselves."""

    parts: list[Any] = field(default_factory=list)
    typed: list[Any] = field(default_factory=list)
    scripts: list[Any] = field(default_factory=list)
    times: list[Any] = field(default_factory=list)
    contents: list[Any] = field(default_factory=list)
    paywalls: list[Any] = field(default_factory=list)
    current: bool = True


def _scripts(tree: Any, found: Found | None) -> list[Any]:
    """The page's JSON-LD scripts."""
    return _JSON_LD(tree) if found is None else found.scripts


def _classes(element: Any) -> set[str]:
    return set(_TOKEN.findall((element.get("class") or "")[:1_000].lower()))


def _types(element: Any) -> set[str]:
    """The schema.org types of ``element``'s ``itemtype``, lowercased."""
    found = set()
    for token in _TOKEN.findall((element.get("itemtype") or "")[:1_000]):
        match = _SCHEMA.match(token)
        if match:
            found.add(match.group(1).lower())
    return found


def _props(element: Any) -> set[str]:
    return set(_TOKEN.findall((element.get("itemprop") or "")[:1_000].lower()))


def _is_question(element: Any) -> bool:
    return "question" in _types(element) or "question" in _classes(element)


def _is_answer(element: Any) -> bool:
    return (
        "answer" in _types(element)
        or not _props(element).isdisjoint(("acceptedanswer", "suggestedanswer"))
        or not _classes(element).isdisjoint(("answer", "accepted-answer"))
    )


def _outermost(elements: list[Any]) -> list[Any]:
    chosen = set(elements)
    return [el for el in elements if not any(up in chosen for up in el.iterancestors())]


def _accepted(answer: Any) -> bool:
    if "acceptedanswer" in _props(answer) or "accepted-answer" in _classes(answer):
        return True
    for el in answer.iter():
        cls = _classes(el)
        if any("accepted-answer-indicator" in c for c in cls) and cls.isdisjoint(_HIDING_CLASSES):
            return True
    return False


def _votes(post: Any, skip: Any = None) -> str | None:
    """The vote count ``post`` shows (not one inside ``skip``, an answer in the question)."""
    for el in post.iter():
        if skip is not None and el in skip:
            continue
        if "upvotecount" in _props(el) or not _classes(el).isdisjoint(_VOTE_CLASSES):
            value = (el.get("data-value") or el.get("content") or el.text_content() or "").strip()
            if _VOTES.fullmatch(value):
                return value.replace("\u2212", "-")
    return None


def _count(votes: str) -> str:
    return f"{votes} vote" if votes in ("1", "-1", "+1") else f"{votes} votes"


def _label(kind: str, accepted: bool, votes: str | None) -> str:
    notes = ["accepted"] if accepted else []
    if votes is not None:
        notes.append(_count(votes))
    return f"{kind} ({', '.join(notes)})" if notes else kind


def _body_of(post: Any) -> Any:
    """The element holding ``post``'s own text: schema.org's ``itemprop="text"``, else a class
    naming a post's body (Stack Exchange's ``js-post-body``), else the post. trafilatura reads
    such bodies alone where it finds them, so what a post says of itself goes in there."""
    for el in post.iter():
        if el is post:
            continue
        if "text" in _props(el) and el.tag not in _INLINE:
            return el
        if any(_BODY_CLASS.search(c) for c in _classes(el)):
            return el
    return post


def _marker(text: str) -> Any:
    """A paragraph of ``text`` in bold: the extractors keep it where they read the post (an
    ``<h2>`` in each of a run of posts' bodies, trafilatura kept only the first)."""
    import lxml.html  # type: ignore[import-untyped]

    marker = lxml.html.Element("p")
    strong = lxml.html.Element("strong")
    strong.text = text
    marker.append(strong)
    return marker


def _is_marker(element: Any) -> bool:
    """Whether ``element`` is a mark :func:`_marker` wrote for a question or an answer."""
    return (
        element.tag == "p"
        and len(element) == 1
        and element[0].tag == "strong"
        and _MARK.match(element[0].text or "") is not None
        and not (element.text or "").strip()
    )


def _head(post: Any, text: str, comments: list[Any]) -> None:
    """Write ``text`` as a heading at the head of ``post``'s body, and move ``comments`` (its
    comment lists, each after its heading) to the body's end, where they stand in the page:
    after the post's text."""

    body = _body_of(post)
    heading = _marker(text)
    heading.tail = body.text
    body.text = None
    body.insert(0, heading)
    if body is not post:
        for element in comments:
            body.append(element)


def _open_comments(post: Any, marked: set[Any]) -> list[Any]:
    """Let the comment lists in ``post`` be read: trafilatura discards any element whose class
    or id names comments, the list, its items and the wrapper around them alike. Their class
    and id go (the "add a comment" link beside them keeps its own, and goes); each comment
    reads as a line "Comment (12 votes): ...". Lists of another of the ``marked`` parts
    inside ``post`` (an answer inside its question's element) are that part's. Returns the
    lists, in order."""
    opened: list[Any] = []
    for listing in list(post.iter("ul", "ol")):
        items = [li for li in listing if li.tag == "li"]
        named = any("comment" in c for c in _classes(listing)) or any(
            any("comment" in c for c in _classes(li)) for li in items
        )
        if not named or not items:
            continue
        if next((up for up in listing.iterancestors() if up in marked), None) is not post:
            continue
        scores = {item: _comment_score(item) for item in items}  # (before the classes go)
        for el in listing.iter():
            el.attrib.pop("class", None)
            el.attrib.pop("id", None)
        up = listing.getparent()
        while up is not None and up is not post:
            for name in ("class", "id"):
                if "comment" in (up.get(name) or "").lower():
                    del up.attrib[name]
            up = up.getparent()
        for item in items:
            # A comment's parts (its words, author, date) in divs and spans: one line of
            # text and links (trafilatura dropped an item whose words sat only in spans).
            for part in item.iter("div", "p"):
                part.tail = " " + (part.tail or "")
            etree.strip_tags(item, "div", "p", "span")
            # Each line says what it is: a heading over the list stood alone where a reading
            # dropped the list (readability-lxml drops a short one of links).
            votes = scores[item]
            label = "Comment: " if votes is None else f"Comment ({_count(votes)}): "
            item.text = label + (item.text or "").lstrip()
        opened.append(listing)
    return opened


def _comment_score(item: Any) -> str | None:
    """The votes a comment shows (Stack Exchange's ``comment-score``), which then go from its
    words (a bare "12" before them)."""
    for el in item.iter():
        if any("score" in c for c in _classes(el)):
            value = " ".join(el.text_content().split())
            if _VOTES.fullmatch(value):
                parent = el.getparent()
                if parent is not None:
                    el.drop_tree()
                return value
            return None
    return None


def _json_ld_answers(tree: Any, found: Found | None) -> list[tuple[str, bool, str | None]]:
    """The answers a ``QAPage`` in the page's JSON-LD lists: (first words, accepted, votes)."""
    listed: list[tuple[str, bool, str | None]] = []
    for script in _scripts(tree, found)[:_MAX_JSON_LD]:
        text = script.text or ""
        if len(text) > _MAX_JSON_LD_CHARS or "QAPage" not in text:
            continue
        try:
            data = json.loads(text)
        except ValueError:
            continue
        for page in data if isinstance(data, list) else [data]:
            if not isinstance(page, dict) or page.get("@type") != "QAPage":
                continue
            question = page.get("mainEntity")
            if not isinstance(question, dict):
                continue
            for prop, accepted in (("acceptedAnswer", True), ("suggestedAnswer", False)):
                answers = question.get(prop)
                for answer in answers if isinstance(answers, list) else [answers]:
                    if not isinstance(answer, dict) or not isinstance(answer.get("text"), str):
                        continue
                    key = " ".join(_WORD.findall(answer["text"].lower())[:_KEY_WORDS])
                    votes = answer.get("upvoteCount")
                    shown = str(votes) if isinstance(votes, int) else None
                    if len(key.split()) >= _MIN_ANSWER_WORDS:
                        listed.append((key, accepted, shown))
    return listed[:_MAX_ANSWERS]


def _leading_words(element: Any) -> str:
    pieces, size = [], 0
    for piece in element.itertext():
        pieces.append(piece)
        size += len(piece)
        if size >= 400:
            break
    return " ".join(_WORD.findall("".join(pieces).lower())[: _KEY_WORDS * 4])


def _post_of(element: Any) -> Any:
    """The post holding ``element`` (an answer's text): the nearest element around it that has
    a sibling of its tag and class (the other posts of the topic), else ``element``."""
    el = element
    for _ in range(_MAX_CLIMB):
        parent = el.getparent()
        if parent is None:
            break
        cls = el.get("class")
        if any(s is not el and s.tag == el.tag and s.get("class") == cls for s in parent):
            return el
        el = parent
    return element


def _located(tree: Any, answers: list[tuple[str, bool, str | None]]) -> list[tuple[Any, str]]:
    """The posts in the page holding the JSON-LD ``answers``, each with its heading; every other
    post of theirs after the question's is an answer too (Discourse's JSON-LD names only the
    accepted one of a topic's replies)."""
    keys = {key: (accepted, votes) for key, accepted, votes in answers}
    # The innermost element starting with each answer's words: met in document order, each
    # one inside the last found is deeper (a second copy of the words elsewhere is not).
    inner: dict[str, Any] = {}
    for count, el in enumerate(tree.iter("div", "article", "section", "li")):
        if count > _MAX_SEARCHED:
            break
        words = _leading_words(el)
        for key in keys:
            if words.startswith(key):
                found = inner.get(key)
                if found is None or any(up is found for up in el.iterancestors()):
                    inner[key] = el
    posts: dict[Any, str] = {}
    for key, el in inner.items():
        post = _post_of(el)
        if post not in posts:
            posts[post] = _label("Answer", *keys[key])
    if not posts:
        return []
    first = next(iter(posts))
    parent = first.getparent()
    if parent is not None and all(p.getparent() is parent for p in posts):
        group = [s for s in parent if s.tag == first.tag and s.get("class") == first.get("class")]
        if len(group) > len(posts) and group[0] not in posts:
            # The first post is the question's (a topic's opening post).
            return [(group[0], "Question")] + [(p, posts.get(p, "Answer")) for p in group[1:]]
    return list(posts.items())


def mark_answers(tree: Any, found: Found | None = None) -> None:
    """On a question-and-answer page, head the question and each answer with a short heading
    saying which it is (accepted, votes) and let their comments be read (see the module's
    docstring). Run on the parsed page before anything is dropped: the JSON-LD is in a
    script, the vote counts in elements the extractors pass over. ``found``: the page's
    elements of interest (see :func:`find`), else searched for here."""
    found = found if found is not None and found.current else None
    questions, answers = [], []
    for el in _CANDIDATES(tree) if found is None else found.parts:
        if el.tag not in _PARTS:
            continue
        if _is_answer(el):
            answers.append(el)
        elif _is_question(el):
            questions.append(el)
        if len(answers) > _MAX_ANSWERS or len(questions) > _MAX_ANSWERS:
            return
    answers = _outermost(answers)
    questions = _outermost(questions)
    marks: list[tuple[Any, str]] = []
    if answers:
        if len(questions) != 1:
            return
        question = questions[0]
        answers = [a for a in answers if len(_WORD.findall(a.text_content())) >= _MIN_ANSWER_WORDS]
        if not answers:
            return
        if question.find(".//h1") is None:
            inside = set(answers)
            skip = {d for a in inside for d in a.iter()}
            marks.append((question, _label("Question", False, _votes(question, skip))))
        for answer in answers:
            marks.append((answer, _label("Answer", _accepted(answer), _votes(answer))))
    else:
        listed = _json_ld_answers(tree, found)
        if not listed:
            return
        marks = _located(tree, listed)
    typed = _TYPED(tree) if found is None else found.typed
    if not marks or any("faqpage" in _types(el) for el in typed):
        return  # a FAQ: each question with its one answer, read as its headings
    if found is not None:
        found.current = False
    marked = {post for post, _ in marks}
    for post, label in marks:
        _head(post, label, _open_comments(post, marked))


# A product page's price (schema.org's Offer: price, lowPrice, highPrice): the visible element
# showing it is marked itemprop="price", as microdata marks it, for the reading of lines (see
# _convert._lines_as_paragraphs), which reads a line holding one wherever trafilatura would
# drop a div's own text.
_PRICE_PROPS = frozenset(("price", "lowprice", "highprice"))
_MAX_PRICES = 16  # prices taken from the JSON-LD at most
_MAX_PRICE_TEXT = 40  # the characters of an element shown holding a price, at most
_PRICE_TAGS = ("span", "div", "p", "strong", "b", "ins", "bdi", "data", "dd", "td")
_NUMBER = re.compile(r"\d(?:[\d.,\s\u00a0\u202f']*\d)?")


def _digits(value: str) -> str:
    return re.sub(r"\D", "", value)


def _offer_prices(node: Any, found: set[str], depth: int = 0) -> None:
    """The prices (as their digits) of the Product and Offer objects in a JSON-LD ``node``."""
    if depth > 8 or len(found) >= _MAX_PRICES:
        return
    if isinstance(node, list):
        for item in node[:_MAX_ANSWERS]:
            _offer_prices(item, found, depth + 1)
    elif isinstance(node, dict):
        for key, value in node.items():
            if key in ("price", "lowPrice", "highPrice") and isinstance(value, (str, int, float)):
                text = str(value).strip()
                if re.fullmatch(r"\d{1,9}(?:\.\d{1,4})?", text):
                    whole, _, cents = text.partition(".")
                    found.add(whole + (cents.ljust(2, "0") if cents else "00"))
                    if not cents.strip("0"):
                        found.add(whole)  # shown without cents: "$49"
            elif isinstance(value, (dict, list)) and key in ("offers", "@graph", "mainEntity"):
                _offer_prices(value, found, depth + 1)


def mark_prices(tree: Any, found: Found | None = None) -> None:
    """Mark the visible price of a product page: microdata marks it already (``itemprop``
    ``price``); a price the page's JSON-LD gives (a Product's offers) marks the shortest
    element whose words show that number ("$1,299.00" for 1299, "49,99 €" for 49.99).
    Run before the scripts go."""
    found = found if found is not None and found.current else None
    prices: set[str] = set()
    for script in _scripts(tree, found)[:_MAX_JSON_LD]:
        text = script.text or ""
        if len(text) > _MAX_JSON_LD_CHARS or ('"price"' not in text and "Price" not in text):
            continue
        try:
            _offer_prices(json.loads(text), prices)
        except (ValueError, RecursionError):
            continue
    if not prices:
        return
    for count, el in enumerate(tree.iter(*_PRICE_TAGS)):
        if count > _MAX_SEARCHED:
            break
        if not _PRICE_PROPS.isdisjoint(_props(el)):
            return  # the page's microdata marks its prices itself
        if len(el) or not el.text or len(el.text) > _MAX_PRICE_TEXT:
            continue  # an element of words alone, and short: the price as shown
        if any(_digits(number) in prices for number in _NUMBER.findall(el.text)):
            el.set("itemprop", "price")
            if found is not None:
                found.current = False


# A live blog's updates (a news site's "live" page, schema.org's LiveBlogPosting): each a
# block opening with the time it was posted, <time datetime="...">23:40</time> on a line of
# its own above its heading and paragraphs. trafilatura reads a div's own text only on a page
# short of paragraphs, so each time went and the updates read without their order in time.
_MAX_TIMES = 2_000  # times looked at, at most
_MAX_UPDATE_CLIMB = 3  # levels from a time up to its update, at most
_MAX_TIME_LINE = 120  # the characters of the line a time stands on, at most
_MIN_UPDATES = 2
_ISO_TIME = re.compile(
    r"\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2})?)?"
)
_UPDATE_BLOCKS = ("p", "h2", "h3", "h4", "blockquote", "ul", "ol")
_UPDATE_TAGS = frozenset(("div", "article", "section", "li", "header", "span"))
_TIMES = etree.XPath("//time[@datetime] | //*[@itemprop='datePublished'][@content]")


def _stamp(element: Any) -> str | None:
    """When ``element`` (a ``<time>``, or microdata's ``datePublished``) says it was posted."""
    value = (element.get("datetime") or element.get("content") or "").strip()
    return value if _ISO_TIME.fullmatch(value) else None


def _update_of(stamp: Any, holds: dict[Any, bool]) -> Any:
    """The update a time opens: the nearest element around it holding a heading or a
    paragraph besides it, within :data:`_MAX_UPDATE_CLIMB` levels, else ``None``. ``holds``
    keeps whether an element holds one, each element walked once (the elements the time
    stands in on the way up are no blocks: their tags are those of updates)."""
    el = stamp
    for _ in range(_MAX_UPDATE_CLIMB):
        el = el.getparent()
        if el is None or el.tag not in _UPDATE_TAGS:
            return None
        if el not in holds:
            blocks = (b for b in el.iter(*_UPDATE_BLOCKS) if b is not stamp)
            holds[el] = next(blocks, None) is not None
        if holds[el]:
            return el
    return None


def mark_updates(tree: Any, found: Found | None = None) -> None:
    """Read a live blog's update times: on a page of two or more sibling updates (one tag and
    class) each opening with a time stamp, the line the time stands on reads as a paragraph,
    "23:40 (2026-11-03T23:40)": its words, and the moment it names where they say less (a
    clock time, "5 min ago"). A teaser's time (an update whose heading is a link: a listing,
    related stories) and a byline's (no sibling updates) stay the extractor's to judge."""
    import lxml.html

    found = found if found is not None and found.current else None
    groups: dict[tuple[Any, str, str], list[tuple[Any, Any]]] = {}
    holds: dict[Any, bool] = {}
    for count, stamp in enumerate(_TIMES(tree) if found is None else found.times):
        if count >= _MAX_TIMES:
            return  # (a page of more: an archive, a calendar, no live blog)
        update = _update_of(stamp, holds)
        if update is None or _stamp(stamp) is None:
            continue
        parent = update.getparent()
        if parent is None:
            continue
        key = (parent, update.tag, update.get("class") or "")
        members = groups.setdefault(key, [])
        if not members or members[-1][0] is not update:
            members.append((update, stamp))
    for members in groups.values():
        if len(members) < _MIN_UPDATES:
            continue
        if any(
            heading.find(".//a[@href]") is not None
            for update, _ in members
            for heading in update.iter("h1", "h2", "h3", "h4")
        ):
            continue  # teasers: each heading links to its story
        if found is not None:
            found.current = False
        for update, stamp in members:
            when = _stamp(stamp) or ""
            shown = ""
            if stamp.tag == "time":
                shown = " ".join(stamp.text_content().split())[:_MAX_TIME_LINE]
                # Read once, at the head of its update.
                for child in list(stamp):
                    stamp.remove(child)
                stamp.text = None
            line = lxml.html.Element("p")
            strong = lxml.html.Element("strong")
            strong.text = shown or when
            line.append(strong)
            if shown and when not in shown:
                strong.tail = f" ({when})"
            # Where a reader of posts reads (see _body_of): Discourse's time stands in a
            # post's header, which trafilatura read after the first post's text.
            body = _body_of(update)
            if len(body) and _is_marker(body[0]):
                body[0].addnext(line)  # after the post's mark ("Answer (accepted)")
            else:
                line.tail, body.text = body.text, None
                body.insert(0, line)


# A page's table of contents (Docusaurus's "On this page", a theme's "Contents" box): a list
# of links to the page's own sections, which the reading appended after the text ("- [Create
# your first page](…#create-page)"): the headings it repeats are in the reading already.
_CONTENTS_NAME = re.compile(
    r"(?:^|[\s_-])toc(?:$|[\s_-])|table-?of-?contents|tableofcontents|on-this-page",
    re.IGNORECASE,
)
# What a table of contents' class or id holds: looked for in the page's source first.
CONTENTS_WORDS = ("toc", "Toc", "TOC", "able-of-contents", "ableOfContents", "on-this-page")
_CONTENTS_TAGS = ("div", "nav", "ul", "ol", "section", "aside")
_CONTENTS_KEYS = ("toc", "Toc", "TOC", "ontents", "on-this-page")  # in its class or id
# Any of them (one search: quicker than looking for each, see find).
_CONTENTS_KEY = re.compile("|".join(map(re.escape, _CONTENTS_KEYS)))


def _named(tags: tuple[str, ...], words: tuple[str, ...]) -> Any:
    """The search for elements of ``tags`` whose class or id holds one of ``words`` (a pass's
    own, when :func:`find`'s lists are out of date)."""
    return etree.XPath(
        "//*[@class or @id]["
        + " or ".join(f"self::{tag}" for tag in tags)
        + "]["
        + " or ".join(f"contains(@{name}, '{word}')" for name in ("class", "id") for word in words)
        + "]"
    )


_CONTENTS = _named(_CONTENTS_TAGS, _CONTENTS_KEYS)
_MAX_CONTENTS = 16  # tables of contents dropped at most
_MAX_CONTENTS_LABEL = 40  # the words besides its links a table of contents holds at most


def _is_contents(element: Any) -> bool:
    """Whether ``element`` is a table of contents: its class or id names one, it holds
    links, every one to a part of the page (``#…``), and no words but theirs and a label
    ("On this page")."""
    name = f"{element.get('class') or ''} {element.get('id') or ''}"[:1_000]
    if not _CONTENTS_NAME.search(name):
        return False
    links = 0
    for count, link in enumerate(element.iter("a")):
        if count > 500 or not (link.get("href") or "").startswith("#"):
            return False
        links += 1
    if not links:
        return False
    linked = sum(len(link.text_content()) for link in element.iter("a"))
    return len(element.text_content().strip()) - linked <= _MAX_CONTENTS_LABEL


def drop_contents(tree: Any, found: Found | None = None) -> None:
    """Drop the page's tables of contents (see :func:`_is_contents`), outermost first."""
    found = found if found is not None and found.current else None
    gone: set[Any] = set()
    for element in _CONTENTS(tree) if found is None else found.contents:
        if len(gone) >= _MAX_CONTENTS:
            return
        if element.getparent() is None or any(up in gone for up in element.iterancestors()):
            continue
        if _is_contents(element):
            element.drop_tree()
            gone.add(element)
            if found is not None:
                found.current = False


# A paywall's prompt over the article ("Subscribe to keep reading … Subscribe now"), which the
# reading took for the article's words, between its paragraphs.
_PAYWALL_NAME = re.compile(
    r"pay-?wall|reg-?wall|subscri(?:be|ption)-?wall|meter-?wall"
    r"|piano-?(?:offer|template|inline)|tp-(?:modal|backdrop|container)",
    re.IGNORECASE,
)
# What a paywall prompt's class or id holds: looked for in the page's source first.
PAYWALL_WORDS = ("wall", "Wall", "WALL", "piano", "tp-modal", "tp-backdrop", "tp-container")
_PAYWALL_KEY = re.compile("|".join(map(re.escape, PAYWALL_WORDS)))
_PAYWALL_TAGS = ("div", "section", "aside", "p", "form")
_PAYWALLS = _named(_PAYWALL_TAGS, PAYWALL_WORDS)
_CALL_TO_ACTION = re.compile(
    r"\b(?:subscri(?:be|ber|bers|ption)|sign (?:in|up)|log ?in|register|unlock|membership|"
    r"already a (?:subscriber|member)|keep reading|continue reading)\b",
    re.IGNORECASE,
)
_MAX_PROMPT_WORDS = 80  # the words of a paywall's prompt, at most (the article it hides: more)
_MAX_PROMPTS = 16


def drop_paywall_prompts(tree: Any, found: Found | None = None) -> None:
    """Drop a paywall's prompt: an element whose class or id names a paywall (or Piano's, a
    metered wall's), of :data:`_MAX_PROMPT_WORDS` words or fewer, whose link, button or
    heading asks the reader to subscribe or sign in. A paywall's class on the article's text
    itself (a wrapper of the words it hides) is no prompt: more words, no such link; it
    stays."""
    found = found if found is not None and found.current else None
    gone: set[Any] = set()
    for element in _PAYWALLS(tree) if found is None else found.paywalls:
        if len(gone) >= _MAX_PROMPTS:
            return
        name = f"{element.get('class') or ''} {element.get('id') or ''}"[:1_000]
        if not _PAYWALL_NAME.search(name) or element.getparent() is None:
            continue
        if any(up in gone for up in element.iterancestors()):
            continue
        text = element.text_content()
        if len(_WORD.findall(text[:5_000])) > _MAX_PROMPT_WORDS:
            continue
        asks = (
            _CALL_TO_ACTION.search(part.text_content())
            for part in element.iter("a", "button", "h1", "h2", "h3", "h4", "h5", "h6")
        )
        if any(asks):
            element.drop_tree()
            gone.add(element)
            if found is not None:
                found.current = False


def lost_answers(tree: Any, markdown: str) -> Any:
    """The element holding a question and its answers whose marks (see :func:`mark_answers`)
    the reading ``markdown`` lost in part, else ``None``: trafilatura takes the first post's
    body it finds for the article (the question), and on a page whose question is long no
    second reading runs, so the answers went whole. A comment's line counts as a mark: in
    trafilatura's reading an answer's list of comments went whole where the question's
    stayed (a list ending an answer's body, before its author's card), and the reading
    held each answer's text with none of the comments under it."""
    marks = [
        el
        for count, el in enumerate(tree.iter("p"))
        if count < _MAX_SEARCHED * 4 and _is_marker(el)
    ][: _MAX_ANSWERS + 1]
    if len(marks) < 2:
        return None
    comments = sum(
        1
        for count, el in enumerate(tree.iter("li"))
        if count < _MAX_SEARCHED * 4 and _COMMENT_LABEL.match(el.text or "")
    )
    if all(f"**{mark[0].text}**" in markdown for mark in marks) and comments <= len(
        _COMMENT_LINE.findall(markdown)
    ):
        return None
    # Their nearest common ancestor.
    common = list(marks[0].iterancestors())
    for mark in marks[1:]:
        ancestors = set(mark.iterancestors())
        common = [up for up in common if up in ancestors]
    return common[0] if common else None


# A comment's label (see _open_comments), at the head of its item and of its line read.
_COMMENT_LABEL = re.compile(r"Comment(?: \([^)\n]{1,24}\))?: ")
_COMMENT_LINE = re.compile(r"^[ \t]*[-*+] " + _COMMENT_LABEL.pattern, re.MULTILINE)


def trim_parts(container: Any) -> None:
    """Drop from (a copy of) a Q&A's ``container``, read whole, what its marks say already or
    what the site hides by class: the vote counts (each a bare number above its part) and
    elements of a hiding class (Stack Exchange's ``d-none`` comment count); and a link that
    is a button (``role="button"``: Stack Exchange's "Add a comment", a control, which the
    extractors' readings leave out too)."""
    doomed = [
        el
        for el in container.iter()
        if el is not container
        and (
            "upvotecount" in _props(el)
            or (el.tag == "a" and (el.get("role") or "").strip().lower() == "button")
            or not _classes(el).isdisjoint(_VOTE_CLASSES)
            or not _classes(el).isdisjoint(_HIDING_CLASSES)
        )
    ]
    for el in doomed:
        if el.getparent() is not None:
            el.drop_tree()


def find(tree: Any, limit: int) -> Found | None:
    """The elements the passes look at (see :class:`Found`), found as their searches find
    them (_CANDIDATES, _TYPED, _JSON_LD, _TIMES, _CONTENTS, _PAYWALLS), in one walk: each
    search walked the whole tree in libxml2, and a walk in Python reading each element's
    attribute names once costs less than the five of them. ``None`` on a page of more than
    ``limit`` elements (the walk stops there)."""
    found = Found()
    contents_tags, paywall_tags = frozenset(_CONTENTS_TAGS), frozenset(_PAYWALL_TAGS)
    contents_key, paywall_key = _CONTENTS_KEY.search, _PAYWALL_KEY.search
    for count, el in enumerate(tree.iter(etree.Element)):
        if count >= limit:
            return None
        names = el.keys()
        if not names:
            continue  # (most elements carry none the searches read)
        cls = el.get("class")
        if "itemtype" in names:
            found.parts.append(el)
            found.typed.append(el)
        elif "itemprop" in names or (cls is not None and ("nswer" in cls or "uestion" in cls)):
            found.parts.append(el)
        tag = el.tag
        if tag == "script" and el.get("type") == "application/ld+json":
            found.scripts.append(el)
        if (tag == "time" and "datetime" in names) or (
            "content" in names and el.get("itemprop") == "datePublished"
        ):
            found.times.append(el)
        ident = el.get("id")
        if cls is None and ident is None:
            continue
        if tag in contents_tags and (
            (cls is not None and contents_key(cls)) or (ident is not None and contents_key(ident))
        ):
            found.contents.append(el)
        if tag in paywall_tags and (
            (cls is not None and paywall_key(cls)) or (ident is not None and paywall_key(ident))
        ):
            found.paywalls.append(el)
    return found


# A scholarly page's authors (Highwire Press's citation_author, which arXiv, bioRxiv, PubMed
# Central and most journals write): at most this many read from its <meta>s, the text nodes
# holding the first one's name looked at, and the levels above one climbed for the list.
_MAX_AUTHORS = 500
_MAX_AUTHOR_HITS = 20
_MAX_AUTHOR_CLIMB = 4
_AUTHOR_LISTS = frozenset(("div", "p", "span", "ul", "ol", "dd", "td", "section", "header"))
_INLINE_ONLY = frozenset(("span", "a", "b", "i", "em", "strong", "sup", "sub", "small", "br"))
#: The attribute marking the element that lists a paper's authors (see :func:`mark_authors`).
AUTHORS_MARK = "data-webward-authors"


def mark_authors(tree: Any) -> None:
    """Mark the element that lists a scholarly page's authors, named in its ``citation_author``
    ``<meta>``s: trafilatura's precision mode drops it (arXiv's ``<div class="authors">`` is
    a line of links, one per author, and "Authors:"), and a paper read without who wrote it.
    The element holding the names of the first three (or all, if fewer), and little more,
    nearest the text that names the first, gets :data:`AUTHORS_MARK` (its links go before
    trafilatura reads it, see ``_convert._main_content``) and, holding inline elements
    alone, is read as a paragraph. Two authors at least: one is a byline's."""
    contents = tree.xpath("//meta[@name='citation_author']/@content")[:_MAX_AUTHORS]
    named = [(str(c), words) for c in contents if (words := _name_words(str(c)))]
    names = [words for _, words in named]
    if len(names) < 2:
        return
    wanted = min(len(names), 3)
    limit = 100 + 3 * sum(len(" ".join(words)) for words in names)
    # The first name's longest word as the page spells it: the first <meta> that names
    # someone (one may be empty or hold no word: a page's own, not a reason to fail).
    key = max((w for w in _WORD.findall(named[0][0]) if len(w) > 1), key=len, default="")
    if not key:
        return
    hits = tree.xpath("//body//text()[contains(., $key)]", key=key)[:_MAX_AUTHOR_HITS]
    for hit in hits:
        element = hit.getparent()
        if hit.is_tail and element is not None:
            element = element.getparent()
        for _ in range(_MAX_AUTHOR_CLIMB):
            if element is None or element.tag in ("body", "html"):
                break
            if element.tag in _AUTHOR_LISTS:
                text = element.text_content()[: limit + 1]
                if len(text) > limit:
                    break
                present = set(_WORD.findall(text.lower()))
                if sum(words <= present for words in names) >= wanted:
                    element.set(AUTHORS_MARK, "")
                    if element.tag in ("div", "span", "section", "header") and all(
                        child.tag in _INLINE_ONLY for child in element.iterdescendants()
                    ):
                        element.tag = "p"
                    return
            element = element.getparent()


def _name_words(name: str) -> frozenset[str]:
    """The words of an author's name as a ``citation_author`` gives it ("Smith, Jane"), each
    of two letters or more, in lower case: the page may show them in another order."""
    return frozenset(word for word in _WORD.findall(name.lower()) if len(word) > 1)
