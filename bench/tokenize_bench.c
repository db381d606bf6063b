/*
 * tokenize_bench.c: the tokenizer, side by side with llama.cpp's (figures in BENCHMARKS.md, "Tokenizing").
 *
 *   tokenize_bench [-r ROUNDS] LIBLLAMA TEXT VOCAB...
 *
 * For each VOCAB file: the time to build the tokenizer (gguf_open + gguf_tokenizer_open) against
 * llama.cpp's vocabulary load (llama_model_load_from_file with vocab_only); then tokens per
 * second over the whole of TEXT, one thread, gguf_tokenize against llama_tokenize (LIBLLAMA
 * loaded with dlopen), no special tokens added or parsed; then gguf_detokenize against
 * llama_detokenize over those tokens. Best of ROUNDS (default 5), each round alternating the
 * two. The tokens must be the same (the run fails if they differ). Both best tokenize times,
 * in milliseconds, go to stderr.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <gguf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "timing.h"

/* struct llama_model_params of the pinned build: 80 bytes, vocab_only at byte 72. */
typedef struct {
    uint64_t w[10];
} model_params;

static model_params (*p_default_params)(void);
static void *(*p_load)(const char *, model_params);
static void (*p_free)(void *);
static const void *(*p_vocab)(const void *);
static int32_t (*p_tokenize)(const void *, const char *, int32_t, int32_t *, int32_t, _Bool, _Bool);
static int32_t (*p_detokenize)(const void *, const int32_t *, int32_t, char *, int32_t, _Bool,
                               _Bool);

static void quiet(int level, const char *text, void *user) {
    (void)level;
    (void)text;
    (void)user;
}

static void *sym(void *lib, const char *name) {
    void *p = dlsym(lib, name);
    if (!p) {
        fprintf(stderr, "libllama has no %s\n", name);
        exit(2);
    }
    return p;
}

static char *read_all(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        exit(2);
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) exit(2);
    fclose(f);
    *len = (size_t)n;
    return buf;
}

static void *load_llama(const char *path) {
    model_params p = p_default_params();
    unsigned char *b = (unsigned char *)p.w;
    if (b[72] != 0 || b[74] != 1) {
        fprintf(stderr, "unexpected llama_model_params layout\n");
        exit(2);
    }
    b[72] = 1;
    return p_load(path, p);
}

int main(int argc, char **argv) {
    int rounds = 5, a = 1;
    if (argc > 2 && !strcmp(argv[1], "-r")) {
        rounds = atoi(argv[2]);
        a = 3;
    }
    if (argc - a < 3) {
        fprintf(stderr, "usage: %s [-r ROUNDS] LIBLLAMA TEXT VOCAB...\n", argv[0]);
        return 2;
    }
    void *lib = dlopen(argv[a], RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "%s\n", dlerror());
        return 2;
    }
    ((void (*)(void (*)(int, const char *, void *), void *))sym(lib, "llama_log_set"))(quiet, NULL);
    ((void (*)(void))sym(lib, "llama_backend_init"))();
    *(void **)&p_default_params = sym(lib, "llama_model_default_params");
    *(void **)&p_load = sym(lib, "llama_model_load_from_file");
    *(void **)&p_free = sym(lib, "llama_model_free");
    *(void **)&p_vocab = sym(lib, "llama_model_get_vocab");
    *(void **)&p_tokenize = sym(lib, "llama_tokenize");
    *(void **)&p_detokenize = sym(lib, "llama_detokenize");

    size_t len;
    char *text = read_all(argv[a + 1], &len);
    printf("text: %s, %zu bytes; best of %d rounds, one thread\n", argv[a + 1], len, rounds);
    printf("%-28s %10s %10s %12s %12s %7s %12s %12s %7s\n", "vocabulary", "load ms", "llama ms",
           "tokens", "Mtok/s", "llama", "detok MB/s", "llama", "speedup");
    int status = 0;
    for (int v = a + 2; v < argc; v++) {
        const char *path = argv[v];
        double ours_load = 1e9, llama_load = 1e9;
        GGUFTokenizer tok = NULL;
        void *model = NULL;
        for (int r = 0; r < rounds; r++) {
            double t0 = now();
            GGUFFile f = gguf_open(path);
            GGUFTokenizer t = f ? gguf_tokenizer_open(f) : NULL;
            if (f) gguf_close(f);
            double t1 = now();
            if (!t) {
                fprintf(stderr, "%s: %s\n", path, gguf_last_error());
                return 1;
            }
            void *m = load_llama(path);
            double t2 = now();
            if (!m) {
                fprintf(stderr, "%s: llama.cpp cannot load it\n", path);
                return 1;
            }
            if (t1 - t0 < ours_load) ours_load = t1 - t0;
            if (t2 - t1 < llama_load) llama_load = t2 - t1;
            if (tok) gguf_tokenizer_close(tok);
            if (model) p_free(model);
            tok = t;
            model = m;
        }
        const void *vocab = p_vocab(model);
        int64_t n = gguf_tokenize(tok, text, len, NULL, 0, 0);
        int32_t *ours = malloc((size_t)n * sizeof *ours), *theirs = malloc((size_t)n * sizeof *theirs);
        double best_ours = 1e9, best_llama = 1e9, best_dours = 1e9, best_dllama = 1e9;
        char *out = malloc(len * 2 + 1024);
        for (int r = 0; r < rounds; r++) {
            double t0 = now();
            int64_t got = gguf_tokenize(tok, text, len, ours, (uint64_t)n, 0);
            double t1 = now();
            int32_t want = p_tokenize(vocab, text, (int32_t)len, theirs, (int32_t)n, 0, 0);
            double t2 = now();
            if (got != n || want != n || memcmp(ours, theirs, (size_t)n * sizeof *ours)) {
                fprintf(stderr, "%s: the tokens differ from llama.cpp's (%lld, %d)\n", path,
                        (long long)got, want);
                status = 1;
            }
            if (t1 - t0 < best_ours) best_ours = t1 - t0;
            if (t2 - t1 < best_llama) best_llama = t2 - t1;
            t0 = now();
            int64_t dl = gguf_detokenize(tok, ours, (uint64_t)n, out, len * 2 + 1024, 0);
            t1 = now();
            int32_t dw = p_detokenize(vocab, ours, (int32_t)n, out, (int32_t)(len * 2 + 1024), 0, 0);
            t2 = now();
            if (dl != dw) {
                fprintf(stderr, "%s: the text differs from llama.cpp's\n", path);
                status = 1;
            }
            if (t1 - t0 < best_dours) best_dours = t1 - t0;
            if (t2 - t1 < best_dllama) best_dllama = t2 - t1;
        }
        const char *name = strrchr(path, '/');
        name = name ? name + 1 : path;
        printf("%-28s %10.1f %10.1f %12lld %12.2f %7.2f %12.1f %12.1f %6.1fx\n", name,
               ours_load * 1e3, llama_load * 1e3, (long long)n, n / best_ours / 1e6,
               n / best_llama / 1e6, len / best_dours / 1e6, len / best_dllama / 1e6,
               best_llama / best_ours);
        fflush(stdout);
        fprintf(stderr, "%s: tokenize %.1f ms, llama.cpp %.1f ms\n", name, best_ours * 1e3,
                best_llama * 1e3);
        free(ours);
        free(theirs);
        free(out);
        gguf_tokenizer_close(tok);
        p_free(model);
    }
    free(text);
    return status;
}
