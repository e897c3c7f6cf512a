"""Binary parts the model can see: images and PDF documents, and their one-line summaries.

A part carries its bytes as base64 for the model; everything meant for people (log lines, run
visibility, audit records) uses :func:`part_summary` / :func:`tool_result_text`, which never
include the base64.
"""

from __future__ import annotations

import base64
import io
import logging
import posixpath
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

from ._envelope import find_markers, neutral_url
from ._models import Part

if TYPE_CHECKING:
    from ._settings import LimitsSettings

__all__ = [
    "IMAGE_TYPES",
    "PdfText",
    "document_part",
    "file_name",
    "gif_frames",
    "image_damaged",
    "image_part",
    "part_summary",
    "pdf_facts",
    "pdf_reading",
    "pdf_text",
    "summary_url",
    "tool_result_text",
]

#: The image types every model provider takes, with the extension used for fallback names.
IMAGE_TYPES = {"image/jpeg": "jpg", "image/png": "png", "image/gif": "gif", "image/webp": "webp"}

# pypdf logs every oddity of a damaged file as a warning; with no handler configured, Python
# would print those to stderr under the CLI. A NullHandler keeps them out of the terminal while
# still propagating to whatever logging the application sets up.
logging.getLogger("pypdf").addHandler(logging.NullHandler())

_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")
_MAX_NAME = 100


def summary_url(url: str) -> str:
    """``url`` as an image's or a PDF's summary line shows it: the line is read inside the
    envelope, whose neutraliser put "[marker removed]" (a space) into a URL holding marker
    words, which then named nothing. They get a letter percent-encoded instead
    (``_envelope.neutral_url``: the same address), as in the header's ``final-url``; words in
    the host, which cannot be encoded, are still removed there."""
    return neutral_url(url) or url


def file_name(url: str, default_stem: str, extension: str) -> str:
    """A safe file name for a part, from the last path segment of ``url``.

    ``https://x/docs/Report%202024.pdf`` gives ``Report_2024.pdf``; a URL without a usable
    segment gives ``<default_stem>.<extension>``; a name without the extension gets it.
    """
    try:
        segment = posixpath.basename(unquote(urlsplit(url).path))
    except ValueError:
        segment = ""
    name = _UNSAFE_NAME.sub("_", segment).strip("._-")
    if not name or find_markers(name) or "webward" in name.lower():
        # The page chose it: a name that spells an envelope marker or webward's own name is
        # the page speaking where a model reads webward's words (a caption, a summary line).
        name = default_stem
    if not name.lower().endswith(f".{extension}") and not (
        extension == "jpg" and name.lower().endswith(".jpeg")
    ):
        name = f"{name}.{extension}"
    if len(name) > _MAX_NAME:
        name = name[: _MAX_NAME - len(extension) - 1].rstrip("._-") + f".{extension}"
    return name


def image_damaged(body: bytes, media_type: str) -> bool:
    """Whether an image of :data:`IMAGE_TYPES` is plainly not whole: its format's own header
    and ending missing (a body cut short, or a signature followed by anything). A model
    provider rejects the whole request for such an image; checked from the bytes alone, with
    no image library."""
    if media_type == "image/png":
        # The IHDR chunk first, image data, the IEND chunk (with its fixed CRC) after it (some
        # tools append bytes after that).
        return (
            body[8:16] != b"\x00\x00\x00\rIHDR"
            or b"IDAT" not in body[33:]
            or b"IEND\xaeB`\x82" not in body
            or _png_header_again(body)
        )
    if media_type == "image/jpeg":
        # Start of image, a marker next; an end of image after it (cameras append data).
        # The end after the first scan: one before it closes an EXIF thumbnail (a JPEG inside
        # the APP1 segment, which most cameras' files carry), and a photo cut short in its
        # scan passed for whole by it.
        scan = _jpeg_size(body)[1]
        return body[:3] != b"\xff\xd8\xff" or not scan or b"\xff\xd9" not in body[scan:]
    if media_type == "image/gif":
        # The trailer (";") after the last block's terminator.
        return (
            body[:6] not in (b"GIF87a", b"GIF89a")
            or b"\x00;" not in body[13:]
            or _gif_size(body) is None
        )
    if media_type == "image/webp":
        # RIFF's own length (the file is at least as long as it says), then a VP8 chunk.
        declared = int.from_bytes(body[4:8], "little") + 8
        riff = body[:4] == b"RIFF" and body[8:12] == b"WEBP" and len(body) >= declared
        return not riff or body[12:16] not in (b"VP8 ", b"VP8L", b"VP8X")
    return False


