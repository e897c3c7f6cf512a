"""MCP calls per second: ``webward mcp`` over stdio beside a bare MCP server, same client.

    python bench/mcp_calls.py [--calls 300]

Ours: ``webward mcp --tier connected`` (SQLite audit in a temp state dir) answering ``web_fetch``
of a small page on a loopback origin: the first call reads it, every measured one is a cache
hit, so the figure is the MCP layer and the core's cached path (policy, guard, window, envelope,
one audit write per call). Anchor: a bare server of the official SDK (``MCPServer``) whose one
tool ``web_fetch`` returns the very text ours returned. Both are driven by the official client
over stdio, one call after another. Prints ``name: ours X, anchor Y, ratio Z`` (calls per
second; ratio = ours / anchor, above 1 is faster). Loopback only.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import anyio
from _origin import serve_page
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.types import TextContent

import webward

PAGE = (
    b"<html><head><title>Bench</title></head><body><article><h1>Bench</h1>"
    + b"<p>A paragraph of the small page the MCP benchmark reads again and again.</p>" * 8
    + b"</article></body></html>"
)

ANCHOR = """
import json, sys
from mcp.server.mcpserver import MCPServer

TEXT = json.loads(sys.argv[1])
app = MCPServer("anchor")


@app.tool()
def web_fetch(url: str) -> str:
    return TEXT


app.run()
"""


def text_of(result: object) -> str:
    content = getattr(result, "content", [])
    return "\n".join(b.text for b in content if isinstance(b, TextContent))


async def rate(
    params: StdioServerParameters, url: str, calls: int, errlog: object
) -> tuple[float, str]:
    """Calls per second over one stdio session, after two warm-up calls; the text returned."""
    async with Client(stdio_client(params, errlog=errlog), read_timeout_seconds=60) as client:  # type: ignore[arg-type]
        first = await client.call_tool("web_fetch", {"url": url})
        await client.call_tool("web_fetch", {"url": url})
        started = time.perf_counter()
        for _ in range(calls):
            await client.call_tool("web_fetch", {"url": url})
        return calls / (time.perf_counter() - started), text_of(first)


async def main(calls: int) -> None:
    httpd, url = serve_page(PAGE)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        config = root / "webward.toml"
        config.write_text(
            '[network]\nallow_ranges = ["127.0.0.1/32"]\n[policy]\nrobots = false\n'
            "[limits]\nper_host_rate = 1000.0\nper_host_burst = 1000\n"
            f"[state]\ndir = {json.dumps(str(root / 'state'))}\n"
        )
        env = {
            "PYTHONPATH": str(Path(webward.__file__).resolve().parents[1]),
            "WEBWARD_STATE_DIR": str(root / "state"),
            "XDG_CONFIG_HOME": str(root / "xdg-config"),
            "XDG_DATA_HOME": str(root / "xdg-data"),
            "PYTHON_KEYRING_BACKEND": "keyring.backends.null.Keyring",
        }
        ours_params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "webward.cli", "mcp", "--tier", "connected", "--config", str(config)],
            env=env,
            cwd=tmp,
        )
        with (root / "stderr.txt").open("w") as errlog:
            ours, text = await rate(ours_params, url, calls, errlog)
            anchor_params = StdioServerParameters(
                command=sys.executable, args=["-c", ANCHOR, json.dumps(text)], env=env, cwd=tmp
            )
            anchor, _ = await rate(anchor_params, url, calls, errlog)
    httpd.shutdown()
    print(
        f"mcp web_fetch calls per second (stdio, cached page): ours {ours:.0f} calls/s, "
        f"anchor {anchor:.0f} calls/s, ratio {ours / anchor:.2f}"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=300)
    anyio.run(main, parser.parse_args().calls)
