/*
 * test_tensors.c: gguf_tensor_count, gguf_get_tensor, gguf_get_tensor_by_index, every field of
 * GGUFTensorInfo (dims padded with 1, n_elements, size_bytes, offset, file_offset ==
 * gguf_data_offset + offset, name_len for a name with an embedded NUL) and gguf_tensor_data
 * (the exact bytes the fixture wrote, aligned), in every version and byte order, with a custom
 * alignment, and opened from memory; lookups that fail, including a GGUFTensorInfo from another
 * handle, a copy, and one past the table; the dtype helpers (gguf_dtype_name,
 * gguf_dtype_block_size, gguf_dtype_block_bytes) for every ggml type and unknown ids.
 *
 * Usage: test_tensors FIXTURE... (every path tests/c_api.rs writes; picked by file name).
 */
#include "gguf.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

/* ---- the model's tensors (tests/c_api.rs: `tensors()`) ------------------------------------ */

struct expected_tensor {
    const char *name;
    uint64_t name_len;
    uint32_t n_dims;
    uint64_t dims[4];
    uint32_t dtype;
    uint64_t n_elements;
    uint64_t size_bytes;
};

#define T(n, nd, d0, d1, d2, d3, t, ne, sz) {n, sizeof n - 1, nd, {d0, d1, d2, d3}, GGUF_DATA_TYPE_##t, ne, sz}

static const struct expected_tensor TENSORS[] = {
    T("token_embd.weight", 2, 4, 3, 1, 1, F32, 12, 48),
    T("blk.0.attn_q.weight", 2, 64, 2, 1, 1, Q4_0, 128, 4 * 18),
    T("blk.0.ffn_down.weight", 2, 256, 2, 1, 1, Q4_K, 512, 2 * 144),
    T("scalar", 0, 1, 1, 1, 1, F16, 1, 2),
    T("empty", 2, 0, 5, 1, 1, F32, 0, 0),
    T("four_d", 4, 2, 3, 4, 5, I8, 120, 120),
    T("nul\0name", 1, 3, 1, 1, 1, I32, 3, 12),
    T("output_norm.weight", 1, 7, 1, 1, 1, F32, 7, 28),
};
#define N_TENSORS (sizeof TENSORS / sizeof TENSORS[0])

/* Byte j of tensor k's data, as tests/c_api.rs `pattern()` writes it. */
static unsigned char pattern(uint64_t k, uint64_t j) {
    return (unsigned char)((k * 37 + j * 11 + 1) & 0xff);
}

static uint64_t round_up(uint64_t x, uint64_t a) {
    return (x + a - 1) / a * a;
}

/* Checks every tensor of `f`; `buf` is the memory it was opened from (NULL for a mapped file). */
static void check_tensors(GGUFFile f, const char *label, uint64_t alignment,
                          const unsigned char *buf) {
    fprintf(stderr, "tensors of %s\n", label);
    CHECK(f != NULL);
    CHECK(gguf_tensor_count(f) == N_TENSORS);
    CHECK(gguf_alignment(f) == alignment);
    const uint64_t data_offset = gguf_data_offset(f);
    const uint64_t file_size = gguf_file_size(f);
    CHECK(data_offset % alignment == 0);
    uint64_t next = 0; /* where the writer puts the next tensor's data */

    for (uint64_t k = 0; k < N_TENSORS; k++) {
        const struct expected_tensor *e = &TENSORS[k];
        gguf_clear_error();
        const GGUFTensorInfo *t = gguf_get_tensor_by_index(f, k);
        CHECK(t != NULL);
        CHECK(t->index == k);
        CHECK(t->name_len == e->name_len);
        CHECK(memcmp(t->name, e->name, e->name_len + 1) == 0);
        CHECK(t->n_dims == e->n_dims);
        for (int d = 0; d < 4; d++) CHECK(t->dims[d] == e->dims[d]);
        for (uint32_t d = t->n_dims; d < 4; d++) CHECK(t->dims[d] == 1);
        CHECK(t->n_elements == e->n_elements);
        CHECK(t->n_elements == t->dims[0] * t->dims[1] * t->dims[2] * t->dims[3]);
        CHECK(t->dtype == e->dtype);
        CHECK(t->size_bytes == e->size_bytes);
        CHECK(t->size_bytes ==
              t->n_elements / gguf_dtype_block_size(t->dtype) * gguf_dtype_block_bytes(t->dtype));
        CHECK(t->offset == next);
        CHECK(t->offset % alignment == 0);
        CHECK(t->file_offset == data_offset + t->offset);
        CHECK(t->file_offset % alignment == 0);
        CHECK(t->file_offset + t->size_bytes <= file_size);
        next = round_up(t->offset + t->size_bytes, alignment);

        /* By name: the same record, every time. */
        if (strlen(e->name) == e->name_len) {
            CHECK(gguf_get_tensor(f, e->name) == t);
            CHECK(gguf_get_tensor(f, e->name) == t);
        } else {
            FAILS(gguf_get_tensor(f, e->name) == NULL, GGUF_ERROR_CODE_NOT_FOUND, label);
        }
        CHECK(gguf_get_tensor_by_index(f, k) == t);

        /* The data: the bytes written, in place. */
        const unsigned char *data = gguf_tensor_data(f, t);
        CHECK(data != NULL);
        CHECK(gguf_tensor_data(f, t) == (const void *)data);
        for (uint64_t j = 0; j < t->size_bytes; j++) CHECK(data[j] == pattern(k, j));
        if (buf != NULL) {
            CHECK(data == buf + t->file_offset);
        } else if (alignment <= 4096) {
            /* A mapping starts on a page boundary, so file alignment is address alignment. */
            CHECK((uintptr_t)data % alignment == 0);
        }
        CHECK(gguf_last_error_code() == GGUF_ERROR_CODE_NONE);
    }
    /* The writer pads the last tensor's data; nothing follows it. */
    CHECK(data_offset + next == file_size);
}

