// Failures: libgguf's message and its error code (`code`, the C API's GGUF_ERROR_CODE_*).
export class GGUFError extends Error {
  constructor(message, code) {
    super(message);
    this.name = "GGUFError";
    this.code = code;
  }
}
