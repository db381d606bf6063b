/*
 * quantize_bench.c: quantization, side by side with ggml (docs/quantize.md).
 *
 *   quantize_bench [-r ROUNDS] [-n ROWS] [-k N_PER_ROW] [-i] [-t THREADS] [TYPE...] GGML_DIR
 *
 * One thread, each type (default: every non-IQ type ggml quantizes): MB/s of float input
 * (4 bytes per value read per second) of libgguf's gguf_quantize and of ggml's
 * ggml_quantize_chunk (libggml-base.so loaded from GGML_DIR), ROWS rows of N_PER_ROW values
 * (default 16 x 4096: 256 KiB of floats, roughly normal values), ROUNDS rounds (default 15)
 * with the two interleaved; minimum and median time per call. -i passes importance weights
 * (one per value of a row) to both. The two outputs are compared byte for byte (the run fails
 * if they differ). -t also times gguf_quantize_parallel on THREADS threads.
 * The CPU model (from /proc/cpuinfo) is printed first.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <gguf.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "timing.h"

typedef size_t (*chunk_t)(int, const float *, void *, int64_t, int64_t, int64_t, const float *);

static void cpu_model(void) {
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[512];
    while (f && fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) == 0) {
            char *c = strchr(line, ':');
            printf("CPU:%s", c ? c + 1 : line);
            break;
        }
    }
    if (f) fclose(f);
}

static const char *DEFAULT_TYPES[] = {"F16",  "BF16", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0",
                                      "Q1_0", "Q2_0", "MXFP4", "NVFP4", "TQ1_0", "TQ2_0",
                                      "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K"};

static int type_id(const char *name) {
    for (uint32_t t = 0; t < 64; t++) {
        const char *n = gguf_dtype_name(t);
        if (n && strcmp(n, name) == 0) return (int)t;
    }
    return -1;
}

int main(int argc, char **argv) {
    int rounds = 15, opt;
    long rows = 16, n = 4096;
    unsigned threads = 0;
    bool imatrix = false;
    while ((opt = getopt(argc, argv, "r:n:k:it:")) != -1) {
        if (opt == 'r') rounds = atoi(optarg);
        else if (opt == 'n') rows = atol(optarg);
        else if (opt == 'k') n = atol(optarg);
        else if (opt == 'i') imatrix = true;
        else if (opt == 't') threads = (unsigned)atoi(optarg);
        else return 2;
    }
    if (optind >= argc || rounds < 1 || rows < 1 || n < 256 || n % 256) {
        fprintf(stderr, "usage: quantize_bench [-r ROUNDS] [-n ROWS] [-k N_PER_ROW] [-i] [-t THREADS] [TYPE...] GGML_DIR\n");
        return 2;
    }
    const char *ggml_dir = argv[argc - 1];
    char path[4096];
    snprintf(path, sizeof path, "%s/libggml-base.so", ggml_dir);
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    chunk_t chunk = lib ? (chunk_t)dlsym(lib, "ggml_quantize_chunk") : NULL;
    if (!chunk) {
        fprintf(stderr, "cannot load ggml_quantize_chunk from %s\n", path);
        return 1;
    }
    const char **types = DEFAULT_TYPES;
    int n_types = (int)(sizeof DEFAULT_TYPES / sizeof *DEFAULT_TYPES);
    if (argc - 1 - optind > 0) {
        types = (const char **)argv + optind;
        n_types = argc - 1 - optind;
    }
    size_t count = (size_t)rows * (size_t)n;
    float *src = malloc(count * sizeof(float)), *imp = malloc((size_t)n * sizeof(float));
    uint32_t s = 42;
    for (size_t i = 0; i < count; i++) {
        float v = 0;
        for (int k = 0; k < 4; k++) {
            s = s * 1664525u + 1013904223u;
            v += (float)(s >> 8) / 16777216.0f;
        }
        src[i] = (v - 2.0f) * 0.05f;
    }
    for (long i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        imp[i] = 0.01f + (float)(s >> 8) / 16777216.0f * 4.0f;
    }
    cpu_model();
    printf("%ld rows x %ld values (%.0f KiB of floats), %d rounds, importance %s; MB/s of float input\n",
           rows, n, count * 4 / 1024.0, rounds, imatrix ? "yes" : "no");
    printf("%-6s %12s %12s %12s %12s %8s", "type", "ours min", "ours med", "ggml min", "ggml med", "ratio");
    if (threads) printf(" %12s", "ours -t");
    printf("\n");
    double *to = malloc(sizeof(double) * rounds), *tg = malloc(sizeof(double) * rounds);
    for (int k = 0; k < n_types; k++) {
        int t = type_id(types[k]);
        if (t < 0) {
            fprintf(stderr, "unknown type %s\n", types[k]);
            return 2;
        }
        uint64_t size = gguf_quantize_size((uint32_t)t, (uint64_t)rows, (uint64_t)n);
        unsigned char *a = malloc(size), *b = malloc(size);
        const float *w = imatrix ? imp : NULL;
        for (int r = 0; r < rounds; r++) {
            double t0 = now();
            uint64_t got = gguf_quantize((uint32_t)t, src, (uint64_t)rows, (uint64_t)n, w, a, size);
            double t1 = now();
            size_t want = chunk(t, src, b, 0, rows, n, w);
            double t2 = now();
            if (got != size || want != size) {
                fprintf(stderr, "%s: %s\n", types[k], gguf_last_error());
                return 1;
            }
            to[r] = t1 - t0;
            tg[r] = t2 - t1;
        }
        if (memcmp(a, b, size) != 0) {
            fprintf(stderr, "%s: libgguf's bytes differ from ggml's\n", types[k]);
            return 1;
        }
        qsort(to, rounds, sizeof *to, cmp_double);
        qsort(tg, rounds, sizeof *tg, cmp_double);
        double mb = count * 4 / 1e6;
        printf("%-6s %12.1f %12.1f %12.1f %12.1f %7.2fx", types[k], mb / to[0], mb / to[rounds / 2],
               mb / tg[0], mb / tg[rounds / 2], tg[rounds / 2] / to[rounds / 2]);
        if (threads) {
            double best = 1e9;
            for (int r = 0; r < rounds; r++) {
                double t0 = now();
                gguf_quantize_parallel((uint32_t)t, src, (uint64_t)rows, (uint64_t)n, w, a, size, threads);
                double dt = now() - t0;
                if (dt < best) best = dt;
            }
            if (memcmp(a, b, size) != 0) return 1;
            printf(" %12.1f", mb / best);
        }
        printf("\n");
        fflush(stdout);
        free(a);
        free(b);
    }
    return 0;
}
