"""Windows: the part of a page's text handed over in one call, with its offsets.

Offsets count characters of the converted text (Python ``str`` code points). A page longer than
one window, or read from an offset past 0, starts with a header naming the window::

    showing characters 0\u201340000 of 81234; pass offset=40000 to continue

with an EN DASH (U+2013) between the numbers. The last window names its range without the
hint, and a page read whole has no header at all. Windows tile exactly: the bodies of the
windows from offset 0, each starting where the previous one ended, concatenate to the text.

A cut never separates ``\\r`` from ``\\n``, a backslash from the character it escapes
(``\\*``), a base character from its combining marks or joiner, the letters of an Indic
conjunct (joined by a virama), or the halves of a surrogate pair: the cut moves back, and
the next window starts where this one ended.

A call may ask for smaller windows (``max_chars``, 1 up to the operator's
``[limits] max_fetch_text_chars``): :func:`check_max_chars` validates it, and the header and
offsets stay exact whatever the size. :func:`approx_tokens` estimates how many tokens a text
costs a model, without a tokenizer: ASCII at 4 characters a token, other alphabetic scripts
(Latin with accents, Greek, Cyrillic, Arabic, Hebrew, Indic) at 2, and CJK, emoji and the rest
at 1 character a token, rounded up. It errs on the high side for English prose (real
tokenizers give about 4.5 characters a token there), so a window sized by it stays under a
client's cap.
"""

from __future__ import annotations

import re
import unicodedata

from ._capabilities import whole_number
from ._errors import InvalidInput, Reason
from ._models import Window

__all__ = [
    "BAD_OFFSET",
    "EMPTY_BODY",
    "NOTICES",
    "NO_TEXT",
    "approx_tokens",
    "check_max_chars",
    "check_offset",
    "make_window",
    "page_length",
    "shows_nothing",
    "token_weight",
    "tokens_for_weight",
    "window_header",
]

BAD_OFFSET = "offset must be a non-negative whole number"

#: What an empty response body reads as (:func:`webward._convert.convert`): a notice, not the
#: page's text. It is handed over whole in the window at offset 0 of a page of 0 characters,
#: never cut by ``max_chars`` nor paged (an offset past 0 is past the end of the page), and
#: no query finds a passage in it.
EMPTY_BODY = "[the server sent an empty body: there is nothing to read at this URL]"

#: What a body that reads as no text at all reads as (the fetch core puts it in place of the
#: empty reading): a page of empty elements, text only in closed dialogs or hidden elements,
#: whitespace. A notice as :data:`EMPTY_BODY` is, so that an agent does not take an empty
#: window for a tool's fault or a page it failed to read.
NO_TEXT = (
    "[webward found no text to read on this page: nothing in its body reads as words, "
    "outside scripts, styles, graphics, frames and hidden elements]"
)
# A character a reader sees: not a blank, a control, nor a format character (a direction
# mark, a joiner, a byte-order mark, an invisible operator), which show nothing on their own.
_SEEN = re.compile(
    r"[^\s\x00-\x1f\x7f-\x9f\xad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb]"
)


def shows_nothing(text: str) -> bool:
    """Whether ``text`` holds no character a reader sees (the search ends at the first)."""
    return _SEEN.search(text) is None


#: The notices that stand for a page's text (0 characters long, never paged nor searched).
NOTICES = frozenset({EMPTY_BODY, NO_TEXT})


def page_length(text: str) -> int:
    """How many characters long the page ``text`` stands for is: 0 for a notice."""
    return 0 if text in NOTICES else len(text)


# How far a cut may move back; past this the text is pathological and the plain cut stands.
_MAX_BACKOFF = 32
# Joiners and variation selectors bind to their neighbours like combining marks do.
_BINDING = {"\u200d", "\u034f", "\ufe0e", "\ufe0f"}


def check_offset(value: object) -> int:
    """A validated offset: a whole number >= 0 (``_capabilities.whole_number``: an ``int``,
    a float with no fraction, a string of ASCII digits).

    ``None`` means "not given" and is 0. Anything else raises
    ``InvalidInput("offset must be a non-negative whole number")``.
    """
    if value is None:
        return 0
    number = whole_number(value)
    if number is None or number < 0:
        raise InvalidInput(BAD_OFFSET, reason=Reason.BAD_OFFSET)
    return number


def check_max_chars(value: object, limit: int) -> int:
    """A validated window size: a whole number from 1 to ``limit`` (the operator's
    ``[limits] max_fetch_text_chars``). ``None`` means "not given" and is ``limit``."""
    if value is None:
        return limit
    number = whole_number(value)
    if number is None or not 1 <= number <= limit:
        raise InvalidInput(
            f"max_chars must be a whole number from 1 to {limit}", reason=Reason.BAD_MAX_CHARS
        )
    return number


# U+0080..U+2FFF: accented Latin, Greek, Cyrillic, Hebrew, Arabic, Indic and the like.
_TWO_PER_TOKEN = re.compile("[\\u0080-\\u2fff]+")
_ASCII_RUN = re.compile("[\\x00-\\x7f]+")


def approx_tokens(text: str) -> int:
    """About how many tokens ``text`` costs a model (see the module docstring)."""
    return tokens_for_weight(token_weight(text))


