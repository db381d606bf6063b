/*
 * gguf-inspect: prints a GGUF file's header, metadata and tensor table, like gguf-dump from the
 * Python package, using only the public C API of libgguf.
 *
 *   gguf-inspect [OPTION] [FILE.gguf]
 *
 *   (no option)      header, metadata (long arrays summarized: their length and first items) and
 *                    the tensor table
 *   --json           all of it as JSON, arrays in full (format below)
 *   --tensors        only the tensor table (with --json: the JSON array of tensors)
 *   --metadata KEY   only the value of KEY, arrays in full (with --json: its JSON entry); exit
 *                    status 1 if the file has no such key
 *   --verify         opens the file (every rule of the format is checked), checks every entry
 *                    and tensor the library hands out, then reads every tensor's data and prints
 *                    "DIGEST  NAME" (FNV-1a 64 of the bytes as stored, 16 hex digits; backslashes
 *                    and control bytes of NAME escaped as \\ and \xNN); OK or FAILED per shard
 *                    and overall, exit status 1 if not OK. A progress bar goes to stderr when
 *                    stderr is a terminal.
 *
 * With no FILE it inspects the sample model bundled with the library (testdata/sample.gguf).
 * Any shard of a split model (name-00001-of-00003.gguf) opens the whole model.
 *
 * JSON: every number is exact. Integers are JSON integers (up to 2^64-1); FLOAT32 and FLOAT64
 * values are the shortest decimal that reads back to the same bits, always with a '.' or an
 * exponent (so -0.0 keeps its sign); non-finite ones are the strings "inf", "-inf" and
 * "nan:0x<bits>" (the value's bit pattern in hex, 8 digits for FLOAT32, 16 for FLOAT64). A string
 * (key, value, tensor name, path) that is valid UTF-8 is a JSON string; one that is not is the
 * object {"hex": "<its bytes in hex>"}, so no byte is lost or guessed. Arrays are
 * {"type": "ARRAY", "array_type": T, "count": N, "value": [...]}; elements of a nested array are
 * such objects themselves.
 *
 * Exit status: 0 success, 1 the file cannot be opened, KEY is missing or verification failed,
 * 2 bad usage.
 */
#define _POSIX_C_SOURCE 200809L

#include "gguf.h"

#include <inttypes.h>
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef GGUF_INSPECT_DEFAULT_SAMPLE
#define GGUF_INSPECT_DEFAULT_SAMPLE "testdata/sample.gguf"
#endif

/* How many items of an array to show before eliding the rest. */
enum { ARRAY_PREVIEW = 6 };

/* Prints bytes as a quoted string, escaping quotes, backslashes and control bytes. */
static void print_quoted(const char *s, uint64_t len) {
  putchar('\'');
  for (uint64_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == '\'' || c == '\\') {
      printf("\\%c", c);
    } else if (c < 0x20 || c == 0x7f) {
      printf("\\x%02x", c);
    } else {
      putchar(c);
    }
  }
  putchar('\'');
}

/* Prints one element of a numeric or bool array from the library's decoded copy. */
static void print_array_item(GGUFFile f, const GGUFMetadataKV *kv, uint64_t i) {
  uint64_t n = 0;
  switch (kv->array_type) {
  case GGUF_VALUE_TYPE_UINT8: printf("%u", (unsigned)gguf_get_uint8_array(f, kv->key, &n)[i]); break;
  case GGUF_VALUE_TYPE_INT8: printf("%d", (int)gguf_get_int8_array(f, kv->key, &n)[i]); break;
  case GGUF_VALUE_TYPE_UINT16: printf("%u", (unsigned)gguf_get_uint16_array(f, kv->key, &n)[i]); break;
  case GGUF_VALUE_TYPE_INT16: printf("%d", (int)gguf_get_int16_array(f, kv->key, &n)[i]); break;
  case GGUF_VALUE_TYPE_UINT32: printf("%" PRIu32, gguf_get_uint32_array(f, kv->key, &n)[i]); break;
  case GGUF_VALUE_TYPE_INT32: printf("%" PRId32, gguf_get_int32_array(f, kv->key, &n)[i]); break;
  case GGUF_VALUE_TYPE_FLOAT32: printf("%g", (double)gguf_get_float_array(f, kv->key, &n)[i]); break;
  case GGUF_VALUE_TYPE_BOOL: printf("%s", gguf_get_bool_array(f, kv->key, &n)[i] ? "true" : "false"); break;
  case GGUF_VALUE_TYPE_UINT64: printf("%" PRIu64, gguf_get_uint64_array(f, kv->key, &n)[i]); break;
  case GGUF_VALUE_TYPE_INT64: printf("%" PRId64, gguf_get_int64_array(f, kv->key, &n)[i]); break;
  case GGUF_VALUE_TYPE_FLOAT64: printf("%g", gguf_get_float64_array(f, kv->key, &n)[i]); break;
  case GGUF_VALUE_TYPE_STRING: {
    uint64_t len = 0;
    const char *s = gguf_get_array_string(f, kv->key, i, &len);
    print_quoted(s, len);
    break;
  }
  default: printf("[...]"); break; /* nested arrays: shown by count only */
  }
}

