"""The documentation, as a new user or a reviewer follows it literally, still says what the code
does: every TOML block of README.md and docs/ loads with the settings loader, the blocks that
state the defaults state the code's, every `webward COMMAND ... --flag` written in the docs names
a flag that command has and every flag is shown with its command somewhere, every link between
the pages lands on a file and a heading, the audit record's fields, the wire codes, a page's
wire fields and each face's tool arguments are the ones the docs list, every WEBWARD_* variable
and every `_module.name` the docs give exists, every bench flag they write is declared, the
guard's table of messages is what the guard says word for word, every `[section] key` the
prose names is a setting and a default it states beside one is the code's, the gateway serves
every route servers.md lists (with the answers it writes, the status of each wire code and
the metrics operations.md lists), the guard's API table and the Python API calls the pages
write are the signatures, and no page names an internal review round ("probe 43") a reader
cannot look up.

Read from the files (no server, no network; the gateway is driven in-process): each check fails
on the doc that went stale, and says where.
"""

from __future__ import annotations

import argparse
import re
import tomllib
from pathlib import Path

import pytest

from webward import Settings
from webward.audit import AuditRecord
from webward.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]
PAGES = [
    ROOT / "README.md",
    *sorted((ROOT / "docs").glob("*.md")),
    *sorted((ROOT / "docs" / "frameworks").glob("*.md")),
]


def where(page: Path, text: str, index: int) -> str:
    return f"{page.relative_to(ROOT)}:{text.count(chr(10), 0, index) + 1}"


def blocks(lang: str) -> list[tuple[str, str]]:
    """Every fenced block of ``lang`` in the pages, as (file:line, its text)."""
    found = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for m in re.finditer(rf"^ *```{lang}\n(.*?)^ *```", text, re.S | re.M):
            found.append((where(page, text, m.start()), m.group(1)))
    return found


def outside_code(text: str) -> str:
    """``text`` with fenced blocks and inline code blanked (same length, same lines)."""

    def blank(m: re.Match[str]) -> str:
        return re.sub(r"[^\n]", " ", m.group(0))

    text = re.sub(r"^ *```.*?^ *```", blank, text, flags=re.S | re.M)
    # Inline code: a run of backticks to the next run as long (CommonMark), across lines too.
    return re.sub(r"(?<!`)(`+)(?!`).+?(?<!`)\1(?!`)", blank, text, flags=re.S)


# ---- TOML ---------------------------------------------------------------------------------

TOML = blocks("toml")


def test_the_docs_have_toml_blocks() -> None:
    assert len(TOML) >= 9


@pytest.mark.parametrize(("at", "block"), TOML, ids=[at for at, _ in TOML])
def test_every_toml_block_loads_with_the_settings_loader(
    at: str, block: str, tmp_path: Path
) -> None:
    """A block copied into webward.toml as it stands is a config webward reads: valid TOML,
    every section and key known, every value of its kind."""
    config = tmp_path / "webward.toml"
    config.write_text(block, encoding="utf-8")
    Settings.load(config, environ={})


# The pages whose first TOML block lists settings with their default values.
DEFAULT_BLOCKS = ["docs/design.md", "docs/operations.md", "docs/search.md"]


@pytest.mark.parametrize("page", DEFAULT_BLOCKS)
def test_the_blocks_of_defaults_state_the_code_defaults(page: str) -> None:
    block = next(b for at, b in TOML if at.startswith(page + ":"))
    defaults = Settings()
    stale = []
    for section, table in tomllib.loads(block).items():
        if section == "agents":  # an example entry, not a default
            continue
        for key, value in table.items():
            default = getattr(getattr(defaults, section), key)
            if (list(default) if isinstance(default, tuple) else default) != value:
                stale.append(f"[{section}] {key} = {value!r}, the code's default {default!r}")
    assert stale == [], page


# ---- settings named in the prose ------------------------------------------------------------


