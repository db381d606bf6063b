/*
 * test_values.c: tensor values as floats. gguf_dequantize with known answers (Q8_0, Q4_0, F16,
 * BF16) and its refusals (a removed type named, an unknown type, elements that are not whole
 * blocks, NULL pointers, `src` and `dst` sharing memory, counts whose bytes or floats no
 * buffer in memory can hold);
 * gguf_tensor_to_float over every tensor of full.gguf (whole, row by row, equal to
 * gguf_dequantize of the tensor's bytes) and its refusals (rows past the end, a foreign tensor
 * info, NULL, a destination not aligned for floats); big.gguf, whose F32, Q4_0 and Q4_K tensors are read byte-swapped and whose I8
 * tensor (no big-endian layout defined) is refused.
 *
 * Usage: test_values FIXTURE... (every path tests/c_api.rs writes; picked by file name).
 */
#include "gguf.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

/* By address: a float passed by value goes through the x87 stack on i686, which quiets a
 * signalling NaN (0xFF810000 would come back as 0xFFC10000). */
static uint32_t bits_at(const float *f) {
    uint32_t u;
    memcpy(&u, f, sizeof u);
    return u;
}

static void known_answers(void) {
    /* Q8_0: d = 2.0 (f16 0x4000), quants i - 16: values 2 (i - 16). */
    unsigned char q8[34];
    q8[0] = 0x00;
    q8[1] = 0x40;
    for (int i = 0; i < 32; i++) q8[2 + i] = (unsigned char)(int8_t)(i - 16);
    float out[64];
    CHECK(gguf_dequantize(GGUF_DATA_TYPE_Q8_0, q8, 32, out));
    for (int i = 0; i < 32; i++) CHECK(out[i] == 2.0f * (float)(i - 16));

    /* Q4_0: d = -0.5 (0xB800); byte j holds element j (low nibble) and j + 16 (high). */
    unsigned char q4[18] = {0x00, 0xB8};
    for (int j = 0; j < 16; j++) q4[2 + j] = (unsigned char)(j | ((15 - j) << 4));
    CHECK(gguf_dequantize(GGUF_DATA_TYPE_Q4_0, q4, 32, out));
    for (int j = 0; j < 16; j++) {
        CHECK(out[j] == (float)(j - 8) * -0.5f);
        CHECK(out[j + 16] == (float)(7 - j) * -0.5f);
    }

    /* F16 and BF16: 1.0, -2.0, the smallest subnormal half, infinity; BF16 NaN bits kept. */
    /* As stored in a little-endian file, whatever the host's byte order. */
    const unsigned char halves[8] = {0x00, 0x3C, 0x00, 0xC0, 0x01, 0x00, 0x00, 0x7C};
    CHECK(gguf_dequantize(GGUF_DATA_TYPE_F16, halves, 4, out));
    CHECK(out[0] == 1.0f && out[1] == -2.0f);
    CHECK(bits_at(&out[2]) == 0x33800000u && bits_at(&out[3]) == 0x7F800000u); /* 2^-24, inf */
    const unsigned char brains[6] = {0x80, 0x3F, 0x40, 0xC0, 0x81, 0xFF};
    CHECK(gguf_dequantize(GGUF_DATA_TYPE_BF16, brains, 3, out));
    CHECK(out[0] == 1.0f && out[1] == -3.0f && bits_at(&out[2]) == 0xFF810000u);

    /* Nothing to do: true, even with NULL pointers. */
    CHECK(gguf_dequantize(GGUF_DATA_TYPE_Q4_K, NULL, 0, NULL));

    /* Refusals. */
    FAILS(!gguf_dequantize(4, q4, 32, out), GGUF_ERROR_CODE_UNSUPPORTED, "Q4_2");
    FAILS(!gguf_dequantize(36, q4, 32, out), GGUF_ERROR_CODE_UNSUPPORTED, "removed");
    FAILS(!gguf_dequantize(99, q4, 32, out), GGUF_ERROR_CODE_INVALID_ARGUMENT, "99");
    FAILS(!gguf_dequantize(GGUF_DATA_TYPE_Q4_0, q4, 33, out), GGUF_ERROR_CODE_INVALID_ARGUMENT,
          "not whole blocks");
    FAILS(!gguf_dequantize(GGUF_DATA_TYPE_Q4_0, NULL, 32, out), GGUF_ERROR_CODE_NULL_ARGUMENT,
          "src");
    FAILS(!gguf_dequantize(GGUF_DATA_TYPE_Q4_0, q4, 32, NULL), GGUF_ERROR_CODE_NULL_ARGUMENT,
          "dst");

    /* Counts whose bytes or floats no buffer in memory can hold: refused before `src` or `dst`
     * is touched (both are real, small buffers here). */
    static const struct {
        uint32_t dtype;
        uint64_t n;
    } HUGE[] = {
        {GGUF_DATA_TYPE_F32, (uint64_t)1 << 61},
        {GGUF_DATA_TYPE_Q4_0, UINT64_MAX - 31},
        {GGUF_DATA_TYPE_Q8_0, (uint64_t)1 << 63},
        {GGUF_DATA_TYPE_I8, (uint64_t)1 << 62},
        {GGUF_DATA_TYPE_F16, (uint64_t)1 << 50},
    };
    /* `src` and `dst` sharing memory: refused, nothing written. */
    float in_place[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    FAILS(!gguf_dequantize(GGUF_DATA_TYPE_F32, in_place, 8, in_place),
          GGUF_ERROR_CODE_INVALID_ARGUMENT, "overlap");
    FAILS(!gguf_dequantize(GGUF_DATA_TYPE_F16, in_place, 8, in_place + 2),
          GGUF_ERROR_CODE_INVALID_ARGUMENT, "overlap");
    for (int i = 0; i < 8; i++) CHECK(in_place[i] == (float)(i + 1));
    /* Apart, sharing nothing: 4 halves (8 bytes) into the last 4 floats. */
    CHECK(gguf_dequantize(GGUF_DATA_TYPE_F16, in_place, 4, in_place + 4));
    for (size_t i = 0; i < sizeof HUGE / sizeof HUGE[0]; i++) {
        memset(out, 0x5A, sizeof out);
        FAILS(!gguf_dequantize(HUGE[i].dtype, q8, HUGE[i].n, out), GGUF_ERROR_CODE_INVALID_ARGUMENT,
              "do not fit in this process's memory");
        for (size_t j = 0; j < sizeof out; j++) CHECK(((unsigned char *)out)[j] == 0x5A);
    }
}

/* Every tensor of `f`: whole, then row by row, equal (as bits) to gguf_dequantize of its bytes. */
static void every_tensor(GGUFFile f) {
    for (uint64_t i = 0; i < gguf_tensor_count(f); i++) {
        const GGUFTensorInfo *t = gguf_get_tensor_by_index(f, i);
        CHECK(t != NULL);
        uint64_t row = t->dims[0], rows = row ? t->n_elements / row : 0;
        size_t n = (size_t)t->n_elements;
        float *whole = malloc((n ? n : 1) * sizeof *whole);
        float *direct = malloc((n ? n : 1) * sizeof *direct);
        CHECK(whole != NULL && direct != NULL);
        CHECK(gguf_tensor_to_float(f, t, 0, rows, whole));
        CHECK(gguf_dequantize(t->dtype, gguf_tensor_data(f, t), t->n_elements, direct));
        CHECK(memcmp(whole, direct, n * sizeof *whole) == 0);
        for (uint64_t r = 0; r < rows; r++) {
            CHECK(gguf_tensor_to_float(f, t, r, 1, direct));
            CHECK(memcmp(direct, whole + r * row, (size_t)row * sizeof *whole) == 0);
        }
        FAILS(!gguf_tensor_to_float(f, t, rows, 1, direct), GGUF_ERROR_CODE_INVALID_ARGUMENT,
              "past the end");
        FAILS(!gguf_tensor_to_float(f, t, 1, UINT64_MAX, direct),
              GGUF_ERROR_CODE_INVALID_ARGUMENT, "past the end");
        free(whole);
        free(direct);
    }
}

static void from_files(void) {
    GGUFFile f = gguf_open(fixture("full.gguf"));
    GGUFFile big = gguf_open(fixture("big.gguf"));
    CHECK(f != NULL && big != NULL);
    every_tensor(f);

    /* The F32 tensor's values are its bytes, read little-endian (on any host). */
    const GGUFTensorInfo *embd = gguf_get_tensor(f, "token_embd.weight");
    float values[12];
    CHECK(gguf_tensor_to_float(f, embd, 0, 3, values));
    const unsigned char *little = gguf_tensor_data(f, embd);
    for (int i = 0; i < 12; i++) {
        uint32_t u = (uint32_t)little[4 * i + 3] << 24 | (uint32_t)little[4 * i + 2] << 16 |
                     (uint32_t)little[4 * i + 1] << 8 | little[4 * i];
        CHECK(bits_at(&values[i]) == u);
    }

    /* Refusals: NULL, and a tensor info of another handle. */
    FAILS(!gguf_tensor_to_float(NULL, embd, 0, 1, values), GGUF_ERROR_CODE_NULL_ARGUMENT, "file");
    FAILS(!gguf_tensor_to_float(f, NULL, 0, 1, values), GGUF_ERROR_CODE_NULL_ARGUMENT, "info");
    FAILS(!gguf_tensor_to_float(f, embd, 0, 1, NULL), GGUF_ERROR_CODE_NULL_ARGUMENT, "dst");
    /* A `dst` not aligned for floats: refused, untouched (whole and on threads). */
    unsigned char unaligned[sizeof(float) * 13];
    memset(unaligned, 0x5A, sizeof unaligned);
    float *odd = (float *)(void *)(unaligned + 1);
    FAILS(!gguf_tensor_to_float(f, embd, 0, 1, odd), GGUF_ERROR_CODE_INVALID_ARGUMENT,
          "not aligned for floats");
    FAILS(!gguf_tensor_to_float_parallel(f, embd, 0, 3, odd, 2), GGUF_ERROR_CODE_INVALID_ARGUMENT,
          "not aligned for floats");
    FAILS(!gguf_dequantize(GGUF_DATA_TYPE_F32, little, 4, odd), GGUF_ERROR_CODE_INVALID_ARGUMENT,
          "not aligned for floats");
    for (size_t i = 0; i < sizeof unaligned; i++) CHECK(unaligned[i] == 0x5A);
    FAILS(!gguf_tensor_to_float(f, gguf_get_tensor(big, "token_embd.weight"), 0, 1, values),
          GGUF_ERROR_CODE_INVALID_ARGUMENT, "does not belong");

    /* big.gguf holds the same bytes: F32 read swapped, Q4_0 and Q4_K with their scales swapped. */
    const GGUFTensorInfo *bembd = gguf_get_tensor(big, "token_embd.weight");
    CHECK(gguf_tensor_to_float(big, bembd, 0, 3, values));
    const unsigned char *raw = gguf_tensor_data(big, bembd);
    for (int i = 0; i < 12; i++) {
        uint32_t u = (uint32_t)raw[4 * i] << 24 | (uint32_t)raw[4 * i + 1] << 16 |
                     (uint32_t)raw[4 * i + 2] << 8 | raw[4 * i + 3];
        CHECK(bits_at(&values[i]) == u);
    }
    const char *quantized[2] = {"blk.0.attn_q.weight", "blk.0.ffn_down.weight"};
    for (int k = 0; k < 2; k++) {
        const GGUFTensorInfo *t = gguf_get_tensor(big, quantized[k]);
        size_t size = (size_t)t->size_bytes, block = (size_t)gguf_dtype_block_bytes(t->dtype);
        unsigned char *swapped = malloc(size);
        CHECK(swapped != NULL);
        memcpy(swapped, gguf_tensor_data(big, t), size);
        /* Q4_0: d at byte 0; Q4_K: d and dmin at bytes 0 and 2. */
        for (size_t b = 0; b < size; b += block)
            for (size_t at = 0; at < (t->dtype == GGUF_DATA_TYPE_Q4_K ? 4u : 2u); at += 2) {
                unsigned char x = swapped[b + at];
                swapped[b + at] = swapped[b + at + 1];
                swapped[b + at + 1] = x;
            }
        float *a = malloc((size_t)t->n_elements * sizeof *a);
        float *b = malloc((size_t)t->n_elements * sizeof *b);
        CHECK(a != NULL && b != NULL);
        CHECK(gguf_tensor_to_float(big, t, 0, t->n_elements / t->dims[0], a));
        CHECK(gguf_dequantize(t->dtype, swapped, t->n_elements, b));
        CHECK(memcmp(a, b, (size_t)t->n_elements * sizeof *a) == 0);
        free(a);
        free(b);
        free(swapped);
    }
    FAILS(!gguf_tensor_to_float(big, gguf_get_tensor(big, "four_d"), 0, 1, values),
          GGUF_ERROR_CODE_UNSUPPORTED, "I8 values cannot be read from a big-endian file");
    gguf_close(big);
    gguf_close(f);
}

int main(int argc, char **argv) {
    g_argc = argc;
    g_argv = argv;
    known_answers();
    from_files();
    puts("test_values: ok");
    return 0;
}
