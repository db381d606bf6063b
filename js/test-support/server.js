// The tests' loopback HTTP server: files answered by Range requests, as a model host answers
// them. Outside test/ because `node --test test/` runs every script under test/ as a test file.
//
// serve(files, options) listens on 127.0.0.1 (a free port) and resolves to { server, base }
// (base: "http://127.0.0.1:PORT"). files maps a name to a path or to bytes; each is served at
//   PREFIX + NAME   with Range support: `bytes=START-END` or `bytes=START-` gets 206 and that
//                   range (END clamped to the last byte), a START past the end 416; a request
//                   without such a Range 200 and the whole file (400 with rangeRequired);
//   /whole/NAME     ignoring Range: 200 and the whole file, as a server without range support.
// Any other path is 404. HEAD gets the headers alone. Every response says cache-control
// no-store and a content-type by the file's extension.
//
// Options:
//   prefix            where the files answer Range requests ("/" by default; "/ranges/", ...)
//   paths             more paths, served whole: { "/": a file, "/package/": a directory (every
//                     file under it, nothing outside it) }
//   rangeRequired     a request for a file without a Range is answered 400
//   closeConnections  each response closes its connection (connection: close), so that a
//                     client parsing for long between requests finds no kept-alive socket
//                     closed under it; otherwise idle connections are kept for 10 minutes, not
//                     closed between a test's requests on a loaded machine (server.close()
//                     still closes idle ones)
//   onRequest         called with each request's { method, path, range } (path decoded), for
//                     the tests that count or check the requests made
import { createServer } from "node:http";
import { existsSync, readFileSync, statSync } from "node:fs";
import { extname, join, normalize } from "node:path";

const TYPES = { ".html": "text/html", ".js": "text/javascript", ".wasm": "application/wasm", ".json": "application/json" };
const WHOLE = "/whole/";

export async function serve(files, { prefix = "/", paths = {}, rangeRequired = false, closeConnections = false, onRequest } = {}) {
  const dirs = Object.entries(paths).filter(([, p]) => statSync(p).isDirectory());
  // The bytes of the file at `path`, and whether it answers Range requests; undefined for none.
  function find(path) {
    if (Object.hasOwn(paths, path) && statSync(paths[path]).isFile()) return { file: paths[path], ranges: false };
    for (const [at, dir] of dirs) {
      if (!path.startsWith(at)) continue;
      const file = normalize(join(dir, path.slice(at.length)));
      return file.startsWith(join(dir, "/")) && existsSync(file) && statSync(file).isFile() ? { file, ranges: false } : undefined;
    }
    for (const [at, ranges] of [[WHOLE, false], [prefix, true]]) {
      const name = path.startsWith(at) ? path.slice(at.length) : undefined;
      if (name !== undefined && Object.hasOwn(files, name)) return { file: files[name], ranges };
    }
    return undefined;
  }

  const server = createServer((req, res) => {
    const path = decodeURIComponent(new URL(req.url, "http://localhost").pathname);
    const range = req.headers.range;
    onRequest?.({ method: req.method, path, range });
    const send = (status, headers, body) => {
      res.writeHead(status, { "cache-control": "no-store", ...(closeConnections ? { connection: "close" } : {}), ...headers });
      res.end(req.method === "HEAD" ? undefined : body);
    };
    const found = find(path);
    if (!found) return send(404, { "content-type": "text/plain" }, "not found");
    const body = typeof found.file === "string" ? readFileSync(found.file) : found.file;
    const type = {
      "content-type": (typeof found.file === "string" && TYPES[extname(found.file)]) || "application/octet-stream",
    };
    const m = /^bytes=(\d+)-(\d*)$/.exec(range ?? "");
    if (!found.ranges || (!m && !rangeRequired)) return send(200, { ...type, "content-length": body.length }, body);
    if (!m) return send(400, {});
    const start = Number(m[1]), end = Math.min(m[2] === "" ? Infinity : Number(m[2]), body.length - 1);
    if (start >= body.length) return send(416, { "content-range": `bytes */${body.length}` });
    send(206, { ...type, "content-range": `bytes ${start}-${end}/${body.length}`, "content-length": end - start + 1 },
      body.subarray(start, end + 1));
  });
  if (!closeConnections) server.keepAliveTimeout = 600_000;
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  return { server, base: `http://127.0.0.1:${server.address().port}` };
}