def setting_fields() -> dict[str, dict[str, object]]:
    """Each table of the config file with its keys and their defaults: the top-level sections,
    `agents.NAME` (one agent's entry), `agents.NAME.budget`, `search.PROVIDER` and
    `policy.tiers.NAME`."""
    import dataclasses

    from webward._settings import AgentSettings, BudgetSettings

    def fields(obj: object) -> dict[str, object]:
        return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}  # type: ignore[arg-type]

    tables = {
        name: fields(value)
        for name, value in fields(Settings()).items()
        if dataclasses.is_dataclass(value)
    }
    tables["agents.NAME"] = fields(AgentSettings())
    tables["agents.NAME.budget"] = fields(BudgetSettings())
    tables["search.PROVIDER"] = {"cost": 0.0}
    tables["policy.tiers.NAME"] = {"robots": True}
    return tables


TABLES = setting_fields()
# `[section] key`, `[agents.NAME] key`, `[agents.research.budget] key`, `[search.brave] key`...
# in inline code (a bracket in prose is as often a word in brackets).
SETTING = re.compile(r"`\[(\w+)((?:\.[\w<>*-]+)*)\] (\w+)(?=[`\s=,.;)])")
# Written as settings but not ones: the key Settings.load refuses (search.md's example of a key
# put in the config file) and a placeholder for any provider's URL.
NOT_KEYS = {"brave_api_key", "X_url"}


def table_of(section: str, rest: str) -> str | None:
    """The name TABLES knows the table `[section rest]` by (`agents.research` is an agent's
    entry), or None for a table that is no setting."""
    depth = rest.count(".")
    if depth == 0:
        return section if section in TABLES else None
    if section == "agents":
        return {1: "agents.NAME", 2: "agents.NAME.budget"}.get(depth)
    if section == "search" and depth == 1:
        return "search.PROVIDER"
    if section == "policy" and rest.startswith(".tiers") and depth == 2:
        return "policy.tiers.NAME"
    return None


def test_every_setting_the_docs_name_exists() -> None:
    """A `[section] key` written in the prose (the TOML blocks are loaded whole above) names a
    key the settings loader reads: a renamed setting leaves no page telling users the old
    name, which the loader would refuse."""
    unknown = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for m in SETTING.finditer(text):
            section, rest, key = m.groups()
            table = table_of(section, rest)
            if table is None and section in TABLES and rest:
                table = "?"  # [limits.x]: no such table
            if table is not None and key not in TABLES.get(table, {}) and key not in NOT_KEYS:
                unknown.append(f"{where(page, text, m.start())}: [{section}{rest}] {key}")
    assert unknown == []


# A number the prose gives right after a setting: "`[limits] max_url_chars`, 2048 by default",
# "`convert_queue` (256)", "`limits.max_pdf_bytes` (10 MiB)", "(default 150)". Not a number
# that goes on into arithmetic or a range ("(2 x 5", "(1-50)"): that is no default.
STATED = re.compile(
    r"`(?:\[(\w+)\] |(\w+)\.)?(\w+)`(?: \(default |, | \()(\d[\d,]*(?:\.\d+)?)"
    r"(?: ?(KiB|MiB|GiB))?(?![\d.]| *[-\u2013\u00d7x/*+])"
)
UNITS = {"KiB": 1024, "MiB": 1024**2, "GiB": 1024**3}


def test_the_defaults_the_prose_states_are_the_codes() -> None:
    """Where the prose gives a setting's value beside its name, that is the code's default (a
    bytes setting may be given in KiB, MiB or GiB); a key the section does not say is taken
    from the one table that has it."""
    stale = []
    checked = 0
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for m in STATED.finditer(text):
            section = m.group(1) or m.group(2)
            key, number, unit = m.group(3), m.group(4), m.group(5)
            owners = [
                name
                for name, table in TABLES.items()
                if "." not in name and key in table and section in (None, name)
            ]
            if len(owners) != 1:
                continue
            default = TABLES[owners[0]][key]
            if isinstance(default, bool) or not isinstance(default, int | float):
                continue
            value = float(number.replace(",", ""))
            if unit and key.endswith("_bytes"):
                value *= UNITS[unit]
            checked += 1
            if value != default:
                stale.append(
                    f"{where(page, text, m.start())}: {m.group(0)!r}, the code's {default}"
                )
    assert stale == []
    assert checked >= 25  # the pattern still finds what the pages say