def token_weight(text: str) -> int:
    """Four times the tokens ``text`` costs, before rounding: a sum over its characters, so
    the weight of a text is the sum of its pieces' (a window's is computed once, and its
    envelope's added per call)."""
    if text.isascii():
        return len(text)
    # The other characters alone, then sorted: the regex skips ASCII runs whole, and a window
    # of English with a few dashes in it (its header has one) costs 0.03 ms rather than 0.6.
    other = _ASCII_RUN.sub("", text)
    two = sum(map(len, _TWO_PER_TOKEN.findall(other)))
    ascii_chars, one = len(text) - len(other), len(other) - two
    return ascii_chars + 2 * two + 4 * one


def tokens_for_weight(weight: int) -> int:
    """The tokens of a text of ``weight`` (:func:`token_weight`), rounded up."""
    return -(-weight // 4)


def _binds_left(ch: str) -> bool:
    """True if ``ch`` belongs with the character before it: marks, joiners, selectors, an
    emoji's skin tone, the vowel and final jamo of a Hangul syllable spelt in parts."""
    if ch in _BINDING or "\udc00" <= ch <= "\udfff":
        return True
    if (
        "\U0001f3fb" <= ch <= "\U0001f3ff"
        or "\u1160" <= ch <= "\u11ff"
        or "\ud7b0" <= ch <= "\ud7ff"
    ):
        return True
    return unicodedata.combining(ch) != 0 or unicodedata.category(ch) in ("Mn", "Mc", "Me")


def _joins_a_conjunct(before: str, after: str) -> bool:
    """Whether a virama (``before``, combining class 9) joins ``after``, a letter, into one
    conjunct: Devanagari's "\u0915\u094d\u0937" is one character a reader sees, and a cut after the
    virama left a half letter at the end of one window and a whole one at the start of the
    next (Unicode's grapheme rule GB9c)."""
    return unicodedata.combining(before) == 9 and unicodedata.category(after) == "Lo"


def _regional(ch: str) -> bool:
    return "\U0001f1e6" <= ch <= "\U0001f1ff"


def _splits_a_flag(text: str, end: int) -> bool:
    """Whether ``end`` falls inside a flag: two regional indicators, paired from the left."""
    if not (_regional(text[end - 1]) and _regional(text[end])):
        return False
    run = 0
    while run < end and _regional(text[end - 1 - run]) and run <= _MAX_BACKOFF:
        run += 1
    return run % 2 == 1


def _odd_backslashes(text: str, end: int) -> bool:
    count = 0
    i = end - 1
    while i >= 0 and text[i] == "\\" and count <= _MAX_BACKOFF:
        count += 1
        i -= 1
    return count % 2 == 1


def _cut(text: str, offset: int, limit: int) -> int:
    """Where a window that starts at ``offset`` and may hold ``limit`` characters ends."""
    end = offset + limit
    if end >= len(text):
        return len(text)
    for _ in range(_MAX_BACKOFF):
        if end - 1 <= offset:
            break  # a window always makes progress, whatever the text
        before, after = text[end - 1], text[end]
        if (
            (before == "\r" and after == "\n")
            or _binds_left(after)
            or before == "\u200d"
            or _joins_a_conjunct(before, after)
            or ("\ud800" <= before <= "\udbff")
            or (before == "\\" and _odd_backslashes(text, end))
            or _splits_a_flag(text, end)
        ):
            end -= 1
            continue
        break
    return end


def window_header(offset: int, end: int, total: int) -> str:
    """``showing characters <from>\u2013<to> of <total>``, then ``; pass offset=<to> to continue``
    unless the window reaches the end of the text."""
    header = f"showing characters {offset}\u2013{end} of {total}"
    if end < total:
        header += f"; pass offset={end} to continue"
    return header


def make_window(text: str, offset: int, max_chars: int) -> tuple[str, Window]:
    """The window of ``text`` starting at ``offset``: its text (with the header and a blank
    line when the page does not fit one call) and its :class:`~webward._models.Window`.

    An offset at or past the end of a non-empty text raises ``InvalidInput`` naming the page's
    length; offset 0 of an empty text is an empty window. The notice of an empty body
    or of a page with no text (:data:`NOTICES`) is no page text: the page is 0 characters long,
    and its window at offset 0 is the notice whole, whatever ``max_chars``.
    """
    offset = check_offset(offset)
    if max_chars < 1:
        raise ValueError("max_chars must be at least 1")  # a settings error, not user input
    total = page_length(text)
    notice = text in NOTICES
    if offset >= total and not offset == total == 0:
        digits = str(offset)  # a model's 1e300 is not echoed in 301 digits
        shown = digits if len(digits) <= 20 else f"{digits[:6]}… ({len(digits)} digits)"
        raise InvalidInput(
            f"offset {shown} is past the end of the page, which is {total} characters long"
            + (f"; pass an offset below {total}" if total else ""),
            reason=Reason.OFFSET_PAST_END,
        )
    if offset == 0 and (total <= max_chars or notice):
        return text, Window(offset=0, end=total, total=total, next_offset=None)
    end = _cut(text, offset, max_chars)
    window = Window(offset=offset, end=end, total=total, next_offset=end if end < total else None)
    return f"{window_header(offset, end, total)}\n\n{text[offset:end]}", window
