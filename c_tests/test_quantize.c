/*
 * test_quantize.c: floats to tensor types. gguf_quantize with known answers (Q8_0 and Q4_0
 * blocks worked out by hand, F16), the same bytes from gguf_quantize_parallel on several
 * threads, gguf_quantize_size and gguf_quantize_requires_importance, and the refusals (a type
 * ggml cannot quantize, an unknown id or one removed from the format, rows that are not whole blocks, dst too small, missing
 * importance weights, NULL pointers, dst sharing memory with src).
 *
 * Usage: test_quantize (takes no fixture).
 */
#include "gguf.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static void known_answers(void) {
    /* Q8_0: the absolute maximum 127 gives d = 1.0 (f16 0x3C00); each value is its own quant. */
    float src[64];
    for (int i = 0; i < 32; i++) src[i] = (float)(i * 4 - 64);
    src[31] = 127.0f;
    unsigned char q8[34];
    CHECK(gguf_quantize_size(GGUF_DATA_TYPE_Q8_0, 1, 32) == 34);
    CHECK(gguf_quantize(GGUF_DATA_TYPE_Q8_0, src, 1, 32, NULL, q8, sizeof q8) == 34);
    CHECK(q8[0] == 0x00 && q8[1] == 0x3C);
    for (int i = 0; i < 32; i++) CHECK((int8_t)q8[2 + i] == (int8_t)src[i]);

    /* Q4_0: the value of largest magnitude (-8) gives d = 1.0; quant = value + 8. */
    for (int i = 0; i < 32; i++) src[i] = (float)(i % 16 - 8);
    unsigned char q4[18];
    CHECK(gguf_quantize(GGUF_DATA_TYPE_Q4_0, src, 1, 32, NULL, q4, sizeof q4) == 18);
    CHECK(q4[0] == 0x00 && q4[1] == 0x3C);
    for (int j = 0; j < 16; j++) CHECK(q4[2 + j] == (unsigned char)(j | (j << 4)));

    /* F16: little-endian halves; 65520 rounds to infinity. */
    float f[4] = {1.0f, -2.0f, 65520.0f, 0.0f};
    unsigned char h[8];
    CHECK(gguf_quantize(GGUF_DATA_TYPE_F16, f, 2, 2, NULL, h, sizeof h) == 8);
    const unsigned char want[8] = {0x00, 0x3C, 0x00, 0xC0, 0x00, 0x7C, 0x00, 0x00};
    CHECK(memcmp(h, want, 8) == 0);
}

static void threads(void) {
    enum { ROWS = 9, N = 512 };
    float *src = malloc(sizeof(float) * ROWS * N);
    float imp[N];
    CHECK(src != NULL);
    uint32_t s = 12345;
    for (int i = 0; i < ROWS * N; i++) {
        s = s * 1664525u + 1013904223u;
        src[i] = (float)(int32_t)(s >> 8) / 8388608.0f;
    }
    for (int i = 0; i < N; i++) imp[i] = 1.0f + (float)(i % 7);
    uint64_t size = gguf_quantize_size(GGUF_DATA_TYPE_Q4_K, ROWS, N);
    CHECK(size == ROWS * 2 * 144);
    unsigned char *one = malloc(size), *many = malloc(size);
    CHECK(one != NULL && many != NULL);
    CHECK(gguf_quantize(GGUF_DATA_TYPE_Q4_K, src, ROWS, N, imp, one, size) == size);
    for (uint32_t t = 0; t <= 4; t++) {
        memset(many, 0, size);
        CHECK(gguf_quantize_parallel(GGUF_DATA_TYPE_Q4_K, src, ROWS, N, imp, many, size, t) == size);
        CHECK(memcmp(one, many, size) == 0);
    }
    /* Without importance weights the bytes differ (another search). */
    CHECK(gguf_quantize(GGUF_DATA_TYPE_Q4_K, src, ROWS, N, NULL, many, size) == size);
    CHECK(memcmp(one, many, size) != 0);
    free(one);
    free(many);
    free(src);
}

