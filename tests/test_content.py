"""Content types: normalising, byte caps, sniffing the first bytes, and refusal messages."""

from __future__ import annotations

import io

import pytest
from PIL import Image

from webward._content import (
    body_cap,
    charset_of,
    human_size,
    is_text_type,
    media_type_of,
    not_readable,
    sniff,
    too_large,
    truncation_marker,
)
from webward._settings import LimitsSettings

LIMITS = LimitsSettings()


def image_bytes(fmt: str) -> bytes:
    """A small real image in the given Pillow format."""
    out = io.BytesIO()
    Image.new("RGB", (4, 4), (0, 128, 255)).save(out, format=fmt)
    return out.getvalue()


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("Text/HTML; charset=UTF-8", "text/html"),
        ("  image/PNG ", "image/png"),
        ("application/json;charset=utf-8;foo=bar", "application/json"),
        (None, ""),
        ("", ""),
        ("garbage", ""),
        ("text/html, text/plain", ""),
        ("text/", ""),
        ("application/" + "x" * 127, "application/" + "x" * 127),
        ("application/" + "x" * 128, ""),  # past RFC 6838's 127 characters: no real type
    ],
)
def test_media_types_are_normalised(raw: str | None, expected: str) -> None:
    """Parameters stripped, case folded; missing or malformed is the empty type."""
    assert media_type_of(raw) == expected


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("text/html; charset=UTF-8", "UTF-8"),
        ('text/html; Charset="shift_jis"', "shift_jis"),
        ("text/html", None),
        (None, None),
        ("text/html; charset=", None),
    ],
)
def test_charset_parameter_is_read(raw: str | None, expected: str | None) -> None:
    """The charset parameter, unquoted; absent is None."""
    assert charset_of(raw) == expected


@pytest.mark.parametrize(
    ("content_type", "expected"),
    [
        ("text/html; charset=utf-8", (1_000_000, True)),
        ("application/json", (1_000_000, True)),
        ("image/png", (5 * 1024 * 1024, False)),
        ("IMAGE/JPEG", (5 * 1024 * 1024, False)),
        ("image/gif", (5 * 1024 * 1024, False)),
        ("image/webp", (5 * 1024 * 1024, False)),
        ("application/pdf", (10 * 1024 * 1024, False)),
        (None, (10 * 1024 * 1024, True)),
        ("", (10 * 1024 * 1024, True)),
        ("application/octet-stream", (10 * 1024 * 1024, True)),
        ("binary/octet-stream", (10 * 1024 * 1024, True)),
        ("image/svg+xml", (1_000_000, True)),
        ("application/zip", (1_000_000, True)),
        ("image/jpg", (5 * 1024 * 1024, False)),
        ("image/pjpeg", (5 * 1024 * 1024, False)),
        ("image/x-png", (5 * 1024 * 1024, False)),
        ("application/x-pdf", (10 * 1024 * 1024, False)),
        ("text/pdf", (10 * 1024 * 1024, False)),
    ],
)
def test_body_cap_per_type(content_type: str | None, expected: tuple[int, bool]) -> None:
    """Text is cut at the text cap; images and PDFs (by any of their names) are never cut;
    an unknown type is read to the larger binary cap, cut there (its bytes decide)."""
    assert body_cap(content_type, LIMITS) == expected


def test_body_cap_follows_the_settings() -> None:
    """Caps come from LimitsSettings, not constants."""
    limits = LimitsSettings(max_read_bytes=10, max_image_bytes=20, max_pdf_bytes=30)
    assert body_cap("text/plain", limits) == (10, True)
    assert body_cap("image/gif", limits) == (20, False)
    assert body_cap("application/pdf", limits) == (30, False)
    assert body_cap("application/octet-stream", limits) == (30, True)
    # An unknown type is never read less far than text is.
    more_text = LimitsSettings(max_read_bytes=40, max_image_bytes=20, max_pdf_bytes=30)
    assert body_cap(None, more_text) == (40, True)


@pytest.mark.parametrize(
    "fmt,media_type",
    [("PNG", "image/png"), ("JPEG", "image/jpeg"), ("GIF", "image/gif"), ("WEBP", "image/webp")],
)
@pytest.mark.parametrize(
    "declared", ["text/html", "application/octet-stream", "", "image/png", "text/plain"]
)
def test_image_signatures_win_over_the_declared_type(
    fmt: str, media_type: str, declared: str
) -> None:
    """A real image is an image, whatever the server called it."""
    assert sniff(image_bytes(fmt), declared) == media_type


def test_pdf_signature_is_found_after_a_little_junk() -> None:
    """%PDF- within the first KiB makes a PDF."""
    assert sniff(b"\r\n\x00junk%PDF-1.4\n...", "text/html") == "application/pdf"
    assert sniff(b"%PDF-1.7\n", "") == "application/pdf"


@pytest.mark.parametrize(
    ("body", "declared", "expected"),
    [
        (b"<!doctype html><p>A PDF begins with %PDF-1.7 and a comment", "text/html", "text/html"),
        (b"<!doctype html><p>A PDF begins with %PDF-1.7 and a comment", "", "text/html"),
        (b"A PDF begins with %PDF-1.7, then binary bytes.", "text/plain", "text/plain"),
        (b'def is_pdf(data):\n    return data[:5] == b"%PDF-"\n', "text/x-python", "text/x-python"),
        (b'{"magic": "%PDF-", "kind": "pdf"}', "application/json", "application/json"),
        (b"\n\n%PDF-1.4\n", "text/html", "application/pdf"),
        (b"junk%PDF-1.4\n", "application/octet-stream", "application/pdf"),
        (b"junk%PDF-1.4\n", "application/pdf", "application/pdf"),
    ],
)
def test_text_that_mentions_the_pdf_signature_stays_text(
    body: bytes, declared: str, expected: str
) -> None:
    """A page about PDFs, or code that checks for their signature, with "%PDF-" in its first
    KiB was taken for a PDF and refused as a damaged one: text before the signature is no
    junk, unless the type says nothing and the body is not HTML."""
    assert sniff(body, declared) == expected


