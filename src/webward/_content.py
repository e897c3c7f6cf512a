"""Content types: what a response body is, how much of it to read, and how it is refused.

The fetch core asks :func:`body_cap` how many bytes to read for a declared type, reads at most
that many, and hands the bytes to :func:`webward._convert.convert`, which uses :func:`sniff` to
check the declared type against the first bytes: a PNG served as ``text/html`` becomes an image,
and binary garbage served as text is refused instead of reaching a model.

    HTML, XHTML          -> readable Markdown (main content, full-page fallback), title, links
    text, JSON, XML, MD  -> the text as it is
    jpeg, png, gif, webp -> a short text header and an image part         (<= 5 MiB)
    PDF                  -> a short text header and a document part        (<= 10 MiB)
    other images (SVG)   -> refused, unsupported_type
    other binary types   -> refused, unsupported_type
"""

from __future__ import annotations

import re

from ._errors import Refused
from ._parts import IMAGE_TYPES
from ._settings import LimitsSettings

__all__ = [
    "HTML_TYPES",
    "MARKDOWN_TYPES",
    "PDF",
    "body_cap",
    "charset_of",
    "human_size",
    "is_text_type",
    "media_type_of",
    "not_readable",
    "sniff",
    "too_large",
    "truncation_marker",
]

HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
MARKDOWN_TYPES = frozenset({"text/markdown", "text/x-markdown", "application/markdown"})
# application/* types that are text although their top-level type does not say so.
_TEXT_APPLICATION = {
    "application/json",
    "application/xml",
    "application/javascript",
    "application/ecmascript",
    "application/x-javascript",
    "application/x-yaml",
    "application/yaml",
    "application/toml",
    "application/x-ndjson",
    "application/ndjson",
    "application/csv",
    "application/sql",
    "application/graphql",
    "application/x-sh",
    "application/x-httpd-php",
    "application/x-tex",
    "application/rtf",
    "application/x-subrip",
    "application/markdown",
}
# Declared types that say nothing: the bytes decide.
_UNKNOWN_TYPES = {
    "",
    "application/octet-stream",
    "binary/octet-stream",
    "application/unknown",
    "unknown/unknown",
    "application/x-unknown",
    "application/binary",
    "application/download",
    "application/force-download",
    "application/x-download",
}
PDF = "application/pdf"
# Other names servers give the types the model takes: read under the cap of the type they
# name (a photo sent as image/jpg, the common misspelling, past 1 MB was refused as an image
# read under the text cap).
_ALIASES = {
    "image/jpg": "image/jpeg",
    "image/pjpeg": "image/jpeg",
    "image/x-png": "image/png",
    "application/x-pdf": PDF,
    "application/acrobat": PDF,
    "application/vnd.pdf": PDF,
    "text/pdf": PDF,
    "text/x-pdf": PDF,
}

# RFC 6838 section 4.2: a type's and a subtype's names are at most 127 characters each. The
# media type is the server's word where a model reads webward's (the envelope's provenance
# header, above the begin marker, and refusals: "refused: application/x-... is a binary
# type"): a longer one, of no real server, was 1,900 characters of the page's choosing there.
_TOKEN = re.compile(r"^[a-z0-9!#$&^_.+-]{1,127}/[a-z0-9!#$&^_.+-]{1,127}$")


def media_type_of(content_type: str | None) -> str:
    """The media type of a Content-Type value: parameters stripped, case-folded; ``""`` when
    missing or malformed, a name past RFC 6838's 127 characters among them (``"Text/HTML;
    charset=UTF-8"`` gives ``"text/html"``)."""
    if not content_type:
        return ""
    value = content_type.split(";", 1)[0].strip().lower()
    return value if _TOKEN.match(value) else ""


def charset_of(content_type: str | None) -> str | None:
    """The ``charset`` parameter of a Content-Type value, if any."""
    if not content_type:
        return None
    for param in content_type.split(";")[1:]:
        key, _, value = param.partition("=")
        if key.strip().lower() == "charset":
            return value.strip().strip("\"'") or None
    return None


def is_text_type(media_type: str) -> bool:
    """True for the types read as text: text/*, XHTML, JSON, XML and their ``+json``/``+xml``."""
    return (
        media_type.startswith("text/")
        or media_type in _TEXT_APPLICATION
        or media_type in HTML_TYPES
        or (not media_type.startswith("image/") and media_type.endswith(("+json", "+xml")))
    )


