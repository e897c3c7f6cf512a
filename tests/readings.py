"""One HTML page read as the converter reads it, for the tests of the kinds of pages it reads
for their structure (tests/test_reading_qa.py, _product, _live, _paywall, _contents)."""

from __future__ import annotations

from webward._convert import convert
from webward._settings import LimitsSettings

__all__ = ["P", "assert_in_order", "read_html"]

#: A sentence of prose, long enough that a paragraph of it reads as an article's.
P = (
    "The quick brown fox jumps over the lazy dog while the committee debates the finer points "
    "of procedure, and nobody in the room remembers who called the meeting in the first place. "
)


def read_html(page: str, url: str) -> str:
    """The text ``page`` (HTML, UTF-8) reads as at ``url``, with the default limits."""
    converted = convert(
        page.encode(),
        "text/html; charset=utf-8",
        url,
        truncated=False,
        include_links=False,
        limits=LimitsSettings(),
    )
    return converted.text  # type: ignore[union-attr]


def assert_in_order(reading: str, *parts: str) -> None:
    """Every one of ``parts`` is in ``reading``, in the order given."""
    at = [reading.find(part) for part in parts]
    assert -1 not in at, reading
    assert at == sorted(at), reading
