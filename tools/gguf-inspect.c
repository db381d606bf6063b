/*
 * gguf-inspect: prints a GGUF file's header, metadata and tensor table, like gguf-dump from the
 * Python package, using only the public C API of libgguf.
 *
 *   gguf-inspect [OPTION] [FILE.gguf]
 *
 *   (no option)      header, the model's size (parameters, bytes of tensor data), metadata
 *                    (long arrays summarized: their length and first items; general.file_type
 *                    with its llama.cpp name, as "15 (MOSTLY_Q4_K_M)") and the tensor table;
 *                    sizes of 1 KiB and more also in KiB, MiB, GiB... beside the byte count
 *   --json           all of it as JSON, arrays in full (format below)
 *   --tensors        only the tensor table (with --json: the JSON array of tensors)
 *   --metadata KEY   only the value of KEY, arrays in full (with --json: its JSON entry); exit
 *                    status 1 if the file has no such key
 *   --verify         opens the file (every rule of the format is checked), checks every entry
 *                    and tensor the library hands out, then reads every tensor's data, checks
 *                    its values (gguf_validate_tensor: no NaN or infinity where ggml refuses
 *                    one), and prints
 *                    "DIGEST  NAME" (FNV-1a 64 of the bytes as stored, 16 hex digits; backslashes
 *                    and control bytes of NAME escaped as \\ and \xNN); OK or FAILED per shard
 *                    and overall, exit status 1 if not OK.
 *   --hash, --check MANIFEST
 *                    the digests of gguf_hash.py, and a check against them (see the help).
 *   --tensor NAME --values [N]
 *                    the first N values (default 16; 0 for all) of tensor NAME as floats, one a
 *                    line, converted bit for bit as ggml converts them (shortest exact decimal,
 *                    NaN as nan:0x<bits>); exit status 1 if the file has no such tensor or its
 *                    type cannot be converted.
 *   --memory [--ctx N]
 *                    the memory llama.cpp (v0.5.0) needs to run the model with a context of N
 *                    tokens (default 0: the training context) and its other context defaults,
 *                    from the header alone (gguf_memory_estimate): weights (and as mapped
 *                    with mmap), K, V, recurrent
 *                    state, output, compute (a bound) and total, and the context
 *                    it uses; with --json an object of those byte counts. Exit status 1 for
 *                    an architecture whose rules are not known (named) or a context
 *                    llama.cpp refuses.
 *   -h, --help       the help, on stdout. Bad usage gets one line on stderr naming the problem
 *                    ("unknown option '--x' (see gguf-inspect --help)") and exit status 2.
 *
 * The long modes (--verify, --hash, --check) draw a progress bar on stderr when stderr is a
 * terminal, and only then.
 *
 * With no FILE it inspects the sample model bundled with the library (testdata/sample.gguf).
 * Any shard of a split model (name-00001-of-00003.gguf) opens the whole model.
 *
 * FILE may be an http:// or https:// URL wherever a file is accepted: only the header is
 * downloaded (by range requests, gguf_open_url), and --verify, --hash and --check read tensor
 * data by ranges (--hash in one pass for its five digests). $GGUF_BEARER_TOKEN, if set, is sent
 * as the bearer token (gated models); HTTPS trusts the system's roots (or $SSL_CERT_FILE).
 *
 * JSON: every number is exact. Integers are JSON integers (up to 2^64-1); FLOAT32 and FLOAT64
 * values are the shortest decimal that reads back to the same bits, always with a '.' or an
 * exponent (so -0.0 keeps its sign); non-finite ones are the strings "inf", "-inf" and
 * "nan:0x<bits>" (the value's bit pattern in hex, 8 digits for FLOAT32, 16 for FLOAT64). A string
 * (key, value, tensor name, path) that is valid UTF-8 is a JSON string; one that is not is the
 * object {"hex": "<its bytes in hex>"}, so no byte is lost or guessed. Arrays are
 * {"type": "ARRAY", "array_type": T, "count": N, "value": [...]}; elements of a nested array are
 * such objects themselves. Besides the file's own facts, the document gives "parameter_count"
 * (every tensor's elements) and "tensor_data_size" (bytes), null if a sum exceeds 2^64, and
 * "file_type", general.file_type's name (null if the key is missing or its value has none).
 *
 * Exit status: 0 success, 1 the file cannot be opened, KEY is missing or verification failed,
 * 2 bad usage.
 */
#define _POSIX_C_SOURCE 200809L

#include "gguf.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifndef GGUF_INSPECT_DEFAULT_SAMPLE
#define GGUF_INSPECT_DEFAULT_SAMPLE "testdata/sample.gguf"
#endif

/* How many items of an array to show before eliding the rest. */
enum { ARRAY_PREVIEW = 6 };

/* The length of the UTF-8 sequence starting at s[0] (of n > 0 bytes) if it is valid and not a C1
 * control (U+0080..U+009F, which some terminals obey like ESC sequences); 0 otherwise. */
static uint64_t printable_utf8(const unsigned char *s, uint64_t n) {
  unsigned char c = s[0];
  uint64_t len;
  uint32_t cp;
  if (c >= 0x20 && c < 0x7f) return 1;
  if (c >= 0xc2 && c <= 0xdf) { len = 2; cp = c & 0x1f; }
  else if (c >= 0xe0 && c <= 0xef) { len = 3; cp = c & 0x0f; }
  else if (c >= 0xf0 && c <= 0xf4) { len = 4; cp = c & 0x07; }
  else return 0; /* C0 controls, DEL, stray continuation or invalid lead bytes */
  if (n < len) return 0;
  for (uint64_t k = 1; k < len; k++) {
    if ((s[k] & 0xc0) != 0x80) return 0;
    cp = cp << 6 | (s[k] & 0x3f);
  }
  if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) || (cp >= 0xd800 && cp <= 0xdfff) ||
      cp > 0x10ffff || cp < 0xa0)
    return 0;
  return len;
}

/* Whether every byte of s would print as itself (no escape needed, backslashes aside). */
static int all_printable(const char *str, uint64_t len) {
  const unsigned char *s = (const unsigned char *)str;
  for (uint64_t i = 0; i < len;) {
    uint64_t n = printable_utf8(s + i, len - i);
    if (!n) return 0;
    i += n;
  }
  return 1;
}

/* Prints bytes from a file (or the command line) so that they cannot act on the terminal or
 * forge a line: control bytes (C0, DEL, C1) and bytes that are not valid UTF-8 as \xNN, the
 * backslash as \\ (so the output reads back unambiguously), and `quote` (if not 0) as \'. Every
 * text output of the inspector goes through here; JSON has its own escaping. */
static void put_escaped(FILE *out, const char *str, uint64_t len, char quote) {
  const unsigned char *s = (const unsigned char *)str;
  for (uint64_t i = 0; i < len;) {
    uint64_t n = printable_utf8(s + i, len - i);
    if (!n) {
      fprintf(out, "\\x%02x", s[i]);
      i++;
    } else if (s[i] == '\\' || (quote && s[i] == (unsigned char)quote)) {
      fputc('\\', out);
      fputc(s[i], out);
      i++;
    } else {
      fwrite(s + i, 1, (size_t)n, out);
      i += n;
    }
  }
}

static void put_escaped_c(FILE *out, const char *s) { put_escaped(out, s, strlen(s), 0); }

/* Prints bytes as a quoted string: '...', escaped as put_escaped does, quotes too. */
static void print_quoted(const char *s, uint64_t len) {
  putchar('\'');
  put_escaped(stdout, s, len, '\'');
  putchar('\'');
}

/* ------------------------------------------------------------------------------------------ */
/* Names and readable quantities.                                                             */
/* ------------------------------------------------------------------------------------------ */

/* The name of a general.file_type value: llama.cpp's llama_ftype (llama.h) without its
 * LLAMA_FTYPE_ prefix, as the reference Python package's LlamaFileType has them, plus the values
 * llama.h keeps as comments (types since withdrawn, which older files still carry). NULL for a
 * value with no name. */
static const char *file_type_name(uint64_t v) {
  static const char *const names[] = {
      "ALL_F32", "MOSTLY_F16", "MOSTLY_Q4_0", "MOSTLY_Q4_1", "MOSTLY_Q4_1_SOME_F16",
      "MOSTLY_Q4_2", "MOSTLY_Q4_3", "MOSTLY_Q8_0", "MOSTLY_Q5_0", "MOSTLY_Q5_1",
      "MOSTLY_Q2_K", "MOSTLY_Q3_K_S", "MOSTLY_Q3_K_M", "MOSTLY_Q3_K_L", "MOSTLY_Q4_K_S",
      "MOSTLY_Q4_K_M", "MOSTLY_Q5_K_S", "MOSTLY_Q5_K_M", "MOSTLY_Q6_K", "MOSTLY_IQ2_XXS",
      "MOSTLY_IQ2_XS", "MOSTLY_Q2_K_S", "MOSTLY_IQ3_XS", "MOSTLY_IQ3_XXS", "MOSTLY_IQ1_S",
      "MOSTLY_IQ4_NL", "MOSTLY_IQ3_S", "MOSTLY_IQ3_M", "MOSTLY_IQ2_S", "MOSTLY_IQ2_M",
      "MOSTLY_IQ4_XS", "MOSTLY_IQ1_M", "MOSTLY_BF16", "MOSTLY_Q4_0_4_4", "MOSTLY_Q4_0_4_8",
      "MOSTLY_Q4_0_8_8", "MOSTLY_TQ1_0", "MOSTLY_TQ2_0", "MOSTLY_MXFP4_MOE", "MOSTLY_NVFP4",
      "MOSTLY_Q1_0",
  };
  if (v < sizeof names / sizeof *names) return names[v];
  return v == 1024 ? "GUESSED" : NULL;
}

/* The file type an entry names: general.file_type holding a non-negative integer with a name;
 * NULL otherwise. */
static const char *entry_file_type(const GGUFMetadataKV *kv) {
  static const char key[] = "general.file_type";
  if (kv->key_len != sizeof key - 1 || memcmp(kv->key, key, sizeof key - 1)) return NULL;
  switch (kv->type) {
  case GGUF_VALUE_TYPE_UINT8: case GGUF_VALUE_TYPE_UINT16: case GGUF_VALUE_TYPE_UINT32:
    return file_type_name(kv->value.u32);
  case GGUF_VALUE_TYPE_UINT64: return file_type_name(kv->value.u64);
  case GGUF_VALUE_TYPE_INT8: case GGUF_VALUE_TYPE_INT16: case GGUF_VALUE_TYPE_INT32:
    return kv->value.i32 < 0 ? NULL : file_type_name((uint64_t)kv->value.i32);
  case GGUF_VALUE_TYPE_INT64:
    return kv->value.i64 < 0 ? NULL : file_type_name((uint64_t)kv->value.i64);
  default: return NULL;
  }
}

/* `n` in the largest of `units` (each `base` times the last) it reaches, with two decimals and
 * `before` and `after` around it; empty below `base`, where the number says it all. */
static void readable(char *buf, size_t size, uint64_t n, unsigned base, const char *const *units,
                     unsigned n_units, const char *before, const char *after) {
  if (n < base) {
    buf[0] = 0;
    return;
  }
  double v = (double)n / base;
  unsigned u = 0;
  while (v >= base && u + 1 < n_units) {
    v /= base;
    u++;
  }
  snprintf(buf, size, "%s%.2f %s%s", before, v, units[u], after);
}

/* "1.50 KiB": a byte count in binary units, with `before` and `after` around it. */
static void readable_bytes(char *buf, size_t size, uint64_t n, const char *before,
                           const char *after) {
  static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  readable(buf, size, n, 1024, units, sizeof units / sizeof *units, before, after);
}

/* " (1.18 M)": a count in thousands (K), millions (M), billions (B) or trillions (T), as
 * llama.cpp gives a model's parameters. */
static void readable_count(char *buf, size_t size, uint64_t n) {
  static const char *const units[] = {"K", "M", "B", "T"};
  readable(buf, size, n, 1000, units, sizeof units / sizeof *units, " (", ")");
}

/* a + b, or UINT64_MAX (and *overflow set) if that does not fit. */
static uint64_t add_checked(uint64_t a, uint64_t b, int *overflow) {
  if (a > UINT64_MAX - b) {
    *overflow = 1;
    return UINT64_MAX;
  }
  return a + b;
}

/* The model's parameters (every tensor's elements) and tensor data bytes; false if a sum
 * overflows 64 bits (a file can claim that much, not hold it). */
static int model_totals(GGUFFile f, uint64_t *params, uint64_t *bytes) {
  int overflow = 0;
  *params = *bytes = 0;
  uint64_t n = gguf_tensor_count(f);
  for (uint64_t i = 0; i < n; i++) {
    const GGUFTensorInfo *t = gguf_get_tensor_by_index(f, i);
    *params = add_checked(*params, t->n_elements, &overflow);
    *bytes = add_checked(*bytes, t->size_bytes, &overflow);
  }
  return !overflow;
}

/* ------------------------------------------------------------------------------------------ */
/* Values in full: one scalar at a time, from the entry or from an array the library decoded. */
/* ------------------------------------------------------------------------------------------ */

typedef enum { OUT_TEXT, OUT_JSON } OutMode;

