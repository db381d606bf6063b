/*
 * test_arrays.c: the array helpers. Every typed getter (gguf_get_{uint8,int8,uint16,int16,uint32,
 * int32,uint64,int64,float,float64,bool}_array) returns exact values in host order (big-endian
 * and version-1 files included), aligned, the same pointer on every call, never NULL for an empty
 * array, and fails with WRONG_TYPE on every array of another element type, on scalars and on
 * nested arrays, NOT_FOUND on a missing key, NULL_ARGUMENT on NULL (out_count zeroed on every
 * failure; out_count NULL allowed). gguf_get_string_array (contents, strings cut at an embedded
 * NUL, same pointer) and the zero-copy gguf_get_array_string (bytes and length of every element,
 * pointer inside array_data, index past the end). gguf_get_nested_array: an entry's own array
 * (the typed getter's buffer), the elements of `arr.nested` ([[1, 2], ["x"]]) by path, the same
 * pointers on every call, and its refusals (an index past an array's end, a path into elements
 * that are not arrays, a scalar entry, an entry index past the end, NULL arguments; *out zeroed).
 *
 * Usage: test_arrays FIXTURE... (every path tests/c_api.rs writes; picked by file name).
 */
#include "gguf.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

/* ---- the tests ------------------------------------------------------------------------------ */

/* The getter kinds: the 11 typed getters (by element type) and the string-array getter. */
static const uint32_t GETTERS[] = {
    GGUF_VALUE_TYPE_UINT8,  GGUF_VALUE_TYPE_INT8,    GGUF_VALUE_TYPE_UINT16,
    GGUF_VALUE_TYPE_INT16,  GGUF_VALUE_TYPE_UINT32,  GGUF_VALUE_TYPE_INT32,
    GGUF_VALUE_TYPE_FLOAT32, GGUF_VALUE_TYPE_BOOL,   GGUF_VALUE_TYPE_UINT64,
    GGUF_VALUE_TYPE_INT64,  GGUF_VALUE_TYPE_FLOAT64, GGUF_VALUE_TYPE_STRING,
};

/* The getter for arrays of `type`, through one signature. */
static const void *getter(GGUFFile f, const char *key, uint32_t type, uint64_t *n) {
    switch (type) {
    case GGUF_VALUE_TYPE_UINT8: return gguf_get_uint8_array(f, key, n);
    case GGUF_VALUE_TYPE_INT8: return gguf_get_int8_array(f, key, n);
    case GGUF_VALUE_TYPE_UINT16: return gguf_get_uint16_array(f, key, n);
    case GGUF_VALUE_TYPE_INT16: return gguf_get_int16_array(f, key, n);
    case GGUF_VALUE_TYPE_UINT32: return gguf_get_uint32_array(f, key, n);
    case GGUF_VALUE_TYPE_INT32: return gguf_get_int32_array(f, key, n);
    case GGUF_VALUE_TYPE_FLOAT32: return gguf_get_float_array(f, key, n);
    case GGUF_VALUE_TYPE_BOOL: return gguf_get_bool_array(f, key, n);
    case GGUF_VALUE_TYPE_UINT64: return gguf_get_uint64_array(f, key, n);
    case GGUF_VALUE_TYPE_INT64: return gguf_get_int64_array(f, key, n);
    case GGUF_VALUE_TYPE_FLOAT64: return gguf_get_float64_array(f, key, n);
    case GGUF_VALUE_TYPE_STRING: return gguf_get_string_array(f, key, n);
    default: CHECK(!"no getter for this type"); return NULL;
    }
}

/* Every metadata key of the model, and the element type a getter would need (NONE for
 * scalars: every getter refuses them). */
