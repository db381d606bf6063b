/*
 * dequant_bench.c: tensor values, side by side with ggml (README: Tensor values).
 *
 *   dequant_bench [-r ROUNDS] [-n ELEMENTS[,ELEMENTS...]] [-y TYPE[,TYPE...]] [-a OFFSET]
 *                 [-m MiB] [-t MAX_THREADS] [-o CSV] [-k] GGML_DIR TMP_DIR
 *
 * 1. One thread, every data type: GB/s of float output (4 bytes per element written per second)
 *    of libgguf's gguf_dequantize, of ggml's to_float (ggml_get_type_traits, libggml-base.so
 *    loaded from GGML_DIR), of memcpy of the same output size, and of aligned vector stores of
 *    that size reading nothing ("stores": the widest this CPU has; the floor of any
 *    conversion's time). Each size of ELEMENTS per call (default 4096, 2^17 and 2^20: 16 KiB,
 *    512 KiB and 4 MiB of floats, which on this machine stay in L1, L2 and L3), random valid
 *    blocks, ROUNDS rounds (default 31) with the four interleaved, each sample repeating the
 *    call until it has written about 2 MB; minimum and median time per call. The outputs of
 *    libgguf and ggml are compared bit for bit once per size (the run fails if they differ).
 *    -y measures only the types named (F16,Q4_K,...); -a OFFSET moves every output buffer
 *    OFFSET bytes (a multiple of 4, below 64) past a 64-byte boundary, as a caller's buffer may
 *    lie (the stores-only floor stays aligned).
 * 2. Threads: whole tensors of F16, BF16, Q8_0, Q4_0 and Q4_K (MiB of float output each,
 *    default 256: far beyond the caches) converted by gguf_tensor_to_float_parallel on 1, 2, 4, ...
 *    MAX_THREADS threads (default: the online CPUs), against memcpy of the output size split
 *    over as many threads. -m 0 leaves out parts 2 and 3.
 * 3. Validation of that file's every tensor: gguf_validate_tensor against ggml_validate_row_data
 *    on the same bytes, and against read(2) of the whole file into a small buffer (what
 *    `cat > /dev/null` does), all warm. -k keeps the file (TMP_DIR/dequant-bench.gguf).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <gguf.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "timing.h"

typedef void (*to_float_t)(const void *, float *, int64_t);
struct ggml_type_traits {
    const char *type_name;
    int64_t blck_size;
    int64_t blck_size_interleave;
    size_t type_size;
    bool is_quantized;
    to_float_t to_float;
};
static const struct ggml_type_traits *(*ggml_traits)(int);
static bool (*ggml_validate)(int, const void *, size_t);

static double median(double *v, int n) {
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}
static double minimum(const double *v, int n) {
    double m = v[0];
    for (int i = 1; i < n; i++) m = v[i] < m ? v[i] : m;
    return m;
}
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rng(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}
static void die(const char *what) {
    fprintf(stderr, "dequant_bench: %s: %s\n", what, gguf_last_error());
    exit(1);
}

/* Random blocks that ggml_validate_row_data accepts (every scale finite), scales kept in a
 * range that yields normal floats: F32 values are random normal floats, MXFP4's exponent byte is
 * drawn near 127. Q8_1, which ggml refuses as a type, is drawn without the check. */
static void random_blocks(int type, const struct ggml_type_traits *t, uint8_t *p, size_t n_blocks) {
    size_t bs = t->type_size;
    /* ggml reports each refused block on stderr: silenced while drawing. */
    fflush(stderr);
    int saved = dup(2), devnull = open("/dev/null", O_WRONLY);
    if (saved >= 0 && devnull >= 0) dup2(devnull, 2);
    for (size_t b = 0; b < n_blocks; b++) {
        uint8_t *blk = p + b * bs;
        for (int tries = 0; tries < 1000; tries++) {
            for (size_t i = 0; i < bs; i++) blk[i] = (uint8_t)(rng() >> 24);
            if (type == 0) { /* F32: sign, exponent 100..154, mantissa */
                uint32_t v = (uint32_t)(rng() >> 9) & 0x807fffffu;
                v |= (uint32_t)(100 + rng() % 55) << 23;
                memcpy(blk, &v, 4);
            }
            if (type == 39) blk[0] = (uint8_t)(117 + rng() % 20); /* MXFP4's E8M0 exponent */
            if (type == 9 || ggml_validate(type, blk, bs)) break;
        }
    }
    if (saved >= 0) dup2(saved, 2), close(saved);
    if (devnull >= 0) close(devnull);
}