static void check_failures(GGUFFile f, GGUFFile other, const char *label) {
    const GGUFTensorInfo *first = gguf_get_tensor_by_index(f, 0);
    const GGUFTensorInfo *last = gguf_get_tensor_by_index(f, N_TENSORS - 1);
    CHECK(first != NULL && last != NULL);

    FAILS(gguf_get_tensor(f, "no.such.tensor") == NULL, GGUF_ERROR_CODE_NOT_FOUND, label);
    FAILS(gguf_get_tensor(f, "no.such.tensor") == NULL, GGUF_ERROR_CODE_NOT_FOUND,
          "no.such.tensor");
    FAILS(gguf_get_tensor(f, "") == NULL, GGUF_ERROR_CODE_NOT_FOUND, NULL);
    FAILS(gguf_get_tensor(f, "nul") == NULL, GGUF_ERROR_CODE_NOT_FOUND, NULL);
    FAILS(gguf_get_tensor(f, "token_embd.weigh") == NULL, GGUF_ERROR_CODE_NOT_FOUND, NULL);
    FAILS(gguf_get_tensor(f, NULL) == NULL, GGUF_ERROR_CODE_NULL_ARGUMENT, "NULL");
    FAILS(gguf_get_tensor(NULL, "scalar") == NULL, GGUF_ERROR_CODE_NULL_ARGUMENT, "NULL");
    FAILS(gguf_get_tensor_by_index(f, N_TENSORS) == NULL, GGUF_ERROR_CODE_INVALID_ARGUMENT, label);
    FAILS(gguf_get_tensor_by_index(f, UINT64_MAX) == NULL, GGUF_ERROR_CODE_INVALID_ARGUMENT, NULL);
    FAILS(gguf_get_tensor_by_index(NULL, 0) == NULL, GGUF_ERROR_CODE_NULL_ARGUMENT, "NULL");
    FAILS(gguf_tensor_count(NULL) == 0, GGUF_ERROR_CODE_NULL_ARGUMENT, "NULL");

    /* gguf_tensor_data only takes this handle's own records. */
    FAILS(gguf_tensor_data(f, NULL) == NULL, GGUF_ERROR_CODE_NULL_ARGUMENT, "NULL");
    FAILS(gguf_tensor_data(NULL, first) == NULL, GGUF_ERROR_CODE_NULL_ARGUMENT, "NULL");
    const GGUFTensorInfo *foreign = gguf_get_tensor_by_index(other, 0);
    CHECK(foreign != NULL && foreign != first);
    FAILS(gguf_tensor_data(f, foreign) == NULL, GGUF_ERROR_CODE_INVALID_ARGUMENT, label);
    FAILS(gguf_tensor_data(other, first) == NULL, GGUF_ERROR_CODE_INVALID_ARGUMENT, NULL);
    GGUFTensorInfo copy = *first;
    FAILS(gguf_tensor_data(f, &copy) == NULL, GGUF_ERROR_CODE_INVALID_ARGUMENT, NULL);
    FAILS(gguf_tensor_data(f, last + 1) == NULL, GGUF_ERROR_CODE_INVALID_ARGUMENT, NULL);
    CHECK(gguf_tensor_data(f, last) != NULL);
    CHECK(gguf_tensor_data(other, foreign) != NULL);
}