#: The most pixels on a side a model provider takes (Anthropic's limit; OpenAI scales down):
#: a larger image would make the provider reject the whole request, and a 50,000 x 50,000 PNG
#: of zeros (2.4 MB) is a decompression bomb for whatever decodes it.
MAX_IMAGE_SIDE = 8000


def image_size(body: bytes, media_type: str) -> tuple[int, int] | None:
    """An image's width and height from its header, with no image library; ``None`` when the
    header does not say (a WebP or JPEG of a kind not read here)."""
    if media_type == "image/png" and len(body) >= 24:
        return int.from_bytes(body[16:20], "big"), int.from_bytes(body[20:24], "big")
    if media_type == "image/gif" and len(body) >= 10:
        return _gif_size(body)  # None only where a damaged one is refused
    if media_type == "image/webp" and len(body) >= 30:
        kind = body[12:16]
        if kind == b"VP8X":
            return 1 + int.from_bytes(body[24:27], "little"), 1 + int.from_bytes(
                body[27:30], "little"
            )
        if kind == b"VP8L":
            bits = int.from_bytes(body[21:25], "little")
            return 1 + (bits & 0x3FFF), 1 + ((bits >> 14) & 0x3FFF)
        if kind == b"VP8 ":
            return (
                int.from_bytes(body[26:28], "little") & 0x3FFF,
                int.from_bytes(body[28:30], "little") & 0x3FFF,
            )
    if media_type == "image/jpeg":
        return _jpeg_size(body)[0]
    return None


#: What a header walk looks at before it gives up: a real GIF's data comes in sub-blocks of
#: 255 bytes (5 MiB is about 20,000 of them), a real PNG has a few chunks before its image
#: data, a real JPEG a few dozen markers before its first scan.
_MAX_GIF_BLOCKS = 200_000
_MAX_PNG_CHUNKS = 10_000
_MAX_JPEG_MARKERS = 10_000
#: Where a GIF's next block starts (an image, an extension, the trailer) past bytes of none.
_GIF_BLOCK = re.compile(rb"[,!;]")


def _png_header_again(body: bytes) -> bool:
    """Whether a chunk before the image data is a second IHDR (or there are too many chunks
    to tell). A PNG has one (ISO 15948); decoders such as Pillow take the last one, so a file
    whose first IHDR says 1x1 was opened as the 100,000 x 100,000 image its second one says,
    past the side check, which reads the first."""
    i = 33  # past the signature and the first IHDR (length, type, 13 bytes, CRC)
    for _ in range(_MAX_PNG_CHUNKS):
        if i + 8 > len(body):
            return False
        kind = body[i + 4 : i + 8]
        if kind in (b"IDAT", b"IEND"):
            return False
        if kind == b"IHDR":
            return True
        i += 12 + int.from_bytes(body[i : i + 4], "big")
    return True


def _gif_size(body: bytes) -> tuple[int, int] | None:
    """A GIF's size: its logical screen, grown to hold every frame. A frame may say it is
    larger than the screen, and decoders such as Pillow then grow the image to hold it: a
    29-byte GIF whose screen is 10x10 and whose frame is 65,535 x 65,535 was handed over as
    10x10. ``None`` past :data:`_MAX_GIF_BLOCKS` blocks (no encoder writes so many), or
    when the walk runs off the end before the trailer: the image is taken for damaged
    (:func:`image_damaged`)."""
    return _gif_walk(body)[0]


def gif_frames(body: bytes) -> int:
    """How many frames (image descriptors) a GIF holds: more than one is an animation, which
    OpenAI's image inputs do not take ("non-animated GIF")."""
    return _gif_walk(body)[1]


