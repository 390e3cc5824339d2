#!/usr/bin/env node
// Peer benchmark client: the official TypeScript SDK, used the normal way,
// one MCP session per call.
//
// usage: node bench_ts_client.mjs URL N WARMUP TOOL ARGS_JSON
//   e.g. node bench_ts_client.mjs http://127.0.0.1:3001/mcp 100 10 echo '{"message":"hi"}'
//
// Each call (timed end to end):
//   new Client + new StreamableHTTPClientTransport(URL)
//   await client.connect(transport)          -> initialize, notifications/initialized
//                                               (+ the SDK's standalone GET SSE stream)
//   await client.callTool({name, arguments})
//   await transport.terminateSession()       -> DELETE with Mcp-Session-Id
//   await client.close()
// WARMUP calls run first and are not counted. Calls are sequential.
// Prints one JSON line on stdout:
//   {"calls":N,"calls_per_s":..,"p50_ms":..,"p99_ms":..,"client":"ts-sdk X.Y.Z",...}
// Exit code 1 if any call threw or returned isError: true.
//
// The SDK is loaded from $MCP_PEERS_NODE_MODULES (default: target/peers/npm/node_modules
// of this repository, where `cargo xtask conformance` installs the pinned peers), so this
// file needs no package.json of its own.

import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { pathToFileURL, fileURLToPath } from 'node:url';
import path from 'node:path';

const here = path.dirname(fileURLToPath(import.meta.url));
const nm =
  process.env.MCP_PEERS_NODE_MODULES || path.join(here, '..', '..', 'target', 'peers', 'npm', 'node_modules');
const sdkDir = path.join(nm, '@modelcontextprotocol', 'sdk');
const sdkVersion = JSON.parse(readFileSync(path.join(sdkDir, 'package.json'), 'utf8')).version;
const { Client } = await import(pathToFileURL(path.join(sdkDir, 'dist/esm/client/index.js')).href);
const { StreamableHTTPClientTransport } = await import(
  pathToFileURL(path.join(sdkDir, 'dist/esm/client/streamableHttp.js')).href
);

const [url, nArg, warmArg, tool, argsJson] = process.argv.slice(2);
if (!url || !nArg || warmArg === undefined || !tool) {
  console.error('usage: bench_ts_client.mjs URL N WARMUP TOOL [ARGS_JSON]');
  process.exit(2);
}
const N = Number(nArg);
const WARMUP = Number(warmArg);
const toolArgs = argsJson ? JSON.parse(argsJson) : {};
const target = new URL(url);

let toolErrors = 0;
let protocolVersion = null;

async function oneCall() {
  const client = new Client({ name: 'bench-ts-client', version: sdkVersion });
  const transport = new StreamableHTTPClientTransport(target);
  try {
    await client.connect(transport);
    protocolVersion = transport.protocolVersion ?? protocolVersion;
    const res = await client.callTool({ name: tool, arguments: toolArgs });
    if (res.isError) toolErrors++;
    await transport.terminateSession();
  } finally {
    await client.close();
  }
}

for (let i = 0; i < WARMUP; i++) await oneCall();
toolErrors = 0;

const lat = [];
const t0 = performance.now();
for (let i = 0; i < N; i++) {
  const s = performance.now();
  await oneCall();
  lat.push(performance.now() - s);
}
const total = (performance.now() - t0) / 1000;
lat.sort((a, b) => a - b);
const pct = (p) => lat[Math.min(lat.length - 1, Math.max(0, Math.ceil((p / 100) * lat.length) - 1))];
const r3 = (x) => Math.round(x * 1000) / 1000;
console.log(
  JSON.stringify({
    calls: N,
    calls_per_s: r3(N / total),
    p50_ms: r3(pct(50)),
    p99_ms: r3(pct(99)),
    client: `ts-sdk ${sdkVersion}`,
    mode: 'session-per-call',
    warmup: WARMUP,
    tool,
    tool_errors: toolErrors,
    protocol_version: protocolVersion,
    node: process.version,
  }),
);
process.exit(toolErrors ? 1 : 0);