#define NONE 100u
struct keyed {
    const char *key;
    uint32_t elem;
};
static const struct keyed KEYS[] = {
    {"general.name", NONE},
    {"test.u8", NONE},
    {"test.u32", NONE},
    {"test.f32", NONE},
    {"test.u64", NONE},
    {"test.bool_true", NONE},
    {"test.string", NONE},
    {"tokenizer.ggml.tokens", GGUF_VALUE_TYPE_STRING},
    {"tokenizer.ggml.scores", GGUF_VALUE_TYPE_FLOAT32},
    {"tokenizer.ggml.token_type", GGUF_VALUE_TYPE_INT32},
    {"arr.u8", GGUF_VALUE_TYPE_UINT8},
    {"arr.i8", GGUF_VALUE_TYPE_INT8},
    {"arr.u16", GGUF_VALUE_TYPE_UINT16},
    {"arr.i16", GGUF_VALUE_TYPE_INT16},
    {"arr.u32", GGUF_VALUE_TYPE_UINT32},
    {"arr.u64", GGUF_VALUE_TYPE_UINT64},
    {"arr.i64", GGUF_VALUE_TYPE_INT64},
    {"arr.f64", GGUF_VALUE_TYPE_FLOAT64},
    {"arr.bool", GGUF_VALUE_TYPE_BOOL},
    {"arr.empty_f32", GGUF_VALUE_TYPE_FLOAT32},
    {"arr.empty_string", GGUF_VALUE_TYPE_STRING},
    {"arr.nested", GGUF_VALUE_TYPE_ARRAY},
};

/* Calls the getter twice (with and without out_count); checks the count, the same pointer,
 * alignment to `align`, and that nothing was recorded. */
static const void *get_ok(GGUFFile f, const char *key, uint32_t type, uint64_t count,
                          size_t align) {
    uint64_t n = 12345;
    gguf_clear_error();
    const void *p = getter(f, key, type, &n);
    if (p == NULL) fprintf(stderr, "key %s\n", key);
    CHECK(p != NULL);
    CHECK(n == count);
    CHECK((uintptr_t)p % align == 0);
    CHECK(getter(f, key, type, NULL) == p);
    n = 0;
    CHECK(getter(f, key, type, &n) == p);
    CHECK(n == count);
    CHECK(gguf_last_error_code() == GGUF_ERROR_CODE_NONE);
    return p;
}

static void check_typed_values(GGUFFile f) {
    const float *f32 = get_ok(f, "tokenizer.ggml.scores", GGUF_VALUE_TYPE_FLOAT32, 5, 4);
    CHECK(f32[0] == 0.5f && f32[1] == -1.0f && f32[2] == 3.25f && f32[3] == 0.0f &&
          f32[4] == 100.0f);
    const int32_t *i32 = get_ok(f, "tokenizer.ggml.token_type", GGUF_VALUE_TYPE_INT32, 5, 4);
    CHECK(i32[0] == 1 && i32[1] == -3 && i32[2] == INT32_MAX && i32[3] == INT32_MIN &&
          i32[4] == 0);
    const uint8_t *u8 = get_ok(f, "arr.u8", GGUF_VALUE_TYPE_UINT8, 3, 1);
    CHECK(u8[0] == 0 && u8[1] == 1 && u8[2] == 255);
    const int8_t *i8 = get_ok(f, "arr.i8", GGUF_VALUE_TYPE_INT8, 3, 1);
    CHECK(i8[0] == -128 && i8[1] == 0 && i8[2] == 127);
    const uint16_t *u16 = get_ok(f, "arr.u16", GGUF_VALUE_TYPE_UINT16, 3, 2);
    CHECK(u16[0] == 0 && u16[1] == 65535 && u16[2] == 1234);
    const int16_t *i16 = get_ok(f, "arr.i16", GGUF_VALUE_TYPE_INT16, 3, 2);
    CHECK(i16[0] == -32768 && i16[1] == 32767 && i16[2] == -1);
    const uint32_t *u32 = get_ok(f, "arr.u32", GGUF_VALUE_TYPE_UINT32, 3, 4);
    CHECK(u32[0] == 0 && u32[1] == UINT32_MAX && u32[2] == 123456789);
    const uint64_t *u64 = get_ok(f, "arr.u64", GGUF_VALUE_TYPE_UINT64, 3, 8);
    CHECK(u64[0] == 0 && u64[1] == UINT64_MAX && u64[2] == UINT64_C(1) << 40);
    const int64_t *i64 = get_ok(f, "arr.i64", GGUF_VALUE_TYPE_INT64, 3, 8);
    CHECK(i64[0] == INT64_MIN && i64[1] == INT64_MAX && i64[2] == -1);
    const double *f64 = get_ok(f, "arr.f64", GGUF_VALUE_TYPE_FLOAT64, 3, 8);
    CHECK(f64[0] == 1.5 && f64[1] == -0.125 && f64[2] == F64_1E300);
    const bool *b = get_ok(f, "arr.bool", GGUF_VALUE_TYPE_BOOL, 3, 1);
    CHECK(b[0] == true && b[1] == false && b[2] == true);

    /* Empty arrays: a non-NULL pointer and a count of 0. */
    get_ok(f, "arr.empty_f32", GGUF_VALUE_TYPE_FLOAT32, 0, 1);
    get_ok(f, "arr.empty_string", GGUF_VALUE_TYPE_STRING, 0, 1);

    /* The typed copies are not the raw bytes in the file (those are unaligned, file order). */
    const GGUFMetadataKV *kv = gguf_get_metadata(f, "tokenizer.ggml.scores");
    CHECK(kv != NULL && (const void *)f32 != kv->array_data);
}

