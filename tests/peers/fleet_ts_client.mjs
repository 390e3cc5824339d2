#!/usr/bin/env node
// A fleet's caller: the TypeScript SDK's v2 client (`@modelcontextprotocol/client`) calling
// `echo` through a load balancer in front of gateway replicas, for a while, several calls
// at once, each with an id of its own in its arguments.
//
// usage: node fleet_ts_client.mjs URL KEY legacy|modern SECONDS CONCURRENCY PREFIX [MS]
//   legacy: initialize, one session (its requests reach any replica); modern: 2026-07-28,
//   stateless. MS: how long the upstream tool takes (its `ms` argument).
//
// A call that throws (or takes over 15 s: the SDK waits that long for a call whose
// connection died, then says it timed out) ends with its error's message; a session the
// fleet no longer knows (404) is replaced by a new one, as an application would. Prints one JSON line:
//   {"client": "...", "calls": N, "ok": N, "failures": [{"id": ..., "error"|"kind": ...}]}
// with "stuck": {"phase", "calls"} (and exit status 3) when it is still waiting 30 s after
// SECONDS.
// The package is loaded from $MCP_PEERS_NODE_MODULES (default target/peers/npm/node_modules).

import { readFileSync } from 'node:fs';
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

const [url, key, era, seconds, concurrency, prefix, ms] = process.argv.slice(2);
if (!url || !key || !['legacy', 'modern'].includes(era) || !seconds || !concurrency || !prefix) {
  console.error('usage: fleet_ts_client.mjs URL KEY legacy|modern SECONDS CONCURRENCY PREFIX [MS]');
  process.exit(2);
}

async function connect() {
  const options = era === 'modern' ? { versionNegotiation: { mode: { pin: '2026-07-28' } } } : {};
  const client = new Client({ name: 'fleet-ts-client', version }, options);
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${key}` } },
  });
  await client.connect(transport);
  return client;
}

const out = { client: `ts-sdk-v2 ${version} ${era}`, calls: 0, ok: 0, failures: [] };
// A caller that is still waiting 30 s after its time is up says what for, and ends.
const inflight = new Set();
const started = Date.now();
setTimeout(() => {
  out.stuck = { phase, calls: [...inflight], seconds: (Date.now() - started) / 1000 };
  console.log(JSON.stringify(out));
  process.exit(3);
}, Number(seconds) * 1000 + 30000).unref();
let phase = 'connect';
let client = await connect();
phase = 'calls';
const until = Date.now() + Number(seconds) * 1000;
let next = 0;

async function worker() {
  while (Date.now() < until) {
    const id = `${prefix}-${next++}`;
    out.calls += 1;
    inflight.add(id);
    try {
      const result = await client.callTool(
        { name: 'echo', arguments: { id, ms: Number(ms ?? 0) } },
        { timeout: 15000 },
      );
      if (result.isError) {
        out.failures.push({ id, kind: result._meta?.['brain.dev/error']?.kind ?? 'tool_error', text: result.content?.[0]?.text });
      } else if (result.content?.[0]?.text === 'ok') {
        out.ok += 1;
      } else {
        out.failures.push({ id, error: `unexpected result ${JSON.stringify(result)}` });
      }
    } catch (error) {
      const message = String(error?.message ?? error);
      out.failures.push({ id, error: message });
      if (/404|session/i.test(message)) {
        try {
          client = await connect();
        } catch {}
      }
    }
    inflight.delete(id);
  }
}

await Promise.all(Array.from({ length: Number(concurrency) }, worker));
phase = 'close';
try {
  await client.close();
} catch {}
console.log(JSON.stringify(out));