/* One scalar value of any type but ARRAY. */
typedef struct {
  uint32_t type;
  uint64_t u;       /* unsigned integers */
  int64_t i;        /* signed integers */
  float f32;
  double f64;
  int b;
  const char *s;    /* STRING: bytes, not NUL-terminated */
  uint64_t len;
} Scalar;

/* Arrays nest at most this deep (the format allows 8). */
enum { MAX_NESTING = 64 };

/* The array at `path` (`depth` indexes) inside entry `kv`'s value, decoded by the library
 * (gguf_get_nested_array: by the entry's index, so a key holding NUL bytes is reached too).
 * False if the library cannot give it. */
static int array_at(GGUFFile f, const GGUFMetadataKV *kv, const uint64_t *path, unsigned depth,
                    GGUFArray *a) {
  return gguf_get_nested_array(f, kv->index, depth ? path : NULL, depth, a);
}

/* Element `k` of a decoded array whose elements are not arrays. */
static void array_scalar(const GGUFArray *a, uint64_t k, Scalar *s) {
  memset(s, 0, sizeof *s);
  s->type = a->elem_type;
  switch (a->elem_type) {
  case GGUF_VALUE_TYPE_UINT8: s->u = ((const uint8_t *)a->data)[k]; break;
  case GGUF_VALUE_TYPE_UINT16: s->u = ((const uint16_t *)a->data)[k]; break;
  case GGUF_VALUE_TYPE_UINT32: s->u = ((const uint32_t *)a->data)[k]; break;
  case GGUF_VALUE_TYPE_UINT64: s->u = ((const uint64_t *)a->data)[k]; break;
  case GGUF_VALUE_TYPE_INT8: s->i = ((const int8_t *)a->data)[k]; break;
  case GGUF_VALUE_TYPE_INT16: s->i = ((const int16_t *)a->data)[k]; break;
  case GGUF_VALUE_TYPE_INT32: s->i = ((const int32_t *)a->data)[k]; break;
  case GGUF_VALUE_TYPE_INT64: s->i = ((const int64_t *)a->data)[k]; break;
  case GGUF_VALUE_TYPE_BOOL: s->b = ((const bool *)a->data)[k]; break;
  /* Floats are copied as bytes: a load into x87 registers (i686) would quieten a signalling NaN. */
  case GGUF_VALUE_TYPE_FLOAT32: memcpy(&s->f32, (const float *)a->data + k, sizeof s->f32); break;
  case GGUF_VALUE_TYPE_FLOAT64: memcpy(&s->f64, (const double *)a->data + k, sizeof s->f64); break;
  case GGUF_VALUE_TYPE_STRING: {
    const GGUFString *str = (const GGUFString *)a->data + k;
    s->s = str->data;
    s->len = str->len;
    break;
  }
  default: break;
  }
}

/* The scalar held by a (non-array) entry. */
static void entry_scalar(const GGUFMetadataKV *kv, Scalar *s) {
  memset(s, 0, sizeof *s);
  s->type = kv->type;
  switch (kv->type) {
  case GGUF_VALUE_TYPE_UINT8: case GGUF_VALUE_TYPE_UINT16: case GGUF_VALUE_TYPE_UINT32:
    s->u = kv->value.u32; break;
  case GGUF_VALUE_TYPE_INT8: case GGUF_VALUE_TYPE_INT16: case GGUF_VALUE_TYPE_INT32:
    s->i = kv->value.i32; break;
  case GGUF_VALUE_TYPE_UINT64: s->u = kv->value.u64; break;
  case GGUF_VALUE_TYPE_INT64: s->i = kv->value.i64; break;
  case GGUF_VALUE_TYPE_BOOL: s->b = kv->value.b; break;
  case GGUF_VALUE_TYPE_FLOAT32: s->f32 = kv->value.f32; break;
  case GGUF_VALUE_TYPE_FLOAT64: s->f64 = kv->value.f64; break;
  case GGUF_VALUE_TYPE_STRING: s->s = kv->value.str; s->len = kv->str_len; break;
  default: break;
  }
}

/* The shortest decimal ("%.Ng") that reads back to the same value, or "inf", "-inf", "nan". */
static void format_float(char *buf, size_t size, double v, int is_f32) {
  if (isnan(v)) {
    snprintf(buf, size, "%snan", signbit(v) ? "-" : "");
    return;
  }
  if (isinf(v)) {
    snprintf(buf, size, "%s", v < 0 ? "-inf" : "inf");
    return;
  }
  for (int digits = 1; digits <= 17; digits++) {
    snprintf(buf, size, "%.*g", digits, v);
    if (is_f32 ? strtof(buf, NULL) == (float)v : strtod(buf, NULL) == v) break;
  }
  /* Whole numbers below 10^17 without an exponent: 10000, not 1e+04. */
  const char *e = strchr(buf, 'e');
  if (e && e[1] == '+') {
    int exponent = atoi(e + 2);
    if (exponent < 17) snprintf(buf, size, "%.*g", exponent + 1, v);
  }
}

static int valid_utf8(const unsigned char *s, uint64_t len) {
  uint64_t i = 0;
  while (i < len) {
    unsigned char c = s[i];
    uint64_t n;
    uint32_t cp;
    if (c < 0x80) { i++; continue; }
    if (c >= 0xc2 && c <= 0xdf) { n = 1; cp = c & 0x1f; }
    else if (c >= 0xe0 && c <= 0xef) { n = 2; cp = c & 0x0f; }
    else if (c >= 0xf0 && c <= 0xf4) { n = 3; cp = c & 0x07; }
    else return 0;
    if (len - i <= n) return 0;
    for (uint64_t k = 1; k <= n; k++) {
      if ((s[i + k] & 0xc0) != 0x80) return 0;
      cp = cp << 6 | (s[i + k] & 0x3f);
    }
    /* overlong forms, UTF-16 surrogates, past U+10FFFF */
    if ((n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) || (cp >= 0xd800 && cp <= 0xdfff) ||
        cp > 0x10ffff)
      return 0;
    i += n + 1;
  }
  return 1;
}

/* A JSON string, or {"hex": "..."} for bytes that are not UTF-8. */
static void json_string(const char *str, uint64_t len) {
  const unsigned char *s = (const unsigned char *)str;
  if (!valid_utf8(s, len)) {
    printf("{\"hex\": \"");
    for (uint64_t i = 0; i < len; i++) printf("%02x", s[i]);
    printf("\"}");
    return;
  }
  putchar('"');
  for (uint64_t i = 0; i < len; i++) {
    unsigned char c = s[i];
    switch (c) {
    case '"': fputs("\\\"", stdout); break;
    case '\\': fputs("\\\\", stdout); break;
    case '\n': fputs("\\n", stdout); break;
    case '\r': fputs("\\r", stdout); break;
    case '\t': fputs("\\t", stdout); break;
    default:
      if (c < 0x20 || c == 0x7f) printf("\\u%04x", c);
      else putchar(c);
    }
  }
  putchar('"');
}

static void json_cstring(const char *s) { json_string(s, strlen(s)); }

/* A float exactly: the shortest decimal reading back to the same value; JSON adds ".0" where it
 * would read as an integer, and writes non-finite values as strings, NaNs with their `bits`. */
static void emit_float(double v, int is_f32, uint64_t bits, OutMode mode) {
  char buf[64];
  format_float(buf, sizeof buf, v, is_f32);
  if (mode == OUT_TEXT) {
    fputs(buf, stdout);
  } else if (isnan(v)) {
    printf("\"nan:0x%0*" PRIx64 "\"", is_f32 ? 8 : 16, bits);
  } else if (isinf(v)) {
    printf("\"%s\"", buf);
  } else if (!strpbrk(buf, ".e")) {
    printf("%s.0", buf); /* a JSON float, not an integer: -0.0 keeps its sign */
  } else {
    fputs(buf, stdout);
  }
}

/* `top`: a string that is the whole value (text mode prints it bare). */
static void emit_scalar(const Scalar *s, OutMode mode, int top) {
  switch (s->type) {
  case GGUF_VALUE_TYPE_UINT8: case GGUF_VALUE_TYPE_UINT16: case GGUF_VALUE_TYPE_UINT32:
  case GGUF_VALUE_TYPE_UINT64:
    printf("%" PRIu64, s->u); break;
  case GGUF_VALUE_TYPE_INT8: case GGUF_VALUE_TYPE_INT16: case GGUF_VALUE_TYPE_INT32:
  case GGUF_VALUE_TYPE_INT64:
    printf("%" PRId64, s->i); break;
  case GGUF_VALUE_TYPE_BOOL: fputs(s->b ? "true" : "false", stdout); break;
  case GGUF_VALUE_TYPE_FLOAT32: {
    uint32_t bits; /* taken before any conversion, which may quieten a signalling NaN */
    memcpy(&bits, &s->f32, sizeof bits);
    emit_float((double)s->f32, 1, bits, mode);
    break;
  }
  case GGUF_VALUE_TYPE_FLOAT64: {
    uint64_t bits;
    memcpy(&bits, &s->f64, sizeof bits);
    emit_float(s->f64, 0, bits, mode);
    break;
  }
  case GGUF_VALUE_TYPE_STRING:
    if (mode == OUT_JSON) json_string(s->s, s->len);
    else if (top) put_escaped(stdout, s->s, s->len, 0);
    else print_quoted(s->s, s->len);
    break;
  default: fputs("?", stdout); break;
  }
}

/* Prints the array at `path` (`depth` indexes) inside entry `kv`, in full: "[a, b]" (JSON: a
 * JSON array whose nested arrays are objects with their type and count). False if the library
 * cannot give an array of it. */
static int emit_array(GGUFFile f, const GGUFMetadataKV *kv, uint64_t *path, unsigned depth,
                      OutMode mode) {
  GGUFArray a;
  int ok = array_at(f, kv, path, depth, &a);
  putchar('[');
  for (uint64_t i = 0; ok && i < a.count; i++) {
    if (i) fputs(", ", stdout);
    if (a.elem_type == GGUF_VALUE_TYPE_ARRAY) {
      GGUFArray inner;
      path[depth] = i;
      if (depth + 1 >= MAX_NESTING || !array_at(f, kv, path, depth + 1, &inner)) {
        ok = 0;
        break;
      }
      if (mode == OUT_JSON) {
        printf("{\"type\": \"ARRAY\", \"array_type\": \"%s\", \"count\": %" PRIu64 ", \"value\": ",
               gguf_value_type_name(inner.elem_type), inner.count);
      }
      ok = emit_array(f, kv, path, depth + 1, mode);
      if (mode == OUT_JSON) putchar('}');
    } else {
      Scalar s;
      array_scalar(&a, i, &s);
      emit_scalar(&s, mode, 0);
    }
  }
  putchar(']');
  return ok;
}

/* Whether the library gives every array inside the array at `path` (`depth` indexes) of entry
 * `kv`, with as many elements as it says. */
static int arrays_given(GGUFFile f, const GGUFMetadataKV *kv, uint64_t *path, unsigned depth,
                        uint64_t count) {
  GGUFArray a;
  if (!array_at(f, kv, path, depth, &a) || a.count != count) return 0;
  if (a.elem_type != GGUF_VALUE_TYPE_ARRAY) return a.data != NULL;
  if (depth + 1 >= MAX_NESTING) return 0;
  for (uint64_t i = 0; i < a.count; i++) {
    GGUFArray inner;
    path[depth] = i;
    if (!array_at(f, kv, path, depth + 1, &inner) ||
        !arrays_given(f, kv, path, depth + 1, inner.count))
      return 0;
  }
  return 1;
}

/* An entry's value on one line: strings quoted, arrays summarized by their first items (nested
 * ones as [...]). Arrays are reached by the entry's index, never looked up by key (a key may
 * hold NUL bytes). */
static void print_value(GGUFFile f, const GGUFMetadataKV *kv) {
  Scalar s;
  if (kv->type != GGUF_VALUE_TYPE_ARRAY) {
    entry_scalar(kv, &s);
    emit_scalar(&s, OUT_TEXT, 0);
    return;
  }
  GGUFArray a;
  int ok = array_at(f, kv, NULL, 0, &a);
  uint64_t shown = !ok ? 0 : a.count < ARRAY_PREVIEW ? a.count : ARRAY_PREVIEW;
  putchar('[');
  for (uint64_t i = 0; i < shown; i++) {
    if (i) printf(", ");
    if (a.elem_type == GGUF_VALUE_TYPE_ARRAY) {
      printf("[...]");
    } else {
      array_scalar(&a, i, &s);
      emit_scalar(&s, OUT_TEXT, 0);
    }
  }
  if (!ok) printf("<undecodable>");
  else if (shown < a.count) printf(", ...");
  putchar(']');
}

/* The value of an entry in full. False if the library cannot give an array of it. */
static int emit_value(GGUFFile f, const GGUFMetadataKV *kv, OutMode mode) {
  if (kv->type != GGUF_VALUE_TYPE_ARRAY) {
    Scalar s;
    entry_scalar(kv, &s);
    emit_scalar(&s, mode, 1);
    return 1;
  }
  uint64_t path[MAX_NESTING];
  return emit_array(f, kv, path, 0, mode);
}

