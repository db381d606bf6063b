// llama.cpp's own memory figures for a model, without allocating it (its memory-fit mode:
// no_alloc, no mmap), for tests/memory_llama.rs. Built against the v0.5.0 headers (include/ and
// src/ of the llama.cpp sources node-llama-cpp 3.22.1 bundles) and linked with the prebuilt
// libllama.v0.5.0.so of the same release.
//   memory_shim MODEL n_ctx n_batch n_ubatch n_seq_max type_k type_v flash_attn swa_full kv_unified
// (flash_attn: -1 auto, 0 off, 1 on). Prints one `name value` line per figure:
//   n_ctx, n_ctx_seq, model (weights; with MEMORY_SHIM_MMAP set, loaded with mmap instead of
//   no_alloc: the mapped figure), context, compute (llama_get_memory_breakdown, summed over
//   buffer types), k, v (each KV cache's size_k_bytes/size_v_bytes), r, s (the recurrent
//   state's size_r_bytes/size_s_bytes), output (the output buffer's allocation), then `ok`.
// The output buffer's size is read by interposing ggml_backend_buft_alloc_buffer (this
// executable exports it, so libllama's calls come here first): llama.cpp allocates it for real,
// even with no_alloc.
#include "llama.h"
#include "llama-ext.h"
// size_k_bytes and the like are private members (exported all the same; access does not change
// the symbols): the shim reads them as a friend would.
#include <map>
#include <memory>
#include <vector>
#include <string>
#include <functional>
#define private public
#include "llama-kv-cache.h"
#include "llama-kv-cache-iswa.h"
#include "llama-memory-hybrid.h"
#include "llama-memory-hybrid-iswa.h"
#include "llama-memory-recurrent.h"
#undef private

#include "ggml-backend.h"

#include <dlfcn.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>

static bool g_in_context = false;
static size_t g_output = 0;

extern "C" ggml_backend_buffer_t ggml_backend_buft_alloc_buffer(ggml_backend_buffer_type_t buft, size_t size) {
    using fn_t = ggml_backend_buffer_t (*)(ggml_backend_buffer_type_t, size_t);
    static fn_t real = (fn_t) dlsym(RTLD_NEXT, "ggml_backend_buft_alloc_buffer");
    // The output buffer is the context's first allocation with a size (the KV caches' are
    // dummies of size 0 in this mode; the recurrent state's come after it).
    if (g_in_context && g_output == 0 && size > 0) {
        g_output = size;
    }
    return real(buft, size);
}

struct sizes {
    size_t k = 0, v = 0, r = 0, s = 0;
};

static void add_kv(sizes & z, const llama_kv_cache * kv) {
    if (kv) {
        z.k += kv->size_k_bytes();
        z.v += kv->size_v_bytes();
    }
}

static void add_rs(sizes & z, const llama_memory_recurrent * rs) {
    if (rs) {
        z.r += rs->size_r_bytes();
        z.s += rs->size_s_bytes();
    }
}

static void quiet(enum ggml_log_level, const char *, void *) {}

int main(int argc, char ** argv) {
    if (argc != 11) {
        fprintf(stderr, "usage: memory_shim MODEL n_ctx n_batch n_ubatch n_seq_max type_k type_v fa swa_full unified\n");
        return 2;
    }
    if (!getenv("MEMORY_SHIM_LOG")) {
        llama_log_set(quiet, nullptr);
    }
    // ggml's baseline x86-64 CPU backend, named by the test (beside libllama).
    const char * cpu = getenv("MEMORY_SHIM_CPU_BACKEND");
    if (!cpu || !ggml_backend_load(cpu)) {
        printf("error backend\n");
        return 1;
    }
    llama_backend_init();

    llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = 0;
    // MEMORY_SHIM_MMAP=1: a real load with mmap instead (the weights' mapped figure).
    const bool mmap = getenv("MEMORY_SHIM_MMAP") != nullptr;
    mp.load_mode = mmap ? LLAMA_LOAD_MODE_MMAP : LLAMA_LOAD_MODE_NONE;
    mp.no_alloc = !mmap;
    llama_model * model = llama_model_load_from_file(argv[1], mp);
    if (!model) {
        printf("error model\n");
        return 1;
    }

    llama_context_params cp = llama_context_default_params();
    cp.n_ctx = (uint32_t) strtoul(argv[2], nullptr, 10);
    cp.n_batch = (uint32_t) strtoul(argv[3], nullptr, 10);
    cp.n_ubatch = (uint32_t) strtoul(argv[4], nullptr, 10);
    cp.n_seq_max = (uint32_t) strtoul(argv[5], nullptr, 10);
    cp.type_k = (ggml_type) atoi(argv[6]);
    cp.type_v = (ggml_type) atoi(argv[7]);
    int fa = atoi(argv[8]);
    cp.flash_attn_type = fa < 0 ? LLAMA_FLASH_ATTN_TYPE_AUTO : fa == 0 ? LLAMA_FLASH_ATTN_TYPE_DISABLED : LLAMA_FLASH_ATTN_TYPE_ENABLED;
    cp.swa_full = atoi(argv[9]) != 0;
    cp.kv_unified = atoi(argv[10]) != 0;
    cp.n_threads = 1;
    cp.n_threads_batch = 1;

    g_in_context = true;
    llama_context * ctx = llama_init_from_model(model, cp);
    g_in_context = false;
    if (!ctx) {
        printf("error context\n");
        return 1;
    }

    size_t m = 0, c = 0, comp = 0;
    for (const auto & [buft, mb] : llama_get_memory_breakdown(ctx)) {
        (void) buft;
        m += mb.model;
        c += mb.context;
        comp += mb.compute;
    }

    sizes z;
    llama_memory_i * mem = llama_get_memory(ctx);
    if (auto * kv = dynamic_cast<llama_kv_cache *>(mem)) {
        add_kv(z, kv);
    } else if (auto * iswa = dynamic_cast<llama_kv_cache_iswa *>(mem)) {
        add_kv(z, iswa->get_base());
        add_kv(z, iswa->get_swa());
    } else if (auto * hy = dynamic_cast<llama_memory_hybrid *>(mem)) {
        add_kv(z, hy->get_mem_attn());
        add_rs(z, hy->get_mem_recr());
    } else if (auto * hyi = dynamic_cast<llama_memory_hybrid_iswa *>(mem)) {
        auto * a = hyi->get_mem_attn();
        add_kv(z, a->get_base());
        add_kv(z, a->get_swa());
        add_rs(z, hyi->get_mem_recr());
    } else if (auto * rs = dynamic_cast<llama_memory_recurrent *>(mem)) {
        add_rs(z, rs);
    } else if (mem) {
        printf("error memory type\n");
        return 1;
    }

    printf("n_ctx %u\n", llama_n_ctx(ctx));
    printf("n_ctx_seq %u\n", llama_n_ctx_seq(ctx));
    printf("model %zu\n", m);
    printf("context %zu\n", c);
    printf("compute %zu\n", comp);
    printf("k %zu\nv %zu\nr %zu\ns %zu\n", z.k, z.v, z.r, z.s);
    printf("output %zu\n", g_output);
    printf("ok\n");
    llama_free(ctx);
    llama_model_free(model);
    return 0;
}
