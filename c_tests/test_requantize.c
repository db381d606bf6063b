/*
 * test_requantize.c: gguf_requantize and gguf_requantize_preset_id. A small llama-like model
 * (token embeddings, one layer's norm, Q, V and FFN down with rows of 288, the output norm and
 * output) written with the writer is requantized with the Q4_K_M preset: each tensor's type as
 * llama.cpp chooses it (output Q6_K, attention V of the first layer Q6_K, FFN down falling back
 * from Q6_K to Q8_0, norms kept F32), the metadata llama.cpp writes (general.file_type 15,
 * general.quantization_version 2), the progress callback told each tensor in order, the result
 * filled; with --pure and a --tensor-type override; a split output. Stopping from the callback
 * fails with GGUF_ERROR_CODE_CANCELLED and leaves the destination untouched; every refusal
 * (unknown preset, type name, flag, bad pattern, options_size, NULL arguments) has its code.
 *
 * Usage: test_requantize FIXTURE...   (its files go beside full.gguf)
 */
#ifdef _WIN32
#include <process.h>
#define getpid _getpid
#else
#define _POSIX_C_SOURCE 200809L /* getpid */
#include <unistd.h>
#endif

#include "gguf.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static char g_dir[4096];

/* A path beside the fixtures, unique to this process. */
static void path_of(char *out, size_t size, const char *name) {
    snprintf(out, size, "%srequantize-%ld-%s", g_dir, (long)getpid(), name);
}

static float value(uint64_t i, uint32_t seed) {
    uint32_t x = (uint32_t)(i * 2654435761u) ^ (seed * 40503u);
    x ^= x >> 13;
    x *= 0x5bd1e995u;
    x ^= x >> 15;
    return ((float)(x & 0xffff) / 65536.0f - 0.5f) * 0.1f;
}

/* The tensors' floats: the writer reads them when the file is written. */
static float *g_data[8];

static void add(GGUFWriter w, const char *name, uint64_t d0, uint64_t d1, uint32_t seed) {
    uint64_t dims[2] = {d0, d1};
    uint64_t n = d0 * d1;
    float *v = malloc(n * sizeof(float));
    CHECK(v != NULL);
    for (uint64_t i = 0; i < n; i++) v[i] = d1 == 1 ? 1.0f + value(i, seed) : value(i, seed);
    /* The file is little-endian and the writer takes tensor bytes as given: on a big-endian
       host each float's bytes are put in the file's order first. */
    const uint16_t one = 1;
    if (*(const uint8_t *)&one == 0) {
        for (uint64_t i = 0; i < n; i++) {
            uint8_t *b = (uint8_t *)&v[i], t;
            t = b[0], b[0] = b[3], b[3] = t;
            t = b[1], b[1] = b[2], b[2] = t;
        }
    }
    CHECK(gguf_writer_add_tensor(w, name, d1 == 1 ? 1 : 2, dims, GGUF_DATA_TYPE_F32, v,
                                 n * sizeof(float)));
    g_data[seed] = v;
}

static void write_model(const char *path) {
    GGUFWriter w = gguf_writer_new();
    CHECK(w != NULL);
    CHECK(gguf_writer_set_string(w, "general.architecture", "llama", 5));
    CHECK(gguf_writer_set_uint32(w, "llama.block_count", 1));
    CHECK(gguf_writer_set_uint32(w, "llama.attention.head_count", 4));
    CHECK(gguf_writer_set_uint32(w, "llama.attention.head_count_kv", 1));
    add(w, "token_embd.weight", 256, 8, 1);
    add(w, "blk.0.attn_norm.weight", 256, 1, 2);
    add(w, "blk.0.attn_q.weight", 256, 8, 3);
    add(w, "blk.0.attn_v.weight", 256, 4, 4);
    add(w, "blk.0.ffn_down.weight", 288, 8, 5);
    add(w, "output_norm.weight", 256, 1, 6);
    add(w, "output.weight", 256, 8, 7);
    CHECK(gguf_writer_set_sync(w, false));
    CHECK(gguf_writer_write_file(w, path));
    gguf_writer_free(w);
    for (int i = 0; i < 8; i++) free(g_data[i]);
}

static uint32_t type_of(GGUFFile f, const char *name) {
    const GGUFTensorInfo *t = gguf_get_tensor(f, name);
    CHECK(t != NULL);
    return t->dtype;
}

struct seen {
    uint64_t calls;
    uint64_t stop_after; /* 0: never stop */
    char first[64];
    uint64_t last_bytes_out;
};

static bool progress(void *user, const GGUFRequantizeStep *step) {
    struct seen *s = user;
    CHECK(step->index == s->calls);
    CHECK(step->count == 7);
    CHECK(step->name != NULL && step->bytes_in <= step->total_in);
    CHECK(step->bytes_out >= s->last_bytes_out);
    if (s->calls == 0) snprintf(s->first, sizeof s->first, "%s", step->name);
    s->last_bytes_out = step->bytes_out;
    s->calls++;
    return s->stop_after == 0 || s->calls < s->stop_after;
}

