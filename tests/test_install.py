"""The plain install reads pages: every module webward imports, directly or through what the
extractors import on first use, is a declared dependency; each optional face's in its extra.

The declarations are read from pyproject.toml (this tree's, not an installed copy's), and a
dependency only counts as reachable the way a pip without extra-name normalisation (pip 23.2,
what `python3 -m venv` ships) would reach it: through unconditional requirements, and through
a requirement's extras only when the extra is spelled exactly as the package declares it.
`.ci/run` proves the same from outside, with a real `pip install .` into a fresh venv.
"""

from __future__ import annotations

import ast
import base64
import functools
import importlib.metadata as md
import io
import json
import os
import pkgutil
import subprocess
import sys
import tomllib
from collections.abc import Sequence
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from reportlab.pdfgen import canvas

import webward

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src" / "webward"
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]

# The webward modules whose third-party imports an extra provides; every other module's
# come with the plain `pip install .`.
EXTRA_OF_MODULE = {
    "webward._mcp": "mcp",
    "webward._cmd_mcp": "mcp",
    "webward._gateway": "serve",
    "webward._cmd_serve": "serve",
    # The servers' HTTP stack: uvicorn only inside the function the two servers call (the
    # mcp extra brings uvicorn too).
    "webward._serving": "serve",
    "webward._redis_client": "redis",
    "webward._cache_redis": "redis",
    "webward.limits._redis": "redis",
    "webward.audit._postgres": "postgres",
    "webward._render": "render",
    "webward._proxy": "render",
    "webward._cmd_console": "serve",
    "webward.console": "serve",
    "webward._otlp": "otel",
    "webward.console._app": "serve",
    "webward.console._auth": "serve",
    "webward.console._postgres_reader": "postgres",
}


def declared(extra: str | None) -> list[Requirement]:
    """webward's own requirements: the plain install's, plus ``extra``'s."""
    reqs = [Requirement(r) for r in PYPROJECT["dependencies"]]
    if extra is not None:
        reqs += [Requirement(r) for r in PYPROJECT["optional-dependencies"][extra]]
    return [r for r in reqs if canonicalize_name(r.name) != "webward"]


def reachable(reqs: list[Requirement]) -> set[str]:
    """The distributions an old pip installs for ``reqs`` (canonical names)."""
    seen: set[str] = set()
    stack = [(r, frozenset(r.extras)) for r in reqs]
    while stack:
        req, extras = stack.pop()
        name = canonicalize_name(req.name)
        key = f"{name}[{','.join(sorted(extras))}]"
        if key in seen:
            continue
        seen.add(key)
        seen.add(name)
        try:
            dist = md.distribution(name)
        except md.PackageNotFoundError:
            continue  # not installed here: nothing of it can be imported either
        provided = set(dist.metadata.get_all("Provides-Extra") or [])
        # An extra asked for under another spelling is not found by old pips (lxml[html_clean]
        # against lxml's `html-clean`): its requirements are not followed.
        followed = [""] + [e for e in extras if e in provided]
        for line in dist.requires or []:
            sub = Requirement(line)
            if sub.marker is None or any(sub.marker.evaluate({"extra": e}) for e in followed):
                stack.append((sub, frozenset(sub.extras)))
    return {k for k in seen if "[" not in k}


@functools.cache
def _top_levels() -> dict[str, list[str]]:
    return md.packages_distributions()


def distributions_of(top_level: str) -> set[str]:
    return {canonicalize_name(d) for d in _top_levels().get(top_level, [])}