static int emit_entry_json(GGUFFile f, const GGUFMetadataKV *kv) {
  printf("{\"key\": ");
  json_string(kv->key, kv->key_len);
  printf(", \"type\": \"%s\"", gguf_value_type_name(kv->type));
  if (kv->type == GGUF_VALUE_TYPE_ARRAY) {
    printf(", \"array_type\": \"%s\", \"count\": %" PRIu64, gguf_value_type_name(kv->array_type),
           kv->array_len);
  }
  printf(", \"value\": ");
  int ok = emit_value(f, kv, OUT_JSON);
  putchar('}');
  return ok;
}

static void emit_tensor_json(const GGUFTensorInfo *t) {
  printf("{\"name\": ");
  json_string(t->name, t->name_len);
  printf(", \"type\": \"%s\", \"type_id\": %" PRIu32 ", \"n_dims\": %" PRIu32 ", \"shape\": [",
         gguf_dtype_name(t->dtype), t->dtype, t->n_dims);
  for (uint32_t d = 0; d < t->n_dims; d++) printf("%s%" PRIu64, d ? ", " : "", t->dims[d]);
  printf("], \"n_elements\": %" PRIu64 ", \"offset\": %" PRIu64 ", \"file_offset\": %" PRIu64
         ", \"size\": %" PRIu64 ", \"shard\": %" PRIu32 "}",
         t->n_elements, t->offset, t->file_offset, t->size_bytes, t->shard);
}

static void emit_tensors_json(GGUFFile f, const char *indent) {
  uint64_t n = gguf_tensor_count(f);
  putchar('[');
  for (uint64_t i = 0; i < n; i++) {
    printf("%s\n%s  ", i ? "," : "", indent);
    emit_tensor_json(gguf_get_tensor_by_index(f, i));
  }
  if (n) printf("\n%s", indent);
  putchar(']');
}

/* ------------------------------------------------------------------------------------------ */
/* The modes.                                                                                 */
/* ------------------------------------------------------------------------------------------ */

static void print_shards(GGUFFile f) {
  uint32_t n = gguf_shard_count(f);
  if (n < 2) return;
  printf("* Split model: %" PRIu32 " shards\n", n);
  for (uint32_t i = 0; i < n; i++) {
    const GGUFShardInfo *s = gguf_get_shard(f, i);
    printf("*   shard %" PRIu32 ": ", i + 1);
    put_escaped_c(stdout, s->path);
    char size[32];
    readable_bytes(size, sizeof size, s->file_size, " (", ")");
    printf(": GGUF version %" PRIu32 ", %" PRIu64 " bytes%s, alignment %" PRIu64
           ", data section at offset %" PRIu64 ", %" PRIu64 " tensor(s) from #%" PRIu64 "\n",
           s->version, s->file_size, size, s->alignment, s->data_offset,
           s->tensor_count, s->first_tensor + 1);
  }
}

/* The tensor table; split models get a shard column (1-based). */
static void print_tensor_table(GGUFFile f) {
  uint64_t n_tensors = gguf_tensor_count(f);
  int split = gguf_shard_count(f) > 1;
  printf("* Dumping %" PRIu64 " tensor(s)\n", n_tensors);
  printf("%7s  %12s | %-30s | %-7s | ", "#", "elements", "shape", "type");
  if (split) printf("%5s | ", "shard");
  printf("%12s | %12s | %s\n", "file offset", "bytes", "name");
  for (uint64_t i = 0; i < n_tensors; i++) {
    const GGUFTensorInfo *t = gguf_get_tensor_by_index(f, i);
    char shape[96] = "scalar";
    int used = 0;
    for (uint32_t d = 0; d < t->n_dims && used < (int)sizeof shape; d++) {
      used += snprintf(shape + used, sizeof shape - (size_t)used, "%s%" PRIu64, d ? ", " : "",
                       t->dims[d]);
    }
    printf("%7" PRIu64 ": %12" PRIu64 " | %-30s | %-7s | ", i + 1, t->n_elements, shape,
           gguf_dtype_name(t->dtype));
    if (split) printf("%5" PRIu32 " | ", t->shard + 1);
    printf("%12" PRIu64 " | %12" PRIu64 " | ", t->file_offset, t->size_bytes);
    put_escaped(stdout, t->name, t->name_len, 0);
    putchar('\n');
  }
}

static void print_header_line(GGUFFile f) {
  char size[32];
  readable_bytes(size, sizeof size, gguf_file_size(f), " (", ")");
  printf("* GGUF version %" PRIu32 ", %s-endian, %" PRIu64 " bytes%s, alignment %" PRIu64
         ", data section at offset %" PRIu64 "\n",
         gguf_version(f), gguf_byte_order(f) == GGUF_BYTE_ORDER_BIG ? "big" : "little",
         gguf_file_size(f), size, gguf_alignment(f), gguf_data_offset(f));
}

/* The model's size: its parameters (every tensor's elements) and bytes of tensor data. */
static void print_totals(GGUFFile f) {
  uint64_t params, bytes;
  if (!model_totals(f, &params, &bytes)) {
    printf("* Parameters: more than 2^64 in total (the tensor records claim more than a file can "
           "hold)\n");
    return;
  }
  char count[32], size[32];
  readable_count(count, sizeof count, params);
  readable_bytes(size, sizeof size, bytes, " (", ")");
  printf("* %" PRIu64 " parameter(s)%s in %" PRIu64 " tensor(s), %" PRIu64
         " bytes of tensor data%s\n",
         params, count, gguf_tensor_count(f), bytes, size);
}

static int dump_default(GGUFFile f, const char *path) {
  uint64_t n_kv = gguf_metadata_count(f);
  printf("* File: ");
  put_escaped_c(stdout, path);
  putchar('\n');
  print_header_line(f);
  print_shards(f);
  print_totals(f);
  printf("* Dumping %" PRIu64 " key/value pair(s)\n", n_kv);
  for (uint64_t i = 0; i < n_kv; i++) {
    const GGUFMetadataKV *kv = gguf_get_metadata_by_index(f, i);
    char type[32];
    if (kv->type == GGUF_VALUE_TYPE_ARRAY) {
      snprintf(type, sizeof type, "[%s]", gguf_value_type_name(kv->array_type));
    } else {
      snprintf(type, sizeof type, "%s", gguf_value_type_name(kv->type));
    }
    printf("%7" PRIu64 ": %-10s | %8" PRIu64 " | ", i + 1, type,
           kv->type == GGUF_VALUE_TYPE_ARRAY ? kv->array_len : 1);
    put_escaped(stdout, kv->key, kv->key_len, 0);
    printf(" = ");
    print_value(f, kv);
    const char *file_type = entry_file_type(kv);
    if (file_type) printf(" (%s)", file_type);
    putchar('\n');
  }
  print_tensor_table(f);
  return 0;
}

static int dump_json(GGUFFile f, const char *path) {
  int ok = 1;
  printf("{\n  \"file\": ");
  json_cstring(path);
  printf(",\n  \"version\": %" PRIu32 ",\n  \"byte_order\": \"%s\",\n  \"alignment\": %" PRIu64
         ",\n  \"data_offset\": %" PRIu64 ",\n  \"file_size\": %" PRIu64 ",\n  \"shards\": [",
         gguf_version(f), gguf_byte_order(f) == GGUF_BYTE_ORDER_BIG ? "big" : "little",
         gguf_alignment(f), gguf_data_offset(f), gguf_file_size(f));
  uint32_t n_shards = gguf_shard_count(f);
  for (uint32_t i = 0; i < n_shards; i++) {
    const GGUFShardInfo *s = gguf_get_shard(f, i);
    printf("%s\n    {\"path\": ", i ? "," : "");
    json_cstring(s->path);
    printf(", \"version\": %" PRIu32 ", \"file_size\": %" PRIu64 ", \"alignment\": %" PRIu64
           ", \"data_offset\": %" PRIu64 ", \"tensor_count\": %" PRIu64
           ", \"first_tensor\": %" PRIu64 "}",
           s->version, s->file_size, s->alignment, s->data_offset, s->tensor_count,
           s->first_tensor);
  }
  uint64_t n_kv = gguf_metadata_count(f), params, bytes;
  printf("\n  ],\n  \"metadata_count\": %" PRIu64 ",\n  \"tensor_count\": %" PRIu64,
         n_kv, gguf_tensor_count(f));
  /* The sums (null if they overflow), and general.file_type's name (null if none). */
  if (model_totals(f, &params, &bytes)) {
    printf(",\n  \"parameter_count\": %" PRIu64 ",\n  \"tensor_data_size\": %" PRIu64, params,
           bytes);
  } else {
    printf(",\n  \"parameter_count\": null,\n  \"tensor_data_size\": null");
  }
  const GGUFMetadataKV *ftype = gguf_get_metadata(f, "general.file_type");
  const char *ftype_name = ftype ? entry_file_type(ftype) : NULL;
  gguf_clear_error();
  printf(",\n  \"file_type\": ");
  if (ftype_name) json_cstring(ftype_name);
  else printf("null");
  printf(",\n  \"metadata\": [");
  for (uint64_t i = 0; i < n_kv; i++) {
    printf("%s\n    ", i ? "," : "");
    ok &= emit_entry_json(f, gguf_get_metadata_by_index(f, i));
  }
  printf("%s],\n  \"tensors\": ", n_kv ? "\n  " : "");
  emit_tensors_json(f, "  ");
  printf("\n}\n");
  return ok ? 0 : 1;
}

/* ------------------------------------------------------------------------------------------ */
/* --verify                                                                                   */
/* ------------------------------------------------------------------------------------------ */

/* A URL (http:// or https://) is opened by range requests (gguf_open_url), with the bearer
 * token in $GGUF_BEARER_TOKEN if set; anything else is a file's path. */
static int is_url(const char *path) {
  return !strncmp(path, "http://", 7) || !strncmp(path, "https://", 8);
}

static GGUFFile open_any(const char *path, uint32_t flags) {
  if (!is_url(path)) return flags ? gguf_open_ex(path, flags) : gguf_open(path);
  const char *token = getenv("GGUF_BEARER_TOKEN");
  return gguf_open_url(path, token && *token ? token : NULL, flags);
}

/* Feeds n bytes of tensor t, from `offset` into it, to `use` in pieces: straight from the mapping
 * when the handle has one, else read by position (a URL, by range requests) into `buf` (CHUNK
 * bytes). False (with the library's error recorded) if a read failed. */
typedef int (*PieceFn)(void *ctx, const unsigned char *p, size_t n);

static int for_each_piece(GGUFFile f, const GGUFTensorInfo *t, unsigned char *buf, PieceFn use,
                          void *ctx);

/* Reading tensor data touches the mapping: if the file shrinks underneath (another process
 * truncating it, an I/O error), the kernel raises SIGBUS, which fails that tensor instead of
 * killing the inspector. */
static sigjmp_buf bus_jump;
static volatile sig_atomic_t bus_armed;

static void on_bus(int sig) {
  if (bus_armed) siglongjmp(bus_jump, 1);
  signal(sig, SIG_DFL);
  raise(sig);
}

/* The progress bar of the long modes (--verify, --hash, --check): drawn on stderr, only when
 * stderr is a terminal, and cleared before each line of the output. `done` and `total` count
 * bytes read over all `passes` (--hash reads the data once per digest); the bar shows the data's
 * MiB, once. */
typedef struct {
  int enabled, visible;
  uint64_t total, done;
  int shown_permille;
  unsigned passes;
} Progress;

static Progress progress_start(uint64_t total, unsigned passes) {
  Progress p = {isatty(STDERR_FILENO), 0, total, 0, -1, passes ? passes : 1};
  return p;
}

static void progress_draw(Progress *p) {
  if (!p->enabled) return;
  int permille = p->total ? (int)((double)p->done / (double)p->total * 1000) : 1000;
  if (permille > 1000) permille = 1000;
  if (p->visible && permille == p->shown_permille) return;
  enum { WIDTH = 40 };
  int filled = permille * WIDTH / 1000;
  fprintf(stderr, "\r[%.*s%*s] %3d.%d%% %" PRIu64 "/%" PRIu64 " MiB", filled,
          "########################################", WIDTH - filled, "", permille / 10,
          permille % 10, p->done / p->passes >> 20, p->total / p->passes >> 20);
  fflush(stderr);
  p->visible = 1;
  p->shown_permille = permille;
}

/* Clears the bar before a line goes to stdout (both may be the same terminal). */
static void progress_clear(Progress *p) {
  if (!p->visible) return;
  fflush(stdout);
  fputs("\r\033[K", stderr);
  fflush(stderr);
  p->visible = 0;
}

static void progress_line_done(Progress *p) {
  if (p->enabled) fflush(stdout);
}

enum { CHUNK = 16 << 20 };

static int for_each_piece(GGUFFile f, const GGUFTensorInfo *t, unsigned char *buf, PieceFn use,
                          void *ctx) {
  const unsigned char *mapped = gguf_is_mapped(f) ? gguf_tensor_data(f, t) : NULL;
  if (!mapped && gguf_is_mapped(f) && t->size_bytes) return 0;
  for (uint64_t done = 0; done < t->size_bytes;) {
    uint64_t left = t->size_bytes - done;
    size_t n = left < CHUNK ? (size_t)left : CHUNK;
    if (mapped) {
      if (!use(ctx, mapped + done, n)) return 0;
    } else {
      if (!gguf_read_tensor(f, t, done, buf, n) || !use(ctx, buf, n)) return 0;
    }
    done += n;
  }
  return 1;
}

