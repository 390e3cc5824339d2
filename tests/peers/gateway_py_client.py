#!/usr/bin/env python3
"""A real MCP client no one here wrote, the official Python SDK (PyPI mcp==2.3.0), calling
the gateway (`mcp-tools serve`) the normal way.

usage: gateway_py_client.py URL KEY legacy|2026-07-28
  legacy      ClientSession over streamable_http_client: initialize, a session
  2026-07-28  mcp.Client(mode="2026-07-28"): stateless

In order: tools/list; `progress {steps: 3}` with a progress callback; `error` (the tool's
own isError); `nothing` (an unknown tool); `progress {steps: 1000, delay_ms: 60000}`
cancelled at its first progress notification. Prints one JSON line:
  {"tools": [...], "progress": [1,2,3], "result": "done", "error_result": {...},
   "unknown": {"code": -32602, ...}, "cancelled": true}
"""
from __future__ import annotations

import json
import sys
from contextlib import asynccontextmanager
from importlib.metadata import version

import anyio

from mcp import Client, ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError


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
    if len(sys.argv) != 4 or sys.argv[3] not in ("legacy", "2026-07-28"):
        print(__doc__, file=sys.stderr)
        return 2
    url, key, mode = sys.argv[1:4]
    out: dict = {"client": f"py-sdk {version('mcp')}"}
    async with connected(url, key, mode) as client:
        listed = await client.list_tools()
        out["tools"] = [tool.name for tool in listed.tools]

        progress: list[float] = []

        async def on_progress(value: float, total: float | None, message: str | None) -> None:
            progress.append(value)

        done = await client.call_tool(
            "progress", {"steps": 3, "delay_ms": 5}, progress_callback=on_progress
        )
        out["progress"] = progress
        out["result"] = done.content[0].text if done.content else None

        failed = await client.call_tool("error", {})
        meta = failed.meta if hasattr(failed, "meta") else None
        out["error_result"] = {
            "isError": bool(failed.is_error),
            "meta": meta,
            "text": failed.content[0].text if failed.content else None,
        }

        try:
            await client.call_tool("nothing", {})
            out["unknown"] = {"code": None}
        except MCPError as error:
            out["unknown"] = {"code": error.error.code, "message": error.error.message}

        cancelled = anyio.Event()

        async def first_progress(value: float, total: float | None, message: str | None) -> None:
            cancelled.set()

        async with anyio.create_task_group() as group:

            async def long_call() -> None:
                await client.call_tool(
                    "progress", {"steps": 1000, "delay_ms": 60000}, progress_callback=first_progress
                )

            group.start_soon(long_call)
            with anyio.fail_after(60):
                await cancelled.wait()
            group.cancel_scope.cancel()
        out["cancelled"] = cancelled.is_set()
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(anyio.run(main))
