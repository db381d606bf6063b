/*
 * test_memory.c: gguf_memory_params_default (llama.cpp's context defaults) and
 * gguf_memory_estimate on memory_llama.gguf (2 layers, width 64, 2 query heads of 32, 1 KV
 * head, 100 tokens, a 1024-token training context), each figure worked out here from
 * llama.cpp's rules: the context padded to 256 and split per sequence, K and V per layer, the
 * output buffer, the weights padded to 32 bytes; and the refusals (an unknown architecture
 * named, a quantized V cache without flash attention, a short `size`, NULL arguments).
 *
 * Usage: test_memory FIXTURE... (every path tests/c_api.rs writes; picked by file name).
 */
#include "gguf.h"

#include <stdio.h>
#include <string.h>

#include "check.h"

static GGUFMemoryEstimate estimate(GGUFFile f, const GGUFMemoryParams *p) {
    GGUFMemoryEstimate e;
    memset(&e, 0, sizeof e);
    e.size = sizeof e;
    CHECK(gguf_memory_estimate(f, p, &e));
    CHECK(e.size == sizeof e);
    return e;
}

static uint64_t weights(GGUFFile f) {
    uint64_t sum = 0;
    for (uint64_t i = 0; i < gguf_tensor_count(f); i++) {
        uint64_t size = gguf_get_tensor_by_index(f, i)->size_bytes;
        sum += (size + 31) / 32 * 32;
    }
    return sum;
}

int main(int argc, char **argv) {
    g_argc = argc;
    g_argv = argv;

    GGUFMemoryParams d = gguf_memory_params_default();
    CHECK(d.size == sizeof d);
    CHECK(d.n_ctx == 512 && d.n_batch == 2048 && d.n_ubatch == 512 && d.n_seq_max == 1);
    CHECK(d.type_k == 1 && d.type_v == 1); /* F16 */
    CHECK(d.flash_attn == GGUF_FLASH_ATTN_AUTO);
    CHECK(d.swa_full && !d.kv_unified && d.offload_kqv && d.n_gpu_layers == 0);

    GGUFFile f = gguf_open(fixture("memory_llama.gguf"));
    CHECK(f != NULL);
    const uint64_t kv_row = 1 * 32 * 2; /* KV heads x head size x F16 */

    /* The defaults (NULL params is the same). */
    GGUFMemoryEstimate e = estimate(f, &d), n = estimate(f, NULL);
    CHECK(memcmp(&e, &n, sizeof e) == 0);
    CHECK(e.n_ctx == 512 && e.n_ctx_seq == 512 && e.n_ctx_swa == 0 && e.n_ubatch == 512);
    CHECK(e.k == 2 * 512 * kv_row && e.v == e.k && e.recurrent == 0);
    CHECK(e.output == 100 * 4);
    CHECK(e.weights == weights(f));
    /* Mapped: from the first tensor's data to the last's end. */
    const GGUFTensorInfo *first = gguf_get_tensor_by_index(f, 0);
    const GGUFTensorInfo *last = gguf_get_tensor_by_index(f, gguf_tensor_count(f) - 1);
    CHECK(e.weights_mapped == last->file_offset + last->size_bytes - first->file_offset);
    CHECK(e.total == e.weights + e.k + e.v + e.recurrent + e.output + e.compute);
    CHECK(e.cpu == e.total && e.gpu == 0);

    /* 1000 tokens over 3 sequences: 1024 / 3 = 341, padded to 512 per sequence, 1536 in all. */
    GGUFMemoryParams p = d;
    p.n_ctx = 1000;
    p.n_seq_max = 3;
    e = estimate(f, &p);
    CHECK(e.n_ctx == 1536 && e.n_ctx_seq == 512);
    CHECK(e.k == 2 * 1536 * kv_row && e.output == 3 * 100 * 4);
    /* Unified: one stream of the padded context. */
    p.kv_unified = true;
    e = estimate(f, &p);
    CHECK(e.n_ctx == 1024 && e.n_ctx_seq == 1024 && e.k == 2 * 1024 * kv_row);

    /* 0: the training context. Q8_0 K (34 bytes per 32 values) with flash attention. */
    p = d;
    p.n_ctx = 0;
    p.type_k = 8;
    p.flash_attn = GGUF_FLASH_ATTN_ON;
    e = estimate(f, &p);
    CHECK(e.n_ctx == 1024 && e.k == 2 * 1024 * 34 && e.v == 2 * 1024 * kv_row);

    /* Q4_K's blocks of 256 do not divide a head of 32. */
    p.type_k = 12;
    FAILS(!gguf_memory_estimate(f, &p, &e), GGUF_ERROR_CODE_INVALID_ARGUMENT, "head size 32");

    /* A quantized V cache needs flash attention. */
    p = d;
    p.type_v = 8;
    p.flash_attn = GGUF_FLASH_ATTN_OFF;
    GGUFMemoryEstimate untouched;
    memset(&untouched, 0x5a, sizeof untouched);
    untouched.size = sizeof untouched;
    FAILS(!gguf_memory_estimate(f, &p, &untouched), GGUF_ERROR_CODE_INVALID_ARGUMENT,
          "flash attention");
    CHECK(untouched.weights == 0x5a5a5a5a5a5a5a5aull);
    p = d;
    p.flash_attn = 7;
    FAILS(!gguf_memory_estimate(f, &p, &e), GGUF_ERROR_CODE_INVALID_ARGUMENT, "flash_attn");
    p = d;
    p.size = 8;
    FAILS(!gguf_memory_estimate(f, &p, &e), GGUF_ERROR_CODE_INVALID_ARGUMENT, "params->size");
    e.size = 8;
    FAILS(!gguf_memory_estimate(f, &d, &e), GGUF_ERROR_CODE_INVALID_ARGUMENT, "out->size");
    FAILS(!gguf_memory_estimate(f, &d, NULL), GGUF_ERROR_CODE_NULL_ARGUMENT, "out");
    e.size = sizeof e;
    FAILS(!gguf_memory_estimate(NULL, &d, &e), GGUF_ERROR_CODE_NULL_ARGUMENT, "file");
    gguf_close(f);

    /* An architecture whose rules are not known is named, never guessed. */
    f = gguf_open(fixture("memory_unknown.gguf"));
    CHECK(f != NULL);
    FAILS(!gguf_memory_estimate(f, &d, &e), GGUF_ERROR_CODE_UNSUPPORTED, "no-such-arch");
    gguf_close(f);

    puts("test_memory: ok");
    return 0;
}
