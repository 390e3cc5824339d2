#!/usr/bin/env node
// Peer benchmark client: the official TypeScript SDK over stdio, used the normal way,
// one server process per call (what isolation over stdio costs with the SDK).
//
// usage: node bench_ts_stdio_client.mjs N WARMUP TOOL ARGS_JSON -- PROGRAM [ARGS...]
//   e.g. node bench_ts_stdio_client.mjs 20 2 echo '{"message":"hi"}' -- \
//          node target/peers/npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js stdio
//
// Each call (timed end to end):
//   new Client + new StdioClientTransport({command: PROGRAM, args: ARGS, stderr: 'ignore'})
//   await client.connect(transport)          -> spawns the server; initialize, notifications/initialized
//   await client.callTool({name, arguments})
//   await client.close()                     -> closes stdin and waits for the process to exit
//                                               (SIGTERM if it has not after 2 s, SIGKILL
//                                               after 2 more)
// WARMUP calls run first and are not counted. Calls are sequential.
// Prints one JSON line on stdout:
//   {"calls":N,"calls_per_s":..,"p50_ms":..,"p99_ms":..,"result_p50_ms":..,"result_p99_ms":..,
//    "client":"ts-sdk X.Y.Z stdio",...}
// p50_ms/p99_ms time the whole call, close included; result_* stop at the result.
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
const { StdioClientTransport } = await import(pathToFileURL(path.join(sdkDir, 'dist/esm/client/stdio.js')).href);

const argv = process.argv.slice(2);
const dashes = argv.indexOf('--');
const [nArg, warmArg, tool, argsJson] = dashes < 0 ? argv : argv.slice(0, dashes);
const [program, ...programArgs] = dashes < 0 ? [] : argv.slice(dashes + 1);
if (!nArg || warmArg === undefined || !tool || !program) {
  console.error('usage: bench_ts_stdio_client.mjs N WARMUP TOOL [ARGS_JSON] -- PROGRAM [ARGS...]');
  process.exit(2);
}
const N = Number(nArg);
const WARMUP = Number(warmArg);
const toolArgs = argsJson ? JSON.parse(argsJson) : {};

let toolErrors = 0;

// Time from the start of a call until its result, before the close (which waits for the
// process to exit).
const untilResult = [];

async function oneCall() {
  const s = performance.now();
  const client = new Client({ name: 'bench-ts-stdio-client', version: sdkVersion });
  const transport = new StdioClientTransport({ command: program, args: programArgs, stderr: 'ignore' });
  try {
    await client.connect(transport);
    const res = await client.callTool({ name: tool, arguments: toolArgs });
    if (res.isError) toolErrors++;
    untilResult.push(performance.now() - s);
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
const pct = (p) => at(lat, p);
const r3 = (x) => Math.round(x * 1000) / 1000;
console.log(
  JSON.stringify({
    calls: N,
    calls_per_s: r3(N / total),
    p50_ms: r3(pct(50)),
    p99_ms: r3(pct(99)),
    result_p50_ms: r3(at(untilResult, 50)),
    result_p99_ms: r3(at(untilResult, 99)),
    client: `ts-sdk ${sdkVersion} stdio`,
    mode: 'process-per-call',
    warmup: WARMUP,
    tool,
    tool_errors: toolErrors,
    node: process.version,
  }),
);
process.exit(toolErrors ? 1 : 0);