def _gif_walk(body: bytes) -> tuple[tuple[int, int] | None, int]:
    """A GIF's size (see :func:`_gif_size`) and its count of frames, from one walk."""
    frames = 0
    width = int.from_bytes(body[6:8], "little")
    height = int.from_bytes(body[8:10], "little")
    i = 13 + (3 << ((body[10] & 7) + 1) if len(body) > 10 and body[10] & 0x80 else 0)
    blocks = 0
    while i < len(body) and body[i] != 0x3B:  # the trailer
        if body[i] == 0x2C and i + 10 <= len(body):  # an image descriptor
            left, top, w, h = (
                int.from_bytes(body[i + j : i + j + 2], "little") for j in (1, 3, 5, 7)
            )
            width, height = max(width, left + w), max(height, top + h)
            frames += 1
            flags = body[i + 9]
            i += 10 + (3 << ((flags & 7) + 1) if flags & 0x80 else 0) + 1  # + LZW code size
        elif body[i] == 0x21:  # an extension: its label, then sub-blocks
            i += 2
        else:  # a byte of no block: Pillow reads on to the next block's (giflib stops)
            found = _GIF_BLOCK.search(body, i + 1)
            if found is None:
                break
            i = found.start()
            blocks += 1
            continue
        while i < len(body):  # sub-blocks, up to an empty one
            blocks += 1
            if blocks > _MAX_GIF_BLOCKS:
                return None, frames
            size = body[i]
            i += 1 + size
            if not size:
                break
    # A walk that ran off the end met no trailer: the file was cut short in its data, where
    # the bytes of a terminator and a trailer ("\x00;") turn up by chance (40 times in the
    # first half of a GIF of 1 MB), so that the check for them passed it for whole.
    return ((width, height) if i < len(body) else None), frames


def _jpeg_size(body: bytes) -> tuple[tuple[int, int] | None, int]:
    """A JPEG's size from its start-of-frame markers (C0-CF but C4, C8, CC: height, then
    width), and where its first scan starts when the walk reached it with a frame header on
    the way (0 when it did not). Every
    frame header before the scan counts, the largest: decoders such as Pillow take the last
    one, so a file whose first said 3x2 and second 60,000 x 60,000 was handed over as 3x2.

    The walk reads on where decoders do, so that no frame header they see is missed: past
    bytes between segments (to the next 0xFF), an escaped 0xFF, a marker with no length (a
    restart, a start or an end of image: Pillow reads on past an end before the scan). Where
    decoders part ways it stops, and the image is damaged: a reserved marker (C8, F0-FD: no
    length to Pillow, one to libjpeg), a segment length under 2 (libjpeg refuses it, Pillow
    reads the next marker 2 bytes on). So does a walk of more than
    :data:`_MAX_JPEG_MARKERS` markers (fill bytes too)."""
    size: tuple[int, int] | None = None
    i = 2
    for _ in range(_MAX_JPEG_MARKERS):
        if i + 2 > len(body):
            return size, 0
        if body[i] != 0xFF:  # bytes between segments: decoders skip them to the next 0xFF
            i = body.find(b"\xff", i)
            if i < 0:
                return size, 0
            continue
        marker = body[i + 1]
        if marker == 0xFF:  # fill byte
            i += 1
            continue
        if marker == 0xDA:  # the first scan
            return size, i if size is not None else 0
        if marker in (0x00, 0x01) or 0xD0 <= marker <= 0xD9:  # no length after these
            i += 2
            continue
        length = int.from_bytes(body[i + 2 : i + 4], "big")
        if marker == 0xC8 or 0xF0 <= marker <= 0xFD or length < 2 or i + 4 > len(body):
            return size, 0
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xCC):
            if i + 9 > len(body):
                return size, 0
            width = int.from_bytes(body[i + 7 : i + 9], "big")
            height = int.from_bytes(body[i + 5 : i + 7], "big")
            size = (width, height) if size is None else (max(size[0], width), max(size[1], height))
        i += 2 + length
    return size, 0


