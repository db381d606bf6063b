// open(): a file kept open for its tensor values, its tokenizer and its chat templates, over
// libgguf's own code in dist/libgguf-open.wasm (loaded only here). Each opened file has its own
// instance of the module; close() frees the handle inside it and drops the instance and the
// source, and a FinalizationRegistry does the same for a file never closed.
import { GGUFError } from "./errors.js";
import { header } from "./header.js";
import { sourceOf } from "./sources.js";
import { instantiate, lastError, openHeader, put, take } from "./wasm.js";

const INVALID_ARGUMENT = 3, NOT_FOUND = 4;

function release(state) {
  state.ex.lg_close(state.h);
  state.ex = null;
  return state.src.close();
}

const registry = typeof FinalizationRegistry === "undefined" ? null
  : new FinalizationRegistry((state) => {
    if (state.ex) Promise.resolve(release(state)).catch(() => {});
  });

const utf8 = new TextEncoder();

function textBytes(text, what) {
  if (typeof text === "string") return utf8.encode(text);
  if (text instanceof Uint8Array) return text;
  throw new TypeError(`gguf: ${what} must be a string or a Uint8Array`);
}

/** A file opened by open(): its header (as gguf() returns it) and what reads its contents. */
export class GGUFModel {
  #state;
  #tensors;

  constructor(ex, h, src, options) {
    Object.assign(this, header(ex, h, options));
    this.#state = { ex, h, src, name: src.name };
    this.#tensors = new Map(this.tensorInfos.map((t, i) => [t.name, i]));
    registry?.register(this, this.#state, this);
  }

  #live() {
    const ex = this.#state.ex;
    if (!ex) throw new GGUFError(`gguf: ${this.#state.name}: the file is closed`, INVALID_ARGUMENT);
    return ex;
  }

  /** Text (a string, or UTF-8 bytes) to token ids, as the C library's gguf_tokenize. */
  encode(text, { addSpecial = true, parseSpecial = false } = {}) {
    const ex = this.#live();
    const bytes = textBytes(text, "the text to tokenize");
    const ptr = put(ex, bytes);
    let out;
    try {
      out = take(ex, ex.lg_tokenize(this.#state.h, ptr, bytes.length, addSpecial ? 1 : 0, parseSpecial ? 1 : 0));
    } finally {
      ex.lg_free(ptr, bytes.length);
    }
    return Array.from(new Int32Array(out.buffer, 0, out.length >> 2));
  }

  /** Token ids to text as UTF-8 bytes, as the C library's gguf_detokenize. */
  decodeBytes(ids, { removeSpecial = false, unparseSpecial = false } = {}) {
    const ex = this.#live();
    const tokens = Int32Array.from(ids, (id) => {
      if (!Number.isInteger(id)) throw new TypeError(`gguf: a token id must be an integer, not ${id}`);
      if (id < -2147483648 || id > 2147483647) throw new RangeError(`gguf: token id ${id} is outside int32`);
      return id;
    });
    const bytes = new Uint8Array(tokens.buffer);
    const ptr = put(ex, bytes);
    try {
      return take(ex, ex.lg_detokenize(this.#state.h, ptr, tokens.length, removeSpecial ? 1 : 0, unparseSpecial ? 1 : 0));
    } finally {
      ex.lg_free(ptr, bytes.length);
    }
  }

  /** Token ids to text, as the C library's gguf_detokenize (invalid UTF-8 replaced). */
  decode(ids, options) {
    return new TextDecoder().decode(this.decodeBytes(ids, options));
  }

  /** Tensor `name`'s values as floats, converted from its type as ggml converts it. */
  async tensor(name) {
    let ex = this.#live();
    const index = this.#tensors.get(name);
    if (index === undefined) throw new GGUFError(`gguf: ${this.#state.name}: no tensor named ${JSON.stringify(name)}`, NOT_FOUND);
    const h = this.#state.h;
    const start = ex.lg_tensor_span(h, index, 0), size = ex.lg_tensor_span(h, index, 1);
    const data = size === 0 ? new Uint8Array(0) : await this.#state.src.read(start, size);
    ex = this.#live();
    if (data.length !== size) {
      throw new GGUFError(`gguf: ${this.#state.name}: tensor ${JSON.stringify(name)}: ${data.length} bytes read of its ${size}`, 10);
    }
    const ptr = put(ex, data);
    let f;
    try {
      f = ex.lg_tensor_values(h, index, ptr, data.length);
    } finally {
      ex.lg_free(ptr, data.length);
    }
    if (f === 0) throw lastError(ex);
    try {
      return new Float32Array(ex.memory.buffer, ex.lg_floats_ptr(f), ex.lg_floats_len(f)).slice();
    } finally {
      ex.lg_floats_free(f);
    }
  }

  /**
   * A conversation rendered with the file's chat template, as the C library's gguf_chat_render:
   * `request` is `{ messages, tools?, documents?, add_generation_prompt?, ... }` (or its JSON).
   */
  renderChat(request, { template, llamaCpp = false } = {}) {
    const ex = this.#live();
    const json = textBytes(typeof request === "string" || request instanceof Uint8Array ? request : JSON.stringify(request), "the request");
    const name = template === undefined || template === null ? null : utf8.encode(String(template));
    const ptr = put(ex, json);
    const namePtr = name ? put(ex, name) : 0;
    try {
      const b = ex.lg_render_chat(this.#state.h, ptr, json.length, namePtr, name ? name.length : 0, llamaCpp ? 1 : 0);
      return new TextDecoder().decode(take(ex, b));
    } finally {
      ex.lg_free(ptr, json.length);
      if (name) ex.lg_free(namePtr, name.length);
    }
  }

  /**
   * Frees the file's memory inside the module now and closes its source (the promise settles
   * when a local file is closed). A second close(), or any use after it, throws a GGUFError.
   */
  close() {
    this.#live();
    registry?.unregister(this);
    return Promise.resolve(release(this.#state));
  }

  get closed() {
    return !this.#state.ex;
  }
}

if (typeof Symbol.asyncDispose === "symbol") {
  GGUFModel.prototype[Symbol.asyncDispose] = function () {
    return this.closed ? Promise.resolve() : this.close();
  };
}

/** Opens a file (the sources gguf() reads) for its tensor values, tokenizer and chat templates. */
export async function open(source, options = {}) {
  const src = await sourceOf(source, options);
  let ex, h;
  try {
    ex = await instantiate("libgguf-open.wasm");
    h = await openHeader(ex, src);
    return new GGUFModel(ex, h, src, options);
  } catch (e) {
    if (ex && h) ex.lg_close(h);
    await src.close();
    throw e;
  }
}