static GGUFRequantizeOptions base(const char *preset) {
    GGUFRequantizeOptions o;
    memset(&o, 0, sizeof o);
    o.preset = preset;
    o.flags = GGUF_REQUANTIZE_NO_SYNC;
    return o;
}

static void presets(void) {
    CHECK(gguf_requantize_preset_id("Q4_K_M") == 15);
    CHECK(gguf_requantize_preset_id("q4_k") == 15);
    CHECK(gguf_requantize_preset_id("Q8_0") == 7);
    CHECK(gguf_requantize_preset_id("IQ4_XS") == 30);
    CHECK(gguf_requantize_preset_id("COPY") == 0);
    FAILS(gguf_requantize_preset_id("Q4_K_X") == -1, GGUF_ERROR_CODE_INVALID_ARGUMENT, "Q4_K_X");
    FAILS(gguf_requantize_preset_id(NULL) == -1, GGUF_ERROR_CODE_NULL_ARGUMENT, "name");
}

static void q4_k_m(const char *src) {
    char dst[4200];
    path_of(dst, sizeof dst, "q4km.gguf");
    struct seen s = {0};
    GGUFRequantizeOptions o = base("Q4_K_M");
    o.threads = 2;
    o.progress = progress;
    o.progress_user = &s;
    GGUFRequantizeResult r;
    memset(&r, 0xff, sizeof r);
    CHECK(gguf_requantize(src, dst, &o, sizeof o, &r));
    CHECK(s.calls == 7);
    /* llama.cpp's order: the tensors of no layer first, by name. */
    CHECK(strcmp(s.first, "output.weight") == 0);
    CHECK(r.tensors == 7 && r.converted == 5 && r.fell_back == 1 && r.files == 1);
    CHECK(r.bytes_out == s.last_bytes_out && r.bytes_out < r.bytes_in);

    GGUFFile f = gguf_open(dst);
    CHECK(f != NULL);
    CHECK(type_of(f, "output.weight") == GGUF_DATA_TYPE_Q6_K);
    CHECK(type_of(f, "token_embd.weight") == GGUF_DATA_TYPE_Q4_K);
    CHECK(type_of(f, "blk.0.attn_q.weight") == GGUF_DATA_TYPE_Q4_K);
    CHECK(type_of(f, "blk.0.attn_v.weight") == GGUF_DATA_TYPE_Q6_K);
    CHECK(type_of(f, "blk.0.ffn_down.weight") == GGUF_DATA_TYPE_Q8_0);
    CHECK(type_of(f, "blk.0.attn_norm.weight") == GGUF_DATA_TYPE_F32);
    CHECK(type_of(f, "output_norm.weight") == GGUF_DATA_TYPE_F32);
    const GGUFMetadataKV *kv = gguf_get_metadata(f, "general.file_type");
    CHECK(kv != NULL && kv->type == GGUF_VALUE_TYPE_UINT32 && kv->value.u32 == 15);
    kv = gguf_get_metadata(f, "general.quantization_version");
    CHECK(kv != NULL && kv->type == GGUF_VALUE_TYPE_UINT32 && kv->value.u32 == 2);
    gguf_close(f);

    /* Pure, with an override; no result asked for. */
    const char *types[] = {"ATTN_Q=q8_0"};
    o = base("Q4_K_M");
    o.flags |= GGUF_REQUANTIZE_PURE;
    o.tensor_types = types;
    o.n_tensor_types = 1;
    CHECK(gguf_requantize(src, dst, &o, sizeof o, NULL));
    f = gguf_open(dst);
    CHECK(f != NULL);
    CHECK(type_of(f, "output.weight") == GGUF_DATA_TYPE_Q4_K);
    CHECK(type_of(f, "blk.0.attn_v.weight") == GGUF_DATA_TYPE_Q4_K);
    CHECK(type_of(f, "blk.0.attn_q.weight") == GGUF_DATA_TYPE_Q8_0);
    CHECK(type_of(f, "blk.0.ffn_down.weight") == GGUF_DATA_TYPE_Q5_0);
    gguf_close(f);
    CHECK(remove(dst) == 0);

    /* Split by tensor count: three shards, opened as one model from the first. */
    char split[4200], first[4200];
    path_of(split, sizeof split, "split.gguf");
    path_of(first, sizeof first, "split-00001-of-00003.gguf");
    o = base("Q8_0");
    o.split_max_tensors = 3;
    CHECK(gguf_requantize(src, split, &o, sizeof o, &r));
    CHECK(r.files == 3);
    f = gguf_open(first);
    CHECK(f != NULL);
    CHECK(gguf_tensor_count(f) == 7);
    gguf_close(f);
    for (int i = 1; i <= 3; i++) {
        char name[64], p[4200];
        snprintf(name, sizeof name, "split-%05d-of-00003.gguf", i);
        path_of(p, sizeof p, name);
        CHECK(remove(p) == 0);
    }
}

