#!/usr/bin/env node
// A real MCP client no one here wrote, the TypeScript SDK's v2 client
// (`@modelcontextprotocol/client`), calling the gateway (`mcp-tools serve`) the normal way.
//
// usage: node gateway_ts_client.mjs URL KEY legacy|modern
//   legacy: the SDK's default (initialize, a session); modern: versionNegotiation pinned to
//   2026-07-28 (server/discover, stateless).
//
// One client; in order: tools/list; `progress {steps: 3}` with an onprogress callback;
// `error` (the tool's own isError); `nothing` (an unknown tool); `progress {steps: 1000,
// delay_ms: 60000}` aborted at its first progress notification. Prints one JSON line:
//   {"tools": [...], "progress": [1,2,3], "result": "done", "error_result": {...},
//    "unknown": {"code": -32602, ...}, "cancelled": true, "protocol": "..."}
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

const [url, key, era] = process.argv.slice(2);
if (!url || !key || !['legacy', 'modern'].includes(era)) {
  console.error('usage: gateway_ts_client.mjs URL KEY legacy|modern');
  process.exit(2);
}
const options = era === 'modern' ? { versionNegotiation: { mode: { pin: '2026-07-28' } } } : {};
const client = new Client({ name: 'gateway-ts-client', version }, options);
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${key}` } },
});
const out = { client: `ts-sdk-v2 ${version}` };
await client.connect(transport);
out.protocol = transport.protocolVersion ?? client.getNegotiatedProtocolVersion?.() ?? null;

const listed = await client.listTools();
out.tools = listed.tools.map((tool) => tool.name);

const progress = [];
const done = await client.callTool(
  { name: 'progress', arguments: { steps: 3, delay_ms: 5 } },
  { onprogress: (p) => progress.push(p.progress) },
);
out.progress = progress;
out.result = done.content?.[0]?.text ?? null;

const failed = await client.callTool({ name: 'error', arguments: {} });
out.error_result = { isError: failed.isError ?? false, meta: failed._meta ?? null, text: failed.content?.[0]?.text ?? null };

try {
  await client.callTool({ name: 'nothing', arguments: {} });
  out.unknown = { code: null };
} catch (error) {
  out.unknown = { code: error.code ?? null, message: String(error.message ?? error) };
}

const abort = new AbortController();
try {
  await client.callTool(
    { name: 'progress', arguments: { steps: 1000, delay_ms: 60000 } },
    { signal: abort.signal, onprogress: () => abort.abort(), timeout: 120000 },
  );
  out.cancelled = false;
} catch (error) {
  out.cancelled = abort.signal.aborted;
}

if (era === 'legacy') {
  try {
    await transport.terminateSession();
  } catch {}
}
await client.close();
console.log(JSON.stringify(out));
