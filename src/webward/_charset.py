"""Charsets: decoding a text body the way browsers do (pure, no I/O).

:func:`decode_text` turns response bytes into text: a byte-order mark, then the header's
``charset``, then the document's own ``<meta>`` or XML declaration, then strict UTF-8 (or UTF-8
with a few stray bytes), then detection with charset-normalizer, finally windows-1252; it never
raises. :func:`codec_for` maps a charset label to a Python codec as the WHATWG Encoding Standard
reads it: only the standard's labels count, so a page cannot pick UTF-7, a Python-only codec
such as ``unicode_escape`` (which decodes escape sequences into lone surrogates) or a
bytes-to-bytes transform. :mod:`webward._convert` re-exports both.
"""

from __future__ import annotations

import codecs
import functools
import re

import webencodings

__all__ = ["codec_for", "decode_text"]


_BOMS = (
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)

# Only the WHATWG Encoding Standard's labels name an encoding (the table comes with
# ``webencodings``): Python's codec registry also knows codecs no browser does, some of which
# turn escape sequences into lone surrogates (unicode_escape, raw_unicode_escape, utf-7) or
# bytes into other bytes (zlib, base64, rot13, uu). A label outside the table is unknown.
# webencodings reads GBK with Python's gbk codec; the standard reads it with the gb18030
# decoder. "replacement" (ISO-2022-KR, HZ ...) decodes any document to one U+FFFD: unusable.
_CODEC_FOR_WHATWG_NAME = {"gbk": "gb18030", "replacement": None, "x-user-defined": None}


# Python's names of every codec a WHATWG encoding decodes with (for detection's answers).
# Built on first use: the lookups import some 40 codec modules, which a page that declares
# its charset need not load.
@functools.cache
def _whatwg_codecs() -> frozenset[str]:
    return frozenset(
        codecs.lookup(name).name
        for name in (
            _CODEC_FOR_WHATWG_NAME.get(enc, webencodings.lookup(enc).codec_info.name)
            for enc in set(webencodings.LABELS.values())
        )
        if name is not None
    )


_META_CHARSET = re.compile(
    rb"""<meta[^>]{0,512}?charset\s*=\s*["']?\s*([a-zA-Z0-9_:.+-]{1,40})""", re.IGNORECASE
)
_XML_ENCODING = re.compile(
    rb"""^\s*<\?xml[^>]{0,200}?encoding\s*=\s*["']([a-zA-Z0-9_:.+-]{1,40})""", re.IGNORECASE
)


def codec_for(label: str | None) -> str | None:
    """The Python codec for a WHATWG charset label, or ``None`` if unknown or unusable."""
    if not label:
        return None
    name = label.strip().strip("\"'").strip()
    encoding = webencodings.lookup(name) if name else None  # ASCII case-insensitive
    if encoding is None:
        return None
    codec = _CODEC_FOR_WHATWG_NAME.get(encoding.name, encoding.codec_info.name)
    if codec is None:
        return None
    try:
        return codecs.lookup(codec).name
    except LookupError:
        return None


# Codecs charset-normalizer may propose that extend a WHATWG encoding's repertoire: read with
# that encoding (a browser would), not passed over for windows-1252.
_WHATWG_FAMILY = {
    "shift_jis_2004": "shift_jis",
    "shift_jisx0213": "shift_jis",
    "euc_jis_2004": "euc_jp",
    "euc_jisx0213": "euc_jp",
    "big5hkscs": "big5",
}


def _detected_codec(name: str) -> str | None:
    """A codec charset-normalizer proposes (Python's names), if a WHATWG encoding uses it."""
    name = _WHATWG_FAMILY.get(name, name)
    as_label = codec_for(name.replace("_", "-"))  # "euc_kr", "shift_jis", "big5" ...
    if as_label is not None:
        return as_label
    try:
        codec = codecs.lookup(name).name
    except LookupError:
        return None
    return codec if codec in _whatwg_codecs() else None


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


_SAMPLE_BYTES = 262_144


