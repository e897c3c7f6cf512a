"""Optional dependencies: the plain install reads pages; servers and shared stores are extras.

A face or store whose extra is missing says, in one sentence, which extra to install.
"""

from __future__ import annotations

import importlib.util

from ._errors import InvalidInput

__all__ = ["require"]


def require(module: str, extra: str, needed_by: str) -> None:
    """Raise :class:`InvalidInput` naming ``pip install 'webward[extra]'`` if ``module`` is
    not installed; ``needed_by`` says what asked for it (a command or a setting)."""
    if importlib.util.find_spec(module) is None:
        raise InvalidInput(
            f"{needed_by} needs the optional package {module}, which is not installed: "
            f"install it with pip install 'webward[{extra}]'"
        )