def body_cap(media_type: str | None, limits: LimitsSettings) -> tuple[int, bool]:
    """How many bytes the fetch core reads for a declared type, and whether it may cut there.

    Text: ``(max_read_bytes, True)``, cut and marked. Images the model takes:
    ``(max_image_bytes, False)``; PDF: ``(max_pdf_bytes, False)``: over the cap the read is
    refused (:func:`too_large`), never truncated; their other names (``image/jpg``,
    ``application/x-pdf`` ...) likewise. An unknown or missing type, sniffed once read: the
    larger binary cap, cut there (``convert`` cuts text to the text cap). Types that will be
    refused anyway (SVG, archives) get the text cap, enough to sniff a mislabelled image or
    PDF.
    """
    media_type = media_type_of(media_type)  # the raw header value is fine, or None
    media_type = _ALIASES.get(media_type, media_type)
    if media_type in IMAGE_TYPES:
        return limits.max_image_bytes, False
    if media_type == PDF:
        return limits.max_pdf_bytes, False
    if media_type in _UNKNOWN_TYPES:
        # The bytes decide (sniff), and a PDF or an image is often sent so (a download
        # endpoint's, a bucket's binary/octet-stream): read to the larger binary cap, cut
        # there. Under the text cap every one past 1 MB was refused; text is cut to the text
        # cap by convert() all the same.
        return max(limits.max_pdf_bytes, limits.max_image_bytes, limits.max_read_bytes), True
    return limits.max_read_bytes, True


# --------------------------------------------------------------------------------------------
# sniffing

# Signatures of common binary formats; each holds a byte no text file starts with.
_BINARY_MAGIC = (
    b"PK\x03\x04",
    b"PK\x05\x06",
    b"\x1f\x8b",
    b"7z\xbc\xaf\x27\x1c",
    b"Rar!\x1a\x07",
    b"\xfd7zXZ\x00",
    b"\x28\xb5\x2f\xfd",
    b"\x7fELF",
    b"\x00asm",
    b"\x1aE\xdf\xa3",
    b"\xd0\xcf\x11\xe0",
    b"\xca\xfe\xba\xbe",
    b"SQLite format 3\x00",
    b"OggS\x00",
)
# The HTML patterns of the WHATWG MIME Sniffing Standard (section 7.1), checked after leading
# whitespace: "<!DOCTYPE HTML", "<HTML", "<HEAD", ... each followed by a space or ">".
_HTML_START = re.compile(
    rb"^\s*(?:<!doctype\s+html|<(?:html|head|script|iframe|h1|div|font|table|a|style|title|b|body"
    rb"|br|p)[\s>]|<!--)",
    re.IGNORECASE,
)
_TEXT_CONTROLS = bytes(range(0x20)).translate(None, b"\t\n\r\x0c\x1b")


def _image_magic(head: bytes) -> str | None:
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    return None


def _pdf_after_junk(head: bytes, at: int, declared: str) -> bool:
    """Whether ``%PDF-`` at ``at`` starts a PDF: the header may follow a little junk (ISO
    32000, 7.5.2), but text that mentions it is not junk. Every page about PDFs, or source
    that checks for the signature, holding it in its first KiB was refused as a damaged PDF,
    served as HTML, plain text or JSON alike. Junk is bytes that are not text (or blanks), or
    any under a type that is not text, unless the body plainly starts as HTML."""
    junk = head[:at]
    if not junk.strip() or _looks_binary(junk):
        return True
    return not _HTML_START.match(head) and not is_text_type(declared)


def _looks_binary(head: bytes) -> bool:
    """NUL bytes, a known binary signature, or mostly control bytes in the first 1 KiB."""
    return b"\x00" in head or head.startswith(_BINARY_MAGIC) or _control_heavy(head)


def _control_heavy(head: bytes) -> bool:
    """More than one byte in ten is a control byte that text does not use."""
    controls = len(head) - len(head.translate(None, _TEXT_CONTROLS))  # one pass, in C
    return controls > len(head) // 10


def _wide_text(head: bytes, charset: str | None) -> bool:
    """UTF-16/32 text is full of NUL bytes, and is still text."""
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        return True
    label = (charset or "").strip().lower().replace("_", "-")
    return label.startswith(("utf-16", "utf-32"))