static void print_value(GGUFFile f, const GGUFMetadataKV *kv) {
  const GGUFValue *v = &kv->value;
  switch (kv->type) {
  case GGUF_VALUE_TYPE_UINT8: case GGUF_VALUE_TYPE_UINT16: case GGUF_VALUE_TYPE_UINT32:
    printf("%" PRIu32, v->u32); break;
  case GGUF_VALUE_TYPE_INT8: case GGUF_VALUE_TYPE_INT16: case GGUF_VALUE_TYPE_INT32:
    printf("%" PRId32, v->i32); break;
  case GGUF_VALUE_TYPE_FLOAT32: printf("%g", (double)v->f32); break;
  case GGUF_VALUE_TYPE_BOOL: printf("%s", v->b ? "true" : "false"); break;
  case GGUF_VALUE_TYPE_STRING: print_quoted(v->str, kv->str_len); break;
  case GGUF_VALUE_TYPE_UINT64: printf("%" PRIu64, v->u64); break;
  case GGUF_VALUE_TYPE_INT64: printf("%" PRId64, v->i64); break;
  case GGUF_VALUE_TYPE_FLOAT64: printf("%g", v->f64); break;
  case GGUF_VALUE_TYPE_ARRAY: {
    uint64_t shown = kv->array_len < ARRAY_PREVIEW ? kv->array_len : ARRAY_PREVIEW;
    putchar('[');
    for (uint64_t i = 0; i < shown; i++) {
      if (i) printf(", ");
      print_array_item(f, kv, i);
    }
    if (shown < kv->array_len) printf(", ...");
    putchar(']');
    break;
  }
  default: printf("?"); break;
  }
}

/* ------------------------------------------------------------------------------------------ */
/* Values in full: one scalar at a time, decoded from the entry or from an array's raw bytes.  */
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

/* A read position in an array's raw bytes (`array_data`: file byte order; version 1 files have
 * 32-bit string lengths and array counts). */
typedef struct {
  const unsigned char *p, *end;
  int big, v1, ok;
} Cursor;

static uint64_t take(Cursor *c, unsigned n) {
  if (!c->ok || (size_t)(c->end - c->p) < n) {
    c->ok = 0;
    return 0;
  }
  uint64_t x = 0;
  for (unsigned k = 0; k < n; k++) {
    unsigned shift = 8 * (c->big ? n - 1 - k : k);
    x |= (uint64_t)c->p[k] << shift;
  }
  c->p += n;
  return x;
}

static uint64_t take_count(Cursor *c) { return take(c, c->v1 ? 4 : 8); }