/* Reads every page of n bytes at p (one byte per page faults the whole page in), so that a page
 * the file no longer backs, or one the disk cannot return, shows here. */
volatile unsigned char touch_sink; /* what touch read, so that the reads are not optimized out */

static void touch(const unsigned char *p, uint64_t n, Progress *pg) {
  uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
  if (page == 0 || page > CHUNK) page = 4096;
  while (n) {
    uint64_t len = n < CHUNK ? n : CHUNK;
    unsigned char acc = 0;
    for (uint64_t i = 0; i < len; i += page) acc ^= p[i];
    acc ^= p[len - 1];
    touch_sink = acc;
    p += len;
    n -= len;
    pg->done += len;
    progress_draw(pg);
  }
}

/* Reads n bytes at p (see touch); false if that raised SIGBUS. */
static int read_all(const unsigned char *p, uint64_t n, Progress *pg) {
  if (sigsetjmp(bus_jump, 1)) {
    bus_armed = 0;
    return 0;
  }
  bus_armed = 1;
  touch(p, n, pg);
  bus_armed = 0;
  return 1;
}

static void print_name(const char *s, uint64_t len) { put_escaped(stdout, s, len, 0); }

/* Prints "FAILED  WHAT NAME: DETAIL" (NAME of `len` bytes, if any); returns 0. */
static int problem(Progress *pg, const char *what, const char *name, uint64_t len,
                   const char *detail) {
  progress_clear(pg);
  printf("FAILED  %s", what);
  if (name) {
    putchar(' ');
    print_name(name, len);
  }
  printf(": %s\n", detail);
  progress_line_done(pg);
  return 0;
}

/* Every entry the library hands out: found by index and by key, its array decoded by the typed
 * getter (whose count must match) and its raw bytes walked to the end. */
static int verify_metadata(GGUFFile f, Progress *pg) {
  int ok = 1;
  uint64_t n = gguf_metadata_count(f);
  char detail[512];
  for (uint64_t i = 0; i < n; i++) {
    const GGUFMetadataKV *kv = gguf_get_metadata_by_index(f, i);
    if (!kv) {
      snprintf(detail, sizeof detail, "entry %" PRIu64 " cannot be read: %s", i, gguf_last_error());
      ok = problem(pg, "metadata", NULL, 0, detail);
      continue;
    }
    /* The typed array getters take a NUL-terminated key: only keys without NUL go through them
     * (the key lookup itself is length-aware). */
    int plain_key = strlen(kv->key) == kv->key_len;
    if (kv->index != i || !gguf_value_type_name(kv->type) ||
        gguf_get_metadata_n(f, kv->key, (size_t)kv->key_len) != kv) {
      ok = problem(pg, "metadata key", kv->key, kv->key_len,
                   "lookup by key disagrees with the entry");
      continue;
    }
    if (kv->type != GGUF_VALUE_TYPE_ARRAY) continue;
    uint64_t count = kv->array_len;
    const void *arr = (const void *)1;
    if (plain_key) {
      switch (kv->array_type) {
      case GGUF_VALUE_TYPE_UINT8: arr = gguf_get_uint8_array(f, kv->key, &count); break;
      case GGUF_VALUE_TYPE_INT8: arr = gguf_get_int8_array(f, kv->key, &count); break;
      case GGUF_VALUE_TYPE_UINT16: arr = gguf_get_uint16_array(f, kv->key, &count); break;
      case GGUF_VALUE_TYPE_INT16: arr = gguf_get_int16_array(f, kv->key, &count); break;
      case GGUF_VALUE_TYPE_UINT32: arr = gguf_get_uint32_array(f, kv->key, &count); break;
      case GGUF_VALUE_TYPE_INT32: arr = gguf_get_int32_array(f, kv->key, &count); break;
      case GGUF_VALUE_TYPE_UINT64: arr = gguf_get_uint64_array(f, kv->key, &count); break;
      case GGUF_VALUE_TYPE_INT64: arr = gguf_get_int64_array(f, kv->key, &count); break;
      case GGUF_VALUE_TYPE_FLOAT32: arr = gguf_get_float_array(f, kv->key, &count); break;
      case GGUF_VALUE_TYPE_FLOAT64: arr = gguf_get_float64_array(f, kv->key, &count); break;
      case GGUF_VALUE_TYPE_BOOL: arr = gguf_get_bool_array(f, kv->key, &count); break;
      case GGUF_VALUE_TYPE_STRING: arr = gguf_get_string_array(f, kv->key, &count); break;
      default: break; /* nested: walked below */
      }
    }
    if (!arr || count != kv->array_len) {
      snprintf(detail, sizeof detail, "array cannot be decoded: %s", gguf_last_error());
      ok = problem(pg, "metadata key", kv->key, kv->key_len, detail);
      continue;
    }
    /* Every array inside it (nested ones too, and under keys holding NUL) is given whole. */
    uint64_t path[MAX_NESTING];
    if (!arrays_given(f, kv, path, 0, kv->array_len)) {
      ok = problem(pg, "metadata key", kv->key, kv->key_len,
                   "the array's bytes do not hold its elements");
    }
  }
  return ok;
}

/* A piece read by position (verify): counts it in the progress bar. */
static int count_piece(void *ctx, const unsigned char *p, size_t n) {
  Progress *pg = ctx;
  (void)p;
  pg->done += n;
  progress_draw(pg);
  return 1;
}

/* One tensor: its description is consistent with its shard, the library's pointer is where the
 * shard's mapping says, and its bytes can be read. Prints nothing unless it fails. */
static int verify_tensor(GGUFFile f, const GGUFTensorInfo *t, uint32_t shard_index,
                         const GGUFShardInfo *s, Progress *pg) {
  char detail[512];
  uint64_t block = gguf_dtype_block_size(t->dtype), block_bytes = gguf_dtype_block_bytes(t->dtype);
  uint64_t elements = 1;
  for (uint32_t d = 0; d < t->n_dims && d < 4; d++) elements *= t->dims[d];
  const char *why = NULL;
  if (t->shard != shard_index) why = "listed in another shard";
  else if (!gguf_dtype_name(t->dtype) || !block) why = "unknown data type";
  else if (t->n_dims > 4 || elements != t->n_elements)
    why = "element count disagrees with the shape";
  else if (t->n_elements / block * block_bytes != t->size_bytes)
    why = "size disagrees with the type and shape";
  else if (t->file_offset != s->data_offset + t->offset)
    why = "file offset disagrees with the data section";
  else if (s->alignment && t->offset % s->alignment) why = "data not aligned";
  else if (t->file_offset > s->file_size || s->file_size - t->file_offset < t->size_bytes)
    why = "data runs past the end of the file";
  if (why) return problem(pg, "tensor", t->name, t->name_len, why);

  if (!gguf_is_mapped(f)) { /* a URL: every byte read by position */
    unsigned char *buf = malloc(CHUNK);
    if (!buf) return problem(pg, "tensor", t->name, t->name_len, "out of memory");
    int ok = for_each_piece(f, t, buf, count_piece, pg);
    free(buf);
    if (!ok) {
      snprintf(detail, sizeof detail, "reading its data failed: %s", gguf_last_error());
      return problem(pg, "tensor", t->name, t->name_len, detail);
    }
    if (!gguf_validate_tensor(f, t)) { /* reads the data again, by position */
      snprintf(detail, sizeof detail, "bad values: %s", gguf_last_error());
      return problem(pg, "tensor", t->name, t->name_len, detail);
    }
    return 1;
  }
  const unsigned char *data = gguf_tensor_data(f, t);
  if (!data) {
    snprintf(detail, sizeof detail, "no data pointer: %s", gguf_last_error());
    return problem(pg, "tensor", t->name, t->name_len, detail);
  }
  if (data != s->base + t->file_offset || (t->size_bytes && !gguf_contains(f, data, t->size_bytes)))
    return problem(pg, "tensor", t->name, t->name_len,
                   "data pointer lies outside the shard's mapping");
  if (!read_all(data, t->size_bytes, pg))
    return problem(pg, "tensor", t->name, t->name_len,
                   "reading its data failed (SIGBUS: file truncated or I/O error)");
  /* Its values, as ggml checks them before running a model (after the read above, so the bytes
   * are known to be there). */
  if (!gguf_validate_tensor(f, t)) {
    snprintf(detail, sizeof detail, "bad values: %s", gguf_last_error());
    return problem(pg, "tensor", t->name, t->name_len, detail);
  }
  return 1;
}

static int verify(const char *path) {
  GGUFFile f = open_any(path, 0);
  if (!f) {
    fprintf(stderr, "%s\n", gguf_last_error());
    printf("* ");
    put_escaped_c(stdout, path);
    printf(": FAILED\n");
    return 1;
  }
  uint32_t n_shards = gguf_shard_count(f);
  uint64_t n_tensors = gguf_tensor_count(f), params, total;
  model_totals(f, &params, &total); /* a total past 2^64 fails below: the bytes are not there */
  char size[32];
  readable_bytes(size, sizeof size, total, " (", ")");
  printf("* Verifying ");
  put_escaped_c(stdout, path);
  printf(": %" PRIu32 " shard(s), %" PRIu64 " tensor(s), %" PRIu64 " bytes of tensor data%s\n",
         n_shards, n_tensors, total, size);
  printf("* Checks the format's rules, every entry and tensor record, that every byte of tensor "
         "data can be read and that no value or scale is NaN or infinite (as ggml checks); not "
         "whether the data changed (use --hash, --check)\n");

  Progress pg = progress_start(total, 1);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_bus;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGBUS, &sa, NULL);
  if (!gguf_advise_data(f, GGUF_PAGING_SEQUENTIAL)) gguf_clear_error();

  int all_ok = verify_metadata(f, &pg);
  uint64_t next = 0;
  for (uint32_t si = 0; si < n_shards; si++) {
    const GGUFShardInfo *s = gguf_get_shard(f, si);
    int ok = 1, overflow = 0; /* bytes saturate: tensors may overlap */
    uint64_t bytes = 0;
    progress_clear(&pg);
    printf("* Shard %" PRIu32 "/%" PRIu32 ": ", si + 1, n_shards);
    put_escaped_c(stdout, s->path);
    putchar('\n');
    progress_line_done(&pg);
    if (s->first_tensor != next || s->tensor_count > n_tensors - next) {
      ok = problem(&pg, "shard", s->path, strlen(s->path),
                   "its tensors are not the next ones of the model");
    } else {
      for (uint64_t i = s->first_tensor; i < s->first_tensor + s->tensor_count; i++) {
        const GGUFTensorInfo *t = gguf_get_tensor_by_index(f, i);
        ok &= verify_tensor(f, t, si, s, &pg);
        bytes = add_checked(bytes, t->size_bytes, &overflow);
      }
      next += s->tensor_count;
    }
    progress_clear(&pg);
    readable_bytes(size, sizeof size, bytes, ", ", "");
    printf("* Shard %" PRIu32 "/%" PRIu32 ": %s (%" PRIu64 " tensor(s), %" PRIu64 " bytes%s)\n",
           si + 1, n_shards, ok ? "OK" : "FAILED", s->tensor_count, bytes, size);
    progress_line_done(&pg);
    all_ok &= ok;
  }
  if (next != n_tensors) {
    all_ok = problem(&pg, "model", NULL, 0, "the shards do not hold every tensor");
  }
  progress_clear(&pg);
  printf("* ");
  put_escaped_c(stdout, path);
  printf(": %s\n", all_ok ? "OK" : "FAILED");
  gguf_close(f);
  return all_ok ? 0 : 1;
}

/* ------------------------------------------------------------------------------------------ */
/* --hash and --check                                                                         */
/* ------------------------------------------------------------------------------------------ */

/* Digest jobs run on threads of their own: the five streams --hash prints (per-tensor SHA-1 and
 * SHA-256, the model's SHA-1, SHA-256 and UUID) are independent passes over the same mapping, so
 * on a machine with the cores they take the time of the slowest one. Each job uses only the
 * library's digest API (gguf_tensor_digest, GGUFDigester). */
typedef struct {
  GGUFFile f;
  const GGUFTensorInfo **tensors; /* the tensors to digest, in file order */
  const unsigned char *feed;      /* whole-model jobs: feed[i] != 0 to include tensors[i] */
  uint64_t n;
  uint32_t algorithm;
  int per_tensor;                 /* one digest per tensor, else one of them all */
  unsigned char *out;             /* n digests, or one */
  size_t size;                    /* gguf_digest_size(algorithm) */
  int ok;
  char error[512];
  struct Tally *tally;            /* where the job counts its bytes, for the progress bar */
} DigestJob;

/* The bytes the jobs have digested and how many jobs have ended, for the main thread to draw. */
typedef struct Tally {
  pthread_mutex_t lock;
  uint64_t done;
  size_t ended;
} Tally;

static void tally_add(Tally *t, uint64_t bytes, int ended) {
  if (!t) return;
  pthread_mutex_lock(&t->lock);
  t->done += bytes;
  t->ended += (size_t)ended;
  pthread_mutex_unlock(&t->lock);
}

