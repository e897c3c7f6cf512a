"""The gateway against its own OpenAPI document, fuzzed by schemathesis over real HTTP.

Schemathesis sends schema-valid and schema-invalid bodies to a live uvicorn on loopback. The
``Web`` behind it can never leave the machine: no name resolves (``StaticResolver({})``), no
internal range is allowed, and its connector records where it would connect and never does,
so a generated literal public address (``http://8.8.8.8/``) ends as an upstream error.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)
from test_gateway import running_gateway

from webward import Settings, StaticResolver, Web, guard
from webward._credentials import EnvironmentStore
from webward._gateway import FETCH_PATH, SEARCH_PATH, hash_token, openapi_document
from webward.testing import MemoryAuditSink, RecordingConnector

TOKEN = "schemathesis-token"
HEADERS = {"Authorization": f"Bearer {TOKEN}"}

# 5xx answers the gateway may give for a well-formed request: the far side failed (here: no
# name resolves and the connector never connects), a circuit is open, or search is off.
UPSTREAM_CODES = {"upstream_error", "timeout", "circuit_open", "not_configured"}

schema = schemathesis.openapi.from_dict(openapi_document())


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, RecordingConnector]]:
    tmp = tmp_path_factory.mktemp("gateway")
    config = tmp / "webward.toml"
    config.write_text(
        "\n".join(
            [
                "[policy]",
                "robots = false",
                "[state]",
                f"dir = {json.dumps(str(tmp / 'state'))}",
                "[agents.fuzzer]",
                'tier = "connected"',
                f'token_sha256 = "{hash_token(TOKEN)}"',
            ]
        )
        + "\n",
        encoding="utf-8",
    )
    settings_ = Settings.load(Path(config), environ={})
    connector = RecordingConnector()

    def make_web() -> Web:
        return Web(
            settings_,
            resolver=StaticResolver({}),
            connector=connector,
            audit=MemoryAuditSink(),
            credentials=EnvironmentStore({}),
        )

    with running_gateway(settings_, make_web) as base:
        yield base, connector


_BODY_SCHEMAS = {
    FETCH_PATH: openapi_document()["components"]["schemas"]["FetchRequest"],
    SEARCH_PATH: openapi_document()["components"]["schemas"]["SearchRequest"],
}


def _sent_valid_body(path: str, request: Any) -> bool:
    """Whether the request as sent (after our Authorization header replaced the generated one)
    carried a JSON body that its schema accepts."""
    content_type = request.headers.get("Content-Type", "")
    if path not in _BODY_SCHEMAS or not content_type.startswith("application/json"):
        return False
    try:
        body = json.loads(request.body or b"")
    except ValueError:
        return False
    return jsonschema.Draft202012Validator(_BODY_SCHEMAS[path]).is_valid(body)


def server_errors_only_from_upstream(ctx: Any, response: Any, case: Any) -> bool | None:
    """A 5xx is only ever the error model of an upstream condition, and never for invalid input."""
    if response.status_code < 500:
        return None
    body = json.loads(response.content)
    assert body["error"]["code"] in UPSTREAM_CODES, body
    assert _sent_valid_body(case.path, response.request), (
        f"invalid input got {response.status_code}"
    )
    return None


@schema.parametrize()
@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
def test_gateway_conforms_to_its_openapi_document(
    case: schemathesis.Case, live: tuple[str, RecordingConnector]
) -> None:
    """Generated requests get documented statuses and models, and 4xx (never 5xx) for bad input."""
    base, connector = live
    response = case.call(base_url=base, headers=HEADERS, timeout=20)
    case.validate_response(
        response,
        checks=[
            status_code_conformance,
            content_type_conformance,
            response_headers_conformance,
            response_schema_conformance,
            negative_data_rejection,
            server_errors_only_from_upstream,
        ],
        headers=HEADERS,
    )
    # Whatever address the fuzzer made up, nothing internal got as far as the connector.
    assert not any(guard.ip_in_blocked_range(ip) for ip, _port in connector.attempts)
