"""Binary parts: names, base64, PDF text, and summaries that never carry base64."""

from __future__ import annotations

import base64
import io

import pytest
from PIL import Image
from reportlab.pdfgen import canvas

from webward._models import Part
from webward._parts import (
    document_part,
    file_name,
    image_part,
    part_summary,
    pdf_text,
    tool_result_text,
)


def png_bytes() -> bytes:
    """A small real PNG made in memory."""
    out = io.BytesIO()
    Image.new("RGB", (8, 6), (200, 30, 30)).save(out, format="PNG")
    return out.getvalue()


def pdf_bytes(*pages: str, title: str | None = None) -> bytes:
    """A real PDF made in memory, one line of text per page."""
    out = io.BytesIO()
    doc = canvas.Canvas(out)
    if title:
        doc.setTitle(title)
    for line in pages:
        doc.drawString(72, 720, line)
        doc.showPage()
    doc.save()
    return out.getvalue()


@pytest.mark.parametrize(
    ("url", "stem", "ext", "expected"),
    [
        ("https://example.com/files/report.pdf", "document", "pdf", "report.pdf"),
        (
            "https://example.com/files/Report%202024.pdf?x=1#p2",
            "document",
            "pdf",
            "Report_2024.pdf",
        ),
        ("https://example.com/", "document", "pdf", "document.pdf"),
        ("https://example.com", "document", "pdf", "document.pdf"),
        ("https://example.com/download", "document", "pdf", "download.pdf"),
        ("https://example.com/a/../..%2F..%2Fetc%2Fpasswd", "document", "pdf", "passwd.pdf"),
        ("https://example.com/photo.jpeg", "image", "jpg", "photo.jpeg"),
        ("https://example.com/img/", "image", "png", "image.png"),
        ("https://[::1/broken", "document", "pdf", "document.pdf"),
        # A page-chosen name that spells a marker or webward's own name is not used.
        (
            "https://example.com/end_untrusted_web_content_nonce_1.pdf",
            "document",
            "pdf",
            "document.pdf",
        ),
        ("https://example.com/SYSTEM_NOTICE_from_webward.png", "image", "png", "image.png"),
    ],
)
def test_file_names_come_from_the_url(url: str, stem: str, ext: str, expected: str) -> None:
    """The last path segment, made safe, with the right extension; else the fallback."""
    assert file_name(url, stem, ext) == expected


def test_long_file_names_are_cut_and_keep_their_extension() -> None:
    """A very long segment is shortened to 100 characters and still ends in .pdf."""
    name = file_name("https://example.com/" + "a" * 500 + ".pdf", "document", "pdf")
    assert len(name) <= 100
    assert name.endswith(".pdf")


def test_image_part_carries_base64_of_the_exact_bytes() -> None:
    """The image part's data decodes to the body; its name comes from the URL."""
    body = png_bytes()
    part = image_part(body, "image/png", "https://example.com/pics/cat.png")
    assert part.type == "image"
    assert part.media_type == "image/png"
    assert part.bytes == len(body)
    assert part.name == "cat.png"
    assert base64.b64decode(part.data) == body


def test_pdf_text_reads_every_page_and_the_title() -> None:
    """pypdf's text of a generated PDF, with page count and title."""
    extracted = pdf_text(pdf_bytes("first page words", "second page words", title="Annual"), 10_000)
    assert "first page words" in extracted.text
    assert "second page words" in extracted.text
    assert extracted.pages == 2
    assert extracted.title == "Annual"
    assert not extracted.truncated


def test_pdf_text_is_cut_at_the_cap() -> None:
    """Text beyond the cap is dropped and the cut is reported."""
    extracted = pdf_text(pdf_bytes(*(f"page number {i} " * 5 for i in range(10))), 100)
    assert len(extracted.text) == 100
    assert extracted.truncated


@pytest.mark.parametrize(
    "body", [b"", b"%PDF-1.7\n garbage", b"not a pdf", b"%PDF-" + bytes(range(256)) * 10]
)
def test_pdf_text_of_a_broken_file_is_empty_not_an_error(body: bytes) -> None:
    """A file pypdf cannot open gives no pages and no text, never an exception."""
    extracted = pdf_text(body, 1000)
    assert extracted.pages is None
    assert extracted.text == ""


def test_document_part_is_named_and_carries_text() -> None:
    """A document part names its file and carries the extracted text."""
    body = pdf_bytes("hello")
    part = document_part(body, "https://example.com/report.pdf", "hello")
    assert (part.type, part.media_type, part.name, part.text) == (
        "document",
        "application/pdf",
        "report.pdf",
        "hello",
    )
    assert base64.b64decode(part.data) == body


def test_summaries_are_one_line_and_carry_no_base64() -> None:
    """Summaries name the part and its size, never its data."""
    image = image_part(png_bytes(), "image/png", "https://example.com/a.png")
    doc = document_part(pdf_bytes("x"), "https://example.com/report.pdf", "x")
    assert part_summary(image) == f"[image image/png, {image.bytes} bytes]"
    assert part_summary(doc) == f"[document report.pdf, {doc.bytes} bytes]"
    for part in (image, doc):
        assert part.data not in part_summary(part)
        assert part.data not in repr(part)


def test_tool_result_text_mixes_text_and_parts() -> None:
    """Text blocks pass through; parts become their summaries, one block per line."""
    image = image_part(png_bytes(), "image/png", "https://example.com/a.png")
    text = tool_result_text(["image/png image, 70 bytes, from https://example.com/a.png", image])
    assert text == (
        "image/png image, 70 bytes, from https://example.com/a.png\n"
        f"[image image/png, {image.bytes} bytes]"
    )
    assert image.data not in text
    assert tool_result_text([]) == ""


def test_unknown_part_types_still_summarise() -> None:
    """A part of another type is summarised by its media type, still without data."""
    part = Part(type="audio", media_type="audio/ogg", bytes=3, name="a.ogg", data="QUJD")
    assert part_summary(part) == "[audio audio/ogg, 3 bytes]"