static void refusals(void) {
    float src[256] = {0};
    unsigned char dst[1024];
    CHECK(gguf_quantize_requires_importance(GGUF_DATA_TYPE_IQ2_XXS));
    CHECK(gguf_quantize_requires_importance(GGUF_DATA_TYPE_IQ2_XS));
    CHECK(gguf_quantize_requires_importance(GGUF_DATA_TYPE_IQ1_S));
    CHECK(!gguf_quantize_requires_importance(GGUF_DATA_TYPE_Q4_K));
    CHECK(!gguf_quantize_requires_importance(9999));

    CHECK(gguf_quantize(GGUF_DATA_TYPE_Q8_K, src, 1, 256, NULL, dst, sizeof dst) == 0);
    CHECK_ERROR(GGUF_ERROR_CODE_UNSUPPORTED, "Q8_K");
    CHECK(gguf_quantize_size(GGUF_DATA_TYPE_I8, 1, 256) == 0);
    CHECK_ERROR(GGUF_ERROR_CODE_UNSUPPORTED, "I8");
    CHECK(gguf_quantize(9999, src, 1, 256, NULL, dst, sizeof dst) == 0);
    CHECK_ERROR(GGUF_ERROR_CODE_INVALID_ARGUMENT, "9999");
    /* The ids removed from the format are refused as unknown ids are, the message naming them. */
    const uint32_t removed[] = {4, 5, 31, 32, 33, 36, 37, 38};
    for (size_t i = 0; i < sizeof removed / sizeof removed[0]; i++) {
        CHECK(gguf_quantize(removed[i], src, 1, 256, NULL, dst, sizeof dst) == 0);
        CHECK(gguf_last_error_code() == GGUF_ERROR_CODE_INVALID_ARGUMENT);
        CHECK(gguf_quantize_parallel(removed[i], src, 1, 256, NULL, dst, sizeof dst, 2) == 0);
        CHECK(gguf_last_error_code() == GGUF_ERROR_CODE_INVALID_ARGUMENT);
        CHECK(gguf_quantize_size(removed[i], 1, 256) == 0);
        CHECK(gguf_last_error_code() == GGUF_ERROR_CODE_INVALID_ARGUMENT);
    }
    CHECK(gguf_quantize(4, src, 1, 256, NULL, dst, sizeof dst) == 0);
    CHECK_ERROR(GGUF_ERROR_CODE_INVALID_ARGUMENT, "Q4_2");
    CHECK(gguf_quantize(GGUF_DATA_TYPE_Q4_K, src, 1, 128, NULL, dst, sizeof dst) == 0);
    CHECK_ERROR(GGUF_ERROR_CODE_INVALID_ARGUMENT, "128");
    CHECK(gguf_quantize(GGUF_DATA_TYPE_Q4_K, src, 1, 256, NULL, dst, 143) == 0);
    CHECK_ERROR(GGUF_ERROR_CODE_INVALID_ARGUMENT, "144");
    CHECK(gguf_quantize(GGUF_DATA_TYPE_IQ2_XXS, src, 1, 256, NULL, dst, sizeof dst) == 0);
    CHECK_ERROR(GGUF_ERROR_CODE_INVALID_ARGUMENT, "importance");
    CHECK(gguf_quantize(GGUF_DATA_TYPE_Q8_0, NULL, 1, 32, NULL, dst, sizeof dst) == 0);
    CHECK_ERROR(GGUF_ERROR_CODE_NULL_ARGUMENT, "src");
    CHECK(gguf_quantize(GGUF_DATA_TYPE_Q8_0, src, 1, 32, NULL, NULL, 34) == 0);
    CHECK_ERROR(GGUF_ERROR_CODE_NULL_ARGUMENT, "dst");
    /* dst over src's floats. */
    CHECK(gguf_quantize(GGUF_DATA_TYPE_Q8_0, src, 2, 32, NULL, (unsigned char *)src + 8, 68) == 0);
    CHECK_ERROR(GGUF_ERROR_CODE_INVALID_ARGUMENT, "overlap");
    /* No rows: nothing written, no error. */
    CHECK(gguf_quantize(GGUF_DATA_TYPE_Q8_0, NULL, 0, 32, NULL, NULL, 0) == 0);
    CHECK(gguf_last_error_code() == GGUF_ERROR_CODE_NONE);
}

int main(int argc, char **argv) {
    g_argc = argc;
    g_argv = argv;
    known_answers();
    threads();
    refusals();
    puts("test_quantize: ok");
    return 0;
}