def test_the_governance_table_of_limits_states_the_code_defaults() -> None:
    text = (ROOT / "docs" / "governance.md").read_text(encoding="utf-8")
    table = text.split("| setting | default | meaning |", 1)[1].split("\n\n", 1)[0]
    rows = re.findall(r"^\| `(\w+)` \| ([\d.]+) \|", table, re.M)
    assert len(rows) >= 7
    limits = TABLES["limits"]
    assert [(key, float(value)) for key, value in rows] == [(key, limits[key]) for key, _ in rows]


# ---- command lines ------------------------------------------------------------------------


def command_flags() -> dict[str, set[str]]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {
        name: {flag for action in command._actions for flag in action.option_strings}
        for name, command in sub.choices.items()
    }


FLAGS = command_flags()
COMMAND = re.compile(rf"\bwebward ({'|'.join(FLAGS)})\b")


def flags_written() -> list[tuple[str, str, str]]:
    """Every flag written after `webward COMMAND` on one line of the docs (and on the indented
    lines that continue a synopsis), as (file:line, command, flag). Inline code ends at its
    backtick, a line at a shell comment."""
    found = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        lines = text.split("\n")
        for number, line in enumerate(lines):
            for m in COMMAND.finditer(line):
                rest = line[m.end() :]
                if line[: m.start()].count("`") % 2:  # inside inline code: to its end
                    rest = rest.split("`", 1)[0]
                follow = number + 1
                while follow < len(lines) and re.match(r" {6,}\[", lines[follow]):
                    rest += " " + lines[follow]
                    follow += 1
                rest = re.split(r"\s#\s", rest, maxsplit=1)[0]
                rest = rest.split(" | ", 1)[0]  # a pipe or a table's next cell (not set|get)
                for flag in re.findall(r"(?<![\w-])--?[a-z][a-z-]*", rest):
                    found.append((f"{page.relative_to(ROOT)}:{number + 1}", m.group(1), flag))
    return found


WRITTEN = flags_written()
# Flags of another program written after a webward command on the same line.
NOT_WEBWARDS = {("docs/frameworks/typescript.md", "--method")}


def test_every_flag_the_docs_write_exists() -> None:
    unknown = [
        f"{at}: webward {command} has no {flag}"
        for at, command, flag in WRITTEN
        if flag not in FLAGS[command] and (at.split(":")[0], flag) not in NOT_WEBWARDS
    ]
    assert unknown == []


def test_every_flag_is_shown_with_its_command() -> None:
    """Each command's flags appear in the docs after `webward COMMAND` (--config, which every
    command takes, is said once for all in the README and --help)."""
    shown = {(command, flag) for _, command, flag in WRITTEN}
    missing = [
        f"webward {command} {flag}"
        for command, flags in FLAGS.items()
        for flag in sorted(flags - {"-h", "--help", "--config"})
        if (command, flag) not in shown
    ]
    assert missing == []


def test_the_defaults_help_states_are_the_parsers() -> None:
    """A flag's help that states its default ("(default 10)", "(default cli)") states the
    value argparse gives when the flag is left out; a help that gives the default in words
    ("the agent's", "any free one") names no value to check. Where argparse's default is None
    the command applies its own, named here."""
    from webward import _cmd_audit, _mcp

    applied = {
        ("audit", "--limit"): _cmd_audit._DEFAULT_LIMIT,
        ("mcp", "--agent"): _mcp.DEFAULT_AGENT,
    }
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    stated = []
    for name, command in sub.choices.items():
        for action in command._actions:
            m = re.search(r"\(default (\S+?)[,;)]", action.help or "")
            if m and action.option_strings:
                flag = action.option_strings[0]
                default = action.default
                if default is None:
                    default = applied[(name, flag)]
                stated.append((name, flag, m.group(1), str(default)))
    assert len(stated) >= 8
    assert [s for s in stated if s[2] != s[3]] == []


def test_the_flag_check_reads_synopses() -> None:
    """The extraction finds the flags of a multi-line synopsis and of inline code."""
    assert ("README.md", "fetch", "--screenshot") in {
        (a.split(":")[0], c, f) for a, c, f in WRITTEN
    }
    assert ("README.md", "search", "--language") in {(a.split(":")[0], c, f) for a, c, f in WRITTEN}


# ---- links --------------------------------------------------------------------------------