def image_part(body: bytes, media_type: str, url: str) -> Part:
    """An image part (base64) for one of :data:`IMAGE_TYPES`."""
    return Part(
        type="image",
        media_type=media_type,
        bytes=len(body),
        name=file_name(url, "image", IMAGE_TYPES.get(media_type, "bin")),
        data=base64.b64encode(body).decode("ascii"),
    )


@dataclass(frozen=True)
class PdfText:
    """What pypdf could read of a PDF: its text, page count and title (empty when unknown).

    ``stopped`` names the cap that ended the text early (``""`` when none did): text is read
    from at most ``max_pages`` pages and ``max_inflated`` bytes of inflated page content."""

    text: str
    pages: int | None
    title: str
    truncated: bool
    stopped: str = ""
    # Encrypted: unreadable (``pages`` None) because a password locks it, or read with the
    # empty password, which model providers do not try (Anthropic refuses any encrypted PDF).
    encrypted: bool = False


# Form XObjects a page may reach through its resources before it is over the cap: real
# pages use a few, a hostile one any number (each is read to be counted).
_MAX_FORMS = 1_000
# How much of pypdf's work one document's text may take, every page together: the cap on
# inflated bytes bounds what a page holds, not how often pypdf parses it again (a Form drawn
# ten times by a Form drawn ten times ...). Counted in operators read, so that the bound is
# the same on every machine: one per 8 bytes the byte cap allows (content streams rarely
# average shorter operators; 256 kB of text lines is 13,500), about 0.25 s of pypdf here. A
# CPU-time backstop catches what the count cannot see (fonts parsed again on every draw).
_BYTES_PER_OPERATOR = 8
_EXTRACTION_CPU_S = 2.0


class _WorkSpent(Exception):
    """Raised from pypdf's operator callback: the extraction's bound of work is reached."""


class _Work:
    """pypdf's ``visitor_operand_before``: called for every operator it reads, a Form's
    included (and for each ``Do`` before the Form is drawn), it ends the extraction once the
    document's text has taken ``operators`` operators, or :data:`_EXTRACTION_CPU_S` of this
    thread's CPU time. How much the content streams hold is counted before each page is
    parsed (:func:`_content_bytes`); how many times pypdf parses them again, only this sees."""

    def __init__(self, operators: int, seconds: float) -> None:
        self.left = operators
        self.until = time.thread_time() + seconds

    def __call__(self, operator: Any, operands: Any, cm: Any, tm: Any) -> None:
        self.left -= 1
        if self.left < 0 or (self.left % 64 == 0 and time.thread_time() > self.until):
            raise _WorkSpent


def _dictionary(value: Any) -> Any:
    from pypdf.generic import DictionaryObject

    value = value.get_object() if value is not None else None
    return value if isinstance(value, DictionaryObject) else None


def _resources(obj: Any) -> Any:
    """``obj``'s resource dictionary as pypdf finds it: its own, else its ``/Parent``'s
    (pypdf asks any dictionary, a Form's too, for inherited resources)."""
    inherited = getattr(obj, "get_inherited", None)
    found = inherited("/Resources") if inherited is not None else obj.get("/Resources")
    return _dictionary(found)


def _forms_bytes(resources: Any, budget: int) -> int:
    """The inflated bytes of every Form XObject reachable from ``resources``, through the
    Forms' own resources, each once, with the ``/ToUnicode`` maps of their fonts (which pypdf
    reads on every draw): more than ``budget`` as soon as that is passed, or when more than
    :data:`_MAX_FORMS` are reachable. A Form pypdf could not read either costs nothing; one
    that inflates past pypdf's own cap is over ``budget``."""
    from pypdf.errors import LimitReachedError
    from pypdf.generic import StreamObject

    total = 0
    seen: set[int] = set()
    waiting = [resources]
    while waiting:
        found = waiting.pop()
        xobjects = _dictionary(found.get("/XObject")) if found is not None else None
        for ref in (xobjects or {}).values():
            try:
                form = ref.get_object()
                if not isinstance(form, StreamObject) or form.get("/Subtype") != "/Form":
                    continue
                if id(form) in seen:
                    continue
                seen.add(id(form))
                if len(seen) > _MAX_FORMS:
                    return budget + 1
                form_resources = _resources(form)
                total += len(form.get_data()) + _fonts_bytes(form_resources)
            except LimitReachedError:  # past pypdf's own cap, or a /Parent cycle
                return budget + 1
            except Exception:  # what pypdf cannot read, it does not parse either
                continue
            if total > budget:
                return total
            waiting.append(form_resources)
    return total


