"""Windows: the exact header, exact tiling, safe cut points, and offsets refused by name."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from webward._convert import EMPTY_BODY
from webward._errors import InvalidInput
from webward._models import Window
from webward._window import _cut, check_offset, make_window, token_weight, window_header

DASH = "\u2013"
HEADER = re.compile(
    r"showing characters (\d+)\u2013(\d+) of (\d+)(; pass offset=(\d+) to continue)?"
)


def read_all(text: str, max_chars: int) -> list[tuple[str, Window]]:
    """Every window of ``text``, following next_offset from 0."""
    windows = [make_window(text, 0, max_chars)]
    while windows[-1][1].next_offset is not None:
        windows.append(make_window(text, windows[-1][1].next_offset, max_chars))
        assert len(windows) <= len(text) + 1
    return windows


def body_of(window_text: str, window: Window, whole: bool) -> str:
    """The window text without its header line and blank line."""
    if whole:
        return window_text
    header, sep, body = window_text.partition("\n\n")
    assert sep == "\n\n"
    assert header == window_header(window.offset, window.end, window.total)
    return body


def test_page_under_the_cap_has_no_paging_note() -> None:
    """A page that fits one window comes back as it is, with no header."""
    text, window = make_window("hello world", 0, 40_000)
    assert text == "hello world"
    assert window == Window(offset=0, end=11, total=11, next_offset=None)


def test_first_window_of_a_long_page_has_the_exact_header() -> None:
    """The first window names its range and how to continue, with an EN DASH."""
    page = "a" * 81_234
    text, window = make_window(page, 0, 40_000)
    assert text.startswith(
        f"showing characters 0{DASH}40000 of 81234; pass offset=40000 to continue\n\n"
    )
    assert text.endswith("a" * 40_000)
    assert (
        len(text)
        == len(f"showing characters 0{DASH}40000 of 81234; pass offset=40000 to continue\n\n")
        + 40_000
    )
    assert window == Window(offset=0, end=40_000, total=81_234, next_offset=40_000)


def test_last_window_names_its_range_without_a_hint() -> None:
    """The last window says where it is but not how to continue."""
    page = "b" * 81_234
    text, window = make_window(page, 80_000, 40_000)
    assert text == f"showing characters 80000{DASH}81234 of 81234\n\n" + "b" * 1234
    assert window == Window(offset=80_000, end=81_234, total=81_234, next_offset=None)


def test_short_page_read_from_an_offset_names_the_range() -> None:
    """A page under the cap read from offset > 0 still says which part it is."""
    text, window = make_window("0123456789", 4, 40_000)
    assert text == f"showing characters 4{DASH}10 of 10\n\n456789"
    assert window.next_offset is None


def test_offset_past_the_end_is_refused_with_the_page_length() -> None:
    """An offset beyond the text says so and gives the page's length."""
    with pytest.raises(InvalidInput) as info:
        make_window("x" * 81_234, 90_000, 40_000)
    assert (
        str(info.value)
        == "offset 90000 is past the end of the page, which is 81234 characters long;"
        " pass an offset below 81234"
    )
    assert info.value.code == "invalid_input"


def test_offset_at_the_end_of_a_non_empty_page_is_refused() -> None:
    """Offset == length names no character of a non-empty page."""
    with pytest.raises(
        InvalidInput, match="offset 5 is past the end of the page, which is 5 characters long"
    ):
        make_window("abcde", 5, 3)


def test_an_offset_is_a_whole_number_however_it_is_written() -> None:
    """An int, a float with no fraction (JSON Schema's integer) and a string of ASCII digits
    all read as the same offset."""
    assert [check_offset(v) for v in (40_000, 40_000.0, "40000", " 40000 ", None)] == [
        40_000,
        40_000,
        40_000,
        40_000,
        0,
    ]


def test_empty_page_at_offset_zero_is_an_empty_window() -> None:
    """Offset 0 of an empty page is fine: an empty text, no header."""
    assert make_window("", 0, 40_000) == ("", Window(offset=0, end=0, total=0, next_offset=None))
    with pytest.raises(InvalidInput, match="which is 0 characters long"):
        make_window("", 1, 40_000)


@pytest.mark.parametrize("max_chars", [1, 10, 68, 69, 40_000])
def test_an_empty_bodys_notice_is_no_page_text(max_chars: int) -> None:
    """The notice an empty body reads as is handed over whole in the window of a page of 0
    characters, whatever max_chars, and no offset past 0 pages into it: it was paged as the
    page's text ("showing characters 0-10 of 69", "[the serve")."""
    assert make_window(EMPTY_BODY, 0, max_chars) == (
        EMPTY_BODY,
        Window(offset=0, end=0, total=0, next_offset=None),
    )
    with pytest.raises(InvalidInput, match="which is 0 characters long"):
        make_window(EMPTY_BODY, 1, max_chars)


