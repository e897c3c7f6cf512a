"""Charsets as the read path meets them: declarations that hold for most of a page but not
every byte (``webward._charset``)."""

from __future__ import annotations

import pytest

from webward._charset import decode_text

FRENCH = "<p>Le café crème est très bon, à bientôt.</p>"


@pytest.mark.parametrize(
    ("label", "html"),
    [("utf-8", False), (None, True)],
    ids=["header", "meta"],
)
def test_a_short_page_declared_utf8_with_one_stray_byte_reads_as_utf8(
    label: str | None, html: bool
) -> None:
    """Four accents and one windows-1252 byte: the page says UTF-8 and most of its bytes past
    ASCII are UTF-8, so it reads as UTF-8 with one U+FFFD, as in a browser. Detection read
    it as windows-1252 ("cafÃ©") or, a few sentences longer, as cp932 ("cafﾃｩ")."""
    head = '<meta charset="utf-8">' if html else ""
    for body in (FRENCH, FRENCH * 3):
        raw = (head + body).encode() + b"<p>\xa9 2026</p>"
        text, codec = decode_text(raw, label, html=html)
        assert codec == "utf-8"
        assert body in text
        assert "\ufffd 2026" in text


@pytest.mark.parametrize(
    ("sentence", "codec"),
    [
        ("これは日本語のテキストです。東京都の天気は晴れです。", "shift_jis"),
        ("这是一个中文网页。今天天气很好。我们去公园散步吧。", "gb18030"),
        ("이것은 한국어 웹 페이지입니다. 오늘 날씨가 좋습니다.", "euc_kr"),
        ("Это русская веб-страница. Сегодня хорошая погода.", "cp1251"),
        ("Le garçon était à l'école. Où êtes-vous allés?", "cp1252"),
    ],
)
def test_other_charsets_sent_as_utf8_are_still_passed_over(sentence: str, codec: str) -> None:
    """A UTF-8 label over another charset's bytes is still no reason to read them as UTF-8:
    their bytes past ASCII form a valid UTF-8 sequence rarely, so detection decides."""
    raw = f"<p>{sentence * 4}</p>".encode(codec)
    text, _ = decode_text(raw, "utf-8", html=True)
    assert sentence in text


@pytest.mark.parametrize("byte", [b"\x81", b"\x8d", b"\x8f", b"\x90", b"\x9d"])
@pytest.mark.parametrize(
    "words",
    [
        "El niño pequeño comió una piña en la montaña. España, año, mañana.",
        "Smart \u201cquotes\u201d and \u2014 dashes\u2026 \u2122 \u20ac5 for the price.",
    ],
    ids=["spanish", "punctuation"],
)
def test_a_page_declared_windows_1252_keeps_it_for_a_byte_it_leaves_undefined(
    byte: bytes, words: str
) -> None:
    """One of the five bytes Python's cp1252 leaves undefined (WHATWG reads them as C1
    controls) failed the declared codec, and detection's other single-byte codec read the
    whole page: "niño" as "niņo" (ISO-8859-10) or "nińo" (cp1250), "€" as "Ђ" (cp1251). The
    declaration stands against a single-byte guess; the byte costs one U+FFFD."""
    raw = f"<p>{words}</p>".encode("cp1252") * 2 + byte
    for label, html in (("windows-1252", False), ("iso-8859-1", False), (None, True)):
        body = raw if label else b'<meta charset="windows-1252">' + raw
        text, codec = decode_text(body, label, html=html)
        assert codec == "cp1252"
        assert text.endswith(f"<p>{words}</p>" * 2 + "\ufffd")


@pytest.mark.parametrize(
    ("words", "codec", "label", "byte"),
    [
        (
            "Αυτή είναι μια ελληνική ιστοσελίδα. Σήμερα ο καιρός είναι καλός.",  # noqa: RUF001
            "cp1253",
            "windows-1253",
            b"\x81",
        ),
        ("זהו דף אינטרנט בעברית. מזג האוויר טוב היום.", "cp1255", "windows-1255", b"\xff"),
    ],
    ids=["greek", "hebrew"],
)
def test_a_page_declared_in_another_single_byte_charset_keeps_it(
    words: str, codec: str, label: str, byte: bytes
) -> None:
    """The same for the other single-byte charsets: a Greek page declared windows-1253 with
    one 0x81 read as mac-cyrillic, a Hebrew one declared windows-1255 with one 0xFF as KOI8-R."""
    text, used = decode_text(words.encode(codec) * 2 + byte, label)
    assert used == codec
    assert text == words * 2 + "\ufffd"


def test_a_cjk_page_under_a_latin1_label_is_still_detected() -> None:
    """A server's default Latin-1 label over Shift_JIS (whose lead bytes include those five):
    detection's CJK codec still reads it."""
    sentence = "これは日本語のテキストです。東京都の天気は晴れです。"
    text, codec = decode_text(f"<p>{sentence * 5}</p>".encode("shift_jis"), "iso-8859-1")
    assert codec == "cp932" and sentence in text
