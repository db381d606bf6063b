/*
 * test_open.c: gguf_open / gguf_open_memory / gguf_close and the file-level facts (gguf_version,
 * gguf_byte_order, gguf_alignment, gguf_data_offset, gguf_file_size, the counts) on every valid
 * fixture; a handle opened with gguf_open_memory on the file's bytes gives results identical to
 * the one opened by path (every entry, array, tensor and byte compared); every strict prefix of
 * a model fails to open from memory without reading past it (each in an exact-size allocation,
 * so ASan sees any over-read); handles are independent.
 *
 * Usage: test_open FIXTURE... (every path tests/c_api.rs writes; picked by file name).
 */
#include "gguf.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

/* ---- the tests ------------------------------------------------------------------------------ */

/* What every valid fixture holds (tests/c_api.rs: `metadata()` and `tensors()`). */
#define MODEL_KVS 32
#define MODEL_TENSORS 8

struct valid {
    const char *name;
    uint32_t version;
    uint32_t order;
    uint64_t alignment;
    uint64_t kvs;
};

static const struct valid VALID[] = {
    {"full.gguf", 3, GGUF_BYTE_ORDER_LITTLE, 32, MODEL_KVS},
    {"big.gguf", 3, GGUF_BYTE_ORDER_BIG, 32, MODEL_KVS},
    {"v2.gguf", 2, GGUF_BYTE_ORDER_LITTLE, 32, MODEL_KVS},
    {"v1.gguf", 1, GGUF_BYTE_ORDER_LITTLE, 32, MODEL_KVS},
    {"v1big.gguf", 1, GGUF_BYTE_ORDER_BIG, 32, MODEL_KVS},
    {"align.gguf", 3, GGUF_BYTE_ORDER_LITTLE, 256, MODEL_KVS + 1},
};

static size_t elem_size(uint32_t type) {
    switch (type) {
    case GGUF_VALUE_TYPE_UINT8:
    case GGUF_VALUE_TYPE_INT8:
    case GGUF_VALUE_TYPE_BOOL: return 1;
    case GGUF_VALUE_TYPE_UINT16:
    case GGUF_VALUE_TYPE_INT16: return 2;
    case GGUF_VALUE_TYPE_UINT32:
    case GGUF_VALUE_TYPE_INT32:
    case GGUF_VALUE_TYPE_FLOAT32: return 4;
    case GGUF_VALUE_TYPE_UINT64:
    case GGUF_VALUE_TYPE_INT64:
    case GGUF_VALUE_TYPE_FLOAT64: return 8;
    default: return 0;
    }
}

/* The typed getter for arrays of `type`, through one signature. */
static const void *typed_array(GGUFFile f, const char *key, uint32_t type, uint64_t *n) {
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
    default: return NULL;
    }
}

static int inside(const void *p, uint64_t len, const unsigned char *buf, size_t buf_len) {
    const unsigned char *q = p;
    return q >= buf && q <= buf + buf_len && len <= (uint64_t)(buf + buf_len - q);
}

/* Everything `a` (opened by path) and `b` (opened from `buf`) report must be the same; every
 * pointer `b` hands out into the file must point into `buf`. */