@pytest.mark.parametrize(
    "value",
    [-1, True, False, -1.0, 2.5, float("nan"), float("inf"), "abc", "-3", "1e3", "", " ", "٣", []],
)
def test_bad_offsets_are_refused_by_name(value: object) -> None:
    """Negative numbers, bools, fractions and non-numeric strings are not offsets."""
    with pytest.raises(InvalidInput) as info:
        check_offset(value)
    assert str(info.value) == "offset must be a non-negative whole number"


@pytest.mark.parametrize(
    ("value", "expected"), [(0, 0), (7, 7), ("12", 12), (" 40000 ", 40000), (None, 0)]
)
def test_good_offsets_are_accepted(value: object, expected: int) -> None:
    """Whole numbers, digit strings and "not given" are offsets."""
    assert check_offset(value) == expected


def test_make_window_checks_the_offset_too() -> None:
    """make_window refuses a bad offset with the same message."""
    with pytest.raises(InvalidInput, match="offset must be a non-negative whole number"):
        make_window("abc", -1, 10)  # type: ignore[arg-type]


def test_cut_never_splits_crlf() -> None:
    """A window ending between \\r and \\n ends before the \\r instead."""
    page = "abc\r\ndef" * 3
    text, window = make_window(page, 0, 4)
    assert window.end == 3
    assert text.endswith("\n\nabc")
    following, _ = make_window(page, window.end, 4)
    assert following.endswith("\n\n\r\nde")


def test_cut_never_splits_a_markdown_escape() -> None:
    """A window never ends on the backslash of ``\\*``; an escaped backslash may end it."""
    _, window = make_window("abc\\*def", 0, 4)
    assert window.end == 3
    _, window = make_window("ab\\\\cdef", 0, 4)  # ends after "\\\\": a whole escape
    assert window.end == 4


def test_cut_keeps_combining_marks_with_their_base() -> None:
    """A combining accent stays with the letter it modifies."""
    page = "abce\u0301fgh"  # e + COMBINING ACUTE ACCENT
    _, window = make_window(page, 0, 4)
    assert window.end == 3
    _, window = make_window("ab\U0001f469\u200d\U0001f4bbcd", 0, 3)  # woman ZWJ laptop
    assert window.end == 2


def test_cut_never_splits_a_surrogate_pair() -> None:
    """Astral characters are one code point and are never cut; a surrogate pair held as two
    code points (text decoded with ``surrogatepass``) stays together too."""
    pair = "\ud83d\ude00"  # GRINNING FACE as UTF-16 halves
    _, window = make_window("abc" + pair + "def", 0, 4)
    assert window.end == 3
    following, _ = make_window("abc" + pair + "def", window.end, 4)
    assert following.endswith("\n\n" + pair + "de")
    text, window = make_window("abc\U0001f600def", 0, 4)
    assert window.end == 4 and text.endswith("abc\U0001f600")


def test_windows_always_make_progress() -> None:
    """A one-character window moves forward even through text made only of escapes."""
    windows = read_all("\\\\\\\\\r\n\r\n", 1)
    assert [w.end - w.offset for _, w in windows] == [1] * 8


def test_zero_max_chars_is_a_programming_error() -> None:
    """max_chars comes from settings; zero is a bug, not user input."""
    with pytest.raises(ValueError):
        make_window("abc", 0, 0)


# Texts made of pieces that tempt a bad cut (CRLF, escapes, combining marks, joiners, astral
# characters) mixed with any other characters.
TEXT = st.lists(
    st.one_of(
        st.sampled_from(
            ["\r\n", "\r", "\n", "\\", "\\*", "*", "e\u0301", "\u200d", "\U0001f600", "\ufe0f"]
        ),
        st.characters(codec="utf-8"),
    ),
    max_size=300,
).map("".join)


@settings(max_examples=300, deadline=None)
@given(text=TEXT, max_chars=st.integers(min_value=1, max_value=120))
def test_windows_tile_the_text_exactly(text: str, max_chars: int) -> None:
    """Concatenating every window's body gives the text back; headers are exact; only the last
    window lacks the continue hint."""
    windows = read_all(text, max_chars)
    whole = len(text) <= max_chars
    assert "".join(body_of(t, w, whole) for t, w in windows) == text
    position = 0
    for index, (window_text, window) in enumerate(windows):
        assert window.offset == position
        assert window.total == len(text)
        assert 0 < window.end - window.offset <= max_chars or len(text) == 0
        last = index == len(windows) - 1
        assert (window.next_offset is None) == last
        if not whole:
            match = HEADER.fullmatch(window_text.split("\n\n", 1)[0])
            assert match is not None
            assert int(match.group(1)) == window.offset and int(match.group(2)) == window.end
            assert (match.group(4) is None) == last
            if not last:
                assert int(match.group(5)) == window.end == window.next_offset
        position = window.end
    assert position == len(text)


