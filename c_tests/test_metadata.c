/*
 * test_metadata.c: gguf_metadata_count, gguf_get_metadata, gguf_get_metadata_by_index and every
 * field of GGUFMetadataKV, on the model in every version and byte order (and opened from
 * memory): every scalar type read exactly (UINT8/UINT16 widened to u32, INT8/INT16 to i32),
 * strings with an embedded NUL (str_len), empty strings, a key with an embedded NUL (key_len),
 * the array fields (array_len, array_type, value.u32, array_bytes) and the raw array_data decoded
 * in the file's byte order, nested arrays included; lookups that fail; gguf_value_type_name.
 *
 * Usage: test_metadata FIXTURE... (every path tests/c_api.rs writes; picked by file name).
 */
#include "gguf.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

/* ---- helpers of this program only (the shared ones are in check.h) -------------------------- */

static int host_is_little_endian(void) {
    const uint16_t one = 1;
    unsigned char first;
    memcpy(&first, &one, 1);
    return first == 1;
}

/* ---- raw array bytes, decoded in the file's byte order ------------------------------------ */

struct cursor {
    const unsigned char *p;
    const unsigned char *end;
    int big;            /* the file is big-endian */
    size_t len_width;   /* 4 for version 1, 8 after */
};

static uint64_t take(struct cursor *c, size_t n) {
    CHECK((size_t)(c->end - c->p) >= n);
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char b = c->big ? c->p[i] : c->p[n - 1 - i];
        v = v << 8 | b;
    }
    c->p += n;
    return v;
}