def sniff(body: bytes, media_type: str, charset: str | None = None) -> str:
    """The media type to act on: the declared one (normalised), corrected by the first bytes.

    Image and PDF signatures win over any declaration. A declared text type with binary bytes,
    or an unknown type with binary bytes, becomes ``application/octet-stream``; an unknown type
    with text bytes becomes ``text/html`` or ``text/plain``. An image type whose bytes are no
    image is read as if it had not been declared.
    """
    head = body[:1024]
    declared = media_type_of(media_type)
    declared = _ALIASES.get(declared, declared)
    magic = _image_magic(head)
    if magic is not None:
        return magic
    pdf_at = head.find(b"%PDF-")
    if pdf_at == 0 or (pdf_at > 0 and _pdf_after_junk(head, pdf_at, declared)):
        return PDF
    if declared in IMAGE_TYPES or declared == PDF:
        declared = ""  # it claimed to be an image or a PDF and is not: judge the bytes
    if declared.startswith("image/"):
        return declared  # SVG and the like: named as unsupported, whatever the bytes
    if is_text_type(declared):
        # A stray NUL inside what plainly starts as HTML is a broken page, not a binary file.
        html_like = declared in HTML_TYPES and _HTML_START.match(head) and not _control_heavy(head)
        if _looks_binary(head) and not _wide_text(head, charset) and not html_like:
            return "application/octet-stream"
        return declared
    if declared in _UNKNOWN_TYPES:
        if _looks_binary(head) and not _wide_text(head, charset):
            return "application/octet-stream"
        return "text/html" if _HTML_START.match(head) else "text/plain"
    # A declared binary type (application/zip, video/mp4 ...): refused by name unless the bytes
    # are plainly text (a misconfigured server sending a page as application/x-foo).
    if not _looks_binary(head) and _HTML_START.match(head):
        return "text/html"
    return declared


# --------------------------------------------------------------------------------------------
# messages


def human_size(n: int) -> str:
    """``1_000_000`` -> ``1 MB``, ``5 * 1024 * 1024`` -> ``5 MiB``, else ``n bytes``."""
    for unit, size in (("MiB", 1024 * 1024), ("MB", 1_000_000), ("KiB", 1024), ("KB", 1000)):
        if n >= size and n % size == 0:
            return f"{n // size} {unit}"
    return f"{n} bytes"


def truncation_marker(limits: LimitsSettings) -> str:
    """``[truncated at 1 MB]``: appended to a text read cut at the byte cap."""
    return f"[truncated at {human_size(limits.max_read_bytes)}]"


def too_large(
    media_type: str, limits: LimitsSettings, size: int | None = None, read_cap: int | None = None
) -> Refused:
    """The refusal for a body over its cap, raised by ``convert`` for an image or PDF found
    only after the read (a declared one is refused earlier by the transport, as soon as its
    Content-Length or the bytes read pass the cap). Images and PDFs are refused, never truncated."""
    media_type = media_type_of(media_type) or "application/octet-stream"
    cap, _ = body_cap(media_type, limits)
    what = "images" if media_type in IMAGE_TYPES else "PDFs" if media_type == PDF else "this type"
    if size is None and read_cap is not None and read_cap >= cap:
        # Cut at a cap no smaller than its own (sent with no type, read to the binary cap).
        return Refused(
            f"refused: {media_type} (more than {human_size(read_cap)}) is over the "
            f"{human_size(cap)} cap for {what}; webward refuses it rather than truncating it",
            code="too_large",
            reason="too_large",
        )
    if size is None:  # cut at the text cap: sent under a text type (or none), found after
        return Refused(
            f"refused: the server sent {media_type} under another type, so it was read only up "
            f"to the {human_size(limits.max_read_bytes)} cap for text, and webward hands over no "
            "part of an image or PDF",
            code="too_large",
            reason="too_large",
        )
    actual = f" ({size} bytes)"
    return Refused(
        f"refused: {media_type}{actual} is over the {human_size(cap)} cap for {what}; webward refuses it "
        "rather than truncating it",
        code="too_large",
        reason="too_large",
    )


def not_readable(media_type: str, declared: str = "") -> Refused:
    """The refusal for a type webward does not hand to a model (``unsupported_type``): an image
    type the models cannot take, or a binary type."""
    if media_type.startswith("image/"):
        return Refused(
            f"refused: {media_type} is not an image type the model can take (jpeg, png, gif, webp)",
            code="unsupported_type",
            reason="unsupported_image",
        )
    said = f" (declared as {declared})" if declared and declared != media_type else ""
    return Refused(
        f"refused: {media_type}{said} is a binary type webward does not read (it reads text, "
        "HTML, images in jpeg, png, gif or webp, and PDFs)",
        code="unsupported_type",
        reason="binary_type",
    )