static void test_files(void) {
    static const struct {
        const char *name;
        uint64_t alignment;
    } FILES[] = {{"full.gguf", 32}, {"big.gguf", 32},     {"v2.gguf", 32},
                 {"v1.gguf", 32},   {"v1big.gguf", 32},   {"align.gguf", 256}};
    GGUFFile other = gguf_open(fixture("full.gguf"));
    CHECK(other != NULL);
    for (size_t i = 0; i < sizeof FILES / sizeof FILES[0]; i++) {
        const char *path = fixture(FILES[i].name);
        GGUFFile f = gguf_open(path);
        check_tensors(f, path, FILES[i].alignment, NULL);
        check_failures(f, other, path);
        gguf_close(f);

        size_t len;
        unsigned char *buf = read_file(path, &len);
        GGUFFile m = gguf_open_memory(buf, len);
        check_tensors(m, "<memory>", FILES[i].alignment, buf);
        check_failures(m, other, "<memory>");
        gguf_close(m);
        free(buf);
    }
    gguf_close(other);

    /* A file without tensors takes no record at all. */
    GGUFFile e = gguf_open(fixture("empty.gguf"));
    GGUFFile f = gguf_open(fixture("full.gguf"));
    CHECK(e != NULL && f != NULL);
    CHECK(gguf_tensor_count(e) == 0);
    FAILS(gguf_get_tensor_by_index(e, 0) == NULL, GGUF_ERROR_CODE_INVALID_ARGUMENT, NULL);
    FAILS(gguf_get_tensor(e, "scalar") == NULL, GGUF_ERROR_CODE_NOT_FOUND, NULL);
    FAILS(gguf_tensor_data(e, gguf_get_tensor_by_index(f, 0)) == NULL,
          GGUF_ERROR_CODE_INVALID_ARGUMENT, NULL);
    gguf_close(f);
    gguf_close(e);
}

/* Every data type ggml defines, with its block geometry (tests/data/ggml-types.tsv). */
static const struct {
    uint32_t id;
    const char *name;
    uint64_t block_size;
    uint64_t block_bytes;
} DTYPES[] = {
    {GGUF_DATA_TYPE_F32, "F32", 1, 4},
    {GGUF_DATA_TYPE_F16, "F16", 1, 2},
    {GGUF_DATA_TYPE_Q4_0, "Q4_0", 32, 18},
    {GGUF_DATA_TYPE_Q4_1, "Q4_1", 32, 20},
    {GGUF_DATA_TYPE_Q5_0, "Q5_0", 32, 22},
    {GGUF_DATA_TYPE_Q5_1, "Q5_1", 32, 24},
    {GGUF_DATA_TYPE_Q8_0, "Q8_0", 32, 34},
    {GGUF_DATA_TYPE_Q8_1, "Q8_1", 32, 36},
    {GGUF_DATA_TYPE_Q2_K, "Q2_K", 256, 84},
    {GGUF_DATA_TYPE_Q3_K, "Q3_K", 256, 110},
    {GGUF_DATA_TYPE_Q4_K, "Q4_K", 256, 144},
    {GGUF_DATA_TYPE_Q5_K, "Q5_K", 256, 176},
    {GGUF_DATA_TYPE_Q6_K, "Q6_K", 256, 210},
    {GGUF_DATA_TYPE_Q8_K, "Q8_K", 256, 292},
    {GGUF_DATA_TYPE_IQ2_XXS, "IQ2_XXS", 256, 66},
    {GGUF_DATA_TYPE_IQ2_XS, "IQ2_XS", 256, 74},
    {GGUF_DATA_TYPE_IQ3_XXS, "IQ3_XXS", 256, 98},
    {GGUF_DATA_TYPE_IQ1_S, "IQ1_S", 256, 50},
    {GGUF_DATA_TYPE_IQ4_NL, "IQ4_NL", 32, 18},
    {GGUF_DATA_TYPE_IQ3_S, "IQ3_S", 256, 110},
    {GGUF_DATA_TYPE_IQ2_S, "IQ2_S", 256, 82},
    {GGUF_DATA_TYPE_IQ4_XS, "IQ4_XS", 256, 136},
    {GGUF_DATA_TYPE_I8, "I8", 1, 1},
    {GGUF_DATA_TYPE_I16, "I16", 1, 2},
    {GGUF_DATA_TYPE_I32, "I32", 1, 4},
    {GGUF_DATA_TYPE_I64, "I64", 1, 8},
    {GGUF_DATA_TYPE_F64, "F64", 1, 8},
    {GGUF_DATA_TYPE_IQ1_M, "IQ1_M", 256, 56},
    {GGUF_DATA_TYPE_BF16, "BF16", 1, 2},
    {GGUF_DATA_TYPE_TQ1_0, "TQ1_0", 256, 54},
    {GGUF_DATA_TYPE_TQ2_0, "TQ2_0", 256, 66},
    {GGUF_DATA_TYPE_MXFP4, "MXFP4", 32, 17},
    {GGUF_DATA_TYPE_NVFP4, "NVFP4", 64, 36},
    {GGUF_DATA_TYPE_Q1_0, "Q1_0", 128, 18},
    {GGUF_DATA_TYPE_Q2_0, "Q2_0", 64, 18},
};
#define N_DTYPES (sizeof DTYPES / sizeof DTYPES[0])