/* The bytes a job reads. */
static uint64_t job_bytes(const DigestJob *j) {
  uint64_t sum = 0;
  int overflow = 0;
  for (uint64_t i = 0; i < j->n; i++)
    if (!j->feed || j->feed[i]) sum = add_checked(sum, j->tensors[i]->size_bytes, &overflow);
  return sum;
}

typedef struct {
  GGUFDigester d;
  Tally *tally;
} DigestSink;

static int digest_piece(void *ctx, const unsigned char *p, size_t n) {
  DigestSink *sink = ctx;
  tally_add(sink->tally, n, 0);
  return gguf_digester_update(sink->d, p, n);
}

static void *run_digest_job(void *arg) {
  DigestJob *j = arg;
  j->ok = 1;
  if (j->per_tensor) {
    for (uint64_t i = 0; i < j->n && j->ok; i++) {
      j->ok = gguf_tensor_digest(j->f, j->tensors[i], j->algorithm, j->out + i * j->size, j->size);
      tally_add(j->tally, j->tensors[i]->size_bytes, 0);
    }
  } else {
    DigestSink sink = {gguf_digester_new(j->algorithm), j->tally};
    /* A handle without a mapping (a URL) is read by position, in pieces, into buf. */
    unsigned char *buf = gguf_is_mapped(j->f) ? NULL : malloc(CHUNK);
    j->ok = sink.d != NULL && (gguf_is_mapped(j->f) || buf != NULL);
    for (uint64_t i = 0; i < j->n && j->ok; i++) {
      if (j->feed && !j->feed[i]) continue;
      j->ok = for_each_piece(j->f, j->tensors[i], buf, digest_piece, &sink);
    }
    if (j->ok) j->ok = gguf_digester_finish(sink.d, j->out, j->size);
    gguf_digester_free(sink.d);
    free(buf);
  }
  if (!j->ok) snprintf(j->error, sizeof j->error, "%s", gguf_last_error());
  tally_add(j->tally, 0, 1);
  return NULL;
}

/* Runs every job, each on a thread when one can be started, while this thread draws the progress
 * bar (if stderr is a terminal). False (printing why) if one failed. */
static int run_digest_jobs(DigestJob *jobs, size_t n_jobs, const char *argv0) {
  pthread_t *threads = calloc(n_jobs ? n_jobs : 1, sizeof *threads);
  int *started = calloc(n_jobs ? n_jobs : 1, sizeof *started);
  if (!threads || !started) {
    free(threads);
    free(started);
    fprintf(stderr, "%s: out of memory\n", argv0);
    return 0;
  }
  uint64_t total = 0;
  int overflow = 0;
  for (size_t i = 0; i < n_jobs; i++) total = add_checked(total, job_bytes(&jobs[i]), &overflow);
  Progress pg = progress_start(total, (unsigned)n_jobs);
  Tally tally;
  tally.done = 0;
  tally.ended = 0;
  if (pg.enabled && pthread_mutex_init(&tally.lock, NULL) != 0) pg.enabled = 0;
  for (size_t i = 0; i < n_jobs; i++) jobs[i].tally = pg.enabled ? &tally : NULL;
  for (size_t i = 0; i < n_jobs; i++) {
    started[i] = pthread_create(&threads[i], NULL, run_digest_job, &jobs[i]) == 0;
    if (!started[i]) run_digest_job(&jobs[i]);
  }
  while (pg.enabled) {
    pthread_mutex_lock(&tally.lock);
    pg.done = tally.done;
    size_t ended = tally.ended;
    pthread_mutex_unlock(&tally.lock);
    progress_draw(&pg);
    if (ended == n_jobs) break;
    struct timespec pause = {0, 50 * 1000 * 1000};
    nanosleep(&pause, NULL);
  }
  int ok = 1;
  for (size_t i = 0; i < n_jobs; i++) {
    if (started[i]) pthread_join(threads[i], NULL);
  }
  if (pg.enabled) pthread_mutex_destroy(&tally.lock);
  progress_clear(&pg);
  for (size_t i = 0; i < n_jobs; i++) {
    if (!jobs[i].ok) {
      fprintf(stderr, "%s: %s\n", argv0, jobs[i].error);
      ok = 0;
    }
  }
  free(threads);
  free(started);
  return ok;
}

static void to_hex(const unsigned char *d, size_t size, uint32_t algorithm, char *hex) {
  char *p = hex;
  for (size_t i = 0; i < size; i++) {
    if (algorithm == GGUF_DIGEST_ALGORITHM_UUID && (i == 4 || i == 6 || i == 8 || i == 10))
      *p++ = '-';
    p += sprintf(p, "%02x", d[i]);
  }
  *p = 0;
}

/* One line of gguf_hash.py's output: "ALGORITHM(padded to 8)  HEX  PATH[:NAME]". When PATH and
 * NAME print as themselves (valid UTF-8, no control bytes), exactly the reference's bytes; else
 * (where the reference would write raw control bytes) the line starts with a backslash and both
 * are escaped as put_escaped does, backslashes doubled: the convention of sha256sum. */
static void print_hash_line(uint32_t algorithm, const unsigned char *d, const char *path,
                            const char *name, uint64_t name_len) {
  char hex[80];
  to_hex(d, gguf_digest_size(algorithm), algorithm, hex);
  int plain = all_printable(path, strlen(path)) && (!name || all_printable(name, name_len));
  if (plain) {
    printf("%-8s  %s  %s", gguf_digest_name(algorithm), hex, path);
    if (name) {
      putchar(':');
      fwrite(name, 1, (size_t)name_len, stdout);
    }
  } else {
    printf("\\%-8s  %s  ", gguf_digest_name(algorithm), hex);
    put_escaped_c(stdout, path);
    if (name) {
      putchar(':');
      put_escaped(stdout, name, name_len, 0);
    }
  }
  putchar('\n');
}

/* Whether gguf_hash.py leaves this tensor out (buffers old converters stored, not weights). */
static int skipped_by_reference(const char *name, uint64_t len) {
  static const char *const suffixes[] = {".attention.masked_bias", ".attention.bias",
                                         ".rotary_emb.inv_freq"};
  for (size_t k = 0; k < sizeof suffixes / sizeof *suffixes; k++) {
    size_t n = strlen(suffixes[k]);
    if (len >= n && !memcmp(name + len - n, suffixes[k], n)) return 1;
  }
  return 0;
}

/* Opens one file, never the rest of a split model (both hashing tools hash the file given). */
static GGUFFile open_single(const char *path) {
  GGUFFile f = open_any(path, GGUF_OPEN_FLAG_SINGLE_SHARD);
  if (!f) fprintf(stderr, "%s\n", gguf_last_error());
  else if (!gguf_advise_data(f, GGUF_PAGING_SEQUENTIAL)) gguf_clear_error();
  return f;
}

/* The five digests of hash_file's jobs (per-tensor SHA-1 and SHA-256, the model's SHA-1, SHA-256
 * and UUID) in one pass over the data, read by position. */
typedef struct {
  GGUFDigester d[5];
  Progress pg;
} FiveDigesters;

static int digest_piece_five(void *ctx, const unsigned char *p, size_t n) {
  FiveDigesters *all = ctx;
  for (int k = 0; k < 5; k++)
    if (!gguf_digester_update(all->d[k], p, n)) return 0;
  all->pg.done += n;
  progress_draw(&all->pg);
  return 1;
}

static int hash_in_one_pass(DigestJob *jobs, const char *argv0) {
  FiveDigesters all = {{NULL}, progress_start(job_bytes(&jobs[0]), 1)};
  unsigned char *buf = malloc(CHUNK);
  int ok = buf != NULL;
  for (int k = 2; k < 5 && ok; k++) ok = (all.d[k] = gguf_digester_new(jobs[k].algorithm)) != NULL;
  for (uint64_t i = 0; ok && i < jobs[0].n; i++) {
    for (int k = 0; k < 2 && ok; k++) ok = (all.d[k] = gguf_digester_new(jobs[k].algorithm)) != NULL;
    ok = ok && for_each_piece(jobs[0].f, jobs[0].tensors[i], buf, digest_piece_five, &all);
    for (int k = 0; k < 2; k++) {
      if (ok) ok = gguf_digester_finish(all.d[k], jobs[k].out + i * jobs[k].size, jobs[k].size);
      gguf_digester_free(all.d[k]);
      all.d[k] = NULL;
    }
  }
  for (int k = 2; k < 5; k++) {
    if (ok) ok = gguf_digester_finish(all.d[k], jobs[k].out, jobs[k].size);
    gguf_digester_free(all.d[k]);
  }
  progress_clear(&all.pg);
  if (!ok) fprintf(stderr, "%s: %s\n", argv0, buf ? gguf_last_error() : "out of memory");
  free(buf);
  return ok;
}

static int hash_file(const char *path, const char *argv0) {
  GGUFFile f = open_single(path);
  if (!f) return 1;
  uint64_t n_all = gguf_tensor_count(f), n = 0;
  const GGUFTensorInfo **tensors = calloc(n_all ? n_all : 1, sizeof *tensors);
  unsigned char *out = malloc((size_t)(n_all ? n_all : 1) * (20 + 32) + 20 + 32 + 16);
  if (!tensors || !out) {
    fprintf(stderr, "%s: out of memory\n", argv0);
    free(tensors);
    free(out);
    gguf_close(f);
    return 1;
  }
  for (uint64_t i = 0; i < n_all; i++) {
    const GGUFTensorInfo *t = gguf_get_tensor_by_index(f, i);
    if (!skipped_by_reference(t->name, t->name_len)) tensors[n++] = t;
  }
  unsigned char *sha1s = out, *sha256s = out + n * 20, *model = out + n * 52;
  DigestJob jobs[5] = {
      {f, tensors, NULL, n, GGUF_DIGEST_ALGORITHM_SHA1, 1, sha1s, 20, 0, "", NULL},
      {f, tensors, NULL, n, GGUF_DIGEST_ALGORITHM_SHA256, 1, sha256s, 32, 0, "", NULL},
      {f, tensors, NULL, n, GGUF_DIGEST_ALGORITHM_SHA1, 0, model, 20, 0, "", NULL},
      {f, tensors, NULL, n, GGUF_DIGEST_ALGORITHM_SHA256, 0, model + 20, 32, 0, "", NULL},
      {f, tensors, NULL, n, GGUF_DIGEST_ALGORITHM_UUID, 0, model + 52, 16, 0, "", NULL},
  };
  /* Mapped: five passes over the mapping on threads. Read by position (a URL): one pass, each
   * piece fed to the five digests, so the data crosses the network once. */
  int ok = gguf_is_mapped(f) ? run_digest_jobs(jobs, 5, argv0) : hash_in_one_pass(jobs, argv0);
  if (ok) {
    for (uint64_t i = 0; i < n; i++) {
      print_hash_line(GGUF_DIGEST_ALGORITHM_SHA1, sha1s + i * 20, path, tensors[i]->name,
                      tensors[i]->name_len);
      print_hash_line(GGUF_DIGEST_ALGORITHM_SHA256, sha256s + i * 32, path, tensors[i]->name,
                      tensors[i]->name_len);
    }
    print_hash_line(GGUF_DIGEST_ALGORITHM_SHA1, model, path, NULL, 0);
    print_hash_line(GGUF_DIGEST_ALGORITHM_SHA256, model + 20, path, NULL, 0);
    print_hash_line(GGUF_DIGEST_ALGORITHM_UUID, model + 52, path, NULL, 0);
  }
  free(tensors);
  free(out);
  gguf_close(f);
  return ok ? 0 : 1;
}

/* One digest line of a manifest. */
typedef struct {
  uint32_t algorithm;
  unsigned char digest[32];
  char *name;        /* the tensor's name (after "FILE:"), unescaped; NULL for the whole model */
  uint64_t name_len;
  uint64_t line;
  int seen;          /* a tensor of the file has this name */
} ManifestEntry;

typedef struct {
  ManifestEntry *entries;
  size_t n;
  char *text;        /* the manifest's bytes, which the names point into */
} Manifest;

static void manifest_free(Manifest *m) {
  free(m->entries);
  free(m->text);
}