def _fonts_bytes(resources: Any) -> int:
    """The inflated ``/ToUnicode`` maps of the fonts a Form's text reads, parsed per draw."""
    fonts = _dictionary(resources.get("/Font")) if resources is not None else None
    total = 0
    for ref in (fonts or {}).values():
        font = _dictionary(ref)
        unicode = font.get("/ToUnicode") if font is not None else None
        stream: Any = unicode.get_object() if unicode is not None else None
        if hasattr(stream, "get_data"):
            total += len(stream.get_data())
    return total


def _content_bytes(page: Any, budget: int = 10**12) -> int:
    """Bytes of inflated content ``extract_text`` will parse for the page at least: its
    content streams, and every Form XObject it can reach, once (see :func:`_forms_bytes`;
    how often a Form is drawn again, :class:`_Work` bounds); past ``budget``, some number
    over it. A stream shared by many pages counts once per page, because each page parses
    it again."""
    contents = page.get("/Contents")
    if contents is None:
        return 0
    contents = contents.get_object()
    streams = contents if isinstance(contents, list) else [contents]
    total = sum(len(stream.get_object().get_data()) for stream in streams)
    if total > budget:
        return total
    return total + _forms_bytes(_resources(page), budget - total)


# What a page takes from the page tree above it unless it sets its own (PDF 32000-1, 7.7.3.4).
_INHERITED = ("/Resources", "/MediaBox", "/CropBox", "/Rotate")
# Page tree levels walked at most: real trees have a handful, a hostile one any number.
_MAX_TREE_DEPTH = 64


def _first_pages(reader: Any, limit: int) -> tuple[list[Any], bool, int]:
    """The first ``limit`` pages of the PDF, whether more follow, and its page count.

    pypdf's ``reader.pages`` reads every page object of the file before it hands out the
    first: 2.5 s of the 3 s a 9 MB PDF of 30,000 pages took, when only 500 are read. This
    walks the page tree in order and stops after ``limit`` pages, each with what it
    inherits, as pypdf's own walk gives it; a node met twice (a cycle) is skipped. The count
    is the tree's own ``/Count`` when the walk stopped early, else the pages walked.
    """
    from pypdf import PageObject
    from pypdf.generic import ArrayObject, DictionaryObject, IndirectObject, NameObject

    pages: list[Any] = []
    seen: set[Any] = set()
    stack: list[tuple[Any, dict[Any, Any]]] = [(iter([reader.root_object.raw_get("/Pages")]), {})]
    while stack:
        kids, inherited = stack[-1]
        ref = next(kids, None)
        if ref is None:
            stack.pop()
            continue
        node = ref.get_object()
        if not isinstance(node, DictionaryObject):
            continue
        key = (ref.idnum, ref.generation) if isinstance(ref, IndirectObject) else id(node)
        if key in seen:
            continue
        seen.add(key)
        if node.get("/Type") == "/Pages" or ("/Kids" in node and node.get("/Type") != "/Page"):
            children = node.get("/Kids")
            if isinstance(children, ArrayObject) and len(stack) < _MAX_TREE_DEPTH:
                here = {NameObject(name): node[name] for name in _INHERITED if name in node}
                stack.append((iter(children), {**inherited, **here}))
            continue
        if len(pages) == limit:
            declared = reader.root_object["/Pages"].get("/Count")
            count = declared if isinstance(declared, int) and declared > limit else limit
            return pages, True, count
        page = PageObject(reader, ref if isinstance(ref, IndirectObject) else None)
        page.update(node)
        for name, value in inherited.items():
            if name not in page:
                page[name] = value
        pages.append(page)
    return pages, False, len(pages)