def _sample(body: bytes) -> bytes:
    """What detection reads of ``body``: its first 256 KiB, ending before a ``<`` or newline.
    charset-normalizer finds no encoding at all in a sample that ends inside a multi-byte
    character (half of all cuts, on a Japanese page), and neither byte is ever part of one
    in UTF-8, Shift_JIS, EUC-JP, EUC-KR, GB18030 or Big5."""
    if len(body) <= _SAMPLE_BYTES:
        return body
    sample = body[:_SAMPLE_BYTES]
    end = max(sample.rfind(b"<"), sample.rfind(b"\n"))
    return sample[:end] if end > _SAMPLE_BYTES // 2 else sample


# Never a detection's answer: WHATWG detects neither UTF-16 nor UTF-32 (their byte-order marks
# are read first), and charset-normalizer named UTF-16 for Shift_JIS cut inside a character.
_NEVER_DETECTED = ("utf_16", "utf_16_le", "utf_16_be", "utf_32", "utf_32_le", "utf_32_be")


def _detect(body: bytes) -> str | None:
    import charset_normalizer  # lazy: only pages with no usable declaration pay for it

    sample = _sample(body)
    try:
        # A sample cut inside a multi-byte character matches no encoding (a line of Japanese
        # with no "<" or newline in its second half): of the cuts up to three bytes shorter,
        # one falls between characters.
        for cut in range(4 if len(sample) < len(body) else 1):
            matches = charset_normalizer.from_bytes(
                sample[: len(sample) - cut], cp_exclusion=list(_NEVER_DETECTED)
            )
            best = matches.best()
            if best is not None:
                break
        else:
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
        detected = _detected_codec(best.encoding)
        if detected in _MULTI_BYTE and _reads_as_cp1252(sample):
            return "cp1252"
        return detected
    except Exception:  # detection is a heuristic: its failure is "no answer", never an error
        return None


# The CJK codecs detection may name, as :func:`_detected_codec` gives them (Big5, Shift_JIS,
# EUC-KR, EUC-JP and GBK as a browser reads them).
_MULTI_BYTE = frozenset(("big5hkscs", "cp932", "cp949", "euc_jp", "gb18030"))
# What windows-1252 text holds past ASCII, for :func:`_reads_as_cp1252`: its punctuation
# (quotes, dashes, ellipsis, bullet, euro, trade mark, no-break space, guillemets ...) and the
# letters of Western European words (U+00C0 to U+00FF but for the multiplication and division
# signs, and the few letters cp1252 adds). Not its U+0192 (f with hook), U+02C6 nor U+02DC:
# Shift_JIS's katakana read as windows-1252 are each a U+0192 then an ASCII byte (テスト).
_CP1252_PUNCTUATION = (
    "\u20ac\u2026\u2018\u2019\u201a\u201c\u201d\u201e\u2022\u2013\u2014\u2122\u2039\u203a"
    "\xa0\xa1\xa3\xa7\xa9\xab\xae\xb0\xb7\xbb\xbf"
)
_CP1252_LETTERS = "\xc0-\xd6\xd8-\xf6\xf8-\xff\u0152\u0153\u0160\u0161\u0178\u017d\u017e"
# Anything past ASCII that is neither; a run of more than three characters past ASCII.
_NOT_WESTERN = re.compile(
    f"[^\\x00-\\x7f{_CP1252_PUNCTUATION}{_CP1252_LETTERS}]|[^\\x00-\\x7f]{{4}}"
)
# A run of two or three characters past ASCII that no ASCII letter touches: a word of its own.
_ASCII_NOT_LETTER = "[\\x00-\\x40\\x5b-\\x60\\x7b-\\x7f]"
_ALONE = re.compile(f"(?:^|(?<={_ASCII_NOT_LETTER}))[^\\x00-\\x7f]{{2,3}}(?={_ASCII_NOT_LETTER}|$)")
_WESTERN_LETTER = re.compile(f"[{_CP1252_LETTERS}]")
# A character past ASCII that is no Western letter, or one that no letter comes before (a
# Western accent is inside a word or ends it: "Türkçe", "Größe", "café").
_NOT_IN_A_WORD = re.compile(
    f"[^\\x00-\\x7f{_CP1252_LETTERS}]|(?<![A-Za-z{_CP1252_LETTERS}])[{_CP1252_LETTERS}]"
)
#: At most this share of a text's bytes are past ASCII for it to be read as Western prose.
_MAX_WESTERN_SHARE = 0.25


