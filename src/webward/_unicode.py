"""Text every output can carry: no lone surrogates (pure, no I/O).

A Python ``str`` can hold a surrogate code point on its own (JSON's ``"\\ud800"``, a codec that
decodes escape sequences, a library's bug); UTF-8 cannot encode one, so printing it, or
serialising it as JSON for MCP or a model API, fails. The result models and error messages
replace each with U+FFFD, as a decoder does for bytes it cannot read.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["BIDI_CONTROLS", "BIDI_MARKS", "replace_surrogates", "replace_surrogates_in"]

#: The bidi embeddings, overrides and isolates, which reorder what is shown, and the bidi marks
#: (LRM, RLM, ALM), which show as nothing: out of page text (controls) and fields and names.
BIDI_CONTROLS = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
BIDI_MARKS = "\u200e\u200f\u061c"

_SURROGATE_RE = re.compile("[\ud800-\udfff]")


def replace_surrogates(text: str) -> str:
    """``text`` with every surrogate code point replaced by U+FFFD."""
    if text.isascii():  # the common case, and the cheapest test
        return text
    try:
        text.encode("utf-16-le")  # ~20 times quicker than searching with the regex
    except UnicodeEncodeError:
        return _SURROGATE_RE.sub("\ufffd", text)
    return text


def replace_surrogates_in(value: Any) -> Any:
    """``value`` (parsed JSON: dicts, lists, strings ...) with :func:`replace_surrogates`
    applied to every string, keys included."""
    if isinstance(value, str):
        return replace_surrogates(value)
    if isinstance(value, list):
        return [replace_surrogates_in(v) for v in value]
    if isinstance(value, dict):
        return {replace_surrogates_in(k): replace_surrogates_in(v) for k, v in value.items()}
    return value