/* Reads one scalar of `type` (not ARRAY) at the cursor. */
static void take_scalar(Cursor *c, uint32_t type, Scalar *s) {
  memset(s, 0, sizeof *s);
  s->type = type;
  switch (type) {
  case GGUF_VALUE_TYPE_UINT8: s->u = take(c, 1); break;
  case GGUF_VALUE_TYPE_UINT16: s->u = take(c, 2); break;
  case GGUF_VALUE_TYPE_UINT32: s->u = take(c, 4); break;
  case GGUF_VALUE_TYPE_UINT64: s->u = take(c, 8); break;
  case GGUF_VALUE_TYPE_INT8: s->i = (int8_t)take(c, 1); break;
  case GGUF_VALUE_TYPE_INT16: s->i = (int16_t)take(c, 2); break;
  case GGUF_VALUE_TYPE_INT32: s->i = (int32_t)take(c, 4); break;
  case GGUF_VALUE_TYPE_INT64: s->i = (int64_t)take(c, 8); break;
  case GGUF_VALUE_TYPE_BOOL: s->b = take(c, 1) != 0; break;
  case GGUF_VALUE_TYPE_FLOAT32: {
    uint32_t bits = (uint32_t)take(c, 4);
    memcpy(&s->f32, &bits, sizeof bits);
    break;
  }
  case GGUF_VALUE_TYPE_FLOAT64: {
    uint64_t bits = take(c, 8);
    memcpy(&s->f64, &bits, sizeof bits);
    break;
  }
  case GGUF_VALUE_TYPE_STRING: {
    uint64_t len = take_count(c);
    if (c->ok && (uint64_t)(c->end - c->p) >= len) {
      s->s = (const char *)c->p;
      s->len = len;
      c->p += len;
    } else {
      c->ok = 0;
    }
    break;
  }
  default: c->ok = 0; break;
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
    else if (top) fwrite(s->s, 1, (size_t)s->len, stdout);
    else print_quoted(s->s, s->len);
    break;
  default: fputs("?", stdout); break;
  }
}

/* Prints `count` elements of `elem` at the cursor, in full: "[a, b]" (JSON: a JSON array whose
 * nested arrays are objects with their type and count). False if the bytes run out. */
static int emit_array(Cursor *c, uint32_t elem, uint64_t count, OutMode mode, int depth) {
  putchar('[');
  for (uint64_t i = 0; i < count && c->ok; i++) {
    if (i) fputs(", ", stdout);
    if (elem == GGUF_VALUE_TYPE_ARRAY) {
      uint32_t inner = (uint32_t)take(c, 4);
      uint64_t n = take_count(c);
      if (!c->ok || depth > 64 || !gguf_value_type_name(inner)) {
        c->ok = 0;
        break;
      }
      if (mode == OUT_JSON) {
        printf("{\"type\": \"ARRAY\", \"array_type\": \"%s\", \"count\": %" PRIu64 ", \"value\": ",
               gguf_value_type_name(inner), n);
      }
      emit_array(c, inner, n, mode, depth + 1);
      if (mode == OUT_JSON) putchar('}');
    } else {
      Scalar s;
      take_scalar(c, elem, &s);
      if (c->ok) emit_scalar(&s, mode, 0);
    }
  }
  putchar(']');
  return c->ok;
}

/* Walks one value of `type` without printing it. */
static void skip_value(Cursor *c, uint32_t type, int depth) {
  if (type != GGUF_VALUE_TYPE_ARRAY) {
    Scalar s;
    take_scalar(c, type, &s);
    return;
  }
  uint32_t inner = (uint32_t)take(c, 4);
  uint64_t n = take_count(c);
  if (depth > 64 || !gguf_value_type_name(inner)) c->ok = 0;
  for (uint64_t i = 0; i < n && c->ok; i++) skip_value(c, inner, depth + 1);
}

static Cursor array_cursor(GGUFFile f, const GGUFMetadataKV *kv) {
  Cursor c;
  c.p = (const unsigned char *)kv->array_data;
  c.end = c.p ? c.p + kv->array_bytes : c.p;
  c.big = gguf_byte_order(f) == GGUF_BYTE_ORDER_BIG;
  c.v1 = gguf_version(f) == 1;
  c.ok = kv->array_len == 0 || c.p != NULL;
  return c;
}

