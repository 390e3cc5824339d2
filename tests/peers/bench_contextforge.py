"""IBM ContextForge (`mcp-contextforge-gateway`) in front of an upstream MCP server, for
`cargo xtask bench` (gateway).

    python bench_contextforge.py UPSTREAM_URL STATE_DIR TOKEN_FILE

Starts `mcpgateway` (its uvicorn CLI, one process) on 127.0.0.1 (a port of its own) with
its default setup: a SQLite database (in STATE_DIR, new each run), authentication required
(`AUTH_REQUIRED=true`, `MCP_CLIENT_AUTH_ENABLED=true`: an HS256 JWT bearer signed with
`JWT_SECRET_KEY`, for the REST API and the MCP endpoint alike; basic auth is off for the
API by default). Secrets are random per run and never printed. The one setting changed from
its defaults are `SSRF_ALLOW_LOCALHOST=true` (by default it refuses to register a loopback
upstream) and `RATE_LIMITING_ENABLED=false` (by default it answers 429 past 100 MCP
requests a minute). Its secrets must be strong or it refuses to start: they are made here.

Then, through its REST API with an admin token (made by its own
`mcpgateway.utils.create_jwt_token`): registers the upstream (`POST /gateways`,
Streamable HTTP), and makes a virtual server of its tools (`POST /servers`). Writes the
token (mode 0600) to TOKEN_FILE for the load generator, writes the upstream tools' names
as ContextForge serves them to STATE_DIR/tools.json, prints
`LISTENING http://127.0.0.1:PORT/servers/ID/mcp` and runs until its stdin closes. The
gateway gets SIGTERM from the kernel when this script dies (PR_SET_PDEATHSIG).
"""

import ctypes
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

ADMIN = "admin@example.com"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def die_with_parent() -> None:
    # PR_SET_PDEATHSIG (1): SIGTERM when this launcher dies, however it dies.
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)


def request(method: str, url: str, token: str | None = None, body=None, timeout=30):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method)
    req.add_header("Content-Type", "application/json")
    req.add_header("Accept", "application/json")
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    with urllib.request.urlopen(req, timeout=timeout) as answer:
        return json.loads(answer.read() or b"null")


def main() -> None:
    upstream, state, token_file = sys.argv[1], sys.argv[2], sys.argv[3]
    os.makedirs(state, exist_ok=True)
    for name in os.listdir(state):
        if name.startswith("mcp.db"):
            os.remove(os.path.join(state, name))
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = dict(os.environ)
    env.update(
        {
            "HOST": "127.0.0.1",
            "PORT": str(port),
            "DATABASE_URL": f"sqlite:///{os.path.join(state, 'mcp.db')}",
            "JWT_SECRET_KEY": secrets.token_urlsafe(48),
            "AUTH_ENCRYPTION_SECRET": secrets.token_urlsafe(48),
            "PLATFORM_ADMIN_EMAIL": ADMIN,
            "PLATFORM_ADMIN_PASSWORD": secrets.token_urlsafe(24) + "aA1!",
            "BASIC_AUTH_PASSWORD": secrets.token_urlsafe(24) + "aA1!",
            "DEFAULT_USER_PASSWORD": secrets.token_urlsafe(24) + "aA1!",
            "SSRF_ALLOW_LOCALHOST": "true",
            # Its default limit of 100 MCP requests a minute per client would make a bench
            # of it a bench of its rate limiter.
            "RATE_LIMITING_ENABLED": "false",
            "LOG_LEVEL": "ERROR",
        }
    )
    gateway = subprocess.Popen(
        [os.path.join(os.path.dirname(sys.executable), "mcpgateway"), "--host", "127.0.0.1", "--port", str(port)],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=sys.stderr,
        stderr=sys.stderr,
        preexec_fn=die_with_parent,
    )
    deadline = time.monotonic() + 120
    while True:
        if gateway.poll() is not None:
            sys.exit(f"mcpgateway exited ({gateway.returncode}) before it was healthy")
        try:
            request("GET", f"{base}/health", timeout=2)
            break
        except (OSError, urllib.error.HTTPError):
            pass
        if time.monotonic() > deadline:
            gateway.terminate()
            sys.exit("mcpgateway was not healthy within 120 s")
        time.sleep(0.1)
    token = subprocess.run(
        [sys.executable, "-m", "mcpgateway.utils.create_jwt_token", "--username", ADMIN, "--exp", "120", "--admin"],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip().splitlines()[-1]
    registered = request(
        "POST",
        f"{base}/gateways",
        token,
        {"name": "bench-upstream", "url": upstream, "transport": "STREAMABLEHTTP"},
        timeout=60,
    )
    tools = [
        tool
        for tool in request("GET", f"{base}/tools?limit=0", token)
        if tool.get("gatewayId", tool.get("gateway_id")) == registered["id"]
    ]
    server = request(
        "POST",
        f"{base}/servers",
        token,
        {"server": {"name": "bench", "associated_tools": [tool["id"] for tool in tools]}},
    )
    names = {tool.get("originalName", tool.get("original_name")): tool["name"] for tool in tools}
    with open(os.path.join(state, "tools.json"), "w") as out:
        json.dump(names, out)
    fd = os.open(token_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(token)
    print(f"LISTENING {base}/servers/{server['id']}/mcp", flush=True)
    sys.stdin.read()
    gateway.terminate()
    try:
        gateway.wait(timeout=10)
    except subprocess.TimeoutExpired:
        gateway.kill()


if __name__ == "__main__":
    main()