@pytest.mark.parametrize("declared", ["text/html", "text/plain", "application/json", ""])
def test_nul_bytes_make_a_text_response_binary(declared: str) -> None:
    """NUL bytes in the first KiB are binary data, not text for a model."""
    assert sniff(b"abc\x00def" + b"x" * 2000, declared) == "application/octet-stream"


def test_nul_bytes_after_the_first_kib_do_not_count() -> None:
    """Only the first KiB is sniffed."""
    assert sniff(b"x" * 1024 + b"\x00", "text/plain") == "text/plain"


def test_control_heavy_bytes_are_binary() -> None:
    """Mostly control bytes (no NUL) are binary too."""
    assert sniff(bytes([1, 2, 3, 4, 5, 6, 7, 8]) * 50, "text/plain") == "application/octet-stream"


def test_utf16_text_is_text_despite_its_nul_bytes() -> None:
    """UTF-16 with a BOM, or declared UTF-16, is text."""
    assert sniff("héllo".encode("utf-16"), "text/plain") == "text/plain"
    assert sniff("<p>hi</p>".encode("utf-16-le"), "text/html", "UTF-16LE") == "text/html"


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b"  <!DOCTYPE html><html><body>x</body></html>", "text/html"),
        (b"<html lang=en>", "text/html"),
        (b"<!-- comment --><div>hi</div>", "text/html"),
        (b"<p>para</p>", "text/html"),
        (b"just some words", "text/plain"),
        (b'{"a": 1}', "text/plain"),
        (b"", "text/plain"),
    ],
)
def test_undeclared_types_are_sniffed(body: bytes, expected: str) -> None:
    """Without a usable type, HTML-looking bytes are HTML and other text is plain text."""
    assert sniff(body, "") == expected
    assert sniff(body, "application/octet-stream") == expected


def test_a_fake_image_is_judged_by_its_bytes() -> None:
    """Declared image/png but HTML inside: read as HTML, not handed over as an image."""
    assert sniff(b"<html><body>not an image</body></html>", "image/png") == "text/html"
    assert sniff(b"\x00\x01binary", "application/pdf") == "application/octet-stream"


def test_other_image_types_keep_their_type() -> None:
    """SVG stays SVG (to be refused by name), whatever the bytes."""
    assert sniff(b"<svg xmlns='http://www.w3.org/2000/svg'/>", "image/svg+xml") == "image/svg+xml"


def test_declared_binary_types_stay_binary() -> None:
    """A zip is a zip; a binary type with plain HTML inside is read as HTML."""
    assert sniff(b"PK\x03\x04" + b"\x14" * 100, "application/zip") == "application/zip"
    assert sniff(b"PK\x03\x04rest", "text/plain") == "application/octet-stream"
    assert sniff(b"<html><body>page</body></html>", "application/x-foo") == "text/html"


@pytest.mark.parametrize(
    ("media_type", "text"),
    [
        ("text/html", True),
        ("text/csv", True),
        ("application/json", True),
        ("application/ld+json", True),
        ("application/atom+xml", True),
        ("application/xhtml+xml", True),
        ("image/svg+xml", False),
        ("application/zip", False),
        ("application/octet-stream", False),
        ("", False),
    ],
)
def test_text_types(media_type: str, text: bool) -> None:
    """Which types are read as text."""
    assert is_text_type(media_type) is text


def test_sizes_read_as_people_write_them() -> None:
    """1 MB, 5 MiB, 10 MiB, odd numbers in bytes."""
    assert human_size(1_000_000) == "1 MB"
    assert human_size(5 * 1024 * 1024) == "5 MiB"
    assert human_size(10 * 1024 * 1024) == "10 MiB"
    assert human_size(64 * 1024) == "64 KiB"
    assert human_size(1234) == "1234 bytes"
    assert truncation_marker(LIMITS) == "[truncated at 1 MB]"


def test_too_large_names_the_type_and_cap() -> None:
    """An over-cap image is refused with code too_large and a one-sentence message."""
    err = too_large("image/png", LIMITS, 6_000_000)
    assert err.code == "too_large"
    assert str(err) == (
        "refused: image/png (6000000 bytes) is over the 5 MiB cap for images; "
        "webward refuses it rather than truncating it"
    )
    assert str(too_large("application/pdf", LIMITS, 11 * 2**20)) == (
        "refused: application/pdf (11534336 bytes) is over the 10 MiB cap for PDFs; "
        "webward refuses it rather than truncating it"
    )


def test_unreadable_types_are_named() -> None:
    """Other images and binary types are refused as unsupported, by name."""
    svg = not_readable("image/svg+xml")
    assert (svg.code, str(svg)) == (
        "unsupported_type",
        "refused: image/svg+xml is not an image type the model can take (jpeg, png, gif, webp)",
    )
    zip_ = not_readable("application/zip", "application/zip")
    assert (zip_.code, str(zip_)) == (
        "unsupported_type",
        "refused: application/zip is a binary type webward does not read (it reads text, HTML, "
        "images in jpeg, png, gif or webp, and PDFs)",
    )
    sniffed = not_readable("application/octet-stream", "text/html")
    assert (
        str(sniffed)
        == "refused: application/octet-stream (declared as text/html) is a binary type webward does not read (it reads text, HTML, images in jpeg, png, gif or webp, and PDFs)"
    )