static const char *const NAMES[] = {
    [0] = "F32", [1] = "F16", [2] = "Q4_0", [3] = "Q4_1", [6] = "Q5_0", [7] = "Q5_1",
    [8] = "Q8_0", [9] = "Q8_1", [10] = "Q2_K", [11] = "Q3_K", [12] = "Q4_K", [13] = "Q5_K",
    [14] = "Q6_K", [15] = "Q8_K", [16] = "IQ2_XXS", [17] = "IQ2_XS", [18] = "IQ3_XXS",
    [19] = "IQ1_S", [20] = "IQ4_NL", [21] = "IQ3_S", [22] = "IQ2_S", [23] = "IQ4_XS",
    [24] = "I8", [25] = "I16", [26] = "I32", [27] = "I64", [28] = "F64", [29] = "IQ1_M",
    [30] = "BF16", [34] = "TQ1_0", [35] = "TQ2_0", [39] = "MXFP4", [40] = "NVFP4",
    [41] = "Q1_0", [42] = "Q2_0",
};
#define N_IDS ((int)(sizeof NAMES / sizeof NAMES[0]))
static bool selected[N_IDS]; /* -y: the types measured in part 1 (all without it) */
static size_t out_offset;    /* -a: bytes past a 64-byte boundary of the outputs in part 1 */

/* Writes n floats at dst (64-byte aligned) with the widest aligned vector stores this CPU has,
 * reading nothing: the floor of any conversion's cost at this output size. */
#if defined(__x86_64__)
__attribute__((target("avx512f"))) static void stores512(float *dst, uint64_t n) {
    __m512 v = _mm512_set1_ps(1.0f);
    for (uint64_t i = 0; i + 64 <= n; i += 64) {
        _mm512_store_ps(dst + i, v), _mm512_store_ps(dst + i + 16, v);
        _mm512_store_ps(dst + i + 32, v), _mm512_store_ps(dst + i + 48, v);
    }
}
__attribute__((target("avx"))) static void stores256(float *dst, uint64_t n) {
    __m256 v = _mm256_set1_ps(1.0f);
    for (uint64_t i = 0; i + 32 <= n; i += 32) {
        _mm256_store_ps(dst + i, v), _mm256_store_ps(dst + i + 8, v);
        _mm256_store_ps(dst + i + 16, v), _mm256_store_ps(dst + i + 24, v);
    }
}
#endif
static void (*stores)(float *, uint64_t);
static const char *stores_name = "memset";
static void pick_stores(void) {
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) stores = stores512, stores_name = "64-byte";
    else if (__builtin_cpu_supports("avx")) stores = stores256, stores_name = "32-byte";
#endif
}
static void stores_only(float *dst, uint64_t n) {
    dst = (float *)((uintptr_t)dst & ~(uintptr_t)63); /* aligned (-a): the floor */
    if (stores) stores(dst, n);
    else memset(dst, 0x3f, n * 4);
}

/* One size's figures for one type: best and median GB/s of libgguf, ggml, memcpy, stores. */
struct figures {
    bool has_ggml;
    double a[2], g[2], m[2], s[2];
};

/* Times `calls` calls of each of the four per sample: a sample then writes at least about 2 MB,
 * >= 20 us at 100 GB/s, so the clock's granularity does not quantise the small sizes. All four
 * write to the same buffer (ggml too, once its output was compared), so a size that fits in a
 * cache stays there from one to the next. */
