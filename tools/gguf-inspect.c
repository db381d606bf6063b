/*
 * gguf-inspect: prints a GGUF file's header, metadata and tensor table, like gguf-dump from the
 * Python package, using only the public C API of libgguf.
 *
 *   gguf-inspect [FILE]
 *
 * With no FILE it inspects the sample model bundled with the library (testdata/sample.gguf).
 * Long arrays are summarized: their length and first items.
 */
#include "gguf.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

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

int main(int argc, char **argv) {
  if (argc > 2 || (argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")))) {
    fprintf(stderr, "usage: %s [FILE.gguf]\n  With no FILE, inspects %s\n", argv[0],
            GGUF_INSPECT_DEFAULT_SAMPLE);
    return argc > 2 ? 2 : 0;
  }
  const char *path = argc == 2 ? argv[1] : GGUF_INSPECT_DEFAULT_SAMPLE;
  GGUFFile f = gguf_open(path);
  if (!f) {
    fprintf(stderr, "%s\n", gguf_last_error());
    return 1;
  }

  uint64_t n_kv = gguf_metadata_count(f);
  uint64_t n_tensors = gguf_tensor_count(f);
  printf("* File: %s\n", path);
  printf("* GGUF version %" PRIu32 ", %s-endian, %" PRIu64 " bytes, alignment %" PRIu64
         ", data section at offset %" PRIu64 "\n",
         gguf_version(f), gguf_byte_order(f) == GGUF_BYTE_ORDER_BIG ? "big" : "little",
         gguf_file_size(f), gguf_alignment(f), gguf_data_offset(f));

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

  printf("* Dumping %" PRIu64 " tensor(s)\n", n_tensors);
  printf("%7s  %12s | %-30s | %-7s | %12s | %12s | %s\n", "#", "elements", "shape", "type",
         "file offset", "bytes", "name");
  for (uint64_t i = 0; i < n_tensors; i++) {
    const GGUFTensorInfo *t = gguf_get_tensor_by_index(f, i);
    char shape[96] = "scalar";
    int used = 0;
    for (uint32_t d = 0; d < t->n_dims && used < (int)sizeof shape; d++) {
      used += snprintf(shape + used, sizeof shape - (size_t)used, "%s%" PRIu64, d ? ", " : "",
                       t->dims[d]);
    }
    printf("%7" PRIu64 ": %12" PRIu64 " | %-30s | %-7s | %12" PRIu64 " | %12" PRIu64 " | %s\n",
           i + 1, t->n_elements, shape, gguf_dtype_name(t->dtype), t->file_offset, t->size_bytes,
           t->name);
  }
  gguf_close(f);
  return 0;
}