static void check_identical(GGUFFile a, GGUFFile b, const unsigned char *buf, size_t len) {
    CHECK(gguf_version(a) == gguf_version(b));
    CHECK(gguf_byte_order(a) == gguf_byte_order(b));
    CHECK(gguf_alignment(a) == gguf_alignment(b));
    CHECK(gguf_data_offset(a) == gguf_data_offset(b));
    CHECK(gguf_file_size(a) == gguf_file_size(b));
    CHECK(gguf_file_size(b) == len);
    CHECK(gguf_metadata_count(a) == gguf_metadata_count(b));
    CHECK(gguf_tensor_count(a) == gguf_tensor_count(b));

    for (uint64_t i = 0; i < gguf_metadata_count(a); i++) {
        const GGUFMetadataKV *x = gguf_get_metadata_by_index(a, i);
        const GGUFMetadataKV *y = gguf_get_metadata_by_index(b, i);
        CHECK(x != NULL && y != NULL && x != y);
        CHECK(x->key_len == y->key_len);
        CHECK(memcmp(x->key, y->key, x->key_len + 1) == 0);
        CHECK(x->type == y->type);
        CHECK(x->index == i && y->index == i);
        CHECK(x->str_len == y->str_len);
        CHECK(x->array_len == y->array_len);
        CHECK(x->array_type == y->array_type);
        CHECK(x->array_bytes == y->array_bytes);
        if (x->key_len == strlen(x->key)) CHECK(gguf_get_metadata(b, x->key) == y);
        if (x->type == GGUF_VALUE_TYPE_STRING) {
            CHECK(memcmp(x->value.str, y->value.str, x->str_len + 1) == 0);
        } else if (x->type == GGUF_VALUE_TYPE_ARRAY) {
            CHECK(x->value.u32 == y->value.u32);
            CHECK(x->array_data != NULL && y->array_data != NULL);
            CHECK(inside(y->array_data, y->array_bytes, buf, len));
            CHECK(memcmp(x->array_data, y->array_data, x->array_bytes) == 0);
            uint64_t nx = 1, ny = 2;
            if (x->array_type == GGUF_VALUE_TYPE_STRING) {
                const char *const *sx = gguf_get_string_array(a, x->key, &nx);
                const char *const *sy = gguf_get_string_array(b, y->key, &ny);
                CHECK(sx != NULL && sy != NULL && nx == ny && nx == x->array_len);
                for (uint64_t j = 0; j < nx; j++) {
                    CHECK(strcmp(sx[j], sy[j]) == 0);
                    uint64_t lx = 7, ly = 8;
                    const char *px = gguf_get_array_string(a, x->key, j, &lx);
                    const char *py = gguf_get_array_string(b, y->key, j, &ly);
                    CHECK(px != NULL && py != NULL && lx == ly);
                    CHECK(memcmp(px, py, lx) == 0);
                    CHECK(inside(py, ly, buf, len));
                }
            } else if (x->array_type != GGUF_VALUE_TYPE_ARRAY) {
                const void *vx = typed_array(a, x->key, x->array_type, &nx);
                const void *vy = typed_array(b, y->key, y->array_type, &ny);
                CHECK(vx != NULL && vy != NULL && nx == ny && nx == x->array_len);
                CHECK(memcmp(vx, vy, nx * elem_size(x->array_type)) == 0);
            }
        } else {
            CHECK(memcmp(&x->value, &y->value, sizeof x->value) == 0);
        }
    }

    for (uint64_t i = 0; i < gguf_tensor_count(a); i++) {
        const GGUFTensorInfo *x = gguf_get_tensor_by_index(a, i);
        const GGUFTensorInfo *y = gguf_get_tensor_by_index(b, i);
        CHECK(x != NULL && y != NULL && x != y);
        CHECK(x->name_len == y->name_len);
        CHECK(memcmp(x->name, y->name, x->name_len + 1) == 0);
        CHECK(x->n_elements == y->n_elements);
        CHECK(x->n_dims == y->n_dims);
        CHECK(memcmp(x->dims, y->dims, sizeof x->dims) == 0);
        CHECK(x->offset == y->offset);
        CHECK(x->dtype == y->dtype);
        CHECK(x->size_bytes == y->size_bytes);
        CHECK(x->file_offset == y->file_offset);
        CHECK(x->index == i && y->index == i);
        const void *dx = gguf_tensor_data(a, x);
        const void *dy = gguf_tensor_data(b, y);
        CHECK(dx != NULL && dy != NULL);
        CHECK((const unsigned char *)dy == buf + y->file_offset);
        CHECK(inside(dy, y->size_bytes, buf, len));
        CHECK(memcmp(dx, dy, x->size_bytes) == 0);
        CHECK(memcmp(dy, buf + x->file_offset, x->size_bytes) == 0);
    }
}

