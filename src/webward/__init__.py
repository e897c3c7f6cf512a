"""webward: the one audited door through which AI agents read the public web and search it.

```python
from webward import Web, Settings

async with Web(settings=Settings.load()) as web:
    page = await web.fetch("https://docs.python.org/3/", agent="cli", tier="connected")
```

Without ``tier`` (or an ``[agents.cli] tier`` or ``[policy] allow`` of the config file), the
read is refused: an agent's default tier, ``as-owner``, reads only the hosts allowed.
"""

from __future__ import annotations

import contextlib
import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from ._errors import InvalidInput, Refused, UpstreamError, WebwardError
    from ._models import Hit, Link, Page, Part, Passage, SearchResult, Window
    from ._resolver import Resolver, StaticResolver, SystemResolver
    from ._settings import Settings
    from ._web import Web

# Each name is imported on first use: `webward --help` and the commands that do not read
# pages do not pay for the core (its HTTP stack and converters) at start-up.
_SOURCES = {
    "Hit": "_models",
    "InvalidInput": "_errors",
    "Link": "_models",
    "Page": "_models",
    "Part": "_models",
    "Passage": "_models",
    "Refused": "_errors",
    "Resolver": "_resolver",
    "SearchResult": "_models",
    "Settings": "_settings",
    "StaticResolver": "_resolver",
    "SystemResolver": "_resolver",
    "UpstreamError": "_errors",
    "Web": "_web",
    "WebwardError": "_errors",
    "Window": "_models",
}

__all__ = [
    "Hit",
    "InvalidInput",
    "Link",
    "Page",
    "Part",
    "Passage",
    "Refused",
    "Resolver",
    "SearchResult",
    "Settings",
    "StaticResolver",
    "SystemResolver",
    "UpstreamError",
    "Web",
    "WebwardError",
    "Window",
]


if not TYPE_CHECKING:
    # Hidden from type checkers, which read the imports above: a module __getattr__ typed
    # ``-> Any`` made every name of webward one (``from webward import Refsued`` passed
    # ``mypy --strict``, an Any).

    def __getattr__(name: str) -> Any:
        source = _SOURCES.get(name)
        if source is None:
            raise AttributeError(f"module 'webward' has no attribute {name!r}")
        obj = getattr(importlib.import_module(f"webward.{source}"), name)
        with contextlib.suppress(AttributeError, TypeError):
            obj.__module__ = "webward"  # reprs and docs read webward.Web, not webward._web.Web
        globals()[name] = obj
        return obj


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
