#!/usr/bin/env python3
"""Arize Phoenix (PyPI arize-phoenix) for the observability tests, on loopback only.

Run it with the venv `cargo xtask test` installs: target/peers/phoenix-venv/bin/python.

Phoenix takes OTLP traces over HTTP at /v1/traces (protobuf) and serves them back
over its REST API (/v1/projects/{project}/spans). Its settings come from the
environment; the tests set PHOENIX_HOST=127.0.0.1, PHOENIX_PORT=0, PHOENIX_GRPC_PORT=0,
PHOENIX_WORKING_DIR (a temporary folder: its database lives there), and turn off what
would reach outside (PHOENIX_TELEMETRY_ENABLED=false,
PHOENIX_ALLOW_EXTERNAL_RESOURCES=false, ...).

Two things Phoenix does not do by itself, done here:
- its gRPC receiver binds "[::]:<port>" whatever PHOENIX_HOST says: it is bound to
  127.0.0.1 instead;
- it says nothing a program can wait for: once its HTTP server accepts, exactly one
  line is printed (and flushed) on stdout:
      LISTENING http://127.0.0.1:PORT
"""
import sys

import grpc.aio._server as _grpc_server

_add_insecure_port = _grpc_server.Server.add_insecure_port


def _loopback_port(self, address):
    return _add_insecure_port(self, address.replace("[::]", "127.0.0.1"))


_grpc_server.Server.add_insecure_port = _loopback_port

import uvicorn  # noqa: E402

_startup = uvicorn.Server.startup


async def _announce_startup(self, sockets=None):
    await _startup(self, sockets=sockets)
    if self.started:
        port = self.servers[0].sockets[0].getsockname()[1]
        sys.stdout.write(f"LISTENING http://127.0.0.1:{port}\n")
        sys.stdout.flush()


uvicorn.Server.startup = _announce_startup

from phoenix.server.main import main  # noqa: E402

if __name__ == "__main__":
    sys.argv = ["phoenix", "serve"]
    main()