static void measure(int id, const struct ggml_type_traits *t, const uint8_t *src, uint64_t elems,
                    float *out, float *ref, const float *src_f, int rounds, struct figures *f) {
    double *a = malloc(rounds * sizeof *a), *g = malloc(rounds * sizeof *g),
           *m = malloc(rounds * sizeof *m), *s = malloc(rounds * sizeof *s);
    if (!a || !g || !m || !s) die("out of memory");
    f->has_ggml = t->to_float != NULL;
    if (!gguf_dequantize(id, src, elems, out)) die(NAMES[id]);
    if (f->has_ggml) {
        t->to_float(src, ref, (int64_t)elems);
        if (memcmp(out, ref, elems * 4) != 0) {
            fprintf(stderr, "dequant_bench: %s: libgguf and ggml differ\n", NAMES[id]);
            exit(1);
        }
    }
    uint64_t calls = (2000000 + elems * 4 - 1) / (elems * 4);
    for (int r = 0; r < rounds; r++) {
        double t0 = now();
        for (uint64_t c = 0; c < calls; c++) gguf_dequantize(id, src, elems, out);
        double t1 = now();
        if (f->has_ggml)
            for (uint64_t c = 0; c < calls; c++) t->to_float(src, out, (int64_t)elems);
        double t2 = now();
        for (uint64_t c = 0; c < calls; c++) {
            memcpy(out, src_f, elems * 4);
            __asm__ volatile("" ::: "memory"); /* each copy happens */
        }
        double t3 = now();
        for (uint64_t c = 0; c < calls; c++) {
            stores_only(out, elems);
            __asm__ volatile("" ::: "memory");
        }
        double t4 = now();
        a[r] = (t1 - t0) / calls, g[r] = (t2 - t1) / calls, m[r] = (t3 - t2) / calls;
        s[r] = (t4 - t3) / calls;
    }
    double gb = elems * 4 / 1e9;
    f->a[0] = gb / minimum(a, rounds), f->a[1] = gb / median(a, rounds);
    f->g[0] = gb / minimum(g, rounds), f->g[1] = gb / median(g, rounds);
    f->m[0] = gb / minimum(m, rounds), f->m[1] = gb / median(m, rounds);
    f->s[0] = gb / minimum(s, rounds), f->s[1] = gb / median(s, rounds);
    free(a), free(g), free(m), free(s);
}

static void single_thread(int rounds, const uint64_t *sizes, int n_sizes, FILE *csv) {
    uint64_t n = 0;
    for (int k = 0; k < n_sizes; k++) n = sizes[k] > n ? sizes[k] : n;
    /* 64-byte aligned outputs: the stores-only floor uses aligned stores, and every
     * converter gets the same buffers. */
    float *out0 = aligned_alloc(64, n * 4 + 64), *ref0 = aligned_alloc(64, n * 4 + 64),
          *src_f = aligned_alloc(64, n * 4);
    struct figures(*fig)[N_IDS] = calloc(n_sizes, sizeof *fig);
    if (!out0 || !ref0 || !src_f || !fig) die("out of memory");
    memset(out0, 0, n * 4 + 64), memset(ref0, 0, n * 4 + 64), memset(src_f, 0, n * 4);
    float *out = (float *)((char *)out0 + out_offset), *ref = (float *)((char *)ref0 + out_offset);
    for (int id = 0; id < N_IDS; id++) {
        if (!NAMES[id] || !selected[id]) continue;
        /* Drawn once at the largest size; the smaller sizes convert its first blocks. */
        const struct ggml_type_traits *t = ggml_traits(id);
        uint8_t *src = malloc(n / t->blck_size * t->type_size);
        if (!src) die("out of memory");
        random_blocks(id, t, src, n / t->blck_size);
        for (int k = 0; k < n_sizes; k++)
            measure(id, t, src, sizes[k] / t->blck_size * t->blck_size, out, ref, src_f, rounds,
                    &fig[k][id]);
        free(src);
    }
    if (csv)
        fprintf(csv, "elements,type,libgguf_best,libgguf_median,ggml_best,ggml_median,memcpy_best,"
                     "memcpy_median,stores_best,stores_median\n");
    for (int k = 0; k < n_sizes; k++) {
        uint64_t e = sizes[k];
        printf("%s== one thread: %llu elements per call (%.4g KiB of floats), %d rounds of %llu "
               "calls; GB/s of float output, min time (best) and median; stores: %s stores only"
               "%s\n",
               k ? "\n" : "", (unsigned long long)e, e * 4 / 1024.0, rounds,
               (unsigned long long)((2000000 + e * 4 - 1) / (e * 4)), stores_name,
               out_offset ? "; outputs off 64-byte alignment (-a)" : "");
        printf("%-8s %9s %9s %9s %9s %8s %8s %9s %9s %9s %9s\n", "type", "libgguf", "(median)",
               "ggml", "(median)", "ratio", "(median)", "memcpy", "(median)", "stores",
               "(median)");
        for (int id = 0; id < N_IDS; id++) {
            if (!NAMES[id] || !selected[id]) continue;
            const struct figures *f = &fig[k][id];
            if (f->has_ggml)
                printf("%-8s %9.2f %9.2f %9.2f %9.2f %7.2fx %7.2fx %9.2f %9.2f %9.2f %9.2f\n",
                       NAMES[id], f->a[0], f->a[1], f->g[0], f->g[1], f->a[0] / f->g[0],
                       f->a[1] / f->g[1], f->m[0], f->m[1], f->s[0], f->s[1]);
            else
                printf("%-8s %9.2f %9.2f %9s %9s %8s %8s %9.2f %9.2f %9.2f %9.2f\n", NAMES[id],
                       f->a[0], f->a[1], "-", "-", "-", "-", f->m[0], f->m[1], f->s[0], f->s[1]);
            if (csv)
                fprintf(csv, "%llu,%s,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f\n",
                        (unsigned long long)e, NAMES[id], f->a[0], f->a[1],
                        f->has_ggml ? f->g[0] : 0, f->has_ggml ? f->g[1] : 0, f->m[0], f->m[1],
                        f->s[0], f->s[1]);
        }
    }
    free(out0), free(ref0), free(src_f), free(fig);
}