static void failures(const char *src) {
    char dst[4200];
    path_of(dst, sizeof dst, "stopped.gguf");
    FILE *fp = fopen(dst, "wb");
    CHECK(fp != NULL);
    CHECK(fwrite("before", 1, 6, fp) == 6);
    fclose(fp);

    /* Stopped after the third tensor: the destination is untouched. */
    struct seen s = {0};
    s.stop_after = 3;
    GGUFRequantizeOptions o = base("Q4_K_M");
    o.progress = progress;
    o.progress_user = &s;
    FAILS(!gguf_requantize(src, dst, &o, sizeof o, NULL), GGUF_ERROR_CODE_CANCELLED, "stopped");
    CHECK(s.calls == 3);
    /* A cancel flag already set: stopped before the first tensor, nothing written. */
    static volatile int stop_now = 1;
    struct seen none = {0};
    o.progress_user = &none;
    o.cancel = (const int *)&stop_now;
    FAILS(!gguf_requantize(src, dst, &o, sizeof o, NULL), GGUF_ERROR_CODE_CANCELLED, "asked");
    CHECK(none.calls == 0);
    /* The struct as a caller built before `cancel` knows it: read without it. */
    o.cancel = NULL;
    struct seen older = {0};
    older.stop_after = 3;
    o.progress_user = &older;
    FAILS(!gguf_requantize(src, dst, &o, offsetof(GGUFRequantizeOptions, cancel), NULL),
          GGUF_ERROR_CODE_CANCELLED, "stopped");
    CHECK(older.calls == 3);
    size_t len = 0;
    unsigned char *bytes = read_file(dst, &len);
    CHECK(len == 6 && memcmp(bytes, "before", 6) == 0);
    free(bytes);

    o = base("Q4_K_X");
    FAILS(!gguf_requantize(src, dst, &o, sizeof o, NULL), GGUF_ERROR_CODE_INVALID_ARGUMENT,
          "Q4_K_X");
    o = base("Q4_K_M");
    o.output_tensor_type = "Q9_9";
    FAILS(!gguf_requantize(src, dst, &o, sizeof o, NULL), GGUF_ERROR_CODE_INVALID_ARGUMENT,
          "Q9_9");
    const char *bad[] = {"attn_(q=q8_0"};
    o = base("Q4_K_M");
    o.tensor_types = bad;
    o.n_tensor_types = 1;
    FAILS(!gguf_requantize(src, dst, &o, sizeof o, NULL), GGUF_ERROR_CODE_INVALID_ARGUMENT,
          "attn_(q");
    const char *needs[] = {"attn_q=iq2_xxs"};
    o.tensor_types = needs;
    FAILS(!gguf_requantize(src, dst, &o, sizeof o, NULL), GGUF_ERROR_CODE_INVALID_ARGUMENT,
          "importance matrix");
    o = base("Q4_K_M");
    o.flags |= 1u << 20;
    FAILS(!gguf_requantize(src, dst, &o, sizeof o, NULL), GGUF_ERROR_CODE_INVALID_ARGUMENT,
          "flags");
    o = base("Q4_K_M");
    o.n_tensor_types = 2;
    FAILS(!gguf_requantize(src, dst, &o, sizeof o, NULL), GGUF_ERROR_CODE_NULL_ARGUMENT,
          "tensor_types");
    o = base("Q4_K_M");
    /* A caller built before `cancel` was appended passes the size without it: taken; a size
     * that cuts a field is refused. */
    FAILS(!gguf_requantize(src, dst, &o, offsetof(GGUFRequantizeOptions, cancel) - 1, NULL),
          GGUF_ERROR_CODE_INVALID_ARGUMENT, "options_size");
    FAILS(!gguf_requantize(src, dst, &o, sizeof o - 1, NULL), GGUF_ERROR_CODE_INVALID_ARGUMENT,
          "options_size");
    FAILS(!gguf_requantize(src, dst, NULL, sizeof o, NULL), GGUF_ERROR_CODE_NULL_ARGUMENT,
          "options");
    FAILS(!gguf_requantize(NULL, dst, &o, sizeof o, NULL), GGUF_ERROR_CODE_NULL_ARGUMENT,
          "src_path");
    FAILS(!gguf_requantize(src, NULL, &o, sizeof o, NULL), GGUF_ERROR_CODE_NULL_ARGUMENT,
          "dst_path");
    /* Nothing of the refused calls replaced the destination. */
    bytes = read_file(dst, &len);
    CHECK(len == 6 && memcmp(bytes, "before", 6) == 0);
    free(bytes);
    CHECK(remove(dst) == 0);
}

int main(int argc, char **argv) {
    g_argc = argc;
    g_argv = argv;
    const char *full = fixture("full.gguf");
    size_t dir_len = (size_t)(base_name(full) - full);
    CHECK(dir_len < sizeof g_dir);
    memcpy(g_dir, full, dir_len);
    g_dir[dir_len] = '\0';

    char src[4200];
    path_of(src, sizeof src, "src.gguf");
    write_model(src);
    presets();
    q4_k_m(src);
    failures(src);
    CHECK(remove(src) == 0);
    printf("test_requantize: ok\n");
    return 0;
}
