"""Every audit record names the face that made its call (probe 43, F5).

A gateway call by alice (her bearer token) and `webward fetch --agent alice` from any shell
made records that differed only in their id and time: nothing told an authenticated name
from one anybody may type. Each ``Web`` now records its ``face`` in every record: the
faces that take the agent from a bearer token (``gateway``, ``mcp-http``) and those where
whoever runs the process names it (``library``, ``cli``, ``ask``, ``mcp-stdio``,
``mcp-http-local``). Each face's own test checks its value where the face is run for real
(test_cli, test_gateway, test_mcp, test_session_faces); here are the record, the store, the
shape cache and `webward audit --face`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from localserver import LocalServer, respond, serve
from stores import database, older_audit_table
from test_audit import _args, _run

from webward import Settings, Web, _cmd_audit
from webward.audit import FACES, AuditRecord, SQLiteAuditSink
from webward.testing import MemoryAuditSink

PAGE = "<html><head><title>T</title></head><body><p>an ordinary page</p></body></html>"


@pytest.fixture
def site() -> Iterator[LocalServer]:
    with serve(routes={"/page": respond(200, PAGE)}) as server:
        yield server


def settings() -> Settings:
    return Settings().replace(
        {
            "network": {"allow_ranges": ["127.0.0.1/32"]},
            "policy": {"default_tier": "connected", "robots": False},
            "limits": {"per_host_rate": 1000.0, "per_host_burst": 1000},
        }
    )


@pytest.mark.anyio
async def test_a_web_records_its_face_in_every_record_and_shapes_keep_faces_apart(
    site: LocalServer,
) -> None:
    """A Web made by an application records `library`; one made with a face records it.
    The face is part of the shape key: a page read again through the same face shares the
    first record's encoded shape, and the same read through another face never takes it."""
    library_audit, gateway_audit = MemoryAuditSink(), MemoryAuditSink()
    async with (
        Web(settings(), audit=library_audit) as library,
        Web(settings(), audit=gateway_audit, face="gateway") as gateway,
    ):
        assert (library.face, gateway.face) == ("library", "gateway")
        await library.fetch(site.url("/page"), agent="alice")
        await library.fetch(site.url("/page"), agent="alice")
        await gateway.fetch(site.url("/page"), agent="alice")
    first, again = library_audit.records
    [through_gateway] = gateway_audit.records
    assert [r.face for r in (first, again, through_gateway)] == ["library", "library", "gateway"]
    assert again.shape is first.shape and through_gateway.shape is not first.shape
    assert json.loads(through_gateway.to_json_line())["face"] == "gateway"
    assert through_gateway.to_wire()["face"] == "gateway"


def test_a_face_no_record_could_explain_is_refused() -> None:
    with pytest.raises(ValueError, match="face must be one of"):
        Web(settings(), audit=MemoryAuditSink(), face="token")


@pytest.mark.anyio
async def test_face_round_trips_and_an_audit_db_from_before_gains_it(tmp_path: Path) -> None:
    """An audit.db of the release before (session and hits_dropped, no face) gains the face
    column when a sink opens it: its old rows read None (unknown), new records keep theirs."""
    before, old_row = older_audit_table(("face",))
    assert "hits_dropped" in before and "face" not in before
    (tmp_path / "state").mkdir()
    with database(tmp_path / "state" / "audit.db") as conn:
        conn.execute(before)
        conn.execute(old_row)
    sink = SQLiteAuditSink(tmp_path / "state")
    new = AuditRecord.create(
        decision="allowed", reason="allowed", agent="alice", tier="connected",
        capability="web:page.fetch@1", target="https://example.org/a", face="mcp-http",
    )  # fmt: skip
    await sink.write(new)
    back, old = await sink.query()
    await sink.aclose()
    assert back == new and back.face == "mcp-http"
    assert (old.id, old.face, old.to_wire()["face"]) == ("old", None, None)


def test_webward_audit_filters_on_the_face_and_shows_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--face gateway` lists the token-named calls only; --json carries `face`; the table
    has a FACE column ("-" for a record from before faces); a face no webward records is
    bad input (exit 2). The command's list of faces is the audit's."""
    assert _cmd_audit.FACES == FACES

    async def fill() -> None:
        sink = SQLiteAuditSink(tmp_path)
        for i, face in enumerate(["gateway", "cli", None]):
            await sink.write(
                AuditRecord.create(
                    decision="allowed", reason="allowed", agent="alice", tier="connected",
                    capability="web:page.fetch@1", target=f"https://example.org/{i}", face=face,
                )
            )  # fmt: skip
        await sink.aclose()

    anyio.run(fill)
    s = Settings().replace({"state": {"dir": str(tmp_path)}})
    assert _run(_args(json=True, face="gateway"), s) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [(r["face"], r["target"]) for r in listed] == [("gateway", "https://example.org/0")]
    assert _run(_args(face="cli", usage=True, json=True), s) == 0
    assert [r["calls"] for r in json.loads(capsys.readouterr().out)] == [1]
    assert _run(_args(), s) == 0
    lines = capsys.readouterr().out.splitlines()
    header = lines[0].split()
    assert header[:5] == ["TIME", "AGENT", "TIER", "CAPABILITY", "DECISION"]
    at = header.index("FACE")
    assert [line.split()[at] for line in lines[1:]] == ["-", "cli", "gateway"]
    assert _run(_args(face="token"), s) == 2
    assert "--face must be one of" in capsys.readouterr().err