struct copy_job {
    char *dst;
    const char *src;
    size_t n;
};
static void *copy_part(void *p) {
    struct copy_job *j = p;
    memcpy(j->dst, j->src, j->n);
    return NULL;
}
/* memcpy of n bytes split over `threads` threads (the calling one included). */
static void parallel_memcpy(char *dst, const char *src, size_t n, int threads) {
    pthread_t tid[256];
    struct copy_job jobs[256];
    for (int k = 0; k < threads; k++) {
        size_t s = n * k / threads, e = n * (k + 1) / threads;
        jobs[k] = (struct copy_job){dst + s, src + s, e - s};
        if (k > 0) pthread_create(&tid[k], NULL, copy_part, &jobs[k]);
    }
    copy_part(&jobs[0]);
    for (int k = 1; k < threads; k++) pthread_join(tid[k], NULL);
}

static const int THREAD_TYPES[] = {1, 30, 8, 2, 12};

static char *write_model(const char *dir, uint64_t n) {
    static char path[4096];
    snprintf(path, sizeof path, "%s/dequant-bench.gguf", dir);
    GGUFWriter w = gguf_writer_new();
    if (!w) die("writer");
    uint8_t *bufs[5];
    for (int i = 0; i < 5; i++) {
        int id = THREAD_TYPES[i];
        const struct ggml_type_traits *t = ggml_traits(id);
        uint64_t rows = n / 4096, n_blocks = n / t->blck_size;
        bufs[i] = malloc(n_blocks * t->type_size);
        if (!bufs[i]) die("out of memory");
        random_blocks(id, t, bufs[i], n_blocks);
        uint64_t dims[2] = {4096, rows};
        if (!gguf_writer_add_tensor(w, NAMES[id], 2, dims, id, bufs[i], n_blocks * t->type_size))
            die("add tensor");
    }
    gguf_writer_set_sync(w, false);
    if (!gguf_writer_write_file(w, path)) die("write");
    gguf_writer_free(w);
    for (int i = 0; i < 5; i++) free(bufs[i]);
    return path;
}