/* The value of an entry in full. False if an array's bytes do not hold its elements. */
static int emit_value(GGUFFile f, const GGUFMetadataKV *kv, OutMode mode) {
  if (kv->type != GGUF_VALUE_TYPE_ARRAY) {
    Scalar s;
    entry_scalar(kv, &s);
    emit_scalar(&s, mode, 1);
    return 1;
  }
  Cursor c = array_cursor(f, kv);
  return emit_array(&c, kv->array_type, kv->array_len, mode, 0) && c.p == c.end;
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
    printf("*   shard %" PRIu32 ": %s: GGUF version %" PRIu32 ", %" PRIu64
           " bytes, alignment %" PRIu64
           ", data section at offset %" PRIu64 ", %" PRIu64 " tensor(s) from #%" PRIu64 "\n",
           i + 1, s->path, s->version, s->file_size, s->alignment, s->data_offset,
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
    printf("%12" PRIu64 " | %12" PRIu64 " | %s\n", t->file_offset, t->size_bytes, t->name);
  }
}

static void print_header_line(GGUFFile f) {
  printf("* GGUF version %" PRIu32 ", %s-endian, %" PRIu64 " bytes, alignment %" PRIu64
         ", data section at offset %" PRIu64 "\n",
         gguf_version(f), gguf_byte_order(f) == GGUF_BYTE_ORDER_BIG ? "big" : "little",
         gguf_file_size(f), gguf_alignment(f), gguf_data_offset(f));
}

static int dump_default(GGUFFile f, const char *path) {
  uint64_t n_kv = gguf_metadata_count(f);
  printf("* File: %s\n", path);
  print_header_line(f);
  print_shards(f);
  printf("* Dumping %" PRIu64 " key/value pair(s)\n", n_kv);
  for (uint64_t i = 0; i < n_kv; i++) {
    const GGUFMetadataKV *kv = gguf_get_metadata_by_index(f, i);
    char type[32];
    if (kv->type == GGUF_VALUE_TYPE_ARRAY) {
      snprintf(type, sizeof type, "[%s]", gguf_value_type_name(kv->array_type));
    } else {
      snprintf(type, sizeof type, "%s", gguf_value_type_name(kv->type));
    }
    printf("%7" PRIu64 ": %-10s | %8" PRIu64 " | %s = ", i + 1, type,
           kv->type == GGUF_VALUE_TYPE_ARRAY ? kv->array_len : 1, kv->key);
    print_value(f, kv);
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
  uint64_t n_kv = gguf_metadata_count(f);
  printf("\n  ],\n  \"metadata_count\": %" PRIu64 ",\n  \"tensor_count\": %" PRIu64
         ",\n  \"metadata\": [",
         n_kv, gguf_tensor_count(f));
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

typedef struct {
  int enabled, visible;
  uint64_t total, done;
  int shown_permille;
} Progress;

static void progress_draw(Progress *p) {
  if (!p->enabled) return;
  int permille = p->total ? (int)(p->done * 1000 / p->total) : 1000;
  if (p->visible && permille == p->shown_permille) return;
  enum { WIDTH = 40 };
  int filled = permille * WIDTH / 1000;
  fprintf(stderr, "\r[%.*s%*s] %3d.%d%% %" PRIu64 "/%" PRIu64 " MiB", filled,
          "########################################", WIDTH - filled, "", permille / 10,
          permille % 10, p->done >> 20, p->total >> 20);
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
static const uint64_t FNV_OFFSET = 0xcbf29ce484222325ull, FNV_PRIME = 0x100000001b3ull;

static uint64_t fnv1a(const unsigned char *p, uint64_t n, uint64_t h, Progress *pg) {
  while (n) {
    uint64_t len = n < CHUNK ? n : CHUNK;
    for (uint64_t i = 0; i < len; i++) h = (h ^ p[i]) * FNV_PRIME;
    p += len;
    n -= len;
    pg->done += len;
    progress_draw(pg);
  }
  return h;
}

/* The FNV-1a 64 digest of n bytes at p; false if reading them raised SIGBUS. */
static int digest(const unsigned char *p, uint64_t n, uint64_t *out, Progress *pg) {
  if (sigsetjmp(bus_jump, 1)) {
    bus_armed = 0;
    return 0;
  }
  bus_armed = 1;
  *out = fnv1a(p, n, FNV_OFFSET, pg);
  bus_armed = 0;
  return 1;
}

/* A name in a line of --verify's output: backslashes and control bytes escaped (\\, \xNN), so
 * that every line stays one line. */
static void print_name(const char *s, uint64_t len) {
  for (uint64_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == '\\') fputs("\\\\", stdout);
    else if (c < 0x20 || c == 0x7f) printf("\\x%02x", c);
    else putchar(c);
  }
}

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
    int plain_key = strlen(kv->key) == kv->key_len; /* keys holding NUL cannot be looked up */
    if (kv->index != i || !gguf_value_type_name(kv->type) ||
        (plain_key && gguf_get_metadata(f, kv->key) != kv)) {
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
    /* Walk the raw bytes: each element must lie inside the array and the last end it. */
    Cursor c = array_cursor(f, kv);
    for (uint64_t k = 0; k < kv->array_len && c.ok; k++) skip_value(&c, kv->array_type, 0);
    if (!c.ok || c.p != c.end) {
      ok = problem(pg, "metadata key", kv->key, kv->key_len,
                   "the array's bytes do not hold its elements");
    }
  }
  return ok;
}

/* One tensor: its description is consistent with its shard, the library's pointer is where the
 * shard's mapping says, and its bytes can be read. Prints "DIGEST  NAME". */
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

  const unsigned char *data = gguf_tensor_data(f, t);
  if (!data) {
    snprintf(detail, sizeof detail, "no data pointer: %s", gguf_last_error());
    return problem(pg, "tensor", t->name, t->name_len, detail);
  }
  if (data != s->base + t->file_offset || (t->size_bytes && !gguf_contains(f, data, t->size_bytes)))
    return problem(pg, "tensor", t->name, t->name_len,
                   "data pointer lies outside the shard's mapping");
  uint64_t h = 0;
  if (!digest(data, t->size_bytes, &h, pg))
    return problem(pg, "tensor", t->name, t->name_len,
                   "reading its data failed (SIGBUS: file truncated or I/O error)");
  progress_clear(pg);
  printf("%016" PRIx64 "  ", h);
  print_name(t->name, t->name_len);
  putchar('\n');
  progress_line_done(pg);
  return 1;
}

