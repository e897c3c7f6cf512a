"""The gateway's watch for a client leaving mid-call (``_gateway._watch_client``), against
anyio's own short-lived cancellations of the call's task."""

from __future__ import annotations

import asyncio
from typing import Any

import anyio

from webward import _gateway


def test_a_client_leaving_while_anyio_cancels_the_call_for_a_moment_is_still_heard() -> None:
    """A connect that succeeds cancels the other attempts of anyio's happy eyeballs, the
    calling task included, and takes that back when the task leaves the task group. A client
    that left in that moment (a search given its provider slot as other clients left) was not
    heard: the watch took the cancellation under way for the server's shutdown, and the call
    ran on to its deadline, audited ``timeout``. It is heard once that moment is over."""

    async def main() -> list[str]:
        left = asyncio.Event()
        seen: list[str] = []

        async def receive() -> dict[str, Any]:
            await left.wait()
            return {"type": "http.disconnect"}

        host = asyncio.current_task()
        assert host is not None
        _gateway._watch_client(host, receive, host.cancelling())
        await asyncio.sleep(0)  # the watch awaits the client
        try:
            async with anyio.create_task_group() as tg:

                async def connected() -> None:  # as anyio.connect_tcp's winning attempt
                    left.set()  # the client leaves in the same moment
                    tg.cancel_scope.cancel()

                tg.start_soon(connected)
                await anyio.sleep_forever()
            seen.append("connected")
            await asyncio.sleep(10)  # the provider stalls
            seen.append("answered")
        except asyncio.CancelledError:
            seen.append("cancelled" if _gateway._client_left(host) else "cancelled by another")
        finally:
            _gateway._unwatch(host)
        return seen

    assert asyncio.run(main()) == ["connected", "cancelled"]
