"""FastMCP's proxy in front of an upstream MCP server, for `cargo xtask bench` (gateway).

    python bench_fastmcp_proxy.py UPSTREAM_URL

Serves `fastmcp.server.create_proxy(UPSTREAM_URL)` (FastMCP 4 replaced `FastMCP.as_proxy`
with it; the backend mirrors the caller's protocol era per request) over Streamable HTTP
on 127.0.0.1 (a port of its own), with FastMCP's defaults: no authentication. Prints
`LISTENING http://127.0.0.1:PORT/mcp` once the endpoint answers, and runs until its stdin
closes.
"""

import asyncio
import os
import socket
import sys
import threading
import time
import urllib.error
import urllib.request

from fastmcp.server import create_proxy


def answers(url: str) -> bool:
    try:
        urllib.request.urlopen(urllib.request.Request(url, method="GET"), timeout=1)
    except urllib.error.HTTPError:
        return True  # any HTTP status: the server is up
    except OSError:
        return False
    return True


async def main() -> None:
    upstream = sys.argv[1]
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(1024)
    port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/mcp"
    proxy = create_proxy(upstream, name="bench-fastmcp-proxy")
    server = asyncio.create_task(
        proxy.run_http_async(
            show_banner=False,
            transport="http",
            host="127.0.0.1",
            port=port,
            path="/mcp",
            log_level="warning",
            sockets=[sock],
        )
    )
    deadline = time.monotonic() + 30
    while not await asyncio.to_thread(answers, url):
        if server.done() or time.monotonic() > deadline:
            server.result() if server.done() else None
            sys.exit("the FastMCP proxy did not answer within 30 s")
        await asyncio.sleep(0.05)
    print(f"LISTENING {url}", flush=True)
    closed = asyncio.Event()
    loop = asyncio.get_running_loop()

    def wait_stdin() -> None:
        sys.stdin.read()
        loop.call_soon_threadsafe(closed.set)

    threading.Thread(target=wait_stdin, daemon=True).start()
    done, _ = await asyncio.wait(
        [server, asyncio.create_task(closed.wait())], return_when=asyncio.FIRST_COMPLETED
    )
    if server in done:
        server.result()
    os._exit(0)


if __name__ == "__main__":
    asyncio.run(main())