/* Every getter on every key it does not fit fails with WRONG_TYPE, naming the key. */
static void check_wrong_types(GGUFFile f) {
    for (size_t k = 0; k < sizeof KEYS / sizeof KEYS[0]; k++) {
        for (size_t g = 0; g < sizeof GETTERS / sizeof GETTERS[0]; g++) {
            if (KEYS[k].elem == GETTERS[g]) continue;
            uint64_t n = 77;
            FAILS(getter(f, KEYS[k].key, GETTERS[g], &n) == NULL && n == 0,
                  GGUF_ERROR_CODE_WRONG_TYPE, KEYS[k].key);
            FAILS(getter(f, KEYS[k].key, GETTERS[g], NULL) == NULL, GGUF_ERROR_CODE_WRONG_TYPE,
                  KEYS[k].key);
        }
    }
    /* And every getter on a missing key, a NULL key and a NULL handle. */
    for (size_t g = 0; g < sizeof GETTERS / sizeof GETTERS[0]; g++) {
        uint64_t n = 77;
        FAILS(getter(f, "no.such.array", GETTERS[g], &n) == NULL && n == 0,
              GGUF_ERROR_CODE_NOT_FOUND, "no.such.array");
        n = 77;
        FAILS(getter(f, NULL, GETTERS[g], &n) == NULL && n == 0, GGUF_ERROR_CODE_NULL_ARGUMENT,
              "NULL");
        n = 77;
        FAILS(getter(NULL, "arr.u8", GETTERS[g], &n) == NULL && n == 0,
              GGUF_ERROR_CODE_NULL_ARGUMENT, "NULL");
    }
    /* The error names the array's element type. */
    FAILS(gguf_get_float_array(f, "tokenizer.ggml.token_type", NULL) == NULL,
          GGUF_ERROR_CODE_WRONG_TYPE, "INT32");
    FAILS(gguf_get_string_array(f, "test.u32", NULL) == NULL, GGUF_ERROR_CODE_WRONG_TYPE,
          "UINT32");
}

static void check_string_arrays(GGUFFile f) {
    uint64_t n = 0;
    const char *const *tokens = gguf_get_string_array(f, "tokenizer.ggml.tokens", &n);
    CHECK(tokens != NULL && n == 5);
    CHECK(strcmp(tokens[0], "<s>") == 0);
    CHECK(strcmp(tokens[1], "") == 0);
    CHECK(strcmp(tokens[2], "h\xc3\xa9llo") == 0);
    CHECK(strcmp(tokens[3], "a") == 0); /* "a\0b", cut at its NUL */
    CHECK(strcmp(tokens[4], "</s>") == 0);
    /* The same pointer (and the same strings) on every call. */
    uint64_t n2 = 0;
    CHECK(gguf_get_string_array(f, "tokenizer.ggml.tokens", &n2) == tokens && n2 == 5);
    CHECK(gguf_get_string_array(f, "tokenizer.ggml.tokens", NULL) == tokens);
    CHECK(strcmp(tokens[4], "</s>") == 0);

    n = 9;
    const char *const *none = gguf_get_string_array(f, "arr.empty_string", &n);
    CHECK(none != NULL && n == 0);
}