static int hex_digit(int c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* Undoes put_escaped in place (\\\\ and \\xNN); returns the new length, or -1 if malformed. */
static int64_t unescape(char *s, uint64_t len) {
  uint64_t w = 0;
  for (uint64_t r = 0; r < len; r++) {
    if (s[r] != '\\') {
      s[w++] = s[r];
    } else if (r + 1 < len && (s[r + 1] == '\\' || s[r + 1] == '\'')) {
      s[w++] = s[++r];
    } else if (r + 3 < len && s[r + 1] == 'x' && hex_digit(s[r + 2]) >= 0 &&
               hex_digit(s[r + 3]) >= 0) {
      s[w++] = (char)(hex_digit(s[r + 2]) * 16 + hex_digit(s[r + 3]));
      r += 3;
    } else {
      return -1;
    }
  }
  return (int64_t)w;
}

/* Parses the digest `hex` (of `len` characters) of `algorithm` into `out`: 2 hex digits per
 * byte, a UUID as 8-4-4-4-12. False if malformed. */
static int parse_digest(uint32_t algorithm, const char *hex, size_t len, unsigned char *out) {
  size_t size = gguf_digest_size(algorithm), k = 0;
  int uuid = algorithm == GGUF_DIGEST_ALGORITHM_UUID;
  if (len != 2 * size + (uuid ? 4 : 0)) return 0;
  for (size_t i = 0; i < len; i += 2) {
    if (uuid && (i == 8 || i == 13 || i == 18 || i == 23)) {
      if (hex[i] != '-') return 0;
      i++;
    }
    int hi = hex_digit(hex[i]), lo = hex_digit(hex[i + 1]);
    if (hi < 0 || lo < 0) return 0;
    out[k++] = (unsigned char)(hi * 16 + lo);
  }
  return k == size;
}

static int manifest_error(const char *manifest, uint64_t line, const char *why) {
  fprintf(stderr, "gguf-inspect: ");
  put_escaped_c(stderr, manifest);
  fprintf(stderr, ":%" PRIu64 ": %s\n", line, why);
  return 0;
}

/* Reads a manifest as gguf_hash.py or llama-gguf-hash print it: lines "ALGORITHM  HEX  NAME",
 * NAME being "FILE" for the whole model and "FILE:TENSOR" for a tensor (FILE as that tool was
 * given it: the file's last lines, the model's, say which). Blank lines are skipped. False, after
 * naming the line, if the manifest cannot be read or a line is malformed. */
static int manifest_read(const char *path, Manifest *m) {
  memset(m, 0, sizeof *m);
  FILE *in = fopen(path, "rb");
  if (!in) {
    fprintf(stderr, "gguf-inspect: cannot open the manifest ");
    put_escaped_c(stderr, path);
    fprintf(stderr, ": %s\n", strerror(errno));
    return 0;
  }
  size_t cap = 1 << 16, len = 0;
  m->text = malloc(cap + 1);
  for (;;) {
    if (!m->text) break;
    len += fread(m->text + len, 1, cap - len, in);
    if (len < cap) break;
    char *bigger = cap < SIZE_MAX / 4 ? realloc(m->text, cap * 2 + 1) : NULL;
    if (!bigger) {
      free(m->text);
      m->text = NULL;
      break;
    }
    m->text = bigger;
    cap *= 2;
  }
  int read_error = ferror(in);
  fclose(in);
  if (!m->text || read_error) {
    fprintf(stderr, "gguf-inspect: cannot read the manifest ");
    put_escaped_c(stderr, path);
    fprintf(stderr, "\n");
    manifest_free(m);
    return 0;
  }
  m->text[len] = '\n';
  size_t lines = 1;
  for (size_t i = 0; i < len; i++) lines += m->text[i] == '\n';
  m->entries = calloc(lines, sizeof *m->entries);
  if (!m->entries) {
    manifest_free(m);
    return manifest_error(path, 0, "out of memory");
  }
  /* Pass 1: split each line into algorithm, digest and name. */
  char *model_name = NULL;
  uint64_t model_len = 0, line_no = 0;
  for (size_t pos = 0; pos < len;) {
    char *line = m->text + pos, *end = memchr(line, '\n', len + 1 - pos);
    size_t line_len = (size_t)(end - line);
    pos += line_len + 1;
    line_no++;
    if (line_len && line[line_len - 1] == '\r') line_len--;
    size_t i = 0;
    while (i < line_len && (line[i] == ' ' || line[i] == '\t')) i++;
    if (i == line_len) continue;
    int escaped = line[i] == '\\';
    i += (size_t)escaped;
    size_t a0 = i;
    while (i < line_len && line[i] != ' ' && line[i] != '\t') i++;
    uint32_t algorithm = 0;
    for (uint32_t id = 1; gguf_digest_name(id); id++) {
      const char *name = gguf_digest_name(id);
      if (strlen(name) == i - a0 && !memcmp(name, line + a0, i - a0)) algorithm = id;
    }
    gguf_clear_error();
    char why[160];
    if (!algorithm) {
      snprintf(why, sizeof why,
               "not a digest line (\"ALGORITHM  HEX  FILE[:TENSOR]\" with ALGORITHM one of sha1, "
               "sha256, xxh64, xxh3, uuid)");
      manifest_free(m);
      return manifest_error(path, line_no, why);
    }
    while (i < line_len && line[i] == ' ') i++;
    size_t h0 = i;
    while (i < line_len && line[i] != ' ') i++;
    ManifestEntry *e = &m->entries[m->n];
    if (!parse_digest(algorithm, line + h0, i - h0, e->digest)) {
      snprintf(why, sizeof why, "the %s digest is not %zu hex digits%s", gguf_digest_name(algorithm),
               2 * gguf_digest_size(algorithm),
               algorithm == GGUF_DIGEST_ALGORITHM_UUID ? " in the form 8-4-4-4-12" : "");
      manifest_free(m);
      return manifest_error(path, line_no, why);
    }
    size_t spaces = 0;
    while (i < line_len && line[i] == ' ') i++, spaces++;
    if (!spaces || i == line_len) {
      manifest_free(m);
      return manifest_error(path, line_no, "no FILE or FILE:TENSOR after the digest");
    }
    int64_t name_len = (int64_t)(line_len - i);
    if (escaped) name_len = unescape(line + i, (uint64_t)name_len);
    if (name_len < 0) {
      manifest_free(m);
      return manifest_error(path, line_no, "a backslash that is not \\\\ or \\xNN in the name");
    }
    e->algorithm = algorithm;
    e->name = line + i;
    e->name_len = (uint64_t)name_len;
    e->line = line_no;
    model_name = e->name;
    model_len = e->name_len;
    m->n++;
  }
  if (!m->n) {
    manifest_free(m);
    return manifest_error(path, line_no, "no digest lines");
  }
  /* Pass 2: the last line names the model's file; tensors are "FILE:TENSOR". */
  for (size_t k = 0; k < m->n; k++) {
    ManifestEntry *e = &m->entries[k];
    if (e->name_len == model_len && !memcmp(e->name, model_name, model_len)) {
      e->name = NULL;
      e->name_len = 0;
    } else if (e->name_len > model_len && !memcmp(e->name, model_name, model_len) &&
               e->name[model_len] == ':') {
      e->name += model_len + 1;
      e->name_len -= model_len + 1;
    } else {
      uint64_t line = e->line;
      manifest_free(m);
      return manifest_error(path, line,
                            "names neither the model's file (the last line's name) nor one of "
                            "its tensors (FILE:TENSOR)");
    }
  }
  return 1;
}

static int same_name(const ManifestEntry *e, const GGUFTensorInfo *t) {
  return e->name && e->name_len == t->name_len && !memcmp(e->name, t->name, (size_t)e->name_len);
}

static int check_failed(const char *what, const char *name, uint64_t name_len, const char *detail) {
  printf("FAILED  %s", what);
  if (name) {
    putchar(' ');
    put_escaped(stdout, name, name_len, 0);
  }
  printf(": %s\n", detail);
  return 0;
}

/* The entry of a tensor, found through `order` (entries sorted by name). */
static const Manifest *sort_manifest;
static int by_name(const void *a, const void *b) {
  const ManifestEntry *x = &sort_manifest->entries[*(const size_t *)a];
  const ManifestEntry *y = &sort_manifest->entries[*(const size_t *)b];
  if (!x->name != !y->name) return x->name ? 1 : -1; /* the model's lines first */
  uint64_t n = x->name_len < y->name_len ? x->name_len : y->name_len;
  int c = n ? memcmp(x->name, y->name, (size_t)n) : 0;
  if (c) return c;
  return x->name_len < y->name_len ? -1 : x->name_len > y->name_len;
}

static int check_file(const char *manifest_path, const char *path, const char *argv0) {
  Manifest m;
  if (!manifest_read(manifest_path, &m)) return 2;
  GGUFFile f = open_single(path);
  if (!f) {
    manifest_free(&m);
    return 1;
  }
  uint64_t n = gguf_tensor_count(f);
  enum { N_ALG = 6 };
  int tensor_alg[N_ALG] = {0}, model_alg[N_ALG] = {0}, any_tensor_line = 0;
  for (size_t k = 0; k < m.n; k++) {
    if (m.entries[k].name) tensor_alg[m.entries[k].algorithm] = any_tensor_line = 1;
    else model_alg[m.entries[k].algorithm] = 1;
  }
  const GGUFTensorInfo **tensors = calloc(n ? n : 1, sizeof *tensors);
  unsigned char *feed = calloc(n ? n : 1, 1);
  size_t *order = calloc(m.n, sizeof *order);
  /* Per-tensor digests for each algorithm with tensor lines; whole-model digests for each with
   * model lines, over every tensor (llama-gguf-hash) and, if the file has tensors gguf_hash.py
   * skips, also without them (gguf_hash.py). */
  DigestJob jobs[3 * N_ALG];
  unsigned char *per_tensor[N_ALG] = {0}, model_all[N_ALG][32], model_ref[N_ALG][32];
  size_t n_jobs = 0;
  int has_skipped = 0, ok = tensors && feed && order;
  for (uint64_t i = 0; ok && i < n; i++) {
    tensors[i] = gguf_get_tensor_by_index(f, i);
    feed[i] = !skipped_by_reference(tensors[i]->name, tensors[i]->name_len);
    has_skipped |= !feed[i];
  }
  for (uint32_t a = 1; ok && a < N_ALG; a++) {
    size_t size = gguf_digest_size(a);
    DigestJob base = {f, tensors, NULL, n, a, 0, NULL, size, 0, "", NULL};
    if (tensor_alg[a]) {
      per_tensor[a] = malloc((size_t)(n ? n : 1) * size);
      ok = per_tensor[a] != NULL;
      jobs[n_jobs] = base;
      jobs[n_jobs].per_tensor = 1;
      jobs[n_jobs++].out = per_tensor[a];
    }
    if (model_alg[a]) {
      jobs[n_jobs] = base;
      jobs[n_jobs++].out = model_all[a];
      if (has_skipped) {
        jobs[n_jobs] = base;
        jobs[n_jobs].feed = feed;
        jobs[n_jobs++].out = model_ref[a];
      }
    }
  }
  if (!ok) fprintf(stderr, "%s: out of memory\n", argv0);
  else ok = run_digest_jobs(jobs, n_jobs, argv0);
  int status = ok ? 0 : 1;
  if (ok) {
    int all_match = 1;
    uint64_t checked = 0;
    char why[256];
    for (size_t k = 0; k < m.n; k++) order[k] = k;
    sort_manifest = &m;
    qsort(order, m.n, sizeof *order, by_name);
    for (uint64_t i = 0; i < n; i++) {
      const GGUFTensorInfo *t = tensors[i];
      /* The first entry with this name, by binary search on the sorted order. */
      size_t lo = 0, hi = m.n;
      while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const ManifestEntry *e = &m.entries[order[mid]];
        uint64_t len = e->name_len < t->name_len ? e->name_len : t->name_len;
        int c = !e->name ? -1 : len ? memcmp(e->name, t->name, (size_t)len) : 0;
        if (!c && e->name) c = e->name_len < t->name_len ? -1 : e->name_len > t->name_len;
        if (c < 0) lo = mid + 1;
        else hi = mid;
      }
      int listed = 0;
      for (size_t k = lo; k < m.n && same_name(&m.entries[order[k]], t); k++) {
        ManifestEntry *e = &m.entries[order[k]];
        size_t size = gguf_digest_size(e->algorithm);
        e->seen = listed = 1;
        checked++;
        if (memcmp(per_tensor[e->algorithm] + i * size, e->digest, size)) {
          snprintf(why, sizeof why, "its %s digest differs from the manifest's (line %" PRIu64 ")",
                   gguf_digest_name(e->algorithm), e->line);
          all_match = check_failed("tensor", t->name, t->name_len, why);
        }
      }
      if (!listed && any_tensor_line && feed[i]) {
        all_match = check_failed("tensor", t->name, t->name_len, "not in the manifest");
      } else if (!listed && !feed[i]) {
        printf("* not covered: tensor ");
        put_escaped(stdout, t->name, t->name_len, 0);
        printf(" (gguf_hash.py skips it; llama-gguf-hash manifests cover it)\n");
      }
    }
    for (size_t k = 0; k < m.n; k++) {
      ManifestEntry *e = &m.entries[k];
      if (e->name && !e->seen) {
        snprintf(why, sizeof why, "in the manifest (line %" PRIu64 ") but not in the file",
                 e->line);
        all_match = check_failed("tensor", e->name, e->name_len, why);
      } else if (!e->name) {
        size_t size = gguf_digest_size(e->algorithm);
        checked++;
        if (memcmp(model_all[e->algorithm], e->digest, size) &&
            (!has_skipped || memcmp(model_ref[e->algorithm], e->digest, size))) {
          snprintf(why, sizeof why,
                   "the %s digest of all its tensors differs from the manifest's (line %" PRIu64
                   ")",
                   gguf_digest_name(e->algorithm), e->line);
          all_match = check_failed("model", NULL, 0, why);
        }
      }
    }
    printf("* ");
    put_escaped_c(stdout, path);
    printf(": %s (%" PRIu64 " digest(s) of ", all_match ? "OK" : "FAILED", checked);
    put_escaped_c(stdout, manifest_path);
    printf(" checked)\n");
    status = all_match ? 0 : 1;
  }
  for (uint32_t a = 0; a < N_ALG; a++) free(per_tensor[a]);
  free(tensors);
  free(feed);
  free(order);
  gguf_close(f);
  manifest_free(&m);
  return status;
}