static void test_dtypes(void) {
    /* The ids are ggml's. */
    CHECK(GGUF_DATA_TYPE_Q4_K == 12 && GGUF_DATA_TYPE_BF16 == 30 && GGUF_DATA_TYPE_MXFP4 == 39);

    /* Every known id. */
    for (size_t i = 0; i < N_DTYPES; i++) {
        gguf_clear_error();
        const char *name = gguf_dtype_name(DTYPES[i].id);
        CHECK(name != NULL);
        if (strcmp(name, DTYPES[i].name) != 0) fprintf(stderr, "dtype %s\n", DTYPES[i].name);
        CHECK(strcmp(name, DTYPES[i].name) == 0);
        CHECK(gguf_dtype_name(DTYPES[i].id) == name); /* a static string */
        CHECK(gguf_dtype_block_size(DTYPES[i].id) == DTYPES[i].block_size);
        CHECK(gguf_dtype_block_bytes(DTYPES[i].id) == DTYPES[i].block_bytes);
        CHECK(gguf_last_error_code() == GGUF_ERROR_CODE_NONE);
    }
    CHECK(strcmp(gguf_dtype_name(GGUF_DATA_TYPE_Q4_K), "Q4_K") == 0);
    CHECK(gguf_dtype_block_size(GGUF_DATA_TYPE_Q4_K) == 256);
    CHECK(gguf_dtype_block_bytes(GGUF_DATA_TYPE_Q4_K) == 144);

    /* Every other id up to 1023 is unknown (4, 5 and 31 to 33 were removed from ggml). */
    for (uint32_t id = 0; id < 1024; id++) {
        int known = 0;
        for (size_t i = 0; i < N_DTYPES; i++) known |= DTYPES[i].id == id;
        if (known) continue;
        FAILS(gguf_dtype_name(id) == NULL, GGUF_ERROR_CODE_INVALID_ARGUMENT, NULL);
        FAILS(gguf_dtype_block_size(id) == 0, GGUF_ERROR_CODE_INVALID_ARGUMENT, NULL);
        FAILS(gguf_dtype_block_bytes(id) == 0, GGUF_ERROR_CODE_INVALID_ARGUMENT, NULL);
    }
    FAILS(gguf_dtype_name(4) == NULL, GGUF_ERROR_CODE_INVALID_ARGUMENT, "4");
    FAILS(gguf_dtype_block_size(4) == 0, GGUF_ERROR_CODE_INVALID_ARGUMENT, "4");
    FAILS(gguf_dtype_block_bytes(4) == 0, GGUF_ERROR_CODE_INVALID_ARGUMENT, "4");
    FAILS(gguf_dtype_name(UINT32_MAX) == NULL, GGUF_ERROR_CODE_INVALID_ARGUMENT, NULL);
    FAILS(gguf_dtype_block_size(UINT32_MAX) == 0, GGUF_ERROR_CODE_INVALID_ARGUMENT, NULL);
    FAILS(gguf_dtype_block_bytes(UINT32_MAX) == 0, GGUF_ERROR_CODE_INVALID_ARGUMENT, NULL);
}

int main(int argc, char **argv) {
    g_argc = argc;
    g_argv = argv;
    test_files();
    test_dtypes();
    printf("test_tensors: ok\n");
    return 0;
}
