/*
 * crosscheck: opens each file with libgguf and with ggml's own parser (libggml-base.so), both
 * linked into this one process, and prints one line per file:
 *
 *   FILE <tab> ours=ok|CODE <tab> ggml=ok|refused <tab> same|DIFF: what differs
 *
 * When both accept a file, every header field, key (name, type, value, array elements) and
 * tensor (name, type, shape, offset, size) is compared. tests/ggml_crosscheck.rs decides which
 * verdicts are expected.
 */
#include "ggml_gguf_abi.h"
#include "gguf.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void quiet(int level, const char *text, void *user_data) {
    (void)level;
    (void)text;
    (void)user_data;
}

static char diff[512];

#define DIFFER(...)                                                                            \
    do {                                                                                       \
        snprintf(diff, sizeof diff, __VA_ARGS__);                                              \
        return 0;                                                                              \
    } while (0)

static int same_array(GGUFFile f, const GGUFMetadataKV *kv, struct gguf_context *g, int64_t id) {
    if ((uint32_t)gguf_get_arr_type(g, id) != kv->array_type)
        DIFFER("key %s: array type %d vs %u", kv->key, gguf_get_arr_type(g, id), kv->array_type);
    if (gguf_get_arr_n(g, id) != kv->array_len)
        DIFFER("key %s: array length %zu vs %" PRIu64, kv->key, gguf_get_arr_n(g, id), kv->array_len);
    if (kv->array_type == GGUF_VALUE_TYPE_STRING) {
        /* Our strings by key when the key can be named in C; otherwise from the raw elements
         * (ggml reads only little-endian version 2 and 3 files: u64 length, then the bytes). */
        int by_key = strlen(kv->key) == kv->key_len;
        const unsigned char *raw = kv->array_data;
        for (uint64_t i = 0; i < kv->array_len; i++) {
            uint64_t len = 0;
            const char *ours;
            if (by_key) {
                ours = gguf_get_array_string(f, kv->key, i, &len);
            } else {
                memcpy(&len, raw, sizeof len);
                ours = (const char *)raw + sizeof len;
                raw += sizeof len + len;
            }
            const char *theirs = gguf_get_arr_str(g, id, (size_t)i);
            /* ggml's strings are C strings: compare up to our first NUL. */
            const char *nul = memchr(ours, 0, (size_t)len);
            size_t ours_len = nul ? (size_t)(nul - ours) : (size_t)len;
            if (strlen(theirs) != ours_len || memcmp(ours, theirs, ours_len) != 0)
                DIFFER("key %s: string %" PRIu64 " differs", kv->key, i);
        }
        return 1;
    }
    /* Numbers: ggml hands out the raw elements; ours are decoded to host order (the same on a
     * little-endian host, and ggml reads only little-endian files). */
    if (kv->array_bytes && memcmp(gguf_get_arr_data(g, id), kv->array_data, kv->array_bytes) != 0)
        DIFFER("key %s: array elements differ", kv->key);
    return 1;
}

static int same_value(GGUFFile f, const GGUFMetadataKV *kv, struct gguf_context *g, int64_t id) {
    const GGUFValue *v = &kv->value;
    switch (kv->type) {
    case GGUF_VALUE_TYPE_UINT8: return gguf_get_val_u8(g, id) == v->u32;
    case GGUF_VALUE_TYPE_INT8: return gguf_get_val_i8(g, id) == v->i32;
    case GGUF_VALUE_TYPE_UINT16: return gguf_get_val_u16(g, id) == v->u32;
    case GGUF_VALUE_TYPE_INT16: return gguf_get_val_i16(g, id) == v->i32;
    case GGUF_VALUE_TYPE_UINT32: return gguf_get_val_u32(g, id) == v->u32;
    case GGUF_VALUE_TYPE_INT32: return gguf_get_val_i32(g, id) == v->i32;
    case GGUF_VALUE_TYPE_FLOAT32: {
        float a = gguf_get_val_f32(g, id);
        return memcmp(&a, &v->f32, sizeof a) == 0;
    }
    case GGUF_VALUE_TYPE_BOOL: return gguf_get_val_bool(g, id) == v->b;
    case GGUF_VALUE_TYPE_STRING: return strcmp(gguf_get_val_str(g, id), v->str) == 0;
    case GGUF_VALUE_TYPE_UINT64: return gguf_get_val_u64(g, id) == v->u64;
    case GGUF_VALUE_TYPE_INT64: return gguf_get_val_i64(g, id) == v->i64;
    case GGUF_VALUE_TYPE_FLOAT64: {
        double a = gguf_get_val_f64(g, id);
        return memcmp(&a, &v->f64, sizeof a) == 0;
    }
    case GGUF_VALUE_TYPE_ARRAY: return same_array(f, kv, g, id);
    }
    return 0;
}