def third_party_imports(path: Path) -> set[str]:
    """Top-level names of the absolute imports in one source file, lazy ones included."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return {n for n in names if n not in sys.stdlib_module_names and n != "webward"}


def module_name(path: Path) -> str:
    rel = path.relative_to(SRC.parent).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def test_every_import_in_the_source_is_declared_directly() -> None:
    """Each third-party name a module imports (at its top or inside a function) belongs to a
    distribution pyproject.toml names directly: in the plain dependencies, or in the extra
    of the face that imports it."""
    missing = []
    for path in sorted(SRC.rglob("*.py")):
        module = module_name(path)
        extra = EXTRA_OF_MODULE.get(module)
        direct = {canonicalize_name(r.name) for r in declared(extra)}
        for name in sorted(third_party_imports(path)):
            if not distributions_of(name) & direct:
                missing.append(f"{module} imports {name} ({extra or 'plain install'})")
    assert missing == []


def test_lxml_html_clean_is_declared_for_old_pips() -> None:
    """justext (under trafilatura) asks for lxml[html_clean], which pip 23.2 does not match
    with lxml's html-clean extra: the cleaner is named directly, so it is installed (and
    readability-lxml asks for it under the spelling lxml provides)."""
    plain = reachable(declared(None))
    assert "lxml-html-clean" in plain
    naming_it = {"lxml-html-clean", "readability-lxml"}
    assert "lxml-html-clean" not in reachable(
        [
            r
            for r in declared(None)
            if canonicalize_name(r.name) not in naming_it and not r.extras  # lxml[html-clean]
        ]
    )


def test_the_cleaner_extra_is_named_hyphenated_before_the_extractors() -> None:
    """readability-lxml asks for lxml[html-clean] and justext for lxml[html_clean]; pip 23.2
    (what `python3 -m venv` ships) crashes on the pair ("Candidate is not for this
    requirement") unless the hyphenated spelling is met first: webward names it ahead of both
    (.ci/run installs with that pip and reads a page)."""
    order = [canonicalize_name(r.name) for r in declared(None)]
    first_lxml = next(r for r in declared(None) if canonicalize_name(r.name) == "lxml")
    assert first_lxml.extras == {"html-clean"}
    assert order.index("lxml") < order.index("trafilatura")
    assert order.index("lxml") < order.index("readability-lxml")


def test_servers_and_shared_stores_stay_out_of_the_plain_install() -> None:
    """Redis, PostgreSQL, browser, MCP and server libraries come only with their extras."""
    plain = reachable(declared(None))
    for name in ("redis", "psycopg", "psycopg-binary", "playwright", "mcp", "starlette", "uvicorn"):
        assert name not in plain, name
    test_extra = reachable(declared("test")) | reachable(
        [Requirement(r) for r in PYPROJECT["optional-dependencies"]["all"]]
    )
    for extra in ("mcp", "serve", "redis", "postgres", "render"):
        assert {canonicalize_name(r.name) for r in declared(extra)} <= test_extra | {"webward"}


_PROBE = r"""
import base64, io, json, pkgutil, sys, importlib
for name in json.loads(sys.argv[5]):
    sys.modules[name] = None  # as if not installed: `import name` raises ImportError
before = set(sys.modules)
import webward
skip = set(json.loads(sys.argv[1])) | {"webward.__main__"}  # __main__ would run the CLI
for info in pkgutil.walk_packages(webward.__path__, "webward."):
    if info.name not in skip:
        importlib.import_module(info.name)
for name in json.loads(sys.argv[2]):
    importlib.import_module(name)
if sys.argv[3] == "read":
    # What the extractors import on first use: a long page whose main-content extraction keeps
    # little (trafilatura then runs readability and justext), a PDF, an unlabelled encoding.
    from webward import _convert
    from webward._settings import LimitsSettings
    links = "".join(f"<li><a href='/p{i}'>Item number {i} of the list</a></li>" for i in range(60))
    page = f"<html><body><div><ul>{links}</ul></div><p>Short note.</p></body></html>".encode()
    _convert.convert(page, "text/html", "http://example.com/", truncated=False,
                     include_links=True, limits=LimitsSettings())
    article = "<html><body><article>" + "<p>A real paragraph of text to read. </p>" * 80
    _convert.convert((article + "</article></body></html>").encode("cp1252"), "text/html",
                     "http://example.com/", truncated=False, include_links=False,
                     limits=LimitsSettings())
    _convert.convert(base64.b64decode(sys.argv[4]), "application/pdf", "http://example.com/a.pdf",
                     truncated=False, include_links=False, limits=LimitsSettings())
print(json.dumps(sorted({m.split(".")[0] for m in set(sys.modules) - before})))
"""


def _pdf() -> str:
    buf = io.BytesIO()
    c = canvas.Canvas(buf)
    c.drawString(100, 750, "Text in a PDF")
    c.showPage()
    c.save()
    return base64.b64encode(buf.getvalue()).decode()


def loaded_top_levels(
    skip: list[str], extra_modules: list[str], read: bool, blocked: Sequence[str] = ()
) -> set[str]:
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            _PROBE,
            json.dumps(skip),
            json.dumps(extra_modules),
            "read" if read else "",
            _pdf(),
            json.dumps(list(blocked)),
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(SRC.parent)},
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


def undeclared(top_levels: set[str], allowed: set[str]) -> list[str]:
    """Top-level modules loaded from distributions outside ``allowed``."""
    found = []
    for name in sorted(top_levels):
        if name in sys.stdlib_module_names or name == "webward":
            continue
        dists = distributions_of(name)
        if dists and not dists & allowed:
            found.append(name)
    return found


def required_but_undeclared(
    skip: list[str], extra_modules: list[str], read: bool, allowed: set[str]
) -> list[str]:
    """What the probe loads from undeclared distributions and cannot do without.

    Libraries try optional modules that happen to be installed here (httpcore tries trio and
    socksio, for instance): the probe runs again with all of those made unimportable, and
    must do the same work and load nothing else undeclared.
    """
    extra = undeclared(loaded_top_levels(skip, extra_modules, read), allowed)
    again = loaded_top_levels(skip, extra_modules, read, blocked=extra)
    return undeclared(again, allowed)


def test_every_module_and_what_reading_imports_comes_with_the_plain_install() -> None:
    """Importing every module of the package except the extras' faces, then reading HTML
    (through trafilatura, readability and justext), a cp1252 page and a PDF, loads only
    modules of distributions the plain install brings."""
    skip = sorted(EXTRA_OF_MODULE.keys() - {"webward._render"})
    loaded = loaded_top_levels(skip, [], True)
    assert {"trafilatura", "justext", "lxml_html_clean", "pypdf"} <= loaded  # the probe ran
    assert required_but_undeclared(skip, [], True, reachable(declared(None))) == []


@pytest.mark.parametrize(
    ("module", "extra"),
    [
        ("webward._mcp", "mcp"),
        ("webward._gateway", "serve"),
        ("webward._redis_client", "redis"),
        ("webward._cache_redis", "redis"),
        ("webward.limits._redis", "redis"),
        ("webward.audit._postgres", "postgres"),
    ],
)
def test_each_face_imports_only_its_extra(module: str, extra: str) -> None:
    """An optional face or store, imported on top of the plain install, loads only what its
    extra brings."""
    assert module in {info.name for info in pkgutil.walk_packages(webward.__path__, "webward.")}
    allowed = reachable(declared(extra))
    assert required_but_undeclared(sorted(EXTRA_OF_MODULE), [module], False, allowed) == []


# ---- the README, as a new user follows it ---------------------------------------------------

README = (ROOT / "README.md").read_text()


def test_the_readme_setup_is_two_commands_and_ci_runs_its_test_command() -> None:
    """The setup section holds two one-line commands; `.ci/run` installs with `pip install .`
    from a fresh venv's own pip (never upgraded) and ends with the README's test command."""
    setup = README.split("## Setup", 1)[1].split("\n## ", 1)[0]
    commands = [b.split("\n", 1)[1].strip() for b in setup.split("```")[1::2]]
    assert len(commands) == 2 and all("\n" not in c for c in commands)
    assert commands[0].startswith("pip install . && webward fetch ")
    test_command = commands[1].rsplit(" && ", 1)[1]
    ci = (ROOT / ".ci" / "run").read_text()
    assert ci.rstrip("\n").splitlines()[-1] == test_command == "python3 -m pytest -q"
    assert "python3 -m venv" in ci and "-m pip install .\n" in ci
    assert "--upgrade pip" not in ci and "install -U pip" not in ci


def test_the_readme_python_example_runs_as_it_is(tmp_path: Path) -> None:
    """The README's library example is a complete script: run unchanged but for its URL (a
    page on loopback), it prints the page's text."""
    from localserver import respond, serve

    block = next(b for b in README.split("```")[1::2] if b.startswith("python\n"))
    script = block.split("\n", 1)[1]
    assert "asyncio.run(main())" in script
    config = tmp_path / "webward.toml"
    config.write_text('[network]\nallow_ranges = ["127.0.0.1/32"]\n[policy]\nrobots = false\n')
    page = (
        "<html><head><title>Example</title></head><body><p>Text of the example.</p></body></html>"
    )
    with serve(routes={"/3/": respond(200, page)}) as srv:
        script = script.replace("https://docs.python.org/3/", srv.url("/3/"))
        out = subprocess.run(
            [sys.executable, "-c", script],
            capture_output=True,
            text=True,
            env={
                **os.environ,
                "PYTHONPATH": str(SRC.parent),
                "WEBWARD_CONFIG": str(config),
                "WEBWARD_STATE_DIR": str(tmp_path / "state"),
            },
            timeout=60,
        )
    assert out.returncode == 0, out.stderr
    assert "Example: characters 0-" in out.stdout
    assert "Text of the example." in out.stdout


def test_the_serve_extra_brings_the_fast_http_stack() -> None:
    """`webward[serve]` installs httptools and uvloop (the servers use them when importable);
    uvloop only where it exists, so the extra still installs on Windows."""
    serve = {canonicalize_name(r.name): r for r in declared("serve")}
    assert "httptools" in serve and serve["httptools"].marker is None
    uvloop = serve["uvloop"]
    assert uvloop.marker is not None
    assert uvloop.marker.evaluate(
        {"sys_platform": "linux", "platform_python_implementation": "CPython"}
    )
    assert not uvloop.marker.evaluate({"sys_platform": "win32"})