/* gguf_get_array_string: zero-copy, every element's exact bytes. */
static void check_array_string(GGUFFile f, const unsigned char *buf, size_t buf_len) {
    static const struct {
        const char *bytes;
        uint64_t len;
    } TOKENS[] = {{"<s>", 3}, {"", 0}, {"h\xc3\xa9llo", 6}, {"a\0b", 3}, {"</s>", 4}};
    const GGUFMetadataKV *kv = gguf_get_metadata(f, "tokenizer.ggml.tokens");
    CHECK(kv != NULL);
    const char *lo = kv->array_data;
    const char *hi = lo + kv->array_bytes;
    const char *prev_end = lo;
    for (uint64_t i = 0; i < 5; i++) {
        uint64_t len = 999;
        gguf_clear_error();
        const char *s = gguf_get_array_string(f, "tokenizer.ggml.tokens", i, &len);
        CHECK(s != NULL);
        CHECK(len == TOKENS[i].len);
        CHECK(memcmp(s, TOKENS[i].bytes, len) == 0);
        /* Inside the array's bytes in the mapping, in order, after the length field. */
        CHECK(s >= prev_end && s + len <= hi);
        prev_end = s + len;
        if (buf != NULL) {
            CHECK((const unsigned char *)s >= buf && (const unsigned char *)s + len <= buf + buf_len);
        }
        CHECK(gguf_get_array_string(f, "tokenizer.ggml.tokens", i, NULL) == s);
        CHECK(gguf_last_error_code() == GGUF_ERROR_CODE_NONE);
    }
    CHECK(prev_end == hi);

    uint64_t len = 5;
    FAILS(gguf_get_array_string(f, "tokenizer.ggml.tokens", 5, &len) == NULL && len == 0,
          GGUF_ERROR_CODE_INVALID_ARGUMENT, "5");
    len = 5;
    FAILS(gguf_get_array_string(f, "tokenizer.ggml.tokens", UINT64_MAX, &len) == NULL && len == 0,
          GGUF_ERROR_CODE_INVALID_ARGUMENT, NULL);
    len = 5;
    FAILS(gguf_get_array_string(f, "arr.empty_string", 0, &len) == NULL && len == 0,
          GGUF_ERROR_CODE_INVALID_ARGUMENT, NULL);
    len = 5;
    FAILS(gguf_get_array_string(f, "tokenizer.ggml.scores", 0, &len) == NULL && len == 0,
          GGUF_ERROR_CODE_WRONG_TYPE, "tokenizer.ggml.scores");
    len = 5;
    FAILS(gguf_get_array_string(f, "general.name", 0, &len) == NULL && len == 0,
          GGUF_ERROR_CODE_WRONG_TYPE, "general.name");
    len = 5;
    FAILS(gguf_get_array_string(f, "arr.nested", 0, &len) == NULL && len == 0,
          GGUF_ERROR_CODE_WRONG_TYPE, "arr.nested");
    len = 5;
    FAILS(gguf_get_array_string(f, "no.such.key", 0, &len) == NULL && len == 0,
          GGUF_ERROR_CODE_NOT_FOUND, "no.such.key");
    len = 5;
    FAILS(gguf_get_array_string(f, NULL, 0, &len) == NULL && len == 0,
          GGUF_ERROR_CODE_NULL_ARGUMENT, NULL);
    len = 5;
    FAILS(gguf_get_array_string(NULL, "tokenizer.ggml.tokens", 0, &len) == NULL && len == 0,
          GGUF_ERROR_CODE_NULL_ARGUMENT, NULL);

    /* The nested array's inner string array is not reachable by key. */
    FAILS(gguf_get_string_array(f, "arr.nested", NULL) == NULL, GGUF_ERROR_CODE_WRONG_TYPE,
          "ARRAY");
}

