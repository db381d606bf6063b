/*
 * test_validate.c: gguf_validate_tensor and gguf_tensor_to_float_parallel from C. A file written
 * here (the C writer) holds finite tensors and tensors with a NaN scale or an infinite value:
 * validation passes the first and names the tensor, the block or element and the byte offsets of
 * the others (GGUF_ERROR_CODE_BAD_VALUE); NULL arguments are refused. The parallel conversion
 * gives gguf_tensor_to_float's floats on 1, 3 and all threads, and its refusals.
 *
 * Usage: test_validate [FIXTURE...] (the fixtures are not used: the file is written here).
 */
#define _POSIX_C_SOURCE 200809L
#include "gguf.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

int main(int argc, char **argv) {
    g_argc = argc;
    g_argv = argv;
    char path[] = "/tmp/gguf-test-validate-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    close(fd);

    /* Tensor bytes are as stored in a little-endian file, whatever the host's byte order. */
    unsigned char good[64 * 4];
    for (int i = 0; i < 64; i++) {
        float v = (float)i - 31.5f;
        uint32_t u;
        memcpy(&u, &v, sizeof u);
        for (int k = 0; k < 4; k++) good[4 * i + k] = (unsigned char)(u >> (8 * k));
    }
    /* Q4_K, 2 blocks of 144 bytes: block 1's dmin (bytes 2-3 of the block) is NaN. */
    unsigned char q4k[288] = {0};
    q4k[144 + 3] = 0x7E;
    /* F16: element 41 is -infinity. */
    unsigned char halves[200] = {0};
    halves[2 * 41 + 1] = 0xFC;
    /* Q8_0, 64 rows of 4096: finite scales, varied quants. */
    enum { ROWS = 64, ROW = 4096 };
    size_t q8_bytes = (size_t)ROWS * ROW / 32 * 34;
    unsigned char *q8 = malloc(q8_bytes);
    CHECK(q8 != NULL);
    for (size_t i = 0; i < q8_bytes; i++) q8[i] = (unsigned char)(i * 37u + 11u);
    for (size_t b = 0; b < q8_bytes / 34; b++) q8[b * 34 + 1] = 0x3C; /* d = 1.x: finite */

    GGUFWriter w = gguf_writer_new();
    CHECK(w != NULL);
    uint64_t d_good[1] = {64}, d_q4k[1] = {512}, d_half[1] = {100}, d_q8[2] = {ROW, ROWS};
    CHECK(gguf_writer_add_tensor(w, "good", 1, d_good, GGUF_DATA_TYPE_F32, good, sizeof good));
    CHECK(gguf_writer_add_tensor(w, "blk.0.nan", 1, d_q4k, GGUF_DATA_TYPE_Q4_K, q4k, sizeof q4k));
    CHECK(gguf_writer_add_tensor(w, "inf", 1, d_half, GGUF_DATA_TYPE_F16, halves, sizeof halves));
    CHECK(gguf_writer_add_tensor(w, "q8", 2, d_q8, GGUF_DATA_TYPE_Q8_0, q8, q8_bytes));
    gguf_writer_set_sync(w, false);
    CHECK(gguf_writer_write_file(w, path));
    gguf_writer_free(w);
    free(q8);

    GGUFFile f = gguf_open(path);
    CHECK(f != NULL);
    const GGUFTensorInfo *t_good = gguf_get_tensor(f, "good");
    const GGUFTensorInfo *t_nan = gguf_get_tensor(f, "blk.0.nan");
    const GGUFTensorInfo *t_inf = gguf_get_tensor(f, "inf");
    const GGUFTensorInfo *t_q8 = gguf_get_tensor(f, "q8");
    CHECK(t_good && t_nan && t_inf && t_q8);

    /* Validation. */
    CHECK(gguf_validate_tensor(f, t_good));
    CHECK(gguf_validate_tensor(f, t_q8));
    /* The error's offset is the bad bytes' position in the file. */
    gguf_clear_error();
    CHECK(!gguf_validate_tensor(f, t_nan));
    CHECK_PARSE_ERROR(GGUF_ERROR_CODE_BAD_VALUE,
                      "tensor 'blk.0.nan': block 1's dmin is NaN (Q4_K data, byte 146 of the "
                      "tensor's data)",
                      (int64_t)(t_nan->file_offset + 146));
    gguf_clear_error();
    CHECK(!gguf_validate_tensor(f, t_inf));
    CHECK_PARSE_ERROR(GGUF_ERROR_CODE_BAD_VALUE, "tensor 'inf': element 41 is infinity",
                      (int64_t)(t_inf->file_offset + 82));
    FAILS(!gguf_validate_tensor(NULL, t_good), GGUF_ERROR_CODE_NULL_ARGUMENT, "NULL");
    FAILS(!gguf_validate_tensor(f, NULL), GGUF_ERROR_CODE_NULL_ARGUMENT, "NULL");

    /* The parallel conversion equals the single-threaded one. */
    size_t n = (size_t)ROWS * ROW;
    float *want = malloc(n * sizeof *want), *got = malloc(n * sizeof *got);
    CHECK(want && got);
    CHECK(gguf_tensor_to_float(f, t_q8, 0, ROWS, want));
    const uint32_t threads[3] = {1, 3, 0};
    for (int k = 0; k < 3; k++) {
        memset(got, 0xFF, n * sizeof *got);
        CHECK(gguf_tensor_to_float_parallel(f, t_q8, 0, ROWS, got, threads[k]));
        CHECK(memcmp(want, got, n * sizeof *got) == 0);
        memset(got, 0xFF, n * sizeof *got);
        CHECK(gguf_tensor_to_float_parallel(f, t_q8, 5, ROWS - 7, got, threads[k]));
        CHECK(memcmp(want + 5 * ROW, got, (size_t)(ROWS - 7) * ROW * sizeof *got) == 0);
    }
    CHECK(gguf_tensor_to_float_parallel(f, t_q8, ROWS, 0, got, 4));
    FAILS(!gguf_tensor_to_float_parallel(f, t_q8, 1, ROWS, got, 4), GGUF_ERROR_CODE_INVALID_ARGUMENT,
          "past the end");
    FAILS(!gguf_tensor_to_float_parallel(f, t_q8, UINT64_MAX, 2, got, 4),
          GGUF_ERROR_CODE_INVALID_ARGUMENT, "overflow");
    FAILS(!gguf_tensor_to_float_parallel(f, t_q8, 0, 1, NULL, 4), GGUF_ERROR_CODE_NULL_ARGUMENT,
          "NULL");
    FAILS(!gguf_tensor_to_float_parallel(NULL, t_q8, 0, 1, got, 4), GGUF_ERROR_CODE_NULL_ARGUMENT,
          "NULL");
    free(want);
    free(got);
    gguf_close(f);
    unlink(path);
    printf("test_validate: ok\n");
    return 0;
}