static void threads_and_validation(int rounds, uint64_t n, int max_threads, const char *dir,
                                   bool keep) {
    const char *path = write_model(dir, n);
    GGUFFile f = gguf_open(path);
    if (!f) die(path);
    float *out = malloc(n * 4);
    char *src = malloc(n * 4);
    if (!out || !src) die("out of memory");
    memset(out, 0, n * 4), memset(src, 1, n * 4);
    double *a = malloc(rounds * sizeof *a), *m = malloc(rounds * sizeof *m);
    double gb = n * 4 / 1e9;
    printf("\n== threads: whole tensors of %llu elements (%.0f MiB of floats), %d rounds; GB/s of "
           "float output, best and median; memcpy of the output size on as many threads\n",
           (unsigned long long)n, n * 4 / 1048576.0, rounds);
    printf("%-6s %7s %9s %9s %9s %9s %8s\n", "type", "threads", "libgguf", "(median)", "memcpy",
           "(median)", "of memcpy");
    for (int i = 0; i < 5; i++) {
        const GGUFTensorInfo *info = gguf_get_tensor(f, NAMES[THREAD_TYPES[i]]);
        if (!info) die("tensor");
        uint64_t rows = info->n_elements / info->dims[0];
        for (int th = 1; th <= max_threads; th = th < max_threads && th * 2 > max_threads ? max_threads : th * 2) {
            for (int r = 0; r < rounds; r++) {
                double t0 = now();
                if (!gguf_tensor_to_float_parallel(f, info, 0, rows, out, (uint32_t)th)) die("convert");
                double t1 = now();
                parallel_memcpy((char *)out, src, n * 4, th);
                double t2 = now();
                a[r] = t1 - t0, m[r] = t2 - t1;
            }
            double amin = minimum(a, rounds), mmin = minimum(m, rounds);
            printf("%-6s %7d %9.2f %9.2f %9.2f %9.2f %7.0f%%\n", NAMES[THREAD_TYPES[i]], th,
                   gb / amin, gb / median(a, rounds), gb / mmin, gb / median(m, rounds),
                   100 * mmin / amin);
            if (th == max_threads) break;
        }
    }

    /* Validation of every tensor, against ggml and against reading the file. */
    uint64_t count = gguf_tensor_count(f), bytes = 0;
    for (uint64_t i = 0; i < count; i++) bytes += gguf_get_tensor_by_index(f, i)->size_bytes;
    double *g = malloc(rounds * sizeof *g);
    char *buf = malloc(1 << 17);
    int fd = open(path, O_RDONLY);
    if (fd < 0 || !buf || !g) die("open for read");
    off_t file_size = lseek(fd, 0, SEEK_END);
    for (int r = 0; r < rounds; r++) {
        double t0 = now();
        for (uint64_t i = 0; i < count; i++)
            if (!gguf_validate_tensor(f, gguf_get_tensor_by_index(f, i))) die("validate");
        double t1 = now();
        for (uint64_t i = 0; i < count; i++) {
            const GGUFTensorInfo *t = gguf_get_tensor_by_index(f, i);
            if (!ggml_validate(t->dtype, gguf_tensor_data(f, t), t->size_bytes)) die("ggml validate");
        }
        double t2 = now();
        lseek(fd, 0, SEEK_SET);
        while (read(fd, buf, 1 << 17) > 0) {
        }
        double t3 = now();
        a[r] = t1 - t0, g[r] = t2 - t1, m[r] = t3 - t2;
    }
    close(fd);
    printf("\n== validation: every tensor of a %.0f MiB file (%.0f MiB of tensor data), warm, %d "
           "rounds; GB/s of tensor data, best and median\n",
           file_size / 1048576.0, bytes / 1048576.0, rounds);
    double tgb = bytes / 1e9, fgb = file_size / 1e9;
    printf("gguf_validate_tensor    %9.2f %9.2f\n", tgb / minimum(a, rounds), tgb / median(a, rounds));
    printf("ggml_validate_row_data  %9.2f %9.2f\n", tgb / minimum(g, rounds), tgb / median(g, rounds));
    printf("read() of the file      %9.2f %9.2f   (GB/s of the file)\n", fgb / minimum(m, rounds),
           fgb / median(m, rounds));
    gguf_close(f);
    if (keep) printf("(kept %s)\n", path);
    else unlink(path);
    free(out), free(src), free(a), free(m), free(g), free(buf);
}