static float take_f32(struct cursor *c) {
    uint32_t bits = (uint32_t)take(c, 4);
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

static double take_f64(struct cursor *c) {
    uint64_t bits = take(c, 8);
    double d;
    memcpy(&d, &bits, 8);
    return d;
}

/* Checks a raw string element: its length field, then its bytes. */
static void take_string(struct cursor *c, const char *s, size_t len) {
    CHECK(take(c, c->len_width) == len);
    CHECK((size_t)(c->end - c->p) >= len);
    CHECK(memcmp(c->p, s, len) == 0);
    c->p += len;
}

/* ---- the model --------------------------------------------------------------------------- */

#define MODEL_KVS 32

struct expected_kv {
    const char *key;
    size_t key_len;
    uint32_t type;
    uint32_t array_type;
    uint64_t array_len;
};

#define KV(k, t) {k, sizeof k - 1, GGUF_VALUE_TYPE_##t, 0, 0}
#define ARR(k, t, n) {k, sizeof k - 1, GGUF_VALUE_TYPE_ARRAY, GGUF_VALUE_TYPE_##t, n}

static const struct expected_kv MODEL[MODEL_KVS] = {
    KV("general.architecture", STRING),
    KV("general.name", STRING),
    KV("test.u8", UINT8),
    KV("test.i8", INT8),
    KV("test.u16", UINT16),
    KV("test.i16", INT16),
    KV("test.u32", UINT32),
    KV("test.i32", INT32),
    KV("test.f32", FLOAT32),
    KV("test.bool_true", BOOL),
    KV("test.bool_false", BOOL),
    KV("test.u64", UINT64),
    KV("test.i64", INT64),
    KV("test.f64", FLOAT64),
    KV("test.string", STRING),
    KV("test.empty_string", STRING),
    KV("key\0tail", UINT32),
    ARR("tokenizer.ggml.tokens", STRING, 5),
    ARR("tokenizer.ggml.scores", FLOAT32, 5),
    ARR("tokenizer.ggml.token_type", INT32, 5),
    ARR("arr.u8", UINT8, 3),
    ARR("arr.i8", INT8, 3),
    ARR("arr.u16", UINT16, 3),
    ARR("arr.i16", INT16, 3),
    ARR("arr.u32", UINT32, 3),
    ARR("arr.u64", UINT64, 3),
    ARR("arr.i64", INT64, 3),
    ARR("arr.f64", FLOAT64, 3),
    ARR("arr.bool", BOOL, 3),
    ARR("arr.empty_f32", FLOAT32, 0),
    ARR("arr.empty_string", STRING, 0),
    ARR("arr.nested", ARRAY, 2),
};

static const GGUFMetadataKV *get(GGUFFile f, const char *key) {
    gguf_clear_error();
    const GGUFMetadataKV *kv = gguf_get_metadata(f, key);
    if (kv == NULL) fprintf(stderr, "key %s\n", key);
    CHECK(kv != NULL);
    CHECK(gguf_last_error_code() == GGUF_ERROR_CODE_NONE);
    CHECK(strcmp(kv->key, key) == 0);
    return kv;
}

static const GGUFMetadataKV *scalar(GGUFFile f, const char *key, uint32_t type) {
    const GGUFMetadataKV *kv = get(f, key);
    CHECK(kv->type == type);
    CHECK(kv->array_len == 0);
    CHECK(kv->array_data == NULL);
    CHECK(kv->array_type == 0);
    CHECK(kv->array_bytes == 0);
    if (type != GGUF_VALUE_TYPE_STRING) CHECK(kv->str_len == 0);
    return kv;
}

static void check_scalars(GGUFFile f) {
    const GGUFMetadataKV *kv;
    int little = host_is_little_endian();

    kv = scalar(f, "general.architecture", GGUF_VALUE_TYPE_STRING);
    CHECK(kv->str_len == 5 && strcmp(kv->value.str, "llama") == 0);
    kv = scalar(f, "general.name", GGUF_VALUE_TYPE_STRING);
    CHECK(kv->str_len == 15 && strcmp(kv->value.str, "tiny test model") == 0);

    /* Integers of up to 32 bits are widened into u32 / i32. */
    kv = scalar(f, "test.u8", GGUF_VALUE_TYPE_UINT8);
    CHECK(kv->value.u32 == 200);
    if (little) CHECK(kv->value.u8 == 200); /* the narrow member overlays the low byte */
    kv = scalar(f, "test.i8", GGUF_VALUE_TYPE_INT8);
    CHECK(kv->value.i32 == -5);
    if (little) CHECK(kv->value.i8 == -5);
    kv = scalar(f, "test.u16", GGUF_VALUE_TYPE_UINT16);
    CHECK(kv->value.u32 == 65000);
    if (little) CHECK(kv->value.u16 == 65000);
    kv = scalar(f, "test.i16", GGUF_VALUE_TYPE_INT16);
    CHECK(kv->value.i32 == -30000);
    if (little) CHECK(kv->value.i16 == -30000);
    kv = scalar(f, "test.u32", GGUF_VALUE_TYPE_UINT32);
    CHECK(kv->value.u32 == UINT32_C(4000000000));
    kv = scalar(f, "test.i32", GGUF_VALUE_TYPE_INT32);
    CHECK(kv->value.i32 == INT32_C(-2000000000));
    kv = scalar(f, "test.f32", GGUF_VALUE_TYPE_FLOAT32);
    CHECK(kv->value.f32 == 1.5f);
    kv = scalar(f, "test.bool_true", GGUF_VALUE_TYPE_BOOL);
    CHECK(kv->value.b == true);
    kv = scalar(f, "test.bool_false", GGUF_VALUE_TYPE_BOOL);
    CHECK(kv->value.b == false);
    kv = scalar(f, "test.u64", GGUF_VALUE_TYPE_UINT64);
    CHECK(kv->value.u64 == UINT64_MAX - 1);
    kv = scalar(f, "test.i64", GGUF_VALUE_TYPE_INT64);
    CHECK(kv->value.i64 == INT64_MIN + 1);
    kv = scalar(f, "test.f64", GGUF_VALUE_TYPE_FLOAT64);
    CHECK(kv->value.f64 == -2.25);

    /* A string with an embedded NUL: NUL-terminated after all its bytes. */
    kv = scalar(f, "test.string", GGUF_VALUE_TYPE_STRING);
    CHECK(kv->str_len == 12);
    CHECK(memcmp(kv->value.str, "h\xc3\xa9llo\0world", 13) == 0);
    CHECK(strlen(kv->value.str) == 6);
    kv = scalar(f, "test.empty_string", GGUF_VALUE_TYPE_STRING);
    CHECK(kv->str_len == 0);
    CHECK(kv->value.str != NULL && kv->value.str[0] == '\0');

    /* A key with an embedded NUL: found by index only; its C string stops at the NUL. */
    kv = gguf_get_metadata_by_index(f, 16);
    CHECK(kv != NULL);
    CHECK(kv->key_len == 8);
    CHECK(memcmp(kv->key, "key\0tail", 9) == 0);
    CHECK(strlen(kv->key) == 3);
    CHECK(kv->type == GGUF_VALUE_TYPE_UINT32 && kv->value.u32 == 7);
    FAILS(gguf_get_metadata(f, "key") == NULL, GGUF_ERROR_CODE_NOT_FOUND, "key");
}

static struct cursor array_cursor(GGUFFile f, const GGUFMetadataKV *kv) {
    struct cursor c;
    c.p = kv->array_data;
    c.end = c.p + kv->array_bytes;
    c.big = gguf_byte_order(f) == GGUF_BYTE_ORDER_BIG;
    c.len_width = gguf_version(f) == 1 ? 4 : 8;
    return c;
}

static const GGUFMetadataKV *array(GGUFFile f, const char *key, uint32_t elem, uint64_t len,
                                   uint64_t bytes) {
    const GGUFMetadataKV *kv = get(f, key);
    CHECK(kv->type == GGUF_VALUE_TYPE_ARRAY);
    CHECK(kv->array_type == elem);
    CHECK(kv->value.u32 == elem);
    CHECK(kv->array_len == len);
    CHECK(kv->array_bytes == bytes);
    CHECK(kv->array_data != NULL);
    CHECK(kv->str_len == 0);
    return kv;
}

static void check_arrays(GGUFFile f) {
    const size_t w = gguf_version(f) == 1 ? 4 : 8;
    const GGUFMetadataKV *kv;
    struct cursor c;

    kv = array(f, "tokenizer.ggml.tokens", GGUF_VALUE_TYPE_STRING, 5, 5 * w + 3 + 0 + 6 + 3 + 4);
    c = array_cursor(f, kv);
    take_string(&c, "<s>", 3);
    take_string(&c, "", 0);
    take_string(&c, "h\xc3\xa9llo", 6);
    take_string(&c, "a\0b", 3);
    take_string(&c, "</s>", 4);
    CHECK(c.p == c.end);

    kv = array(f, "tokenizer.ggml.scores", GGUF_VALUE_TYPE_FLOAT32, 5, 20);
    c = array_cursor(f, kv);
    CHECK(take_f32(&c) == 0.5f);
    CHECK(take_f32(&c) == -1.0f);
    CHECK(take_f32(&c) == 3.25f);
    CHECK(take_f32(&c) == 0.0f);
    CHECK(take_f32(&c) == 100.0f);

    kv = array(f, "tokenizer.ggml.token_type", GGUF_VALUE_TYPE_INT32, 5, 20);
    c = array_cursor(f, kv);
    CHECK((int32_t)take(&c, 4) == 1);
    CHECK((int32_t)take(&c, 4) == -3);
    CHECK((int32_t)take(&c, 4) == INT32_MAX);
    CHECK((int32_t)take(&c, 4) == INT32_MIN);
    CHECK((int32_t)take(&c, 4) == 0);

    kv = array(f, "arr.u8", GGUF_VALUE_TYPE_UINT8, 3, 3);
    CHECK(memcmp(kv->array_data, "\x00\x01\xff", 3) == 0);
    kv = array(f, "arr.i8", GGUF_VALUE_TYPE_INT8, 3, 3);
    CHECK(memcmp(kv->array_data, "\x80\x00\x7f", 3) == 0);
    kv = array(f, "arr.u16", GGUF_VALUE_TYPE_UINT16, 3, 6);
    c = array_cursor(f, kv);
    CHECK(take(&c, 2) == 0 && take(&c, 2) == 65535 && take(&c, 2) == 1234);
    kv = array(f, "arr.i16", GGUF_VALUE_TYPE_INT16, 3, 6);
    c = array_cursor(f, kv);
    CHECK((int16_t)take(&c, 2) == -32768);
    CHECK((int16_t)take(&c, 2) == 32767);
    CHECK((int16_t)take(&c, 2) == -1);
    kv = array(f, "arr.u32", GGUF_VALUE_TYPE_UINT32, 3, 12);
    c = array_cursor(f, kv);
    CHECK(take(&c, 4) == 0 && take(&c, 4) == UINT32_MAX && take(&c, 4) == 123456789);
    kv = array(f, "arr.u64", GGUF_VALUE_TYPE_UINT64, 3, 24);
    c = array_cursor(f, kv);
    CHECK(take(&c, 8) == 0 && take(&c, 8) == UINT64_MAX && take(&c, 8) == UINT64_C(1) << 40);
    kv = array(f, "arr.i64", GGUF_VALUE_TYPE_INT64, 3, 24);
    c = array_cursor(f, kv);
    CHECK((int64_t)take(&c, 8) == INT64_MIN);
    CHECK((int64_t)take(&c, 8) == INT64_MAX);
    CHECK((int64_t)take(&c, 8) == -1);
    kv = array(f, "arr.f64", GGUF_VALUE_TYPE_FLOAT64, 3, 24);
    c = array_cursor(f, kv);
    CHECK(take_f64(&c) == 1.5 && take_f64(&c) == -0.125 && take_f64(&c) == F64_1E300);
    kv = array(f, "arr.bool", GGUF_VALUE_TYPE_BOOL, 3, 3);
    CHECK(memcmp(kv->array_data, "\x01\x00\x01", 3) == 0);

    array(f, "arr.empty_f32", GGUF_VALUE_TYPE_FLOAT32, 0, 0);
    array(f, "arr.empty_string", GGUF_VALUE_TYPE_STRING, 0, 0);

    /* [[1, 2] as UINT16, ["x"]]: each inner array is its element type, count, elements. */
    kv = array(f, "arr.nested", GGUF_VALUE_TYPE_ARRAY, 2, (4 + w + 2 * 2) + (4 + w + w + 1));
    c = array_cursor(f, kv);
    CHECK(take(&c, 4) == GGUF_VALUE_TYPE_UINT16);
    CHECK(take(&c, w) == 2);
    CHECK(take(&c, 2) == 1 && take(&c, 2) == 2);
    CHECK(take(&c, 4) == GGUF_VALUE_TYPE_STRING);
    CHECK(take(&c, w) == 1);
    take_string(&c, "x", 1);
    CHECK(c.p == c.end);
}

/* Every entry in file order: by index and by key give the same record. */
static void check_order(GGUFFile f, uint64_t expected_count) {
    CHECK(gguf_metadata_count(f) == expected_count);
    for (uint64_t i = 0; i < MODEL_KVS; i++) {
        const struct expected_kv *e = &MODEL[i];
        const GGUFMetadataKV *kv = gguf_get_metadata_by_index(f, i);
        CHECK(kv != NULL);
        CHECK(kv->index == i);
        CHECK(kv->key_len == e->key_len);
        CHECK(memcmp(kv->key, e->key, e->key_len + 1) == 0);
        CHECK(kv->type == e->type);
        CHECK(kv->array_type == e->array_type);
        CHECK(kv->array_len == e->array_len);
        if (strlen(e->key) == e->key_len) {
            CHECK(gguf_get_metadata(f, e->key) == kv);
            CHECK(gguf_get_metadata(f, e->key) == kv); /* the same pointer every time */
        }
        CHECK(gguf_get_metadata_by_index(f, i) == kv);
    }
}

static void check_failures(GGUFFile f, const char *label) {
    uint64_t count = gguf_metadata_count(f);
    FAILS(gguf_get_metadata(f, "no.such.key") == NULL, GGUF_ERROR_CODE_NOT_FOUND, label);
    FAILS(gguf_get_metadata(f, "") == NULL, GGUF_ERROR_CODE_NOT_FOUND, label);
    FAILS(gguf_get_metadata(f, "general.architecturE") == NULL, GGUF_ERROR_CODE_NOT_FOUND,
          "general.architecturE");
    FAILS(gguf_get_metadata(f, "general.architecture.") == NULL, GGUF_ERROR_CODE_NOT_FOUND, NULL);
    FAILS(gguf_get_metadata(f, NULL) == NULL, GGUF_ERROR_CODE_NULL_ARGUMENT, "NULL");
    FAILS(gguf_get_metadata(NULL, "general.name") == NULL, GGUF_ERROR_CODE_NULL_ARGUMENT, "NULL");
    FAILS(gguf_get_metadata_by_index(f, count) == NULL, GGUF_ERROR_CODE_INVALID_ARGUMENT, label);
    FAILS(gguf_get_metadata_by_index(f, count + 1) == NULL, GGUF_ERROR_CODE_INVALID_ARGUMENT,
          NULL);
    FAILS(gguf_get_metadata_by_index(f, UINT64_MAX) == NULL, GGUF_ERROR_CODE_INVALID_ARGUMENT,
          NULL);
    FAILS(gguf_get_metadata_by_index(NULL, 0) == NULL, GGUF_ERROR_CODE_NULL_ARGUMENT, "NULL");
    FAILS(gguf_metadata_count(NULL) == 0, GGUF_ERROR_CODE_NULL_ARGUMENT, "NULL");
}

static void check_model(GGUFFile f, const char *label, uint64_t expected_count) {
    fprintf(stderr, "metadata of %s\n", label);
    CHECK(f != NULL);
    check_order(f, expected_count);
    check_scalars(f);
    check_arrays(f);
    check_failures(f, label);
}

static void test_files(void) {
    static const char *const NAMES[] = {"full.gguf", "big.gguf", "v2.gguf", "v1.gguf",
                                        "v1big.gguf"};
    for (size_t i = 0; i < sizeof NAMES / sizeof NAMES[0]; i++) {
        const char *path = fixture(NAMES[i]);
        GGUFFile f = gguf_open(path);
        check_model(f, path, MODEL_KVS);
        gguf_close(f);

        size_t len;
        unsigned char *buf = read_file(path, &len);
        GGUFFile m = gguf_open_memory(buf, len);
        check_model(m, "<memory>", MODEL_KVS);
        gguf_close(m);
        free(buf);
    }
}

/* The alignment is an ordinary entry too. */
static void test_alignment_entry(void) {
    const char *path = fixture("align.gguf");
    GGUFFile f = gguf_open(path);
    check_model(f, path, MODEL_KVS + 1);
    const GGUFMetadataKV *kv = scalar(f, "general.alignment", GGUF_VALUE_TYPE_UINT32);
    CHECK(kv->value.u32 == 256);
    CHECK(kv->index == MODEL_KVS);
    CHECK(gguf_get_metadata_by_index(f, MODEL_KVS) == kv);
    CHECK(gguf_alignment(f) == 256);
    gguf_close(f);

    /* Without the entry the default applies. */
    f = gguf_open(fixture("full.gguf"));
    FAILS(gguf_get_metadata(f, "general.alignment") == NULL, GGUF_ERROR_CODE_NOT_FOUND, NULL);
    CHECK(gguf_alignment(f) == 32);
    gguf_close(f);
}

static void test_value_type_names(void) {
    static const char *const NAMES[] = {"UINT8",   "INT8",  "UINT16", "INT16", "UINT32",
                                        "INT32",   "FLOAT32", "BOOL", "STRING", "ARRAY",
                                        "UINT64",  "INT64", "FLOAT64"};
    CHECK(sizeof NAMES / sizeof NAMES[0] == GGUF_VALUE_TYPE_FLOAT64 + 1);
    for (uint32_t t = 0; t <= GGUF_VALUE_TYPE_FLOAT64; t++) {
        const char *name = gguf_value_type_name(t);
        CHECK(name != NULL);
        CHECK(strcmp(name, NAMES[t]) == 0);
        CHECK(gguf_value_type_name(t) == name); /* static */
    }
    CHECK(strcmp(gguf_value_type_name(GGUF_VALUE_TYPE_ARRAY), "ARRAY") == 0);
    FAILS(gguf_value_type_name(13) == NULL, GGUF_ERROR_CODE_INVALID_ARGUMENT, "13");
    FAILS(gguf_value_type_name(255) == NULL, GGUF_ERROR_CODE_INVALID_ARGUMENT, NULL);
    FAILS(gguf_value_type_name(UINT32_MAX) == NULL, GGUF_ERROR_CODE_INVALID_ARGUMENT, NULL);
}

/* A file without entries. */
static void test_no_entries(void) {
    GGUFFile f = gguf_open(fixture("empty.gguf"));
    CHECK(f != NULL);
    CHECK(gguf_metadata_count(f) == 0);
    FAILS(gguf_get_metadata_by_index(f, 0) == NULL, GGUF_ERROR_CODE_INVALID_ARGUMENT, NULL);
    FAILS(gguf_get_metadata(f, "general.name") == NULL, GGUF_ERROR_CODE_NOT_FOUND, NULL);
    gguf_close(f);
}

int main(int argc, char **argv) {
    g_argc = argc;
    g_argv = argv;
    test_files();
    test_alignment_entry();
    test_value_type_names();
    test_no_entries();
    printf("test_metadata: ok\n");
    return 0;
}
