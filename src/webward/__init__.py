"""webward: the one audited door through which AI agents read the public web and search it.

```python
from webward import Web, Settings

async with Web(settings=Settings.load()) as web:
    page = await web.fetch("https://docs.python.org/3/", agent="cli")
```
"""

from __future__ import annotations

import contextlib

__version__ = "0.1.0"

from ._errors import InvalidInput, Refused, UpstreamError, WebwardError
from ._models import Hit, Link, Page, Part, SearchResult, Window
from ._resolver import Resolver, StaticResolver, SystemResolver
from ._settings import Settings
from ._web import Web

__all__ = [
    "Hit",
    "InvalidInput",
    "Link",
    "Page",
    "Part",
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

for _name in __all__:  # reprs and docs read webward.Web, not webward._web.Web
    _obj = globals()[_name]
    with contextlib.suppress(AttributeError, TypeError):
        _obj.__module__ = "webward"
del _name, _obj
