'use strict';
// loopback-preload.cjs — force every TCP listen() in this Node process onto
// 127.0.0.1 and announce the port actually bound.
//
// Usage:
//   PORT=0 node --require tests/peers/loopback-preload.cjs \
//     target/peers/npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js streamableHttp
//
// `cargo xtask conformance` starts server-everything this way (inside a loopback-only
// network namespace as well), and reads the LISTENING line to learn the port.
//
// What it does:
//   * Patches net.Server.prototype.listen (http.Server / express app.listen
//     inherit it). A TCP listen with no host, or with a wildcard host
//     ('', '0.0.0.0', '::', '::0'), gets host LOOPBACK_HOST (default
//     127.0.0.1). Unix-socket / handle / fd listens are left alone.
//     An explicit non-wildcard host (e.g. 192.0.2.1) is refused with an
//     exception unless LOOPBACK_ALLOW_OTHER_HOSTS=1, so nothing ever binds
//     off loopback by accident.
//   * On 'listening' prints ONE line to stdout:
//         LISTENING http://127.0.0.1:<port>
//     (prefix configurable with LOOPBACK_READY_PREFIX). Writes the port to
//     the file named by LOOPBACK_PORT_FILE too, when set (written atomically
//     via rename, so a poller never reads a half-written file).
//   * LOOPBACK_QUIET_STDOUT=1 turns console.log/console.info into no-ops
//     (server-everything logs "Received MCP POST request" to stdout for
//     every request; the parent must otherwise keep draining stdout).
//     The LISTENING line is written with process.stdout.write, so it is
//     still printed.
//
// Works for CommonJS and ESM entry points: --require runs before the ESM
// loader, and `import net from "node:net"` returns the same module object.

const net = require('node:net');
const fs = require('node:fs');

const HOST = process.env.LOOPBACK_HOST || '127.0.0.1';
const PREFIX = process.env.LOOPBACK_READY_PREFIX || 'LISTENING';
const PORT_FILE = process.env.LOOPBACK_PORT_FILE || '';
const ALLOW_OTHER = process.env.LOOPBACK_ALLOW_OTHER_HOSTS === '1';
const WILDCARD = new Set(['', '0.0.0.0', '::', '::0', '0:0:0:0:0:0:0:0']);
const LOOPBACK_OK = new Set(['127.0.0.1', 'localhost', '::1']);

if (process.env.LOOPBACK_QUIET_STDOUT === '1') {
  console.log = () => {};
  console.info = () => {};
}

function isPortLike(v) {
  if (typeof v === 'number') return true;
  if (typeof v === 'string' && v.trim() !== '' && !Number.isNaN(Number(v))) return true;
  return false;
}

function checkHost(h) {
  if (h === undefined || h === null || WILDCARD.has(h)) return HOST;
  if (LOOPBACK_OK.has(h) || h.startsWith('127.') || ALLOW_OTHER) return h;
  throw new Error(`loopback-preload: refusing to listen on non-loopback host ${h}`);
}

const origListen = net.Server.prototype.listen;

net.Server.prototype.listen = function patchedListen(...args) {
  let tcp = false;
  if (args.length > 0 && args[0] !== null && typeof args[0] === 'object' && !Array.isArray(args[0])) {
    const o = args[0];
    // Options form: { port, host, path, handle, fd, ... }
    if (o.path === undefined && o.handle === undefined && o._handle === undefined && o.fd === undefined) {
      tcp = true;
      args[0] = Object.assign({}, o, { host: checkHost(o.host), ipv6Only: false });
    }
  } else if (args.length === 0 || typeof args[0] === 'function' || args[0] === undefined || isPortLike(args[0])) {
    // listen(), listen(cb), listen(port[, host][, backlog][, cb])
    tcp = true;
    const port = (args.length === 0 || typeof args[0] === 'function') ? 0 : args[0];
    const rest = (args.length === 0 || typeof args[0] === 'function') ? args : args.slice(1);
    let host;
    if (typeof rest[0] === 'string') {
      host = rest.shift();
    } else if (rest[0] === undefined && rest.length > 1) {
      rest.shift();
    }
    // rest now holds [backlog][, cb]
    args = [Number(port), checkHost(host), ...rest];
  }
  if (tcp) {
    this.once('listening', () => {
      const a = this.address();
      if (!a || typeof a !== 'object') return;
      const h = a.family === 'IPv6' || a.family === 6 ? `[${a.address}]` : a.address;
      // Port file first, so that a parent that saw the stdout line can read it.
      if (PORT_FILE) {
        const tmp = `${PORT_FILE}.tmp${process.pid}`;
        fs.writeFileSync(tmp, `${a.port}\n`);
        fs.renameSync(tmp, PORT_FILE);
      }
      process.stdout.write(`${PREFIX} http://${h}:${a.port}\n`);
    });
  }
  return origListen.apply(this, args);
};