/* Checks that a failed gguf_get_nested_array left *out zeroed. */
static int zeroed(const GGUFArray *a) {
    return a->elem_type == 0 && a->count == 0 && a->data == NULL;
}

/* gguf_get_nested_array over `arr.nested` = [[UINT16 1, 2], [STRING "x"]] and a few others. */
static void check_nested_array(GGUFFile f, const unsigned char *buf, size_t buf_len) {
    const GGUFMetadataKV *kv = gguf_get_metadata(f, "arr.nested");
    CHECK(kv != NULL);
    GGUFArray a;
    gguf_clear_error();
    CHECK(gguf_get_nested_array(f, kv->index, NULL, 0, &a));
    CHECK(a.elem_type == GGUF_VALUE_TYPE_ARRAY && a.count == 2 && a.data == NULL);

    uint64_t path[3] = {0, 0, 0};
    CHECK(gguf_get_nested_array(f, kv->index, path, 1, &a));
    CHECK(a.elem_type == GGUF_VALUE_TYPE_UINT16 && a.count == 2);
    const uint16_t *u16 = a.data;
    CHECK(u16 != NULL && (uintptr_t)u16 % 2 == 0 && u16[0] == 1 && u16[1] == 2);
    GGUFArray again;
    CHECK(gguf_get_nested_array(f, kv->index, path, 1, &again) && again.data == a.data);

    path[0] = 1;
    CHECK(gguf_get_nested_array(f, kv->index, path, 1, &a));
    CHECK(a.elem_type == GGUF_VALUE_TYPE_STRING && a.count == 1);
    const GGUFString *x = a.data;
    CHECK(x != NULL && x[0].len == 1 && x[0].data[0] == 'x');
    /* Zero-copy: inside the entry's bytes (and the caller's buffer for a memory handle). */
    const char *lo = kv->array_data;
    CHECK(x[0].data > lo && x[0].data + 1 <= lo + kv->array_bytes);
    if (buf != NULL) {
        CHECK((const unsigned char *)x[0].data > buf &&
              (const unsigned char *)x[0].data < buf + buf_len);
    }
    CHECK(gguf_get_nested_array(f, kv->index, path, 1, &again) && again.data == a.data);
    CHECK(gguf_last_error_code() == GGUF_ERROR_CODE_NONE);

    /* An entry's own array: at path length 0, the typed getter's buffer. */
    const GGUFMetadataKV *scores = gguf_get_metadata(f, "tokenizer.ggml.scores");
    CHECK(scores != NULL);
    CHECK(gguf_get_nested_array(f, scores->index, NULL, 0, &a));
    CHECK(a.elem_type == GGUF_VALUE_TYPE_FLOAT32 && a.count == 5);
    CHECK(a.data == gguf_get_float_array(f, "tokenizer.ggml.scores", NULL));
    CHECK(((const float *)a.data)[2] == 3.25f);
    const GGUFMetadataKV *tokens = gguf_get_metadata(f, "tokenizer.ggml.tokens");
    CHECK(tokens != NULL && gguf_get_nested_array(f, tokens->index, NULL, 0, &a));
    CHECK(a.elem_type == GGUF_VALUE_TYPE_STRING && a.count == 5);
    const GGUFString *t = a.data;
    CHECK(t[3].len == 3 && memcmp(t[3].data, "a\0b", 3) == 0); /* NUL bytes kept */
    CHECK(t[1].len == 0 && t[1].data != NULL);
    const GGUFMetadataKV *empty = gguf_get_metadata(f, "arr.empty_f32");
    CHECK(empty != NULL && gguf_get_nested_array(f, empty->index, NULL, 0, &a));
    CHECK(a.count == 0 && a.data != NULL);

    /* Refusals: *out is zeroed, the message names the key or the index. */
    path[0] = 2;
    FAILS(!gguf_get_nested_array(f, kv->index, path, 1, &a) && zeroed(&a),
          GGUF_ERROR_CODE_INVALID_ARGUMENT,
          "array index 2 of key 'arr.nested' is past the end (2 arrays)");
    path[0] = UINT64_MAX;
    FAILS(!gguf_get_nested_array(f, kv->index, path, 1, &a) && zeroed(&a),
          GGUF_ERROR_CODE_INVALID_ARGUMENT, "past the end");
    path[0] = 0;
    path[1] = 0;
    FAILS(!gguf_get_nested_array(f, kv->index, path, 2, &a) && zeroed(&a),
          GGUF_ERROR_CODE_WRONG_TYPE, "key 'arr.nested'[0] is an array of UINT16, not of ARRAY");
    FAILS(!gguf_get_nested_array(f, scores->index, path, 1, &a) && zeroed(&a),
          GGUF_ERROR_CODE_WRONG_TYPE, "FLOAT32");
    const GGUFMetadataKV *name = gguf_get_metadata(f, "general.name");
    CHECK(name != NULL);
    FAILS(!gguf_get_nested_array(f, name->index, NULL, 0, &a) && zeroed(&a),
          GGUF_ERROR_CODE_WRONG_TYPE, "holds a STRING, not an ARRAY");
    FAILS(!gguf_get_nested_array(f, gguf_metadata_count(f), NULL, 0, &a) && zeroed(&a),
          GGUF_ERROR_CODE_INVALID_ARGUMENT, "metadata index");
    FAILS(!gguf_get_nested_array(f, UINT64_MAX, NULL, 0, &a) && zeroed(&a),
          GGUF_ERROR_CODE_INVALID_ARGUMENT, "past the end");
    FAILS(!gguf_get_nested_array(f, kv->index, NULL, 1, &a) && zeroed(&a),
          GGUF_ERROR_CODE_NULL_ARGUMENT, "path");
    FAILS(!gguf_get_nested_array(f, kv->index, NULL, 0, NULL), GGUF_ERROR_CODE_NULL_ARGUMENT,
          "out");
    FAILS(!gguf_get_nested_array(NULL, kv->index, NULL, 0, &a) && zeroed(&a),
          GGUF_ERROR_CODE_NULL_ARGUMENT, "file");
}