static void test_valid_files(void) {
    for (size_t i = 0; i < sizeof VALID / sizeof VALID[0]; i++) {
        const struct valid *v = &VALID[i];
        const char *path = fixture(v->name);
        fprintf(stderr, "valid file %s\n", v->name);
        size_t len;
        unsigned char *buf = read_file(path, &len);

        gguf_clear_error();
        GGUFFile f = gguf_open(path);
        CHECK(f != NULL);
        CHECK(gguf_last_error_code() == GGUF_ERROR_CODE_NONE);
        CHECK(gguf_version(f) == v->version);
        CHECK(gguf_byte_order(f) == v->order);
        CHECK(gguf_alignment(f) == v->alignment);
        CHECK(gguf_file_size(f) == len);
        CHECK(gguf_data_offset(f) % v->alignment == 0);
        CHECK(gguf_data_offset(f) <= gguf_file_size(f));
        CHECK(gguf_metadata_count(f) == v->kvs);
        CHECK(gguf_tensor_count(f) == MODEL_TENSORS);
        /* The header bytes say the same. */
        CHECK(memcmp(buf, "GGUF", 4) == 0);
        uint32_t version = v->order == GGUF_BYTE_ORDER_LITTLE
                               ? (uint32_t)buf[4] | (uint32_t)buf[5] << 8
                               : (uint32_t)buf[7] | (uint32_t)buf[6] << 8;
        CHECK(version == v->version);

        GGUFFile m = gguf_open_memory(buf, len);
        CHECK(m != NULL);
        check_identical(f, m, buf, len);
        /* The lazily built arrays were built on both handles by check_identical; again, now
         * cached. */
        check_identical(f, m, buf, len);

        gguf_close(m);
        gguf_close(f);
        free(buf);
    }
}

/* A file without metadata or tensors. */
static void test_empty_file(void) {
    const char *path = fixture("empty.gguf");
    size_t len;
    unsigned char *buf = read_file(path, &len);
    GGUFFile f = gguf_open(path);
    CHECK(f != NULL);
    CHECK(gguf_version(f) == 3);
    CHECK(gguf_byte_order(f) == GGUF_BYTE_ORDER_LITTLE);
    CHECK(gguf_alignment(f) == 32);
    CHECK(gguf_metadata_count(f) == 0);
    CHECK(gguf_tensor_count(f) == 0);
    CHECK(gguf_file_size(f) == len);
    CHECK(gguf_data_offset(f) >= 24);
    CHECK(gguf_data_offset(f) % 32 == 0);
    CHECK(gguf_get_metadata_by_index(f, 0) == NULL);
    CHECK(gguf_last_error_code() == GGUF_ERROR_CODE_INVALID_ARGUMENT);
    CHECK(gguf_get_tensor_by_index(f, 0) == NULL);
    CHECK(gguf_last_error_code() == GGUF_ERROR_CODE_INVALID_ARGUMENT);
    GGUFFile m = gguf_open_memory(buf, len);
    CHECK(m != NULL);
    check_identical(f, m, buf, len);
    gguf_close(m);
    gguf_close(f);

    /* Just the 24-byte header: valid too. */
    GGUFFile h = gguf_open_memory(buf, 24);
    CHECK(h != NULL);
    CHECK(gguf_metadata_count(h) == 0 && gguf_tensor_count(h) == 0);
    CHECK(gguf_file_size(h) == 24);
    gguf_close(h);
    free(buf);
}

/* Every strict prefix of a model that cuts into its header or tensor data fails to open, with a
 * parse error at an offset inside the prefix; the prefixes that only drop trailing padding open. */
