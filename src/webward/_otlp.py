"""The OTLP/HTTP exporter's requests session, bounded (``[otel]`` extra: requests comes with
opentelemetry-exporter-otlp-proto-http, and only a process that exports imports this)."""

from __future__ import annotations

from typing import Any

import requests

__all__ = ["COLLECTOR_ANSWER_BYTES", "bounded_answer", "bounded_session"]

#: What webward reads of a collector's answer at most. The exporter acts on its status alone,
#: and read the body whole: a collector (or whatever the endpoint names) answering 1 GB took
#: the gateway past 2.9 GB of memory, once for each of its retries.
COLLECTOR_ANSWER_BYTES = 64 * 1024


def bounded_session() -> Any:
    """A requests session that reads at most :data:`COLLECTOR_ANSWER_BYTES` of an answer."""
    session = requests.Session()
    session.hooks["response"].append(bounded_answer)
    return session


def bounded_answer(response: Any, *args: Any, **kwargs: Any) -> None:
    """A response hook, run before requests reads the body: the body read up to the bound,
    then its connection closed rather than the rest read."""
    kept = bytearray()
    for chunk in response.iter_content(16 * 1024):  # decoded, a chunk at a time
        kept += chunk
        if len(kept) > COLLECTOR_ANSWER_BYTES:
            response.close()
            break
    response._content = bytes(kept[:COLLECTOR_ANSWER_BYTES])
    response._content_consumed = True
