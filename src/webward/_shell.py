"""Script shells: which HTML readings need a browser, and what a scant reading says instead.

A reading with (nearly) no text has one of three causes, and only the first is worth a
headless browser (seconds of CPU and a page's worth of requests):

1. a script shell: the page's body holds no words of its own, and scripts to write them;
2. a page cut at the byte cap before its text (900 KB of inline styles ahead of the
   ``<body>``): the words lie past the cut, and a browser would read past the operator's cap,
   at a browser's cost, for a page that is no shell. The reading says so, with the next step
   (:func:`cut_note`);
3. a page whose words the extractors did not keep (all inside a form, a textarea, an unusual
   layout): :func:`webward._convert.convert` then hands over the body's plain words.

:func:`needs_browser` is the decision the fetch core asks, after conversion: by then cases 2
and 3 no longer look like case 1.
"""

from __future__ import annotations

from typing import Protocol

from ._content import HTML_TYPES, human_size
from ._settings import LimitsSettings

__all__ = [
    "SCANT_CHARS",
    "WORDY_BODY_CHARS",
    "Reading",
    "cut_note",
    "needs_browser",
    "scant",
    "solid",
]

#: A reading with fewer non-blank characters than this is scant: a shell's, or a failure's.
SCANT_CHARS = 100
#: A body with at least this many non-blank characters of its own words (scripts, styles and
#: page furniture left out) is no shell, whatever its scripts do.
WORDY_BODY_CHARS = 200


# What str.split() takes for whitespace in ASCII (the four separators \x1c-\x1f included).
_ASCII_SPACE = b" \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f"


def solid(text: str) -> int:
    """Characters other than whitespace: how much text there is, however it is laid out."""
    if text.isascii():  # the spaces deleted in one byte pass: four times as fast as split
        return len(text.encode("ascii").translate(None, _ASCII_SPACE))
    return len("".join(text.split()))


def scant(text: str) -> bool:
    # The start of a reading settles it (a reading of 100 kB is asked on every read, in the
    # converter and again in the serving process); the whole is counted only when it does not.
    return solid(text[: 4 * SCANT_CHARS]) < SCANT_CHARS and solid(text) < SCANT_CHARS


def cut_note(limits: LimitsSettings) -> str:
    """What a reading cut at the byte cap before any of its text says, the cut's marker last."""
    cap = human_size(limits.max_read_bytes)
    return (
        f"[the first {cap} of this page holds no readable text (scripts, styles or inline data "
        f"come first): webward reads at most {cap} of a page, and its text lies past the "
        "cut. Read another copy of the page (a print, AMP or text-only version, or the site's "
        "feed), or ask the operator to raise the limit]"
    )


class Reading(Protocol):
    """What the decision reads of a conversion (``_convert.Converted``, which imports this
    module: named by shape, so the two do not import each other)."""

    @property
    def kind(self) -> str: ...
    @property
    def media_type(self) -> str: ...
    @property
    def truncated(self) -> bool: ...
    @property
    def text(self) -> str: ...


def needs_browser(converted: Reading, body: bytes) -> bool:
    """Whether a plain HTML reading is a script shell's, to be rendered headless: scant, not cut
    at the byte cap, and its page carries scripts. A wordy page with a scant reading no longer
    reaches here scant (``convert`` gave its plain words), nor does a cut one (its note)."""
    if converted.kind != "text" or converted.media_type not in HTML_TYPES:
        return False
    if converted.truncated or not scant(converted.text):
        return False
    return b"<script" in body.lower()
