#!/usr/bin/env python3
"""Python MCP peer server (PyPI mcp==2.3.0) for tests and benchmarks.

Run it with the venv `cargo xtask conformance` installs: target/peers/venv/bin/python.

usage:
  py_server.py http [--port N] [--stateless] [--json-response] [--log-level LEVEL]
  py_server.py stdio

http: serves streamable HTTP on http://127.0.0.1:PORT/mcp (loopback only).
  --port 0 (the default) binds a free port. The socket is bound here, before
  uvicorn starts, so the port is known; once uvicorn is accepting, exactly one
  line is printed (and flushed) on stdout:
      LISTENING http://127.0.0.1:PORT/mcp
  Nothing else is written to stdout; logs go to stderr (uvicorn access log is
  off unless --log-level info/debug).
  One server speaks both protocol eras: the 2026-07-28 stateless requests
  (per-request `_meta` + MCP-Protocol-Version/Mcp-Method/Mcp-Name headers)
  and the 2025-11-25 initialize handshake with Mcp-Session-Id sessions.
stdio: newline-delimited JSON-RPC on stdin/stdout; exits when stdin closes.

OpenTelemetry: the mcp SDK makes a SERVER span for every request it serves, whose parent
is the trace context the request carries in `params._meta` (`traceparent`, SEP-414).
With OTEL_SPANS_FILE=PATH set, those spans are recorded (OpenTelemetry SDK), one JSON
object per line, as each ends: name, kind, trace_id, span_id, parent_span_id, attributes.

Tools:
  echo(message: str) -> str                returns "Echo: <message>"
  progress(steps: int, delay_ms: int)      one notifications/progress per step
                                           (with a message) when the request
                                           carries a progressToken
  image()                                  a 1x1 PNG as image content
  structured(city: str) -> Weather         structuredContent + outputSchema
  error()                                  raises ToolError -> isError: true
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import struct
import sys
import zlib

import anyio
from pydantic import BaseModel, Field


def _record_spans(path: str) -> None:
    """Every span the server ends, as a JSON line in `path` (before any request)."""
    from opentelemetry import trace
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

    class JsonLines(SpanExporter):
        def __init__(self) -> None:
            self.file = open(path, "a", buffering=1, encoding="utf-8")

        def export(self, spans):
            for span in spans:
                self.file.write(
                    json.dumps(
                        {
                            "name": span.name,
                            "kind": span.kind.name,
                            "trace_id": format(span.context.trace_id, "032x"),
                            "span_id": format(span.context.span_id, "016x"),
                            "parent_span_id": format(span.parent.span_id, "016x") if span.parent else None,
                            "attributes": dict(span.attributes or {}),
                        }
                    )
                    + "\n"
                )
            return SpanExportResult.SUCCESS

    provider = TracerProvider(resource=Resource.create({"service.name": "py-peer"}))
    provider.add_span_processor(SimpleSpanProcessor(JsonLines()))
    trace.set_tracer_provider(provider)


if os.environ.get("OTEL_SPANS_FILE"):
    _record_spans(os.environ["OTEL_SPANS_FILE"])

from mcp.server.mcpserver import Context, Image, MCPServer  # noqa: E402
from mcp.server.mcpserver.exceptions import ToolError  # noqa: E402


def _tiny_png() -> bytes:
    """A valid 1x1 RGBA PNG (opaque MCP-ish blue), built without PIL."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    ihdr = struct.pack(">IIBBBBB", 1, 1, 8, 6, 0, 0, 0)  # 1x1, 8-bit, RGBA
    raw = b"\x00" + bytes([0x1F, 0x6F, 0xEB, 0xFF])  # filter byte + one pixel
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")


TINY_PNG = _tiny_png()

mcp = MCPServer(name="py-peer", version="1.0.0", instructions="Python MCP peer for tests.", log_level="WARNING")


@mcp.tool()
def echo(message: str) -> str:
    """Echo the message back."""
    return f"Echo: {message}"


@mcp.tool()
async def progress(steps: int, delay_ms: int, ctx: Context) -> str:
    """Sleep delay_ms per step, reporting progress after each step."""
    if steps < 0 or steps > 10_000:
        raise ToolError("steps must be within 0..10000")
    for i in range(1, steps + 1):
        await anyio.sleep(delay_ms / 1000)
        await ctx.report_progress(i, steps, f"step {i}/{steps}")
    return f"done {steps} steps"


@mcp.tool()
def image() -> Image:
    """A tiny 1x1 PNG image."""
    return Image(data=TINY_PNG, format="png")


class Weather(BaseModel):
    city: str = Field(description="City name, as given")
    temperature_c: float = Field(description="Temperature in Celsius")
    conditions: str = Field(description="Weather conditions")
    humidity: int = Field(description="Relative humidity, percent")


@mcp.tool()
def structured(city: str) -> Weather:
    """Fake weather for a city, as structured content."""
    return Weather(city=city, temperature_c=21.5, conditions="Partly cloudy", humidity=40)


@mcp.tool()
def error() -> str:
    """Always fails with a tool error (isError: true)."""
    raise ToolError("this tool always fails")


async def _serve_http(port: int, stateless: bool, json_response: bool, log_level: str) -> None:
    import uvicorn

    # proto=IPPROTO_TCP matters: asyncio only sets TCP_NODELAY on accepted sockets
    # whose proto is IPPROTO_TCP, and a socket made with proto 0 (the default) is
    # skipped -> Nagle + the peer's delayed ACK add ~40 ms to every response on a
    # reused keep-alive connection. TCP_NODELAY on the listener is inherited too.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(1024)
    sock.setblocking(False)
    bound = sock.getsockname()[1]

    app = mcp.streamable_http_app(
        streamable_http_path="/mcp",
        stateless_http=stateless,
        json_response=json_response,
        host="127.0.0.1",  # also turns on DNS-rebinding protection (Host must be 127.0.0.1/localhost)
    )
    config = uvicorn.Config(
        app,
        log_level=log_level,
        access_log=log_level in ("debug", "info"),
        lifespan="on",
    )
    server = uvicorn.Server(config)

    async def announce() -> None:
        while not server.started:
            await anyio.sleep(0.005)
        sys.stdout.write(f"LISTENING http://127.0.0.1:{bound}/mcp\n")
        sys.stdout.flush()

    async with anyio.create_task_group() as tg:
        tg.start_soon(announce)
        await server.serve(sockets=[sock])
        tg.cancel_scope.cancel()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="mode", required=True)
    h = sub.add_parser("http")
    h.add_argument("--port", type=int, default=0)
    h.add_argument("--stateless", action="store_true", help="stateless_http=True (no sessions)")
    h.add_argument("--json-response", action="store_true", help="answer POSTs with application/json, not SSE")
    h.add_argument("--log-level", default="warning", choices=["critical", "error", "warning", "info", "debug"])
    sub.add_parser("stdio")
    a = ap.parse_args()
    if a.mode == "stdio":
        mcp.run("stdio")
    else:
        try:
            anyio.run(_serve_http, a.port, a.stateless, a.json_response, a.log_level)
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