def _open_pdf(body: bytes) -> Any:
    """A pypdf reader of ``body``, lenient. Opened strictly first: leniently, pypdf reads the
    header of every object in the cross-reference table before anything else, to repair a
    damaged table (0.2 of the 0.44 s a 9 MB PDF of 60,000 objects took; strictly, 0.06 s).
    A well-formed table (its objects numbered from 0, as pypdf's repair assumes otherwise)
    needs no repair up front: an object found elsewhere than its entry says is still looked
    for when read. Any other file is opened leniently, as before."""
    from pypdf import PdfReader  # lazy: only PDF reads pay for the import

    try:
        reader = PdfReader(io.BytesIO(body), strict=True)
    except Exception:  # damaged, or not a PDF pypdf reads strictly
        return PdfReader(io.BytesIO(body), strict=False)
    if reader.xref_index:  # a table numbered from 1: the lenient opening renumbers it
        return PdfReader(io.BytesIO(body), strict=False)
    reader.strict = False  # lenient from here on: one odd page must not cost the others
    return reader


def pdf_facts(body: bytes, limit: int) -> tuple[int | None, bool]:
    """A PDF's page count (its tree's ``/Count`` past ``limit`` pages walked) and whether it
    is encrypted, for a mapping that must know whether a model provider takes the file:
    ``(None, False)`` when pypdf cannot open it. Opening a PDF decrypts it with the empty
    password, as readers do, so a file anyone can read is still an encrypted one."""
    try:
        reader = _open_pdf(body)
        encrypted = bool(reader.is_encrypted)
        _, more, pages = _first_pages(reader, limit)
        declared = reader.root_object["/Pages"].get("/Count")
    except Exception:  # pypdf raises many kinds of errors on hostile files
        return None, False
    # Past the limit the count is the tree's own /Count, which a file may set to anything.
    if more:
        pages = max(pages, limit + 1)
    # The walk reads a page listed twice once (as a loop), where other readers count it each
    # time it is listed, as the tree's /Count does: 60 pages each listed twice were 60 here
    # and 120 to pypdf's own count. The larger is the one a provider may see.
    if isinstance(declared, int) and not isinstance(declared, bool):
        pages = max(pages, declared)
    return pages, encrypted


