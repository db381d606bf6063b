// Where a file's bytes come from: { name, size, read(offset, length) -> Promise<Uint8Array>,
// close() }, over bytes, a Blob, a local file (Node) or HTTP range requests.
import { GGUFError } from "./errors.js";

export const isNode = typeof process !== "undefined" && !!process.versions?.node &&
  typeof window === "undefined";

function bytesSource(bytes, name) {
  return { name, size: bytes.length, read: async (o, n) => bytes.subarray(o, o + n), close() {} };
}

function blobSource(blob) {
  return {
    name: blob.name || "<blob>", size: blob.size,
    read: async (o, n) => new Uint8Array(await blob.slice(o, o + n).arrayBuffer()), close() {},
  };
}

async function fileSource(path) {
  const { open } = await import("node:fs/promises");
  const fh = await open(path, "r");
  const { size } = await fh.stat();
  return {
    name: path, size,
    async read(o, n) {
      const buf = new Uint8Array(Math.max(0, Math.min(n, size - o)));
      let done = 0;
      while (done < buf.length) {
        const { bytesRead } = await fh.read(buf, done, buf.length - done, o + done);
        if (bytesRead === 0) break;
        done += bytesRead;
      }
      return buf.subarray(0, done);
    },
    close: () => fh.close(),
  };
}

function urlSource(url, options) {
  const f = options.fetch ?? fetch;
  const src = {
    name: url, size: undefined,
    async read(o, n) {
      const last = o + n - 1, range = `bytes ${o}-${last}`;
      const fail = (what) => new GGUFError(`gguf: ${url}: ${what}`, 1);
      let r;
      try {
        r = await f(url, { headers: { ...(options.additionalFetchHeaders ?? {}), Range: `bytes=${o}-${last}` } });
      } catch (e) {
        throw fail(`the request for ${range} failed: ${e.cause?.message ?? e.message}`);
      }
      // A refused answer's body is not read: the connection is let go at once.
      const refuse = (what) => { r.body?.cancel().catch(() => {}); return fail(what); };
      if (r.status === 200) {
        throw refuse(`the server ignored the range request for ${range} and answered HTTP 200 with the whole file: models are read by ranges only`);
      }
      if (r.status !== 206) throw refuse(`HTTP ${r.status} for ${range}`);
      const text = r.headers.get("content-range");
      const m = text?.match(/^bytes (\d+)-(\d+)\/(\d+)$/);
      const size = m ? Number(m[3]) : NaN, end = Math.min(last, size - 1);
      if (!m || Number(m[1]) !== o || Number(m[2]) !== end) {
        throw refuse(`HTTP 206 for ${range} with a Content-Range that does not answer it: ${JSON.stringify(text)}`);
      }
      if (src.size !== undefined && size !== src.size) {
        throw refuse(`the file's size changed on the server from ${src.size} to ${size} bytes (reading ${range})`);
      }
      src.size = size;
      let body;
      try {
        body = new Uint8Array(await r.arrayBuffer());
      } catch (e) {
        throw fail(`the connection ended in the body of ${range}: ${e.cause?.message ?? e.message}`);
      }
      if (body.length !== end - o + 1) {
        throw fail(`HTTP 206 for ${range} with ${body.length} bytes, not the ${end - o + 1} its Content-Range says`);
      }
      return body;
    },
    close() {},
  };
  return src;
}

/** The source `gguf()` and `open()` read: a URL, a local path, bytes or a Blob. */
export async function sourceOf(source, options) {
  if (typeof source === "string") {
    if (/^https?:\/\//.test(source)) return urlSource(source, options);
    if (!isNode) {
      if (options.allowLocalFile) throw new Error("allowLocalFile cannot be used on browser");
      return urlSource(source, options);
    }
    if (!options.allowLocalFile) throw new Error("Access to local file is not enabled, please set allowLocalFile to true");
    return fileSource(source);
  }
  if (source instanceof ArrayBuffer) return bytesSource(new Uint8Array(source), "<memory>");
  if (ArrayBuffer.isView(source)) return bytesSource(new Uint8Array(source.buffer, source.byteOffset, source.byteLength), "<memory>");
  if (typeof Blob !== "undefined" && source instanceof Blob) return blobSource(source);
  throw new TypeError("gguf: the source must be a URL, a path, a Blob, an ArrayBuffer or a Uint8Array");
}
