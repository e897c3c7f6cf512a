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
