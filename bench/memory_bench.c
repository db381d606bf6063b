/*
 * memory_bench.c: the memory a model needs at a context size, two ways, in one process:
 *
 *   libgguf    gguf_memory_estimate on an open handle (and gguf_open + estimate + gguf_close);
 *   llama.cpp  its memory-fit mode: llama_model_load_from_file with no_alloc and no mmap, then
 *              llama_init_from_model (which sizes the KV cache and reserves the compute graph
 *              without allocating), then llama_free and llama_model_free.
 *
 * Both with llama.cpp's context defaults at n_ctx 4096, F16 K and V. The median of ROUNDS
 * rounds, the two alternating (the estimate timed over 1000 calls per round). The run fails
 * if the two disagree on the context (the figures themselves are compared byte for byte by
 * tests/memory_llama.rs).
 *
 *   memory_bench [-r ROUNDS] LIBGGML_CPU MODEL...
 */
#define _POSIX_C_SOURCE 200809L

#include "gguf.h"
/* llama.h names ggml's gguf_context in a prototype without declaring it. */
struct gguf_context;
#include "llama.h"
#include "ggml-backend.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "timing.h"

static void quiet(enum ggml_log_level level, const char *text, void *user) {
    (void)level;
    (void)text;
    (void)user;
}

int main(int argc, char **argv) {
    int rounds = 11, a = 1;
    if (argc > 2 && !strcmp(argv[1], "-r")) {
        rounds = atoi(argv[2]);
        a = 3;
    }
    if (argc - a < 2 || rounds < 1) {
        fprintf(stderr, "usage: memory_bench [-r ROUNDS] LIBGGML_CPU MODEL...\n");
        return 2;
    }
    llama_log_set(quiet, NULL);
    if (!ggml_backend_load(argv[a])) {
        fprintf(stderr, "cannot load %s\n", argv[a]);
        return 1;
    }
    llama_backend_init();
    double *ours = calloc((size_t)rounds, sizeof *ours), *open_ours = calloc((size_t)rounds, sizeof *ours);
    double *theirs = calloc((size_t)rounds, sizeof *theirs);
    printf("| model | libgguf estimate | libgguf open + estimate | llama.cpp no_alloc load + context | "
           "ratio: estimate | ratio: open + estimate |\n");
    printf("| --- | ---: | ---: | ---: | ---: | ---: |\n");
    for (int m = a + 1; m < argc; m++) {
        const char *path = argv[m];
        GGUFMemoryParams p = gguf_memory_params_default();
        p.n_ctx = 4096;
        GGUFMemoryEstimate e;
        uint32_t llama_ctx = 0;
        for (int r = 0; r < rounds; r++) {
            GGUFFile f = gguf_open(path);
            if (!f) {
                fprintf(stderr, "%s\n", gguf_last_error());
                return 1;
            }
            enum { CALLS = 1000 };
            double t0 = now();
            for (int i = 0; i < CALLS; i++) {
                memset(&e, 0, sizeof e);
                e.size = sizeof e;
                if (!gguf_memory_estimate(f, &p, &e)) {
                    fprintf(stderr, "%s\n", gguf_last_error());
                    return 1;
                }
            }
            ours[r] = (now() - t0) / CALLS;
            gguf_close(f);

            t0 = now();
            f = gguf_open(path);
            e.size = sizeof e;
            if (!f || !gguf_memory_estimate(f, &p, &e)) return 1;
            gguf_close(f);
            open_ours[r] = now() - t0;

            t0 = now();
            struct llama_model_params mp = llama_model_default_params();
            mp.n_gpu_layers = 0;
            mp.load_mode = LLAMA_LOAD_MODE_NONE;
            mp.no_alloc = true;
            struct llama_model *model = llama_model_load_from_file(path, mp);
            if (!model) {
                fprintf(stderr, "llama.cpp cannot load %s\n", path);
                return 1;
            }
            struct llama_context_params cp = llama_context_default_params();
            cp.n_ctx = 4096;
            cp.n_threads = cp.n_threads_batch = 1;
            struct llama_context *ctx = llama_init_from_model(model, cp);
            if (!ctx) return 1;
            llama_ctx = llama_n_ctx(ctx);
            llama_free(ctx);
            llama_model_free(model);
            theirs[r] = now() - t0;
        }
        if (llama_ctx != e.n_ctx) {
            fprintf(stderr, "%s: context %u, llama.cpp's %u\n", path, e.n_ctx, llama_ctx);
            return 1;
        }
        qsort(ours, (size_t)rounds, sizeof *ours, cmp_double);
        qsort(open_ours, (size_t)rounds, sizeof *ours, cmp_double);
        qsort(theirs, (size_t)rounds, sizeof *theirs, cmp_double);
        double o = ours[rounds / 2], oo = open_ours[rounds / 2], t = theirs[rounds / 2];
        const char *name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
        printf("| %s | %.2f us | %.1f us | %.2f ms | %.0fx | %.0fx |\n", name, o * 1e6, oo * 1e6,
               t * 1e3, t / o, t / oo);
    }
    free(ours);
    free(open_ours);
    free(theirs);
    return 0;
}
