// conformance-auth.mjs: give the official conformance suite's server scenarios our
// gateway's credentials. The suite has no option for request headers, and the gateway
// (rightly) answers 401 to a request without a bearer, so this preload adds an
// `Authorization` header to every request the suite sends to the gateway's origin, and
// to no other.
//
// Usage (what `cargo xtask conformance` runs, inside a loopback-only network namespace):
//   BRAIN_CONFORMANCE_AUTHORIZATION="Bearer <api key>" \
//   BRAIN_CONFORMANCE_AUTH_ORIGIN="http://127.0.0.1:<port>" \
//   node --import tests/peers/conformance-auth.mjs .../conformance/dist/index.js server --url ...
//
// The suite sends requests three ways, and each is covered:
//   * the global `fetch` (the SDK's Streamable HTTP transport, the 2026-07-28 stateless
//     requests, raw probes): wrapped;
//   * `undici.request` (dns-rebinding-protection): the global dispatcher, which undici
//     shares with Node's own `fetch`, gets an interceptor;
//   * `node:http` `request` (the header scenarios, which need exact header casing):
//     wrapped.
// A header the scenario set itself is never replaced. Nothing is logged: the value is a
// secret.

import http from 'node:http';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';

const authorization = process.env.BRAIN_CONFORMANCE_AUTHORIZATION;
const origin = process.env.BRAIN_CONFORMANCE_AUTH_ORIGIN;

if (authorization && origin) {
  const target = new URL(origin).origin;
  const ours = (url) => {
    try {
      return new URL(String(url)).origin === target;
    } catch {
      return false;
    }
  };

  // 1. fetch
  const fetch = globalThis.fetch;
  globalThis.fetch = (input, init) => {
    const url = input instanceof Request ? input.url : input;
    if (!ours(url)) return fetch(input, init);
    const request = new Request(input, init);
    if (!request.headers.has('authorization')) {
      request.headers.set('authorization', authorization);
    }
    return fetch(request);
  };

  // 2. undici (resolved from the suite's own folder: the version it imports)
  const suite = process.argv[1] ? pathToFileURL(process.argv[1]) : import.meta.url;
  const undici = createRequire(suite)('undici');
  const hasAuthorization = (headers) =>
    Array.isArray(headers)
      ? headers.some((name, i) => i % 2 === 0 && String(name).toLowerCase() === 'authorization')
      : Object.keys(headers ?? {}).some((name) => name.toLowerCase() === 'authorization');
  undici.setGlobalDispatcher(
    undici.getGlobalDispatcher().compose((dispatch) => (options, handler) => {
      if (ours(options.origin) && !hasAuthorization(options.headers)) {
        options.headers = Array.isArray(options.headers)
          ? [...options.headers, 'authorization', authorization]
          : { ...(options.headers ?? {}), authorization };
      }
      return dispatch(options, handler);
    })
  );

  // 3. node:http, as `request(options[, callback])` or `request(url[, options][, callback])`
  const request = http.request;
  const port = (url) => url.port || (url.protocol === 'https:' ? '443' : '80');
  const aimed = (options) => {
    const url = new URL(target);
    const host = options.hostname ?? options.host ?? 'localhost';
    return host === url.hostname && String(options.port ?? '80') === port(url);
  };
  http.request = function (...args) {
    let options;
    if (typeof args[0] === 'string' || args[0] instanceof URL) {
      if (!ours(args[0])) return request.apply(this, args);
      options = typeof args[1] === 'object' && args[1] !== null ? args[1] : {};
      if (options !== args[1]) args.splice(1, 0, options);
    } else if (typeof args[0] === 'object' && args[0] !== null) {
      options = args[0];
      if (!aimed(options)) return request.apply(this, args);
    } else {
      return request.apply(this, args);
    }
    if (!hasAuthorization(options.headers)) {
      options.headers = { ...(options.headers ?? {}), authorization };
    }
    return request.apply(this, args);
  };
}
