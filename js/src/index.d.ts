// Types of the libgguf package: gguf() and ggufAllShards() as @huggingface/gguf 0.4.6 declares
// them (its result types are repeated here, so the package needs nothing at run time), and
// open().

export type Version = 1 | 2 | 3;

export type MetadataBaseValue = string | number | bigint | boolean;
export type MetadataValue = MetadataBaseValue | MetadataBaseValue[] | MetadataValue[];

export interface GGUFMetadata {
  version: Version;
  tensor_count: bigint;
  kv_count: bigint;
  [key: string]: MetadataValue;
}

/** A GGUF value type: 0 UINT8, 1 INT8, 2 UINT16, 3 INT16, 4 UINT32, 5 INT32, 6 FLOAT32, 7 BOOL,
 * 8 STRING, 9 ARRAY, 10 UINT64, 11 INT64, 12 FLOAT64. */
export type GGUFValueType = 0 | 1 | 2 | 3 | 4 | 5 | 6 | 7 | 8 | 9 | 10 | 11 | 12;

/** A metadata value with its type, and an array's element type (options.typedMetadata). */
export interface GGUFTypedValue {
  value: MetadataValue;
  type: GGUFValueType;
  subType?: GGUFValueType;
}

export type GGUFTypedMetadata = Record<string, GGUFTypedValue>;

export interface GGUFTensorInfo {
  name: string;
  n_dims: number;
  shape: bigint[];
  /** The tensor's data type (ggml's `ggml_type`, `GGUF_TYPE_*` in gguf.h). */
  dtype: number;
  /** Its data's offset from tensorDataOffset. */
  offset: bigint;
}

export interface GGUFParseOutput {
  metadata: GGUFMetadata;
  tensorInfos: GGUFTensorInfo[];
  tensorDataOffset: bigint;
  littleEndian: boolean;
  /** The tensor infos' byte range in the file: [start, end). */
  tensorInfoByteRange: [number, number];
  /** With options.typedMetadata. */
  typedMetadata?: GGUFTypedMetadata;
}

export interface GGUFOptions {
  /** Replaces `fetch` for an http(s) source. */
  fetch?: typeof fetch;
  /** Headers added to each range request. */
  additionalFetchHeaders?: Record<string, string>;
  /** Reads a local path (Node only). */
  allowLocalFile?: boolean;
  /** Adds `parameterCount`, as @huggingface/gguf computes it. */
  computeParametersCount?: boolean;
  /**
   * Decodes a metadata array of strings or numbers only when it is first read (a getter that
   * then keeps the value): `true` for arrays of at least 1024 elements, a number for arrays of
   * at least that many. The result is deep-equal to the eager one.
   */
  lazyArrays?: boolean | number;
  /** Adds `typedMetadata`: every value with its GGUF type, as @huggingface/gguf gives it. */
  typedMetadata?: boolean;
}

/** What a file is read from: an http(s) URL, a local path (Node, with allowLocalFile), bytes or a Blob. */
export type GGUFSource = string | ArrayBuffer | ArrayBufferView | Blob;

/** A failure: libgguf's message, and its error code (the C API's `GGUF_ERROR_CODE_*`). */
export class GGUFError extends Error {
  constructor(message: string, code: number);
  readonly name: "GGUFError";
  code: number;
}

export function gguf(source: GGUFSource, options: GGUFOptions & { computeParametersCount: true }): Promise<GGUFParseOutput & { parameterCount: number }>;
export function gguf(source: GGUFSource, options?: GGUFOptions): Promise<GGUFParseOutput>;

export const RE_GGUF_FILE: RegExp;
export const RE_GGUF_SHARD_FILE: RegExp;

export interface GgufShardFileInfo {
  prefix: string;
  shard: string;
  total: string;
}

export function parseGgufShardFilename(filename: string): GgufShardFileInfo | null;

/** Every shard of a split model (`NAME-00001-of-00003.gguf`), at most `parallelDownloads` (20) at once. */
export function ggufAllShards(url: string, params?: GGUFOptions & { parallelDownloads?: number }): Promise<{
  shards: GGUFParseOutput[];
  parameterCount: number;
  urls: string[];
}>;

export interface EncodeOptions {
  /** Adds the model's BOS/EOS as its vocabulary says (default true). */
  addSpecial?: boolean;
  /** Reads special tokens' text (`<|im_start|>`) as those tokens (default false). */
  parseSpecial?: boolean;
}

export interface DecodeOptions {
  /** Drops the BOS/EOS the model adds (default false). */
  removeSpecial?: boolean;
  /** Writes control tokens' text (default false). */
  unparseSpecial?: boolean;
}

export interface ChatMessage {
  role: string;
  content?: string | null | unknown[];
  [key: string]: unknown;
}

/** A request as gguf_chat_render takes it: every other key is a template variable. */
export interface ChatRequest {
  messages: ChatMessage[];
  tools?: unknown[];
  documents?: unknown[];
  add_generation_prompt?: boolean;
  continue_final_message?: boolean | string;
  [key: string]: unknown;
}

export interface RenderChatOptions {
  /** `tokenizer.chat_template.<template>`; the default `tokenizer.chat_template` when absent. */
  template?: string;
  /** Renders as llama-server does (`GGUF_CHAT_LLAMA_CPP`), not as transformers. */
  llamaCpp?: boolean;
}

/** A file opened by open(): its header, as gguf() returns it, and what reads its contents. */
export class GGUFModel implements GGUFParseOutput {
  private constructor();
  metadata: GGUFMetadata;
  tensorInfos: GGUFTensorInfo[];
  tensorDataOffset: bigint;
  littleEndian: boolean;
  tensorInfoByteRange: [number, number];
  /** With options.computeParametersCount. */
  parameterCount?: number;
  /** With options.typedMetadata. */
  typedMetadata?: GGUFTypedMetadata;
  /** Text (a string, or UTF-8 bytes) to token ids, exactly as the C library's gguf_tokenize. */
  encode(text: string | Uint8Array, options?: EncodeOptions): number[];
  /** Token ids to text, as gguf_detokenize (invalid UTF-8 replaced). */
  decode(ids: Iterable<number> | ArrayLike<number>, options?: DecodeOptions): string;
  /** Token ids to text as UTF-8 bytes (a token may end inside a character). */
  decodeBytes(ids: Iterable<number> | ArrayLike<number>, options?: DecodeOptions): Uint8Array;
  /** Tensor `name`'s values, converted from any type as ggml converts it (one range read for a URL). */
  tensor(name: string): Promise<Float32Array>;
  /** A conversation rendered with the file's chat template, as gguf_chat_render. */
  renderChat(request: ChatRequest | string | Uint8Array, options?: RenderChatOptions): string;
  /** Frees the file's memory now and closes its source; a second close() throws a GGUFError. */
  close(): Promise<void>;
  /** Whether close() was called. */
  readonly closed: boolean;
}

/** Opens a file for its tensor values, tokenizer and chat templates (loads dist/libgguf-open.wasm). */
export function open(source: GGUFSource, options?: GGUFOptions): Promise<GGUFModel>;