static int verify(const char *path) {
  GGUFFile f = gguf_open(path);
  if (!f) {
    fprintf(stderr, "%s\n", gguf_last_error());
    printf("* %s: FAILED\n", path);
    return 1;
  }
  uint32_t n_shards = gguf_shard_count(f);
  uint64_t n_tensors = gguf_tensor_count(f), total = 0;
  for (uint64_t i = 0; i < n_tensors; i++) total += gguf_get_tensor_by_index(f, i)->size_bytes;
  printf("* Verifying %s: %" PRIu32 " shard(s), %" PRIu64 " tensor(s), %" PRIu64
         " bytes of tensor data (digest: FNV-1a 64 of each tensor's bytes as stored)\n",
         path, n_shards, n_tensors, total);

  Progress pg = {0, 0, total, 0, -1};
  pg.enabled = isatty(STDERR_FILENO);
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
    int ok = 1;
    uint64_t bytes = 0;
    progress_clear(&pg);
    printf("* Shard %" PRIu32 "/%" PRIu32 ": %s\n", si + 1, n_shards, s->path);
    progress_line_done(&pg);
    if (s->first_tensor != next || s->tensor_count > n_tensors - next) {
      ok = problem(&pg, "shard", s->path, strlen(s->path),
                   "its tensors are not the next ones of the model");
    } else {
      for (uint64_t i = s->first_tensor; i < s->first_tensor + s->tensor_count; i++) {
        const GGUFTensorInfo *t = gguf_get_tensor_by_index(f, i);
        ok &= verify_tensor(f, t, si, s, &pg);
        bytes += t->size_bytes;
      }
      next += s->tensor_count;
    }
    progress_clear(&pg);
    printf("* Shard %" PRIu32 "/%" PRIu32 ": %s (%" PRIu64 " tensor(s), %" PRIu64 " bytes)\n",
           si + 1, n_shards, ok ? "OK" : "FAILED", s->tensor_count, bytes);
    progress_line_done(&pg);
    all_ok &= ok;
  }
  if (next != n_tensors) {
    all_ok = problem(&pg, "model", NULL, 0, "the shards do not hold every tensor");
  }
  progress_clear(&pg);
  printf("* %s: %s\n", path, all_ok ? "OK" : "FAILED");
  gguf_close(f);
  return all_ok ? 0 : 1;
}