static void test_every_prefix(const char *name) {
    const char *path = fixture(name);
    size_t len;
    unsigned char *buf = read_file(path, &len);
    GGUFFile f = gguf_open_memory(buf, len);
    CHECK(f != NULL);
    uint64_t data_end = 0;
    for (uint64_t i = 0; i < gguf_tensor_count(f); i++) {
        const GGUFTensorInfo *t = gguf_get_tensor_by_index(f, i);
        if (t->file_offset + t->size_bytes > data_end) data_end = t->file_offset + t->size_bytes;
    }
    gguf_close(f);
    CHECK(data_end > 0 && data_end <= len);

    for (size_t cut = 0; cut < len; cut++) {
        unsigned char *prefix = malloc(cut > 0 ? cut : 1);
        CHECK(prefix != NULL);
        memcpy(prefix, buf, cut);
        gguf_clear_error();
        GGUFFile p = gguf_open_memory(prefix, cut);
        if (cut < data_end) {
            if (p != NULL) {
                fprintf(stderr, "%s cut at %zu opened\n", name, cut);
                CHECK(p == NULL);
            }
            uint32_t code = gguf_last_error_code();
            CHECK(code >= GGUF_ERROR_CODE_TRUNCATED && code <= GGUF_ERROR_CODE_DATA_OVERLAP);
            CHECK(gguf_last_error_offset() >= 0);
            CHECK((uint64_t)gguf_last_error_offset() <= cut);
            CHECK(strstr(gguf_last_error(), "<memory>") != NULL);
        } else {
            CHECK(p != NULL);
            CHECK(gguf_file_size(p) == cut);
            CHECK(gguf_tensor_count(p) == MODEL_TENSORS);
            gguf_close(p);
        }
        free(prefix);
    }
    free(buf);
}

/* Two handles on one file are independent: their records differ, closing one leaves the other. */
static void test_independent_handles(void) {
    const char *path = fixture("full.gguf");
    GGUFFile a = gguf_open(path);
    GGUFFile b = gguf_open(path);
    CHECK(a != NULL && b != NULL && a != b);
    const GGUFTensorInfo *ta = gguf_get_tensor(a, "token_embd.weight");
    const GGUFTensorInfo *tb = gguf_get_tensor(b, "token_embd.weight");
    CHECK(ta != NULL && tb != NULL && ta != tb);
    const float *fa = gguf_get_float_array(a, "tokenizer.ggml.scores", NULL);
    const float *fb = gguf_get_float_array(b, "tokenizer.ggml.scores", NULL);
    CHECK(fa != NULL && fb != NULL && fa != fb);
    gguf_close(a);
    CHECK(gguf_tensor_count(b) == MODEL_TENSORS);
    CHECK(gguf_get_tensor(b, "token_embd.weight") == tb);
    CHECK(gguf_tensor_data(b, tb) != NULL);
    CHECK(fb[0] == 0.5f);
    gguf_close(b);
}

/* gguf_close(NULL) is a no-op; so is opening and closing many times (ASan checks for leaks). */
static void test_close(void) {
    gguf_clear_error();
    gguf_close(NULL);
    CHECK(gguf_last_error_code() == GGUF_ERROR_CODE_NONE);
    for (int i = 0; i < 50; i++) {
        GGUFFile f = gguf_open(fixture("full.gguf"));
        CHECK(f != NULL);
        CHECK(gguf_get_string_array(f, "tokenizer.ggml.tokens", NULL) != NULL);
        CHECK(gguf_get_array_string(f, "tokenizer.ggml.tokens", 2, NULL) != NULL);
        CHECK(gguf_get_uint64_array(f, "arr.u64", NULL) != NULL);
        gguf_close(f);
    }
}

int main(int argc, char **argv) {
    g_argc = argc;
    g_argv = argv;
    test_valid_files();
    test_empty_file();
    test_every_prefix("full.gguf");
    test_every_prefix("v1big.gguf");
    test_independent_handles();
    test_close();
    printf("test_open: ok\n");
    return 0;
}