static int same_file(GGUFFile f, struct gguf_context *g) {
    if (gguf_get_version(g) != gguf_version(f))
        DIFFER("version %u vs %u", gguf_get_version(g), gguf_version(f));
    if (gguf_get_alignment(g) != gguf_alignment(f))
        DIFFER("alignment %zu vs %" PRIu64, gguf_get_alignment(g), gguf_alignment(f));
    if (gguf_get_n_tensors(g) > 0 && gguf_get_data_offset(g) != gguf_data_offset(f))
        DIFFER("data offset %zu vs %" PRIu64, gguf_get_data_offset(g), gguf_data_offset(f));
    if ((uint64_t)gguf_get_n_kv(g) != gguf_metadata_count(f))
        DIFFER("%" PRId64 " keys vs %" PRIu64, gguf_get_n_kv(g), gguf_metadata_count(f));
    for (uint64_t i = 0; i < gguf_metadata_count(f); i++) {
        const GGUFMetadataKV *kv = gguf_get_metadata_by_index(f, i);
        if (strcmp(gguf_get_key(g, (int64_t)i), kv->key) != 0)
            DIFFER("key %" PRIu64 ": %s vs %s", i, gguf_get_key(g, (int64_t)i), kv->key);
        if ((uint32_t)gguf_get_kv_type(g, (int64_t)i) != kv->type)
            DIFFER("key %s: type %d vs %u", kv->key, gguf_get_kv_type(g, (int64_t)i), kv->type);
        if (gguf_find_key(g, kv->key) != (int64_t)i) DIFFER("key %s: found elsewhere", kv->key);
        if (!same_value(f, kv, g, (int64_t)i)) {
            if (!diff[0]) snprintf(diff, sizeof diff, "key %s: value differs", kv->key);
            return 0;
        }
    }
    if ((uint64_t)gguf_get_n_tensors(g) != gguf_tensor_count(f))
        DIFFER("%" PRId64 " tensors vs %" PRIu64, gguf_get_n_tensors(g), gguf_tensor_count(f));
    for (uint64_t i = 0; i < gguf_tensor_count(f); i++) {
        const GGUFTensorInfo *t = gguf_get_tensor_by_index(f, i);
        const int64_t *ne = gguf_get_tensor_ne(g, (int64_t)i);
        if (strcmp(gguf_get_tensor_name(g, (int64_t)i), t->name) != 0)
            DIFFER("tensor %" PRIu64 ": %s vs %s", i, gguf_get_tensor_name(g, (int64_t)i), t->name);
        if ((uint32_t)gguf_get_tensor_type(g, (int64_t)i) != t->dtype)
            DIFFER("tensor %s: type %d vs %u", t->name, gguf_get_tensor_type(g, (int64_t)i), t->dtype);
        for (int d = 0; d < 4; d++)
            if ((uint64_t)ne[d] != t->dims[d])
                DIFFER("tensor %s: ne[%d] %" PRId64 " vs %" PRIu64, t->name, d, ne[d], t->dims[d]);
        if (gguf_get_tensor_offset(g, (int64_t)i) != t->offset)
            DIFFER("tensor %s: offset %zu vs %" PRIu64, t->name, gguf_get_tensor_offset(g, (int64_t)i), t->offset);
        if (gguf_get_tensor_size(g, (int64_t)i) != t->size_bytes)
            DIFFER("tensor %s: size %zu vs %" PRIu64, t->name, gguf_get_tensor_size(g, (int64_t)i), t->size_bytes);
        if (gguf_find_tensor(g, t->name) != (int64_t)i) DIFFER("tensor %s: found elsewhere", t->name);
    }
    return 1;
}

int main(int argc, char **argv) {
    if (!getenv("CROSSCHECK_VERBOSE")) ggml_log_set(quiet, NULL);
    for (int i = 1; i < argc; i++) {
        GGUFFile f = gguf_open(argv[i]);
        struct gguf_init_params params = {true, NULL};
        struct gguf_context *g = gguf_init_from_file(argv[i], params);
        char ours[64];
        if (f) {
            snprintf(ours, sizeof ours, "ok");
        } else {
            snprintf(ours, sizeof ours, "%u", (unsigned)gguf_last_error_code());
        }
        diff[0] = '\0';
        const char *verdict = "same";
        if (f && g && !same_file(f, g)) verdict = "DIFF";
        printf("%s\tours=%s\tggml=%s\t%s%s%s\n", argv[i], ours, g ? "ok" : "refused", verdict,
               diff[0] ? ": " : "", diff);
        if (g) gguf_free(g);
        gguf_close(f);
    }
    return 0;
}