static void check_file(GGUFFile f, const unsigned char *buf, size_t len) {
    CHECK(f != NULL);
    /* The zero-copy index first, then the copies, then again in the other order below. */
    check_array_string(f, buf, len);
    check_typed_values(f);
    check_string_arrays(f);
    check_wrong_types(f);
    check_array_string(f, buf, len);
    check_typed_values(f);
    check_nested_array(f, buf, len);
}

static void test_files(void) {
    static const char *const NAMES[] = {"full.gguf", "big.gguf", "v2.gguf", "v1.gguf",
                                        "v1big.gguf", "align.gguf"};
    for (size_t i = 0; i < sizeof NAMES / sizeof NAMES[0]; i++) {
        const char *path = fixture(NAMES[i]);
        fprintf(stderr, "arrays of %s\n", NAMES[i]);
        GGUFFile f = gguf_open(path);
        check_file(f, NULL, 0);
        gguf_close(f);

        size_t len;
        unsigned char *buf = read_file(path, &len);
        GGUFFile m = gguf_open_memory(buf, len);
        check_file(m, buf, len);
        gguf_close(m);
        free(buf);
    }
}

/* Opened and closed without building anything; or building one helper only (ASan: no leak). */
static void test_lazy_builders_alone(void) {
    const char *path = fixture("big.gguf");
    GGUFFile f = gguf_open(path);
    CHECK(f != NULL);
    gguf_close(f);
    for (size_t g = 0; g < sizeof GETTERS / sizeof GETTERS[0]; g++) {
        f = gguf_open(path);
        CHECK(f != NULL);
        for (size_t k = 0; k < sizeof KEYS / sizeof KEYS[0]; k++) {
            if (KEYS[k].elem == GETTERS[g]) CHECK(getter(f, KEYS[k].key, GETTERS[g], NULL) != NULL);
        }
        gguf_close(f);
    }
}

int main(int argc, char **argv) {
    g_argc = argc;
    g_argv = argv;
    test_files();
    test_lazy_builders_alone();
    printf("test_arrays: ok\n");
    return 0;
}
