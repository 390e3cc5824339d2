#!/usr/bin/env python3
"""Peer benchmark client: the official Python SDK (PyPI mcp==2.3.0), one session per call.

usage: bench_py_client.py URL N WARMUP TOOL ARGS_JSON [MODE]
  e.g. target/peers/venv/bin/python tests/peers/bench_py_client.py http://127.0.0.1:3001/mcp 100 10 echo '{"message":"hi"}'

MODE (optional, default "legacy"):
  legacy      the normal 2025-11-25 usage, per call:
                async with streamable_http_client(URL, http_client=shared) as (r, w):
                    async with ClientSession(r, w) as s:
                        await s.initialize()          # initialize + notifications/initialized (+ GET stream)
                        await s.call_tool(TOOL, ARGS)
                # leaving streamable_http_client sends DELETE (terminate_on_close=True)
  2026-07-28  the high-level mcp.Client pinned to the stateless revision (no handshake, no
              session): async with Client(streamable_http_client(...), mode="2026-07-28") as c:
                  await c.call_tool(TOOL, ARGS)       # one POST
  auto        mcp.Client(mode="auto"): server/discover probe, falls back to initialize.

One httpx2.AsyncClient (the SDK's create_mcp_http_client()) is shared by all calls, so TCP
connections are pooled. WARMUP calls are not counted; calls are sequential. Prints one JSON line:
  {"calls":N,"calls_per_s":..,"p50_ms":..,"p99_ms":..,"client":"py-sdk X.Y.Z",...}
Exit code 1 if any call returned isError: true.
"""
from __future__ import annotations

import json
import math
import sys
import time
from importlib.metadata import version

import anyio

from mcp import Client, ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


async def main() -> int:
    if len(sys.argv) < 5:
        print(__doc__, file=sys.stderr)
        return 2
    url, n, warmup, tool = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    args = json.loads(sys.argv[5]) if len(sys.argv) > 5 and sys.argv[5] else {}
    mode = sys.argv[6] if len(sys.argv) > 6 else "legacy"
    sdk = version("mcp")
    state = {"errors": 0, "proto": None}

    async with create_mcp_http_client() as http:

        async def one_call() -> None:
            if mode == "legacy":
                async with streamable_http_client(url, http_client=http) as (read, write):
                    async with ClientSession(read, write) as session:
                        init = await session.initialize()
                        state["proto"] = init.protocol_version
                        res = await session.call_tool(tool, args)
            else:
                async with Client(streamable_http_client(url, http_client=http), mode=mode) as client:
                    state["proto"] = client.session.protocol_version if hasattr(client.session, "protocol_version") else mode
                    res = await client.call_tool(tool, args)
            if getattr(res, "is_error", False):
                state["errors"] += 1

        for _ in range(warmup):
            await one_call()
        state["errors"] = 0

        lat: list[float] = []
        t0 = time.perf_counter()
        for _ in range(n):
            s = time.perf_counter()
            await one_call()
            lat.append((time.perf_counter() - s) * 1000)
        total = time.perf_counter() - t0

    lat.sort()

    def pct(p: float) -> float:
        return lat[min(len(lat) - 1, max(0, math.ceil(p / 100 * len(lat)) - 1))]

    print(
        json.dumps(
            {
                "calls": n,
                "calls_per_s": round(n / total, 3),
                "p50_ms": round(pct(50), 3),
                "p99_ms": round(pct(99), 3),
                "client": f"py-sdk {sdk}",
                "mode": f"session-per-call/{mode}",
                "warmup": warmup,
                "tool": tool,
                "tool_errors": state["errors"],
                "protocol_version": state["proto"],
                "python": sys.version.split()[0],
            }
        ),
        flush=True,
    )
    return 1 if state["errors"] else 0


if __name__ == "__main__":
    sys.exit(anyio.run(main))