@settings(max_examples=200, deadline=None)
@given(text=TEXT, max_chars=st.integers(min_value=2, max_value=60))
def test_cuts_do_not_split_crlf_or_escapes(text: str, max_chars: int) -> None:
    """No window but the last ends inside \\r\\n or on an escaping backslash, unless moving
    back would leave it empty (a window always makes progress)."""
    for _, window in read_all(text, max_chars)[:-1]:
        end, offset = window.end, window.offset
        run = len(text[offset:end]) - len(text[offset:end].rstrip("\\"))
        split_crlf = text[end - 1] == "\r" and text[end] == "\n"
        split_escape = run % 2 == 1
        could_move = end - 1 > offset and offset + max_chars - end < 32
        assert not (split_crlf or split_escape) or not could_move


@given(text=st.text())
@settings(max_examples=300, deadline=None)
def test_token_weight_is_a_sum_over_characters(text: str) -> None:
    """Whatever the mix: 1 per ASCII character, 2 up to U+2FFF, 4 above (see approx_tokens)."""
    expected = sum(1 if ord(ch) < 0x80 else 2 if ord(ch) <= 0x2FFF else 4 for ch in text)
    assert token_weight(text) == expected
    assert token_weight("a" * 1000 + DASH) == 1002  # a window's header with its EN DASH


def test_an_answer_is_remembered_from_its_second_call_on() -> None:
    """A page read once keeps no copy of its window; an answer asked again is kept, and the
    same answer is handed out from then on, equal to a fresh one."""
    from webward._cache import CachedPage
    from webward._convert import Converted
    from webward._web import _Answers

    page = Converted("text", "text/plain", "", "word " * 20_000, (), (), False)
    cached = CachedPage("https://example.org/", "https://example.org/", 200, page)
    answers = _Answers()
    url = "https://example.org/"
    first, second, third = (answers.get(cached, url, 0, 40_000, False) for _ in range(3))
    assert first == second == third
    assert first is not second  # made again: the first call kept nothing
    assert second is third  # remembered since the second call
    # Another request of the same reading (another window, links asked) is its own answer.
    assert answers.get(cached, url, 40_000, 40_000, False).page.window.offset == 40_000
    assert answers.get(cached, url, 0, 40_000, True).page.links == ()


def test_windows_keep_flags_skin_tones_and_hangul_syllables_whole() -> None:
    """A cut never falls inside a flag (a pair of regional indicators, paired from the
    left), between an emoji and its skin tone, or inside a Hangul syllable spelt in jamo;
    the windows still tile the text exactly."""
    text = "🇺🇸🇫🇷🇩🇪 👍🏽👋🏿 \u1100\u1161\u11a8\u1102\u1162 " * 20
    units = ["🇺🇸", "🇫🇷", "🇩🇪", "👍🏽", "👋🏿", "\u1100\u1161\u11a8", "\u1102\u1162"]
    for size in range(3, 9):  # the longest unit fits (a window always makes progress)
        offset, pieces = 0, []
        while offset < len(text):
            end = _cut(text, offset, size)
            assert end > offset
            pieces.append(text[offset:end])
            offset = end
        assert "".join(pieces) == text
        for piece in pieces:
            for unit in units:  # a piece holds whole units: none starts or ends mid-unit
                for i in range(1, len(unit)):
                    assert not piece.endswith(unit[:i]) or piece.endswith(unit), (size, piece)
                    assert not piece.startswith(unit[i:]) or piece.startswith(unit), (size, piece)


def test_cut_keeps_an_indic_conjunct_whole() -> None:
    """A virama joins the letter after it into one conjunct (\u0915\u094d\u0937, "ksha"): the
    cut falls before the conjunct, not after its virama, which left a half letter at one
    window's end and the other letter at the next one's start."""
    word = "\u0928\u0915\u094d\u0937\u0924\u094d\u0930"  # nakshatra
    _, window = make_window(word, 0, 3)
    assert window.end == 1
    _, window = make_window(word, 0, 6)
    assert window.end == 4
    assert "".join(t.split("\n\n", 1)[1] for t, _ in read_all(word, 3)) == word
