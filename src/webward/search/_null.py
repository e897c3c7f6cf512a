"""The provider used when none is configured: it refuses with a message that says how to
configure one, never with an empty list that would read as "nothing found"."""

from __future__ import annotations

from .._errors import Reason, Refused, operator_step
from .._models import Hit

__all__ = ["NOT_CONFIGURED", "NullProvider", "not_configured"]

_STILL_WORKS = "reading URLs with web_fetch still works"


def not_configured(why: str, fix: str) -> str:
    """The DESIGN message: what is wrong, how to fix it, and what still works. A model is told
    what is wrong and what still works; the fix (the key to set, the setting to change) is the
    operator's."""
    return operator_step(
        f"web search is not configured{why}",
        f"{fix}; {_STILL_WORKS}",
        model=f"only webward's operator can turn it on; {_STILL_WORKS}",
    )


NOT_CONFIGURED = not_configured(
    "",
    "set BRAVE_SEARCH_API_KEY or TAVILY_API_KEY (or store one with `webward credentials set "
    "BRAVE_SEARCH_API_KEY`), or point `[search] searxng_url` at a SearXNG instance",
)


class NullProvider:
    """Refuses every search with ``Refused(code="not_configured")``.

    ``message`` replaces the generic one when the reason is more specific (a chosen provider
    without its key, search turned off on purpose).
    """

    name = "none"

    def __init__(self, message: str = NOT_CONFIGURED) -> None:
        self.message = message

    def __repr__(self) -> str:
        return "NullProvider()"

    async def search(self, query: str, limit: int, filters: object = None) -> list[Hit]:
        raise Refused(self.message, code="not_configured", reason=Reason.NOT_CONFIGURED)