def pdf_text(
    body: bytes, max_chars: int, *, max_pages: int = 10**9, max_inflated: int = 10**12
) -> PdfText:
    """The text of a PDF, page after page, cut at ``max_chars``, ``max_pages`` pages or
    ``max_inflated`` bytes of inflated page content. Never raises: a PDF pypdf cannot read
    (broken, encrypted) gives empty text."""
    reader = None
    try:
        from pypdf.errors import LimitReachedError  # a stream past pypdf's own 75 MB cap

        reader = _open_pdf(body)
        first, more, pages = _first_pages(reader, max_pages)
        title = ""
        try:
            meta = reader.metadata
            if meta is not None and isinstance(meta.title, str):
                title = " ".join(meta.title.split())[:300]
        except Exception:  # broken metadata must not cost the text
            title = ""
        chunks: list[str] = []
        size = inflated = 0
        truncated = False
        stopped = ""
        work = _Work(max(max_inflated // _BYTES_PER_OPERATOR, 1), _EXTRACTION_CPU_S)
        for number, page in enumerate(first):
            try:
                inflated += _content_bytes(page, max_inflated - inflated)
            except LimitReachedError:  # one stream alone inflates past the cap
                inflated = max_inflated + 1
            except Exception:  # unreadable content: extract_text says what it can
                pass
            if inflated > max_inflated:
                stopped = f"page {number + 1:,}, where the inflated page content passes {max_inflated:,} bytes"
                break
            try:
                chunk = (page.extract_text(visitor_operand_before=work) or "").strip()
            except _WorkSpent:
                stopped = (
                    f"page {number + 1:,}, where reading the text passes its bound of work "
                    "(the content is parsed again and again)"
                )
                break
            except Exception:  # one unreadable page must not cost the others
                chunk = ""
            if not chunk:
                continue
            chunks.append(chunk)
            size += len(chunk) + 2
            if size > max_chars:
                truncated = True
                break
        else:
            if more:
                stopped = f"the first {max_pages:,} pages"
    except Exception:  # pypdf raises many kinds of errors on hostile files
        locked = reader is not None and bool(getattr(reader, "is_encrypted", False))
        return PdfText(text="", pages=None, title="", truncated=False, encrypted=locked)
    text = "\n\n".join(chunks)
    if len(text) > max_chars:
        text, truncated = text[:max_chars], True
    locked = bool(reader.is_encrypted)
    return PdfText(text, pages, title, truncated, stopped, encrypted=locked)


def pdf_reading(body: bytes, url: str, limits: LimitsSettings) -> tuple[str, str, Part]:
    """A PDF's title, its reading and its document part.

    The reading is a header line (``application/pdf document report.pdf, 12345 bytes, 3
    pages, from <url>``), a blank line and the text pypdf extracts, up to ``max_read_bytes``
    characters (the text cap of any page), ``max_pdf_pages`` pages and
    ``max_pdf_inflated_bytes`` of inflated content: windowed, searched with ``query`` and
    paged with ``offset`` like a long page's, so a model that cannot take the PDF itself
    reads it to the end of that text. The part carries the PDF, and no text of its own.
    Raises ``Refused`` (``unsupported_type``) for a file no reader can open.
    """
    from ._errors import Reason, Refused

    cap = limits.max_read_bytes
    extracted = pdf_text(
        body, cap, max_pages=limits.max_pdf_pages, max_inflated=limits.max_pdf_inflated_bytes
    )
    if not extracted.pages:
        # A file a PDF reader cannot open (or with no page to show: a page tree that loops
        # back on itself) would make the model provider reject the whole request; better to
        # say so here, as a message the agent can read.
        why = "it is damaged or not really a PDF"
        if extracted.encrypted:
            why = "a password locks it"
        elif extracted.pages == 0:
            why = "it has no page to show"
        raise Refused(
            f"refused: the PDF could not be read ({why})",
            code="unsupported_type",
            reason=Reason.UNREADABLE_PDF,
        )
    part = document_part(body, url, None)
    text = extracted.text
    # Said so that it holds for every reader: a model that takes PDFs has the file (it comes
    # with offset 0), one that does not has only this text.
    rest = "the pages after it are in the PDF itself (attached at offset 0), not in this text"
    if extracted.truncated:
        text = f"{text}\n\n[PDF text cut at {cap:,} characters; {rest}]"
    elif extracted.stopped:
        text = f"{text}\n\n[PDF text stops at {extracted.stopped}; {rest}]".lstrip()
    pages = f", {extracted.pages} page{'' if extracted.pages == 1 else 's'}"
    unreadable = "" if extracted.text else ", no extractable text"  # scanned, or encrypted
    # Said for whoever hands the file on (an MCP host, a gateway's caller): a provider that
    # takes PDFs may refuse an encrypted one, the whole request with it.
    locked = ", encrypted (it opens with the empty password)" if extracted.encrypted else ""
    header = (
        f"application/pdf document {part.name}, {len(body)} bytes{pages}{locked}{unreadable}, "
        f"from {summary_url(url)}"
    )
    return extracted.title or part.name, f"{header}\n\n{text}" if text else header, part


def document_part(body: bytes, url: str, text: str | None) -> Part:
    """A PDF document part (base64), named after the URL's file name, carrying ``text``
    (``None`` from :func:`pdf_reading`, whose text is the reading's)."""
    return Part(
        type="document",
        media_type="application/pdf",
        bytes=len(body),
        name=file_name(url, "document", "pdf"),
        data=base64.b64encode(body).decode("ascii"),
        text=text,
    )


def part_summary(part: Part) -> str:
    """``[image image/png, 12345 bytes]`` or ``[document report.pdf, 12345 bytes]``."""
    if part.type == "image":
        return f"[image {part.media_type}, {part.bytes} bytes]"
    if part.type == "document":
        return f"[document {part.name}, {part.bytes} bytes]"
    return f"[{part.type} {part.media_type}, {part.bytes} bytes]"


def tool_result_text(parts: Iterable[str | Part]) -> str:
    """The text of a tool result for logs and run visibility: text blocks as they are, each
    binary part as its one-line summary, one block per line. Never any base64."""
    return "\n".join(item if isinstance(item, str) else part_summary(item) for item in parts)