def _reads_as_cp1252(sample: bytes) -> bool:
    """Whether ``sample``, which detection reads as a CJK codec, is rather ASCII text with a
    few windows-1252 characters in it: smart quotes, dashes, accented letters. A short note
    ("It\u2019s a short note.", the apostrophe byte 0x92) fits Big5-HKSCS as well, 0x92 and
    the "s" after it one ideograph: "It𠏋 a short note." CJK text is runs of bytes past ASCII, two
    or more a character, most of its bytes; windows-1252 in ASCII prose is a byte or two at a
    time, each punctuation or a letter in a word of ASCII letters. So: at most a quarter of
    the bytes past ASCII, in runs of at most three, which read in windows-1252 as its
    punctuation or as Western letters, and a run of more than one holding a letter touches an
    ASCII letter ("Größe", "café" and a closing quote; "voilà à Paris": one letter alone is
    a word). Patterns
    in C over the sample: no loop per character."""
    high = len(sample) - len(sample.translate(None, _HIGH_BYTES))
    if not high or high > _MAX_WESTERN_SHARE * len(sample):
        return False
    c1 = len(sample.translate(None, _C1_BYTES)) != len(sample)
    try:
        text = sample.decode("cp1252")
    except UnicodeDecodeError:  # 0x81, 0x8D, 0x8F, 0x90, 0x9D: no character in cp1252
        return False
    if _NOT_WESTERN.search(text):
        return False
    if not c1 and _NOT_IN_A_WORD.search(text):
        # Neither windows-1252's own punctuation (bytes 0x80 to 0x9F: smart quotes, dashes,
        # the ellipsis) nor letters inside Western words alone: a Big5 word whose second byte
        # is ASCII ("新聞", B7 73 BB 44) reads as "·s»D", and passed the rest.
        return False
    return not any(_WESTERN_LETTER.search(run.group()) for run in _ALONE.finditer(text))


_HIGH_BYTES = bytes(range(0x80, 0x100))
_C1_BYTES = bytes(range(0x80, 0xA0))


#: A body that is not strictly UTF-8 is still read as UTF-8 (stray bytes as U+FFFD) when at
#: least this many times as many characters past ASCII decode as fail to.
_MOSTLY_UTF8 = 20
#: The same when the header or the document declares UTF-8: the declaration is evidence
#: too, so twice as many suffice. Text in another charset sent as UTF-8 rarely forms a valid
#: multi-byte sequence at all: windows-1251, -1252, -1253, -1255 text none, Shift_JIS, EUC-JP,
#: GBK, Big5 and EUC-KR text one for every three to seven bytes that fail.
_DECLARED_UTF8 = 2


def _mostly_utf8(body: bytes, truncated: bool, ratio: int = _MOSTLY_UTF8) -> str | None:
    """``body`` as UTF-8, stray bytes replaced, when that is what it is: a UTF-8 page with a
    windows-1252 byte or a cut pasted in. Detection read such a page as a codec that takes
    every byte (Shift_JIS's cp932 reads UTF-8's pairs as half-width katakana): mojibake
    throughout. windows-1252 text sent as UTF-8 fails on nearly every character past ASCII."""
    text = _decode(body, "utf-8", "replace", truncated)
    failed = text.count("\ufffd")
    decoded = len(text) - len(text.encode("ascii", "ignore")) - failed
    return text if decoded >= ratio * max(failed, 1) else None


# The labels servers send by default rather than by knowledge of the file: codec_for makes
# windows-1252 of iso-8859-1, latin1, us-ascii and windows-1252 (as WHATWG does).
_LATIN_DEFAULTS = frozenset({"cp1252"})


def _single_byte(codec: str) -> bool:
    """Whether ``codec`` (a Python codec name, as :func:`codec_for` or detection gives it) is
    one of the standard's single-byte encodings: not UTF-8, UTF-16, UTF-32, nor a CJK one."""
    return not codec.startswith(("utf", "iso2022")) and codec not in _MULTI_BYTE