def anchors(page: Path) -> set[str]:
    """The heading anchors GitHub makes for ``page``."""
    found: set[str] = set()
    seen: dict[str, int] = {}
    text = re.sub(r"^ *```.*?^ *```", "", page.read_text(encoding="utf-8"), flags=re.S | re.M)
    for m in re.finditer(r"^#{1,6} +(.+?) *$", text, re.M):
        title = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", m.group(1)).replace("`", "")
        slug = re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        found.add(slug if n == 0 else f"{slug}-{n}")
    return found


def test_every_link_between_the_docs_resolves() -> None:
    broken = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for m in re.finditer(r"\]\(([^)\s]+)\)", outside_code(text)):
            target = m.group(1)
            if re.match(r"[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            dest = (page.parent / path).resolve() if path else page
            if not dest.exists():
                broken.append(f"{where(page, text, m.start())}: no file {target}")
            elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                broken.append(f"{where(page, text, m.start())}: no heading {target}")
    assert broken == []


# ---- what a reader can look up --------------------------------------------------------------


def test_no_page_names_an_internal_review_round() -> None:
    """ "(probe 43)" means nothing to a reader: the docs say what happens instead."""
    named = [
        f"{where(page, text, m.start())}: {m.group(0)}"
        for page in PAGES
        for text in [page.read_text(encoding="utf-8")]
        for m in re.finditer(r"\bprobe ?\d+\b", text, re.I)
    ]
    assert named == []


# ---- the audit record's fields ---------------------------------------------------------------

RECORD = AuditRecord(
    "alice", "connected", "web:page.fetch@1", "https://a.example/", "allowed", "allowed"
)
FIELDS = list(RECORD.to_wire())


def test_the_call_log_example_has_the_record_fields_in_order() -> None:
    line = next(b for at, b in blocks("json") if at.startswith("docs/operations.md:"))
    keys = re.findall(r'"(\w+)":', line)
    assert keys == [*FIELDS, "traceId", "spanId"]
    text = (ROOT / "docs" / "operations.md").read_text(encoding="utf-8")
    listed = text.split("Fields are the audit record's", 1)[1].split("; plus", 1)[0]
    assert re.findall(r"`(\w+)`", listed) == FIELDS


def test_the_governance_table_lists_every_record_field() -> None:
    text = (ROOT / "docs" / "governance.md").read_text(encoding="utf-8")
    table = text.split("| field (`--json`) | meaning |", 1)[1].split("\n\n", 1)[0]
    rows = re.findall(r"^\| ([^|]+) \|", table, re.M)
    assert sorted(f for row in rows for f in re.findall(r"`(\w+)`", row)) == sorted(FIELDS)


def test_the_result_models_name_every_wire_code() -> None:
    """design.md's list of error codes is the one the faces answer with."""
    from webward._errors import WIRE_CODES

    text = (ROOT / "docs" / "design.md").read_text(encoding="utf-8")
    listed = text.split("Refusal / failure (CLI `--json`, gateway): `error` with `code` (", 1)[1]
    listed = listed.split(") and `message`", 1)[0]
    assert sorted(re.findall(r"`(\w+)`", listed)) == sorted(WIRE_CODES)


def test_the_wire_model_lists_every_field_of_a_page() -> None:
    """servers.md's page model, read as a client would code against it, is what `--json`, MCP
    and the gateway send: every field of a page with passages, links, a document and a
    screenshot, and nothing the page does not have."""
    from webward._models import Link, Page, Part, Passage, Window

    part = Part("document", "application/pdf", 3, "a.pdf", "YWJj", "text")
    page = Page(
        "https://a.example/",
        "https://a.example/",
        200,
        "A",
        "text/html",
        "...",
        Window(0, 3, 3, None),
        False,
        "2026-12-01T00:00:00Z",
        parts=(part,),
        links=(Link("https://a.example/b", "b"),),
        screenshot=Part("image", "image/png", 3, "screenshot.png", "YWJj"),
        passages=(Passage(0, 3, 1.0),),
    )
    wire = page.to_wire()
    text = (ROOT / "docs" / "servers.md").read_text(encoding="utf-8")
    model = text.split("### The wire model", 1)[1].split("\n- search:", 1)[0]
    listed = set(re.findall(r"`(\w+)`", model.split("- page:", 1)[1]))
    nested = {*wire["window"], *wire["parts"][0], *wire["passages"][0], *wire["links"][0]}
    assert set(wire) <= listed
    assert listed - set(wire) <= nested | {"query"}  # "passages (for a `query`)"
    assert set(wire["window"]) | set(wire["parts"][0]) <= listed


# ---- the tools' arguments, as each face takes them ------------------------------------------


def table_arguments(page: str, first_cell: str) -> list[str]:
    """The argument names in the second cell of the table row of ``page`` that starts with
    ``first_cell``: backticked names outside parentheses (which hold their bounds), or the
    quoted keys of a JSON body."""
    text = (ROOT / "docs" / page).read_text(encoding="utf-8")
    row = next(line for line in text.splitlines() if line.startswith(f"| {first_cell} |"))
    cell = row.split(" | ")[1]
    while re.search(r"\([^()]*\)", cell):
        cell = re.sub(r"\([^()]*\)", "", cell)
    return re.findall(r'"(\w+)"', cell) or re.findall(r"`(\w+)`", cell)


@pytest.mark.parametrize(
    ("page", "face", "row"),
    [
        ("servers.md", "mcp", "`{tool}`"),  # the MCP server's tools
        ("agents.md", "tool", "`{tool}`"),  # the agent tool specs
        ("servers.md", "http", "`POST /v1/capabilities/{id}`"),  # the gateway's bodies
    ],
)
def test_the_argument_tables_are_what_each_face_takes(page: str, face: str, row: str) -> None:
    from webward._capabilities import capabilities

    for capability in capabilities():
        documented = table_arguments(page, row.format(tool=capability.tool, id=capability.id))
        assert documented == list(capability.names(face)), (page, capability.tool)


# ---- environment variables ------------------------------------------------------------------

# Names the docs use that webward does not read: a user's own (the token a client sends, the
# variable `[audit] postgres_dsn_env` names in the examples) and the tests' screenshot switch.
NOT_SETTINGS = {"WEBWARD_TOKEN", "WEBWARD_AUDIT_DSN", "WEBWARD_CONSOLE_SCREENSHOTS"}


def test_every_webward_variable_the_docs_name_is_read_and_every_one_is_documented() -> None:
    from webward._settings import _ENV_KEYS

    named = {
        m.group(0)
        for page in PAGES
        for m in re.finditer(r"\bWEBWARD_[A-Z_]*[A-Z]\b", page.read_text(encoding="utf-8"))
    }
    read = {*_ENV_KEYS, "WEBWARD_CONFIG"}
    assert named - NOT_SETTINGS == read


# ---- names of the code ----------------------------------------------------------------------

# Named in the docs but made inside a function, so no module attribute: the uvicorn protocol
# class _serving builds when httptools is installed.
NOT_ATTRIBUTES = {"_serving.BoundedHttpTools"}


def test_every_name_of_the_code_the_docs_give_exists() -> None:
    """A backticked `webward.module.name` or `_module.name` (a private module of webward's,
    as design.md names its parts) resolves to a module and attribute. Names whose first part
    is no module of webward's (a span attribute `webward.tier`, a config key
    `limits.max_redirects`) are not code and are left alone."""
    import importlib
    import pkgutil

    import webward

    modules = {info.name for info in pkgutil.walk_packages(webward.__path__, "webward.")}
    missing = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for m in re.finditer(r"`((?:webward\.)?_?[a-z]\w*(?:\.\w+)+)(?:\([^`]*\))?`", text):
            dotted = m.group(1)
            if dotted.endswith(".py"):  # a file, not a name
                continue
            name = dotted if dotted.startswith("webward.") else "webward." + dotted
            parts = name.split(".")
            depth = max(
                (i for i in range(2, len(parts) + 1) if ".".join(parts[:i]) in modules), default=0
            )
            if not depth or not dotted.startswith(("webward.", "_")):
                if not (dotted.startswith("webward.") and hasattr(webward, parts[1])):
                    continue
                depth = 1
            if dotted in NOT_ATTRIBUTES:
                continue
            obj = importlib.import_module(".".join(parts[:depth]))
            for attribute in parts[depth:]:
                if not hasattr(obj, attribute):
                    missing.append(f"{where(page, text, m.start())}: {dotted}")
                    break
                obj = getattr(obj, attribute)
    assert missing == []


def test_every_bench_flag_the_docs_write_exists() -> None:
    """`python bench/NAME.py --flag` in the docs: bench/NAME.py exists and declares --flag (read
    from its source: running each bench's --help would import its anchors)."""
    unknown = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for m in re.finditer(
            r"bench/(\w+)\.py((?:[ \t]+(?:\[?--?[a-z][\w-]*\]?|[^\s`#-]\S*))*)", text
        ):
            script = ROOT / "bench" / f"{m.group(1)}.py"
            if not script.exists():
                unknown.append(f"{where(page, text, m.start())}: no {script.name}")
                continue
            source = script.read_text(encoding="utf-8")
            for flag in re.findall(r"(?<![\w-])(--[a-z][\w-]*)", m.group(2)):
                if f'"{flag}"' not in source:
                    unknown.append(f"{where(page, text, m.start())}: {script.name} has no {flag}")
    assert unknown == []


# ---- the guard's messages, word for word -----------------------------------------------------

# What makes each row of guard.md's table of reasons, keyed by its first cell: a URL for
# assert_url_allowed, or (host, address) for assert_ip_allowed (a DNS answer), or a bare value
# for ip_in_blocked_range.
GUARD_INPUTS: dict[str, object] = {
    "`scheme`": "file:///etc/passwd",
    "`userinfo`": "http://user:password@example.org/",
    "`backslash`": "http://exam\\ple.org/",
    "`internal_address`": "http://127.0.0.1/",
    "`internal_address` (metadata)": "http://169.254.169.254/",
    "`internal_address` (DNS answer)": ("example.org", "10.0.0.1"),
    "`invalid_address` (DNS answer)": ("example.org", "X"),
    "`internal_name`": "http://localhost/",
    "`special_use_name`": "http://x.onion/",
    "`too_long`": "https://example.org/" + "a" * 2048,
    "`control_character`": "https://example.org/a b",
    "`not_absolute`": "example.com/page",
    "`empty_host`": "http:///page",
    "`bad_port`": "http://example.org:0/",
    "`zone_id`": "http://[fe80::1%25eth0]/",
    "`invalid_host`": "http://1.2.3.999/",
    "`invalid_url`": 5,
    "`invalid_address`": "x",
}


def test_the_guards_table_of_messages_is_what_it_says() -> None:
    """guard.md's table gives each refusal's message as a user sees it (in the library, or
    after `webward:` on the command line): the guard, given the row's input, says exactly
    that, with that reason and error. A table that dropped the operator's step after the `;`
    told a tester a message the program never prints."""
    from webward import guard

    text = (ROOT / "docs" / "guard.md").read_text(encoding="utf-8")
    table = text.split("## Reason codes and messages", 1)[1].split("\n\n", 2)[2]
    rows = re.findall(r"^\| (.+?) \| (\w+) \| `([^`]+)`", table.split("\n\n", 1)[0], re.M)
    assert {first for first, _, _ in rows} == set(GUARD_INPUTS)
    wrong = []
    for first, error, message in rows:
        given = GUARD_INPUTS[first]
        try:
            if isinstance(given, tuple):
                guard.assert_ip_allowed(*given)
            elif first == "`invalid_address`":
                guard.ip_in_blocked_range(given)  # type: ignore[arg-type]
            else:
                guard.assert_url_allowed(given)  # type: ignore[arg-type]
        except (guard.Refused, guard.InvalidInput) as exc:
            said = (type(exc).__name__, exc.reason, str(exc))
        else:
            said = ("nothing", "", "")
        if said != (error, first.split("`")[1], message):
            wrong.append(f"{first}: the table says {message!r}, the guard {said}")
    assert wrong == []


# ---- the gateway's routes and metrics --------------------------------------------------------


@pytest.mark.anyio
async def test_the_routes_and_metrics_the_docs_list_are_served(tmp_path: Path) -> None:
    """Every `METHOD /path` of servers.md's table of routes is answered by the gateway with that
    method (no 404 or 405; a capability without a token is 401, the console its login form),
    a JSON answer the table writes is the one sent, and the metrics of operations.md's table
    are those `/metrics` serves, each of its type. In-process (ASGI) from a loopback client:
    nothing is read from the web."""
    import hashlib
    import json

    import httpx
    from prometheus_client.parser import text_string_to_metric_families

    from webward import StaticResolver, Web
    from webward._credentials import EnvironmentStore
    from webward._gateway import create_app
    from webward._telemetry import Telemetry
    from webward.testing import MemoryAuditSink

    digest = hashlib.sha256(b"docs-route-token").hexdigest()
    config = tmp_path / "webward.toml"
    config.write_text(
        f'[state]\ndir = "{tmp_path}"\n[agents.ops]\ntier = "connected"\nrole = "admin"\n'
        f'token_sha256 = "{digest}"\n',
        encoding="utf-8",
    )
    settings = Settings.load(config, environ={})
    servers = (ROOT / "docs" / "servers.md").read_text(encoding="utf-8")
    table = servers.split("### Routes", 1)[1].split("\n\n", 2)[1]
    routes = re.findall(r"^\| `(GET|POST) (/\S*)` \|[^|]*\| ([^\n]*) \|$", table, re.M)
    assert len(routes) >= 7
    operations = (ROOT / "docs" / "operations.md").read_text(encoding="utf-8")
    metrics = re.findall(r"^\| `(webward_\w+)` \| (counter|gauge|histogram) \|", operations, re.M)
    assert len(metrics) >= 10

    web = Web(
        settings,
        resolver=StaticResolver({}),
        audit=MemoryAuditSink(),
        credentials=EnvironmentStore({}),
        telemetry=Telemetry(metrics=True),
    )
    async with web:
        transport = httpx.ASGITransport(app=create_app(settings, web), client=("127.0.0.1", 1))
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as c:
            wrong = []
            for method, path, answer in routes:
                response = await c.request(method, path, json={} if method == "POST" else None)
                expected = 401 if path.startswith(("/v1/", "/console/")) else 200
                if response.status_code != expected:
                    wrong.append(f"{method} {path}: {response.status_code}, not {expected}")
                stated = re.match(r"`(\{.*?\})`", answer)
                if stated and response.json() != json.loads(stated.group(1)):
                    wrong.append(f"{method} {path}: {response.text}, not {stated.group(1)}")
            assert wrong == []
            page = (await c.get("/metrics")).text
    served = {
        family.name + ("_total" if family.type == "counter" else ""): family.type
        for family in text_string_to_metric_families(page)
        # Each counter's and histogram's `_created` is a gauge of its own in the text format.
        if family.name.startswith("webward_") and not family.name.endswith("_created")
    }
    assert dict(metrics) == served


def test_the_status_of_each_wire_code_is_the_gateways() -> None:
    """servers.md's table of the statuses the core's errors map to (and the 500 of a bug,
    said below it) is the gateway's mapping, every code in it."""
    from webward._gateway import STATUS_FOR_CODE

    text = (ROOT / "docs" / "servers.md").read_text(encoding="utf-8")
    table = text.split("| `code` | status | notes |", 1)[1].split("\n\n", 1)[0]
    stated = {
        code: int(status) for code, status in re.findall(r"^\| `(\w+)` \| \**(\d{3})", table, re.M)
    }
    bug = re.search(r"A bug in webward is a (\d{3}) with the error\s+model \(code `(\w+)`\)", text)
    assert bug is not None
    stated[bug.group(2)] = int(bug.group(1))
    assert stated == dict(STATUS_FOR_CODE)


# ---- over-cap images and PDFs ----------------------------------------------------------------


def test_the_over_cap_refusals_are_given_as_the_code_words_them() -> None:
    """reading.md gives the refusal of each over-cap binary word for word: the transport's for
    a declared image (guard.md's table and design.md too, whole, with the operator's step the
    model is not told), and the converter's for one found only after the read, under a text
    type (cut at the text cap whatever its size) or under none (cut at, or under, the larger
    cap). They once said a text-declared image got the size message, which it never can."""
    from webward import guard
    from webward._content import too_large
    from webward._transport import _too_large

    limits = Settings().limits

    def prose(page: str) -> str:
        text = (ROOT / "docs" / page).read_text(encoding="utf-8")
        return re.sub(r"\s+", " ", text.replace("`", ""))

    declared = _too_large(guard.parse_url("https://example.org/big.png"), limits.max_image_bytes)
    whole = str(declared)
    assert declared.for_model == whole.split("; an operator", 1)[0]
    for page in ("reading.md", "guard.md"):
        assert whole in prose(page), page
    assert whole.replace("https://example.org/big.png", "<url>") in prose("design.md")
    binary_cap = limits.max_pdf_bytes
    found = [
        too_large("image/png", limits, None, limits.max_read_bytes),  # declared text/plain
        too_large("image/png", limits, 6301948, binary_cap),  # no type, read whole
        too_large("image/png", limits, None, binary_cap),  # no type, cut at 10 MiB
    ]
    reading = prose("reading.md")
    assert str(found[0]) in reading
    assert str(found[1]) in reading
    assert "(more than 10 MiB)" in str(found[2]) and "(more than 10 MiB)" in reading


# ---- the guard's public API ------------------------------------------------------------------


def test_the_guards_public_api_table_is_its_signatures() -> None:
    """guard.md's table of the public API: every name is `webward.guard`'s, and one written
    with its arguments takes exactly those, keyword-only where the table puts `*`, with the
    defaults it writes (a caller copies the call as the table gives it)."""
    import inspect

    from webward import guard

    text = (ROOT / "docs" / "guard.md").read_text(encoding="utf-8")
    table = text.split("## Public API", 1)[1].split("\n\n", 2)[1]
    wrong = []
    for cell in re.findall(r"^\| (.+?) \| ", table, re.M)[2:]:
        for written in re.findall(r"`([^`]+)`", cell):
            name, _, args = written.partition("(")
            if not hasattr(guard, name):
                wrong.append(f"no guard.{name}")
                continue
            if not args:
                continue
            inside = re.sub(r"\)(?: -> .*)?$", "", args)  # up to the call's closing bracket
            said = [a.strip() for a in inside.split(",") if a.strip()]
            params = inspect.signature(getattr(guard, name)).parameters.values()
            actual = []
            for p in params:
                if p.kind is p.KEYWORD_ONLY and "*" not in actual:
                    actual.append("*")
                default = "" if p.default is p.empty else f"={p.default!r}"
                actual.append(p.name + default.replace("'", '"'))
            if said != actual:
                wrong.append(f"{written}: guard.{name} takes ({', '.join(actual)})")
    assert wrong == []


def test_the_python_api_calls_the_docs_write_match_the_signatures() -> None:
    """design.md's Python API block and its `Settings.load(...)`, and search.md's first line,
    name the parameters of `Web.fetch`, `Web.search` and `Settings.load` in order, with the
    defaults they write: a caller copies the call as the page gives it."""
    import inspect

    from webward import Web

    def taken(function: object, count: int) -> list[str]:
        params = [
            p
            for p in inspect.signature(function).parameters.values()  # type: ignore[arg-type]
            if p.name != "self"
        ]
        return [
            p.name + ("" if p.default is p.empty else "=" + repr(p.default).replace("'", '"'))
            for p in params[:count]
        ]

    design = (ROOT / "docs" / "design.md").read_text(encoding="utf-8")
    block = design.split("## Python API", 1)[1].split("```python", 1)[1].split("```", 1)[0]
    search_md = (ROOT / "docs" / "search.md").read_text(encoding="utf-8").split("\n", 3)[2]
    written = [
        (Web.fetch, re.search(r"web\.fetch\((.*?)\)\s", block, re.S)),
        (Web.search, re.search(r"web\.search\((.*?)\)\s", block, re.S)),
        (Settings.load, re.search(r"`Settings\.load\(([^`]*)\)`", design)),
        (Web.search, re.search(r"`web\.search\(([^`]*)\)`", search_md)),
    ]
    wrong = []
    for function, call in written:
        assert call is not None, function
        said = [a.strip() for a in " ".join(call.group(1).split()).split(",") if a.strip()]
        if said != taken(function, len(said)):
            wrong.append(f"({call.group(1)}): the code takes ({', '.join(taken(function, 9))})")
    assert wrong == []
