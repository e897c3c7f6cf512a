"""Shared fixtures: async tests run on asyncio through anyio's plugin; no proxy variables."""

from __future__ import annotations

import pytest


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def _no_proxy_env(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Proxy variables must never influence webward; state goes to a temporary dir."""
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    for var in (
        "WEBWARD_CONFIG",
        "WEBWARD_TIER",
        "WEBWARD_ALLOW_RANGES",
        "WEBWARD_SEARCH_PROVIDER",
        "BRAVE_SEARCH_API_KEY",
        "TAVILY_API_KEY",
        "ANTHROPIC_API_KEY",
        "OPENAI_API_KEY",
    ):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("WEBWARD_STATE_DIR", str(tmp_path_factory.mktemp("state")))
