#!/usr/bin/env node
// Peer benchmark client: the TypeScript SDK's v2 client (`@modelcontextprotocol/client`),
// used the normal way, a client per call, over Streamable HTTP or stdio.
//
// usage: node bench_ts2_client.mjs http URL N WARMUP TOOL ARGS_JSON ERA
//        node bench_ts2_client.mjs stdio N WARMUP TOOL ARGS_JSON -- PROGRAM [ARGS...]
//   ERA: legacy (the SDK's default: `initialize`, `notifications/initialized`, the
//        call, then `terminateSession()`'s DELETE) or modern (`versionNegotiation`
//        pinned to 2026-07-28: `server/discover` at connect, then the call)
//
// Each call (timed end to end): new Client + a new transport, `connect`, `callTool`,
// (HTTP legacy: `terminateSession`), `close`. Over stdio `close` closes the server's
// stdin and waits for the process to exit; `result_p50_ms` stops at the result.
// WARMUP calls run first and are not counted. Calls are sequential.
// Prints one JSON line on stdout:
//   {"calls":N,"calls_per_s":..,"p50_ms":..,"p99_ms":..,"client":"ts-sdk-v2 X.Y.Z ...",...}
// Exit code 1 if any call threw or returned isError: true.
//
// The package is loaded from $MCP_PEERS_NODE_MODULES (default: target/peers/npm/node_modules
// of this repository, where the xtask installs the pinned peers).

import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { pathToFileURL, fileURLToPath } from 'node:url';
import path from 'node:path';

const here = path.dirname(fileURLToPath(import.meta.url));
const nm =
  process.env.MCP_PEERS_NODE_MODULES || path.join(here, '..', '..', 'target', 'peers', 'npm', 'node_modules');
const pkgDir = path.join(nm, '@modelcontextprotocol', 'client');
const version = JSON.parse(readFileSync(path.join(pkgDir, 'package.json'), 'utf8')).version;
const { Client, StreamableHTTPClientTransport } = await import(
  pathToFileURL(path.join(pkgDir, 'dist/index.mjs')).href
);
const { StdioClientTransport } = await import(pathToFileURL(path.join(pkgDir, 'dist/stdio.mjs')).href);

const argv = process.argv.slice(2);
const kind = argv.shift();
let url, nArg, warmArg, tool, argsJson, era, program, programArgs;
if (kind === 'http') {
  [url, nArg, warmArg, tool, argsJson, era] = argv;
} else if (kind === 'stdio') {
  const dashes = argv.indexOf('--');
  [nArg, warmArg, tool, argsJson] = dashes < 0 ? argv : argv.slice(0, dashes);
  [program, ...programArgs] = dashes < 0 ? [] : argv.slice(dashes + 1);
  era = 'legacy';
}
if (!nArg || warmArg === undefined || !tool || (kind === 'http' ? !url : !program) || !['legacy', 'modern'].includes(era)) {
  console.error(
    'usage: bench_ts2_client.mjs http URL N WARMUP TOOL ARGS_JSON legacy|modern\n' +
      '       bench_ts2_client.mjs stdio N WARMUP TOOL ARGS_JSON -- PROGRAM [ARGS...]',
  );
  process.exit(2);
}
const N = Number(nArg);
const WARMUP = Number(warmArg);
const toolArgs = argsJson ? JSON.parse(argsJson) : {};
const options =
  era === 'modern' ? { versionNegotiation: { mode: { pin: '2026-07-28' } } } : {};

let toolErrors = 0;
let protocolVersion = null;
const untilResult = [];

async function oneCall() {
  const s = performance.now();
  const client = new Client({ name: 'bench-ts2-client', version }, options);
  const transport =
    kind === 'http'
      ? new StreamableHTTPClientTransport(new URL(url))
      : new StdioClientTransport({ command: program, args: programArgs, stderr: 'ignore' });
  try {
    await client.connect(transport);
    protocolVersion = transport.protocolVersion ?? client.getNegotiatedProtocolVersion?.() ?? protocolVersion;
    const res = await client.callTool({ name: tool, arguments: toolArgs });
    if (res.isError) toolErrors++;
    untilResult.push(performance.now() - s);
    if (kind === 'http' && era === 'legacy') await transport.terminateSession();
  } finally {
    await client.close();
  }
}

for (let i = 0; i < WARMUP; i++) await oneCall();
toolErrors = 0;
untilResult.length = 0;

const lat = [];
const t0 = performance.now();
for (let i = 0; i < N; i++) {
  const s = performance.now();
  await oneCall();
  lat.push(performance.now() - s);
}
const total = (performance.now() - t0) / 1000;
lat.sort((a, b) => a - b);
untilResult.sort((a, b) => a - b);
const at = (xs, p) => xs[Math.min(xs.length - 1, Math.max(0, Math.ceil((p / 100) * xs.length) - 1))];
const r3 = (x) => Math.round(x * 1000) / 1000;
const line = {
  calls: N,
  calls_per_s: r3(N / total),
  p50_ms: r3(at(lat, 50)),
  p99_ms: r3(at(lat, 99)),
  client: `ts-sdk-v2 ${version}${kind === 'stdio' ? ' stdio' : era === 'modern' ? ' 2026-07-28' : ''}`,
  mode: kind === 'stdio' ? 'process-per-call' : 'client-per-call',
  era,
  warmup: WARMUP,
  tool,
  tool_errors: toolErrors,
  protocol_version: protocolVersion,
  node: process.version,
};
if (kind === 'stdio') {
  line.result_p50_ms = r3(at(untilResult, 50));
  line.result_p99_ms = r3(at(untilResult, 99));
}
console.log(JSON.stringify(line));
process.exit(toolErrors ? 1 : 0);