/* ------------------------------------------------------------------------------------------ */

static void usage(FILE *out, const char *argv0) {
  fprintf(out,
          "usage: %s [--json] [--tensors | --metadata KEY | --verify] [FILE.gguf]\n"
          "Prints a GGUF file's header, metadata (long arrays summarized) and tensor table.\n"
          "  With no FILE, inspects %s\n"
          "  Any shard of a split model (NAME-00001-of-00003.gguf) opens the whole model.\n"
          "options:\n"
          "  --json          everything as JSON, arrays in full; with --tensors or --metadata,\n"
          "                  only that part\n"
          "  --tensors       only the tensor table\n"
          "  --metadata KEY  only the value of KEY, arrays in full (exit status 1 if missing)\n"
          "  --verify        check every rule of the format, then read every tensor's data and\n"
          "                  print its FNV-1a 64 digest; OK or FAILED per shard and overall\n"
          "                  (exit status 1 if not OK; a progress bar when stderr is a terminal)\n"
          "  -h, --help      this help\n"
          "JSON: numbers are exact: floats are the shortest decimal reading back to the same\n"
          "  bits, non-finite ones the strings \"inf\", \"-inf\", \"nan:0x<bits>\".\n"
          "  Strings that are valid UTF-8 are JSON strings, others {\"hex\": \"<bytes in hex>\"}.\n"
          "exit status: 0 OK, 1 cannot open, key missing or verification failed, 2 bad usage\n",
          argv0, GGUF_INSPECT_DEFAULT_SAMPLE);
}

static int bad_usage(const char *argv0, const char *why, const char *arg) {
  usage(stderr, argv0);
  fprintf(stderr, "%s: %s%s%s\n", argv0, why, arg ? ": " : "", arg ? arg : "");
  return 2;
}

int main(int argc, char **argv) {
  int json = 0, tensors = 0, check = 0, options_done = 0;
  const char *key = NULL, *path = NULL;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!options_done && a[0] == '-' && a[1]) {
      if (!strcmp(a, "--")) options_done = 1;
      else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
        usage(stderr, argv[0]);
        return 0;
      } else if (!strcmp(a, "--json")) json = 1;
      else if (!strcmp(a, "--tensors")) tensors = 1;
      else if (!strcmp(a, "--verify")) check = 1;
      else if (!strcmp(a, "--metadata")) {
        if (++i == argc) return bad_usage(argv[0], "--metadata needs a KEY", NULL);
        key = argv[i];
      } else if (!strncmp(a, "--metadata=", 11)) key = a + 11;
      else return bad_usage(argv[0], "unknown option", a);
    } else if (path) {
      return bad_usage(argv[0], "more than one FILE", a);
    } else {
      path = a;
    }
  }
  if (tensors + (key != NULL) + check > 1 || (check && json))
    return bad_usage(argv[0], "--tensors, --metadata and --verify exclude each other and --json",
                     NULL);
  if (!path) path = GGUF_INSPECT_DEFAULT_SAMPLE;
  if (check) return verify(path);

  GGUFFile f = gguf_open(path);
  if (!f) {
    fprintf(stderr, "%s\n", gguf_last_error());
    return 1;
  }
  int status = 0;
  if (key) {
    const GGUFMetadataKV *kv = gguf_get_metadata(f, key);
    if (!kv) {
      fprintf(stderr, "%s: %s: no metadata key '%s'\n", argv[0], path, key);
      status = 1;
    } else {
      int ok = json ? emit_entry_json(f, kv) : emit_value(f, kv, OUT_TEXT);
      putchar('\n');
      if (!ok) {
        fprintf(stderr, "%s: %s: the array '%s' does not decode\n", argv[0], path, key);
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