/* ------------------------------------------------------------------------------------------ */

/* --tensor NAME --values [N]: the first n values of a tensor (all when n is 0), one a line, read
 * a row at a time so a large tensor needs one row of floats. */
static int print_values(GGUFFile f, const char *path, const char *name, uint64_t n,
                        const char *argv0) {
  const GGUFTensorInfo *t = gguf_get_tensor(f, name);
  if (!t) {
    fprintf(stderr, "%s: ", argv0);
    put_escaped_c(stderr, path);
    fprintf(stderr, ": no tensor '");
    put_escaped(stderr, name, strlen(name), '\'');
    fprintf(stderr, "'\n");
    return 1;
  }
  if (n == 0 || n > t->n_elements) n = t->n_elements;
  uint64_t row = t->dims[0];
  if (n == 0) return 0;
  float *buf = row <= SIZE_MAX / sizeof(float) ? malloc((size_t)row * sizeof(float)) : NULL;
  if (!buf) {
    fprintf(stderr, "%s: out of memory for a row of %" PRIu64 " floats\n", argv0, row);
    return 1;
  }
  char text[64];
  for (uint64_t r = 0, printed = 0; printed < n; r++) {
    if (!gguf_tensor_to_float(f, t, r, 1, buf)) {
      fprintf(stderr, "%s\n", gguf_last_error());
      free(buf);
      return 1;
    }
    for (uint64_t i = 0; i < row && printed < n; i++, printed++) {
      if (isnan(buf[i])) {
        uint32_t bits;
        memcpy(&bits, &buf[i], sizeof bits);
        printf("nan:0x%08" PRIx32 "\n", bits);
      } else {
        format_float(text, sizeof text, buf[i], 1);
        printf("%s\n", text);
      }
    }
  }
  free(buf);
  return 0;
}

static void usage(FILE *out, const char *argv0) {
  fprintf(out,
          "usage: %s [--json] [--tensors] [FILE.gguf]\n"
          "       %s [--json] --metadata KEY FILE.gguf\n"
          "       %s --verify [FILE.gguf]\n"
          "       %s --hash FILE.gguf\n"
          "       %s --check MANIFEST FILE.gguf\n"
          "       %s --tensor NAME --values [N] [FILE.gguf]\n"
          "       %s --tokenize TEXT FILE.gguf\n"
          "       %s --detokenize IDS FILE.gguf\n"
          "       %s [--json] --memory [--ctx N] FILE.gguf\n"
          "       %s --chat | --chat-tokens [--template NAME] [--llama-cpp] FILE.gguf < REQUEST.json\n"
          "       %s --version | --help\n"
          "Prints a GGUF file's header, size (parameters, bytes of tensor data; KiB, MiB, GiB\n"
          "  beside byte counts), metadata (long arrays summarized; general.file_type with its\n"
          "  llama.cpp name) and tensor table.\n"
          "  With no FILE (where FILE is optional), inspects %s\n"
          "  Any shard of a split model (NAME-00001-of-00003.gguf) opens the whole model,\n"
          "  except with --hash and --check, which digest the one file given.\n"
          "  FILE may be an http:// or https:// URL: only its header is downloaded, by range\n"
          "  requests; --verify, --hash and --check read tensor data by ranges. The bearer\n"
          "  token in $GGUF_BEARER_TOKEN (if set) is sent (gated models); HTTPS trusts the\n"
          "  system's roots ($SSL_CERT_FILE names others).\n"
          "  Names, keys, strings and paths are printed with control bytes (C0, DEL, C1) and\n"
          "  bytes that are not UTF-8 as \\xNN and backslashes as \\\\ (strings in quotes also \\'),\n"
          "  so a file cannot act on the terminal or forge a line; --json gives the exact bytes.\n"
          "options:\n"
          "  --json          everything as JSON, arrays in full; with --tensors or --metadata,\n"
          "                  only that part\n"
          "  --tensors       only the tensor table\n"
          "  --memory        the memory llama.cpp needs to run the model (weights, K, V,\n"
          "                  recurrent state, output, compute (a bound), total), from\n"
          "                  the header\n"
          "  --ctx N         the context for --memory (default 0: the training context)\n"
          "  --chat          the prompt the file's chat template makes of the request read\n"
          "                  from stdin ({\"messages\": [...], \"add_generation_prompt\": true,\n"
          "                  ...}), exactly as transformers renders it, printed as it is\n"
          "  --chat-tokens   the prompt's tokens, one line each as --tokenize prints them\n"
          "                  (special-token text read as those tokens, nothing added)\n"
          "  --template NAME with --chat: tokenizer.chat_template.NAME\n"
          "  --llama-cpp     with --chat: render as llama-server does (GGUF_CHAT_LLAMA_CPP)\n"
          "  --metadata KEY  only the value of KEY, arrays in full (exit status 1 if missing)\n"
          "  --verify        checks the format: every rule on opening (every shard), every\n"
          "                  metadata entry and tensor record the library hands out (lookups,\n"
          "                  arrays decodable, shapes, sizes, offsets inside the file), reads\n"
          "                  every byte of tensor data (a truncated file or an I/O error fails)\n"
          "                  and checks its values (a NaN or infinity where ggml refuses one,\n"
          "                  in a float tensor or a quantized block's scale, fails);\n"
          "                  OK or FAILED per shard and overall, exit status 1 if not OK. It\n"
          "                  cannot tell whether data changed: that takes a digest to compare\n"
          "                  with (--hash, --check)\n"
          "  --hash          per-tensor SHA-1 and SHA-256 of the file's tensor data, then the\n"
          "                  SHA-1, SHA-256 and UUID of all of it: byte for byte what\n"
          "                  `python -m gguf.scripts.gguf_hash FILE` prints (the same tensors\n"
          "                  skipped: *.attention.masked_bias, *.attention.bias,\n"
          "                  *.rotary_emb.inv_freq). A line whose FILE or tensor name holds\n"
          "                  bytes that would be escaped starts with a backslash and has them\n"
          "                  escaped (as sha256sum does)\n"
          "  --check MANIFEST  checks the file against MANIFEST, the output of --hash,\n"
          "                  gguf_hash.py or llama-gguf-hash (sha1, sha256, xxh64, xxh3, uuid\n"
          "                  lines; \"ALGORITHM  HEX  FILE:TENSOR\" per tensor, \"... FILE\" for\n"
          "                  the whole model; FILE may differ from the file checked). Prints\n"
          "                  FAILED and the name of each tensor whose digest differs, that is\n"
          "                  missing from the file or (when the manifest lists tensors) from\n"
          "                  the manifest, then OK or FAILED; exit status 1 on any of these,\n"
          "                  2 if a manifest line is malformed (its line number is given)\n"
          "  --tensor NAME --values [N]\n"
          "                  the first N values (default 16, 0 for all) of tensor NAME as\n"
          "                  floats, one a line, bit for bit as ggml converts them (exit status 1\n"
          "                  if there is no such tensor or its type cannot be converted)\n"
          "  --tokenize TEXT the tokens of TEXT by the file's vocabulary, exactly as llama.cpp\n"
          "                  tokenizes (the model's BOS/EOS added, special-token text such as\n"
          "                  <|im_start|> read as that token): one line each, the id, a tab and\n"
          "                  the token's text, quoted and escaped\n"
          "  --detokenize IDS  the text of the token ids IDS (separated by commas or spaces),\n"
          "                  exactly as llama.cpp's llama_detokenize with special tokens' text,\n"
          "                  the bytes as they are, then a newline. Both exit with status 1 if\n"
          "                  the file has no usable vocabulary or an id is not in it\n"
          "  --version       the version of libgguf in use\n"
          "  -h, --help      this help\n"
          "--verify, --hash and --check draw a progress bar on stderr when stderr is a\n"
          "  terminal. --hash and --check read a file through its mapping: a file truncated by\n"
          "  another process meanwhile kills them with SIGBUS.\n"
          "JSON: numbers are exact: floats are the shortest decimal reading back to the same\n"
          "  bits, non-finite ones the strings \"inf\", \"-inf\", \"nan:0x<bits>\".\n"
          "  Strings that are valid UTF-8 are JSON strings, others {\"hex\": \"<bytes in hex>\"}.\n"
          "  \"parameter_count\" and \"tensor_data_size\" sum the tensors; \"file_type\" names\n"
          "  general.file_type's value (null if none).\n"
          "exit status: 0 OK, 1 cannot open, key missing, verification or check failed,\n"
          "  2 bad usage or a malformed manifest\n",
          argv0, argv0, argv0, argv0, argv0, argv0, argv0, argv0, argv0, argv0, argv0,
          GGUF_INSPECT_DEFAULT_SAMPLE);
}

static int bad_usage(const char *argv0, const char *before, const char *arg, const char *after);

/* --memory: gguf_memory_estimate with llama.cpp's context defaults and a context of n_ctx. */
static int print_memory(GGUFFile f, const char *path, uint32_t n_ctx, int json, const char *argv0) {
  GGUFMemoryParams p = gguf_memory_params_default();
  p.n_ctx = n_ctx;
  GGUFMemoryEstimate e;
  memset(&e, 0, sizeof e);
  e.size = sizeof e;
  if (!gguf_memory_estimate(f, &p, &e)) {
    fprintf(stderr, "%s: ", argv0);
    put_escaped_c(stderr, path);
    fprintf(stderr, ": %s\n", gguf_last_error());
    return 1;
  }
  const struct {
    const char *name;
    uint64_t bytes;
  } rows[] = {{"weights", e.weights}, {"weights_mapped", e.weights_mapped},
              {"k", e.k}, {"v", e.v}, {"recurrent", e.recurrent}, {"output", e.output},
              {"compute", e.compute}, {"total", e.total}};
  size_t n_rows = sizeof rows / sizeof *rows;
  if (json) {
    printf("{\"n_ctx\": %" PRIu32 ", \"n_ctx_seq\": %" PRIu32 ", \"n_ctx_swa\": %" PRIu32
           ", \"n_ubatch\": %" PRIu32,
           e.n_ctx, e.n_ctx_seq, e.n_ctx_swa, e.n_ubatch);
    for (size_t i = 0; i < n_rows; i++) printf(", \"%s\": %" PRIu64, rows[i].name, rows[i].bytes);
    printf("}\n");
    return 0;
  }
  printf("context: %" PRIu32 " tokens (%" PRIu32 " per sequence", e.n_ctx, e.n_ctx_seq);
  if (e.n_ctx_swa) printf(", sliding window %" PRIu32, e.n_ctx_swa);
  printf(", micro-batch %" PRIu32 ")\n", e.n_ubatch);
  for (size_t i = 0; i < n_rows; i++) {
    char size[64];
    readable_bytes(size, sizeof size, rows[i].bytes, " (", ")");
    printf("%-14s %20" PRIu64 "%s\n", rows[i].name, rows[i].bytes, size);
  }
  return 0;
}

/* --tokenize: each token of TEXT (LEN bytes, tokenized with FLAGS), "ID\tPIECE" (the piece
 * quoted and escaped). */
static int print_tokens(GGUFFile f, const char *path, const char *text, size_t len, uint32_t flags,
                        const char *argv0) {
  GGUFTokenizer tok = gguf_tokenizer_open(f);
  if (!tok) {
    fprintf(stderr, "%s: ", argv0);
    put_escaped_c(stderr, path);
    fprintf(stderr, ": %s\n", gguf_last_error());
    return 1;
  }
  int64_t n = gguf_tokenize(tok, text, len, NULL, 0, flags);
  int32_t *ids = n > 0 ? malloc((size_t)n * sizeof *ids) : NULL;
  int status = 0;
  if (n < 0 || (n > 0 && (!ids || gguf_tokenize(tok, text, len, ids, (uint64_t)n, flags) != n))) {
    fprintf(stderr, "%s: cannot tokenize: %s\n", argv0, n < 0 ? gguf_last_error() : "out of memory");
    status = 1;
  }
  char small[256];
  for (int64_t i = 0; status == 0 && i < n; i++) {
    int64_t m = gguf_token_to_piece(tok, ids[i], small, sizeof small, GGUF_DETOKENIZE_UNPARSE_SPECIAL);
    char *piece = small;
    if (m > (int64_t)sizeof small) {
      piece = malloc((size_t)m);
      if (!piece ||
          gguf_token_to_piece(tok, ids[i], piece, (uint64_t)m, GGUF_DETOKENIZE_UNPARSE_SPECIAL) != m) {
        fprintf(stderr, "%s: cannot print token %" PRId32 "\n", argv0, ids[i]);
        status = 1;
        if (piece != small) free(piece);
        break;
      }
    }
    printf("%" PRId32 "\t", ids[i]);
    print_quoted(piece, m < 0 ? 0 : (uint64_t)m);
    putchar('\n');
    if (piece != small) free(piece);
  }
  free(ids);
  gguf_tokenizer_close(tok);
  return status;
}

