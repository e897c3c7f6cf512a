"""Charsets: decoding a text body the way browsers do (pure, no I/O).

:func:`decode_text` turns response bytes into text: a byte-order mark, then the header's
``charset``, then the document's own ``<meta>`` or XML declaration, then strict UTF-8, then
detection with charset-normalizer, finally windows-1252; it never raises. :func:`codec_for` maps
a charset label to a Python codec as the WHATWG Encoding Standard reads it, refusing UTF-7 and
the bytes-to-bytes transforms of the codec registry. :mod:`webward._convert` re-exports both.
"""

from __future__ import annotations

import codecs
import re

__all__ = ["codec_for", "decode_text"]


_BOMS = (
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)

# Labels browsers read differently from Python's codec registry (WHATWG Encoding Standard):
# latin-1 and ASCII mean windows-1252 on the web, GB2312 means GBK, and so on.
_WEB_ALIASES = {
    "iso-8859-1": "cp1252",
    "iso8859-1": "cp1252",
    "iso_8859-1": "cp1252",
    "latin1": "cp1252",
    "latin-1": "cp1252",
    "l1": "cp1252",
    "ascii": "cp1252",
    "us-ascii": "cp1252",
    "windows-1252": "cp1252",
    "x-cp1252": "cp1252",
    "cp819": "cp1252",
    "iso-8859-9": "cp1254",
    "latin5": "cp1254",
    "iso-8859-11": "cp874",
    "tis-620": "cp874",
    "gb2312": "gb18030",
    "gbk": "gb18030",
    "x-gbk": "gb18030",
    "euc-kr": "cp949",
    "x-sjis": "shift_jis",
    "ms_kanji": "cp932",
    "windows-31j": "cp932",
    "unicode-1-1-utf-8": "utf-8",
    "utf8": "utf-8",
    "utf-16": "utf-16-le",
    "utf16": "utf-16-le",
    "unicode": "utf-16-le",
    "ucs-2": "utf-16-le",
    "utf-32": "utf-32-le",
}
# Never decode with these, whatever a page claims: UTF-7 is an XSS vector, and a UTF-16/32
# label inside an ASCII-readable document is wrong by construction (WHATWG reads it as UTF-8).
_REFUSED_LABELS = {"utf-7", "utf7", "unicode-1-1-utf-7", "csunicode11utf7"}

_META_CHARSET = re.compile(
    rb"""<meta[^>]{0,512}?charset\s*=\s*["']?\s*([a-zA-Z0-9_:.+-]{1,40})""", re.IGNORECASE
)
_XML_ENCODING = re.compile(
    rb"""^\s*<\?xml[^>]{0,200}?encoding\s*=\s*["']([a-zA-Z0-9_:.+-]{1,40})""", re.IGNORECASE
)


def codec_for(label: str | None) -> str | None:
    """The Python codec for a charset label as browsers read it, or ``None`` if unusable."""
    if not label:
        return None
    name = label.strip().strip("\"'").strip().lower()
    if not name or name in _REFUSED_LABELS:
        return None
    name = _WEB_ALIASES.get(name, name)
    try:
        info = codecs.lookup(name)
    except (LookupError, ValueError):
        return None
    # codecs.lookup also knows base64, zlib, rot13 ...: bytes-to-bytes transforms a header must
    # never be able to select (a "charset=zlib" would decompress attacker data).
    if not getattr(info, "_is_text_encoding", True):
        return None
    return info.name


def _decode(body: bytes, codec: str, errors: str, truncated: bool) -> str:
    # A read cut at the byte cap may end inside a multi-byte character: an incremental decoder
    # with final=False holds those last bytes back instead of failing or inventing U+FFFD.
    decoder = codecs.getincrementaldecoder(codec)(errors)
    return decoder.decode(body, final=not truncated)


def _try(body: bytes, codec: str | None, truncated: bool) -> str | None:
    if codec is None:
        return None
    try:
        return _decode(body, codec, "strict", truncated)
    except (UnicodeDecodeError, LookupError, ValueError, TypeError):
        return None


def _detect(body: bytes) -> str | None:
    import charset_normalizer  # lazy: only pages with no usable declaration pay for it

    try:
        matches = charset_normalizer.from_bytes(body[:262_144])
        best = matches.best()
        if best is None:
            return None
        # Short Western texts fit several single-byte codecs equally well (cp1250, cp1257 ...);
        # windows-1252 is by far the most common on the web, and browsers' default for them.
        for match in matches:
            if (
                match.encoding == "cp1252"
                and match.chaos <= best.chaos + 0.01
                and match.coherence >= best.coherence - 0.05
            ):
                return "cp1252"
        return codec_for(best.encoding)
    except Exception:  # detection is a heuristic: its failure is "no answer", never an error
        return None


def decode_text(
    body: bytes, header_charset: str | None, *, html: bool = False, truncated: bool = False
) -> tuple[str, str]:
    """Decode a text body; returns ``(text, codec)``. Never raises.

    Order: a byte-order mark; the ``charset`` of the Content-Type header; for HTML the
    document's ``<meta>`` (for XML its declaration); strict UTF-8; detection with
    charset-normalizer; finally windows-1252. A declaration whose codec cannot decode the bytes
    strictly (cp1252 bytes sent as UTF-8) is passed over for the next source; the last resort
    replaces undecodable bytes with U+FFFD.
    """
    for bom, codec in _BOMS:
        if body.startswith(bom):
            return _decode(body[len(bom) :], codec, "replace", truncated), codec
    declared: list[str] = []
    header_codec = codec_for(header_charset)
    if header_codec is not None:
        declared.append(header_codec)
    head = body[:8192]
    doc_match = _XML_ENCODING.search(head)
    if doc_match is None and html:
        doc_match = _META_CHARSET.search(head)
    if doc_match is not None:
        in_doc = codec_for(doc_match.group(1).decode("ascii"))
        if in_doc is not None and in_doc.startswith(("utf-16", "utf-32")):
            in_doc = "utf-8"  # an ASCII-readable declaration cannot be in UTF-16 (WHATWG)
        if in_doc is not None:
            declared.append(in_doc)
    for codec in declared:
        text = _try(body, codec, truncated)
        if text is not None:
            return text, codec
    text = _try(body, "utf-8", truncated)
    if text is not None:
        return text, "utf-8"
    detected = _detect(body)
    if detected is not None:
        text = _try(body, detected, truncated)
        if text is not None:
            return text, detected
    for codec in (*declared, "cp1252"):
        try:
            return _decode(body, codec, "replace", truncated), codec
        except (UnicodeError, LookupError, ValueError, TypeError):
            continue  # some codecs fail even when told to replace (a UTF-16 stream's BOM)
    return body.decode("latin-1"), "latin-1"  # unreachable in practice: latin-1 maps every byte
