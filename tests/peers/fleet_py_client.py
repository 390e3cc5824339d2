#!/usr/bin/env python3
"""A fleet's caller: the official Python SDK (PyPI mcp) calling `echo` through a load
balancer in front of gateway replicas, for a while, several calls at once, each with an id
of its own in its arguments.

usage: fleet_py_client.py URL KEY legacy|2026-07-28 SECONDS CONCURRENCY PREFIX [MS]
  legacy      ClientSession over streamable_http_client: initialize, one session (its
              requests reach any replica)
  2026-07-28  mcp.Client(mode="2026-07-28"): stateless
  MS          how long the upstream tool takes (its `ms` argument)

A call that raises (or takes over 15 s) ends with its error's message. Prints one JSON line:
  {"client": "...", "calls": N, "ok": N, "failures": [{"id": ..., "error"|"kind": ...}]}
with "stuck": {"phase", "calls"} (and exit status 3) when it is still waiting 30 s after
SECONDS.
"""
from __future__ import annotations

import json
import os
import sys
import threading
import time
from contextlib import asynccontextmanager
from importlib.metadata import version

import anyio

from mcp import Client, ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


@asynccontextmanager
async def connected(url: str, key: str, mode: str):
    headers = {"Authorization": f"Bearer {key}"}
    async with create_mcp_http_client(headers=headers) as http:
        if mode == "legacy":
            async with streamable_http_client(url, http_client=http) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    yield session
        else:
            async with Client(streamable_http_client(url, http_client=http), mode=mode) as client:
                yield client


async def main() -> int:
    if len(sys.argv) not in (7, 8) or sys.argv[3] not in ("legacy", "2026-07-28"):
        print(__doc__, file=sys.stderr)
        return 2
    url, key, mode, seconds, concurrency, prefix = sys.argv[1:7]
    ms = int(sys.argv[7]) if len(sys.argv) == 8 else 0
    out: dict = {"client": f"py-sdk {version('mcp')} {mode}", "calls": 0, "ok": 0, "failures": []}
    until = time.monotonic() + float(seconds)
    counter = iter(range(1 << 62))
    inflight: set[str] = set()
    state = {"phase": "connect"}

    def stuck() -> None:
        out["stuck"] = {"phase": state["phase"], "calls": sorted(inflight)}
        print(json.dumps(out), flush=True)
        os._exit(3)

    watchdog = threading.Timer(float(seconds) + 30, stuck)
    watchdog.daemon = True
    watchdog.start()
    async with connected(url, key, mode) as client:
        state["phase"] = "calls"

        async def worker() -> None:
            while time.monotonic() < until:
                call_id = f"{prefix}-{next(counter)}"
                out["calls"] += 1
                inflight.add(call_id)
                try:
                    with anyio.fail_after(15):
                        result = await client.call_tool("echo", {"id": call_id, "ms": ms})
                except Exception as error:  # noqa: BLE001 - every failure is reported
                    out["failures"].append({"id": call_id, "error": f"{type(error).__name__}: {error}"})
                    inflight.discard(call_id)
                    continue
                inflight.discard(call_id)
                text = result.content[0].text if result.content else None
                if result.is_error:
                    meta = getattr(result, "meta", None) or {}
                    kind = (meta.get("brain.dev/error") or {}).get("kind", "tool_error")
                    out["failures"].append({"id": call_id, "kind": kind, "text": text})
                elif text == "ok":
                    out["ok"] += 1
                else:
                    out["failures"].append({"id": call_id, "error": f"unexpected result {text!r}"})

        async with anyio.create_task_group() as group:
            for _ in range(int(concurrency)):
                group.start_soon(worker)
        state["phase"] = "close"
    watchdog.cancel()
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(anyio.run(main))