def decode_text(
    body: bytes, header_charset: str | None, *, html: bool = False, truncated: bool = False
) -> tuple[str, str]:
    """Decode a text body; returns ``(text, codec)``. Never raises.

    Order: a byte-order mark; UTF-8, when the first declaration is a Latin-1 label (a
    server's default) and the bytes are valid UTF-8 beyond ASCII; the ``charset`` of the
    Content-Type header; for HTML the
    document's ``<meta>`` (for XML its declaration); strict UTF-8, then UTF-8 with a few stray
    bytes (see :func:`_mostly_utf8`); detection with charset-normalizer; finally windows-1252.
    A declaration whose codec cannot decode the bytes strictly (cp1252 bytes sent as UTF-8) is
    passed over for the next source; when none decodes them strictly, the declared codec, else
    the detected one, else windows-1252 decodes them, replacing undecodable bytes with U+FFFD.
    """
    for bom, codec in _BOMS:
        if body.startswith(bom):
            return _decode(body[len(bom) :], codec, "replace", truncated), codec
    declared: list[str] = []
    header_codec = codec_for(header_charset)
    if header_codec is not None and not (
        header_codec.startswith(("utf-16", "utf-32")) and b"\x00" not in body[:4096]
    ):
        # A UTF-16 or UTF-32 label over bytes with no NUL (ASCII text, mislabelled) is passed
        # over: such text holds a NUL at least every other byte. Read as labelled, ASCII came
        # out as CJK-looking gibberish whenever its length was even.
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
    if declared and declared[0] in _LATIN_DEFAULTS and not body.isascii():
        # A server's default label (Latin-1 for every text file) over a page written in
        # UTF-8 is common, and the bytes tell: text in a single-byte Latin charset almost
        # never forms valid UTF-8 sequences. Read as declared, the page came out as
        # mojibake unless some byte happened to be undefined in windows-1252.
        text = _try(body, "utf-8", truncated)
        if text is not None:
            return text, "utf-8"
    for codec in declared:
        text = _try(body, codec, truncated)
        if text is not None:
            return text, codec
    text = _try(body, "utf-8", truncated)
    if text is None:
        # A page declared UTF-8 with one stray byte among a few accents (a short French page
        # with one windows-1252 byte pasted in) fell short of the undeclared ratio, and
        # detection read it as windows-1252 or cp932: mojibake throughout, where a browser
        # shows one U+FFFD.
        ratio = _DECLARED_UTF8 if "utf-8" in declared else _MOSTLY_UTF8
        text = _mostly_utf8(body, truncated, ratio)
    if text is not None:
        return text, "utf-8"
    detected = _detect(body)
    single = next((codec for codec in declared if _single_byte(codec)), None)
    if single is not None and detected is not None and _single_byte(detected):
        # A page declared in a single-byte charset failed it strictly only on a byte Python's
        # codec leaves undefined (windows-1252's 0x81, 0x8D, 0x8F, 0x90 and 0x9D, which the
        # standard reads as C1 controls; windows-1253's 0x81, windows-1255's 0xFF ...), and
        # detection's other single-byte codec then read the whole page: "niño" as "niņo"
        # (ISO-8859-10), "€" as "Ђ" (cp1251), Greek and Hebrew as Cyrillic (mac-cyrillic,
        # koi8-r). Another single-byte codec is no better evidence than the declaration, which
        # a browser follows: the byte costs one U+FFFD. A CJK codec still wins (Shift_JIS and
        # Big5 lead bytes are such bytes, under a server's default Latin-1 label).
        return _decode(body, single, "replace", truncated), single
    if detected is not None:
        text = _try(body, detected, truncated)
        if text is not None:
            return text, detected
    # No codec decodes every byte: the declared one, else the detected one, with U+FFFD for
    # what it cannot decode (as a browser does). One stray byte in a Shift_JIS page made the
    # detected codec fail strictly, and windows-1252 then read the whole page as mojibake.
    fallbacks = [*declared, *([detected] if detected is not None else []), "cp1252"]
    for codec in fallbacks:
        try:
            return _decode(body, codec, "replace", truncated), codec
        except (UnicodeError, LookupError, ValueError, TypeError):
            continue  # some codecs fail even when told to replace (a UTF-16 stream's BOM)
    return body.decode("latin-1"), "latin-1"  # unreachable in practice: latin-1 maps every byte