int main(int argc, char **argv) {
    int rounds = 31, max_threads = (int)sysconf(_SC_NPROCESSORS_ONLN), opt;
    uint64_t sizes[8] = {4096, 1 << 17, 1 << 20}, mib = 256;
    int n_sizes = 3;
    const char *csv_path = NULL;
    bool keep = false, types_ok = true, any_type = false;
    int offset = 0;
    while ((opt = getopt(argc, argv, "r:n:y:a:m:t:o:k")) != -1) {
        switch (opt) {
        case 'y':
            any_type = true;
            for (char *name = strtok(optarg, ","); name; name = strtok(NULL, ",")) {
                int id = 0;
                while (id < N_IDS && !(NAMES[id] && strcmp(NAMES[id], name) == 0)) id++;
                if (id == N_IDS) types_ok = false;
                else selected[id] = true;
            }
            break;
        case 'a': offset = atoi(optarg); break;
        case 'r': rounds = atoi(optarg); break;
        case 'n': {
            char *p = optarg;
            for (n_sizes = 0; n_sizes < 8 && *p;) {
                sizes[n_sizes++] = strtoull(p, &p, 10);
                if (*p == ',') p++;
                else break;
            }
            if (*p) n_sizes = 0; /* more than 8 sizes, or not numbers */
            break;
        }
        case 'm': mib = strtoull(optarg, NULL, 10); break;
        case 't': max_threads = atoi(optarg); break;
        case 'o': csv_path = optarg; break;
        case 'k': keep = true; break;
        default:
            fprintf(stderr, "usage: dequant_bench [-r ROUNDS] [-n ELEMENTS[,...]] [-y TYPE[,...]] "
                            "[-a OFFSET] [-m MiB] [-t THREADS] [-o CSV] [-k] GGML_DIR TMP_DIR\n");
            return 2;
        }
    }
    bool sizes_ok = n_sizes > 0;
    for (int k = 0; k < n_sizes; k++) sizes_ok = sizes_ok && sizes[k] && sizes[k] % 4096 == 0;
    if (argc - optind != 2 || rounds < 1 || max_threads < 1 || max_threads > 256 || !sizes_ok ||
        !types_ok || offset < 0 || offset >= 64 || offset % 4) {
        fprintf(stderr, "usage: dequant_bench [-r ROUNDS] [-n ELEMENTS[,ELEMENTS...] (multiples of "
                        "4096, at most 8)] [-y TYPE[,TYPE...] (F16, Q4_K, ...)] [-a OFFSET (0, 4, "
                        "..., 60)] [-m MiB (0: no threads or validation)] "
                        "[-t THREADS (1-256)] [-o CSV] GGML_DIR TMP_DIR\n");
        return 2;
    }
    out_offset = (size_t)offset;
    for (int id = 0; id < N_IDS; id++) selected[id] = !any_type || selected[id];
    char lib[4096];
    snprintf(lib, sizeof lib, "%s/libggml-base.so", argv[optind]);
    void *h = dlopen(lib, RTLD_NOW);
    if (!h) {
        fprintf(stderr, "dequant_bench: %s\n", dlerror());
        return 1;
    }
    *(void **)&ggml_traits = dlsym(h, "ggml_get_type_traits");
    *(void **)&ggml_validate = dlsym(h, "ggml_validate_row_data");
    if (!ggml_traits || !ggml_validate) {
        fprintf(stderr, "dequant_bench: %s lacks ggml_get_type_traits or ggml_validate_row_data\n", lib);
        return 1;
    }
    FILE *csv = csv_path ? fopen(csv_path, "w") : NULL;
    pick_stores();
    single_thread(rounds, sizes, n_sizes, csv);
    if (csv) fclose(csv);
    if (mib)
        threads_and_validation(rounds < 11 ? rounds : 11, mib * 1048576 / 4 / 4096 * 4096, max_threads,
                           argv[optind + 1], keep);
    return 0;
}