/* --detokenize: the text of the ids in IDS (commas or spaces between them). */
static int print_text(GGUFFile f, const char *path, const char *list, const char *argv0) {
  size_t cap = strlen(list) / 2 + 1, n = 0;
  int32_t *ids = malloc(cap * sizeof *ids);
  if (!ids) {
    fprintf(stderr, "%s: out of memory\n", argv0);
    return 1;
  }
  for (const char *p = list; *p;) {
    if (*p == ',' || *p == ' ' || *p == '\t') {
      p++;
      continue;
    }
    char *end;
    errno = 0;
    long v = strtol(p, &end, 10);
    if (end == p || errno || v < INT32_MIN || v > INT32_MAX ||
        (*end && *end != ',' && *end != ' ' && *end != '\t')) {
      free(ids);
      return bad_usage(argv0, "--detokenize takes token ids separated by commas or spaces, not ",
                       list, "");
    }
    ids[n++] = (int32_t)v;
    p = end;
  }
  GGUFTokenizer tok = gguf_tokenizer_open(f);
  if (!tok) {
    fprintf(stderr, "%s: ", argv0);
    put_escaped_c(stderr, path);
    fprintf(stderr, ": %s\n", gguf_last_error());
    free(ids);
    return 1;
  }
  int status = 0;
  int64_t len = gguf_detokenize(tok, ids, n, NULL, 0, GGUF_DETOKENIZE_UNPARSE_SPECIAL);
  char *text = len > 0 ? malloc((size_t)len) : NULL;
  if (len < 0 || (len > 0 && (!text || gguf_detokenize(tok, ids, n, text, (uint64_t)len,
                                                        GGUF_DETOKENIZE_UNPARSE_SPECIAL) != len))) {
    fprintf(stderr, "%s: cannot detokenize: %s\n", argv0, len < 0 ? gguf_last_error() : "out of memory");
    status = 1;
  } else {
    if (len > 0) fwrite(text, 1, (size_t)len, stdout); /* text is NULL when len is 0 */
    putchar('\n');
  }
  free(text);
  free(ids);
  gguf_tokenizer_close(tok);
  return status;
}

/* --chat / --chat-tokens: the request (JSON) read from stdin rendered by the file's chat
 * template (NAME, or tokenizer.chat_template), printed as it is; or its tokens, special-token
 * text read as those tokens and nothing added (the template writes BOS itself). */
static int print_chat(GGUFFile f, const char *path, const char *name, int as_tokens,
                      uint32_t flags, const char *argv0) {
  size_t cap = 4096, len = 0;
  char *request = malloc(cap);
  for (;;) {
    if (!request) {
      fprintf(stderr, "%s: out of memory reading the request\n", argv0);
      return 1;
    }
    len += fread(request + len, 1, cap - len, stdin);
    if (len < cap) break;
    char *grown = cap > SIZE_MAX / 2 ? NULL : realloc(request, cap * 2);
    if (!grown) free(request);
    request = grown;
    cap *= 2;
  }
  if (ferror(stdin)) {
    fprintf(stderr, "%s: cannot read the request from stdin\n", argv0);
    free(request);
    return 1;
  }
  int64_t n = gguf_chat_render(f, name, request, len, NULL, 0, flags);
  char *prompt = n > 0 ? malloc((size_t)n) : NULL;
  int status = 0;
  if (n < 0 || (n > 0 && (!prompt || gguf_chat_render(f, name, request, len, prompt, (uint64_t)n, flags) != n))) {
    /* The library's message names the file. */
    (void)path;
    fprintf(stderr, "%s: %s\n", argv0, n < 0 ? gguf_last_error() : "out of memory");
    status = 1;
  } else if (as_tokens) {
    status = print_tokens(f, path, prompt ? prompt : "", (size_t)n, GGUF_TOKENIZE_PARSE_SPECIAL, argv0);
  } else if (n > 0) {
    fwrite(prompt, 1, (size_t)n, stdout);
  }
  free(prompt);
  free(request);
  return status;
}

/* Bad usage: one line on stderr, "PROGRAM: BEFORE'ARG'AFTER (see PROGRAM --help)" (ARG, if
 * any, quoted and escaped), and exit status 2. */
static int bad_usage(const char *argv0, const char *before, const char *arg, const char *after) {
  fputs(argv0, stderr);
  fprintf(stderr, ": %s", before);
  if (arg) {
    fputc('\'', stderr);
    put_escaped(stderr, arg, strlen(arg), '\'');
    fputc('\'', stderr);
  }
  fprintf(stderr, "%s (see %s --help)\n", after, argv0);
  return 2;
}

int main(int argc, char **argv) {
  int json = 0, tensors = 0, verify_mode = 0, hash = 0, options_done = 0, values = 0;
  const char *key = NULL, *path = NULL, *manifest = NULL, *tensor = NULL;
  const char *tokenize_text = NULL, *detokenize_ids = NULL;
  uint64_t n_values = 16;
  int memory = 0, chat = 0, llama_cpp = 0;
  const char *ctx = NULL, *chat_template = NULL;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!options_done && a[0] == '-' && a[1]) {
      if (!strcmp(a, "--")) options_done = 1;
      else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
        usage(stdout, argv[0]);
        return fflush(stdout) == 0 && !ferror(stdout) ? 0 : 1;
      } else if (!strcmp(a, "--version")) {
        printf("libgguf %s\n", gguf_library_version());
        return 0;
      } else if (!strcmp(a, "--json")) json = 1;
      else if (!strcmp(a, "--tensors")) tensors = 1;
      else if (!strcmp(a, "--verify")) verify_mode = 1;
      else if (!strcmp(a, "--hash")) hash = 1;
      else if (!strcmp(a, "--memory")) memory = 1;
      else if (!strcmp(a, "--chat")) chat = 1;
      else if (!strcmp(a, "--chat-tokens")) chat = 2;
      else if (!strcmp(a, "--llama-cpp")) llama_cpp = 1;
      else if (!strcmp(a, "--template")) {
        if (++i == argc) return bad_usage(argv[0], "--template needs a NAME", NULL, "");
        chat_template = argv[i];
      } else if (!strncmp(a, "--template=", 11)) chat_template = a + 11;
      else if (!strcmp(a, "--ctx")) {
        if (++i == argc) return bad_usage(argv[0], "--ctx needs a count of tokens", NULL, "");
        ctx = argv[i];
      } else if (!strncmp(a, "--ctx=", 6)) ctx = a + 6;
      else if (!strcmp(a, "--values") || !strncmp(a, "--values=", 9)) {
        /* N is optional: the next argument when it is all digits, or after '='. */
        const char *count = a[8] == '=' ? a + 9
                            : i + 1 < argc && argv[i + 1][0] && strspn(argv[i + 1], "0123456789") ==
                                                                    strlen(argv[i + 1])
                                ? argv[++i]
                                : NULL;
        if (count) {
          char *end;
          errno = 0;
          unsigned long long v = strtoull(count, &end, 10);
          if (!*count || *end || errno || count[0] == '-')
            return bad_usage(argv[0], "--values takes a count of values, not ", count, "");
          n_values = v;
        }
        values = 1;
      } else if (!strcmp(a, "--tensor")) {
        if (++i == argc) return bad_usage(argv[0], "--tensor needs a NAME", NULL, "");
        tensor = argv[i];
      } else if (!strncmp(a, "--tensor=", 9)) tensor = a + 9;
      else if (!strcmp(a, "--tokenize") || !strcmp(a, "--detokenize")) {
        if (++i == argc)
          return bad_usage(argv[0], a[2] == 't' ? "--tokenize needs a TEXT" : "--detokenize needs IDS",
                           NULL, "");
        if (a[2] == 't') tokenize_text = argv[i];
        else detokenize_ids = argv[i];
      } else if (!strncmp(a, "--tokenize=", 11)) tokenize_text = a + 11;
      else if (!strncmp(a, "--detokenize=", 13)) detokenize_ids = a + 13;
      else if (!strcmp(a, "--metadata") || !strcmp(a, "--check")) {
        if (++i == argc)
          return bad_usage(argv[0], a[2] == 'm' ? "--metadata needs a KEY" : "--check needs a MANIFEST",
                           NULL, "");
        if (a[2] == 'm') key = argv[i];
        else manifest = argv[i];
      } else if (!strncmp(a, "--metadata=", 11)) key = a + 11;
      else if (!strncmp(a, "--check=", 8)) manifest = a + 8;
      else return bad_usage(argv[0], "unknown option ", a, "");
    } else if (path) {
      return bad_usage(argv[0], "a second FILE ", a, "");
    } else {
      path = a;
    }
  }
  int tokenizing = (tokenize_text != NULL) + (detokenize_ids != NULL) + (chat != 0);
  if (chat_template && !chat) return bad_usage(argv[0], "--template goes with --chat", NULL, "");
  if (llama_cpp && !chat) return bad_usage(argv[0], "--llama-cpp goes with --chat", NULL, "");
  if (chat && !path) return bad_usage(argv[0], "--chat and --chat-tokens need a FILE", NULL, "");
  uint32_t n_ctx = 0;
  if (ctx) {
    char *end;
    errno = 0;
    unsigned long v = strtoul(ctx, &end, 10);
    if (!*ctx || *end || errno || ctx[0] == '-' || v > UINT32_MAX)
      return bad_usage(argv[0], "--ctx takes a count of tokens, not ", ctx, "");
    n_ctx = (uint32_t)v;
    if (!memory) return bad_usage(argv[0], "--ctx goes with --memory", NULL, "");
  }
  if (memory && (tensors || key || verify_mode || hash || manifest || values || tokenizing))
    return bad_usage(argv[0], "--memory goes with no other mode", NULL, "");
  if (tensors + (key != NULL) + verify_mode + hash + (manifest != NULL) + values + tokenizing > 1 ||
      (json && (verify_mode || hash || manifest || values || tokenizing)))
    return bad_usage(argv[0],
                     "--tensors, --metadata, --verify, --hash, --check, --values, --tokenize, "
                     "--detokenize and --chat exclude each other; --json goes with none of the "
                     "last seven",
                     NULL, "");
  if (tokenizing && !path)
    return bad_usage(argv[0], tokenize_text ? "--tokenize TEXT needs a FILE" : "--detokenize IDS needs a FILE",
                     NULL, "");
  if (values != (tensor != NULL))
    return bad_usage(argv[0], values ? "--values needs --tensor NAME" : "--tensor goes with --values",
                     NULL, "");
  /* These take an argument before FILE: a forgotten one would silently turn FILE into it. */
  if (!path && key) {
    return access(key, F_OK) == 0
               ? bad_usage(argv[0], "--metadata needs a KEY before FILE, and ", key, " is a file")
               : bad_usage(argv[0], "--metadata KEY needs a FILE: none after ", key, "");
  }
  if (!path && manifest) {
    return bad_usage(argv[0], "--check needs a MANIFEST and a FILE: only ", manifest, " given");
  }
  if (!path && hash) return bad_usage(argv[0], "--hash needs a FILE", NULL, "");
  if (!path) path = GGUF_INSPECT_DEFAULT_SAMPLE;
  if (verify_mode) return verify(path);
  if (hash) return hash_file(path, argv[0]);
  if (manifest) return check_file(manifest, path, argv[0]);

  GGUFFile f = open_any(path, 0);
  if (!f) {
    fprintf(stderr, "%s\n", gguf_last_error());
    return 1;
  }
  int status = 0;
  if (memory) {
    status = print_memory(f, path, n_ctx, json, argv[0]);
  } else if (values) {
    status = print_values(f, path, tensor, n_values, argv[0]);
  } else if (tokenize_text) {
    status = print_tokens(f, path, tokenize_text, strlen(tokenize_text),
                          GGUF_TOKENIZE_ADD_SPECIAL | GGUF_TOKENIZE_PARSE_SPECIAL, argv[0]);
  } else if (chat) {
    status = print_chat(f, path, chat_template, chat == 2, llama_cpp ? GGUF_CHAT_LLAMA_CPP : 0,
                        argv[0]);
  } else if (detokenize_ids) {
    status = print_text(f, path, detokenize_ids, argv[0]);
  } else if (key) {
    const GGUFMetadataKV *kv = gguf_get_metadata(f, key);
    if (!kv) {
      fprintf(stderr, "%s: ", argv[0]);
      put_escaped_c(stderr, path);
      fprintf(stderr, ": no metadata key '");
      put_escaped(stderr, key, strlen(key), '\'');
      fprintf(stderr, "'\n");
      status = 1;
    } else {
      int ok = json ? emit_entry_json(f, kv) : emit_value(f, kv, OUT_TEXT);
      putchar('\n');
      if (!ok) {
        fprintf(stderr, "%s: ", argv[0]);
        put_escaped_c(stderr, path);
        fprintf(stderr, ": the array '");
        put_escaped(stderr, key, strlen(key), '\'');
        fprintf(stderr, "' does not decode\n");
        status = 1;
      }
    }
  } else if (tensors) {
    if (json) {
      emit_tensors_json(f, "");
      putchar('\n');
    } else {
      print_tensor_table(f);
    }
  } else if (json) {
    status = dump_json(f, path);
  } else {
    status = dump_default(f, path);
  }
  gguf_close(f);
  if (fflush(stdout) != 0 || ferror(stdout)) {
    fprintf(stderr, "%s: cannot write the output\n", argv[0]);
    status = 1;
  }
  return status;
}
