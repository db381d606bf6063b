/*
 * open_bench: opening GGUF files with libgguf, with ggml's own parser and with the bare "floor"
 * walk (bench/floor.h), side by side in one process, in one run.
 *
 *   open_bench [-r ROUNDS] [-G MAX] FILE...  (ROUNDS defaults to 21)
 *
 * -G MAX leaves ggml out on files of more than MAX tensors: its open checks names for duplicates
 * by comparing each with every earlier one, so 100000 tensors take it about a minute an open.
 *
 * For each file, after one untimed open with each reader (to warm the page cache), ROUNDS rounds
 * alternate round-robin:
 *   ours   gguf_open(path) until it returns (gguf_close outside the timed region)
 *   ggml   gguf_init_from_file(path, {.no_alloc = true, .ctx = NULL}) (gguf_free outside)
 *   floor  floor_walk(path): mmap + walk of the header (floor_release, the munmap, outside)
 * and, when the file has tensors:
 *   first_tensor      the first gguf_get_tensor_by_index call on the fresh handle of `ours`
 *                     (libgguf builds the C records of every tensor on first use, not in
 *                     gguf_open; this is what that costs)
 * and, when the file has a vocabulary (tokenizer.ggml.tokens):
 *   string_array      the first gguf_get_string_array call on the fresh handle of `ours`
 *   plain_copy        the same token bytes copied plainly from the mapping: one memcpy per
 *                     string into one preallocated (and already touched) buffer, a NUL and a
 *                     pointer per string
 *   plain_copy_alloc  the same, into freshly malloc'd buffers (freed outside the timed region):
 *                     what any decoder that allocates its result pays for fresh pages
 * Then name lookups: every tensor name looked up, in order, with gguf_get_tensor (ours) and
 * gguf_find_tensor (ggml), in passes of at least ~5 ms, ROUNDS times, alternating; reported in
 * ns per lookup.
 *
 * Prints a table per file, a summary, and one machine-readable line per measurement:
 *   RESULT file=NAME what=WHAT median_ms=M min_ms=M n=ROUNDS
 *   RESULT file=NAME what=lookup_ours median_ns=N min_ns=N n=ROUNDS lookups=K
 *   RESULT file=NAME what=ratio_ggml_over_ours value=X min_value=Y
 * (value: the ratio of the medians; min_value: of the minimums, steadier on a busy machine).
 * Exits non-zero if any reader fails on any file or the readers disagree on a count.
 */
#define _POSIX_C_SOURCE 200809L

#include "floor.h"
#include "ggml_gguf_abi.h"
#include "gguf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "timing.h"

#define VOCAB_KEY "tokenizer.ggml.tokens"

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void quiet_log(int level, const char *text, void *user) {
    (void)level;
    (void)text;
    (void)user;
}

static volatile uintptr_t sink;

static int failures;

/* -G: ggml is left out on files of more tensors than this (0: never). */
static uint64_t ggml_max_tensors;

#define FAIL(...)                                   \
    do {                                            \
        fprintf(stderr, "open_bench: " __VA_ARGS__); \
        fputc('\n', stderr);                        \
        failures++;                                 \
    } while (0)

/* ------------------------------------------------------------------------------------------ */
/* Statistics */

struct stat2 {
    double median, min;
    int n;
};

static struct stat2 stats(const double *v, int n) {
    struct stat2 s = {0, 0, n};
    if (n <= 0) return s;
    double *c = malloc(sizeof(double) * (size_t)n);
    memcpy(c, v, sizeof(double) * (size_t)n);
    qsort(c, (size_t)n, sizeof(double), cmp_double);
    s.median = n % 2 ? c[n / 2] : (c[n / 2 - 1] + c[n / 2]) / 2;
    s.min = c[0];
    free(c);
    return s;
}

/* ------------------------------------------------------------------------------------------ */
/* The plain copy of a string array: walk the raw array in the mapping (u64 length, bytes),
 * memcpy each string into `bytes`, NUL-terminate it, store a pointer to it. */

static void plain_copy(const unsigned char *raw, uint64_t n, char *bytes, const char **ptrs) {
    size_t pos = 0;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t len;
        memcpy(&len, raw, 8);
        raw += 8;
        ptrs[i] = bytes + pos;
        memcpy(bytes + pos, raw, (size_t)len);
        bytes[pos + len] = 0;
        pos += (size_t)len + 1;
        raw += len;
    }
}

/* ------------------------------------------------------------------------------------------ */

struct file_result {
    const char *name;
    int has_vocab;
    int with_ggml;
    struct stat2 ours, ggml, floor, first_tensor, strings, copy, copy_alloc, look_ours, look_ggml;
};

static void ratio_line(const char *label, struct stat2 a, struct stat2 b) {
    printf("  %-44s %11.2fx %11.2fx\n", label, a.median / b.median, a.min / b.min);
}

static const char *base_name(const char *path) {
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

static void result_ms(const char *file, const char *what, struct stat2 s) {
    printf("RESULT file=%s what=%s median_ms=%.6f min_ms=%.6f n=%d\n", file, what, s.median,
           s.min, s.n);
}

/* A ratio of medians, and the same ratio of minimums (steadier on a busy machine). */
static void result_ratio(const char *file, const char *what, struct stat2 a, struct stat2 b) {
    printf("RESULT file=%s what=%s value=%.3f min_value=%.3f\n", file, what, a.median / b.median,
           a.min / b.min);
}

static struct gguf_context *ggml_open(const char *path) {
    struct gguf_init_params p = {.no_alloc = true, .ctx = NULL};
    return gguf_init_from_file(path, p);
}

/* Looks every name up `passes` times; returns the elapsed ns. */
static uint64_t lookups_ours(GGUFFile f, const char **names, uint64_t n, int passes) {
    uintptr_t acc = 0;
    uint64_t t0 = now_ns();
    for (int p = 0; p < passes; p++)
        for (uint64_t i = 0; i < n; i++) acc += (uintptr_t)gguf_get_tensor(f, names[i]);
    uint64_t t1 = now_ns();
    sink += acc;
    return t1 - t0;
}

static uint64_t lookups_ggml(struct gguf_context *c, const char **names, uint64_t n, int passes) {
    uintptr_t acc = 0;
    uint64_t t0 = now_ns();
    for (int p = 0; p < passes; p++)
        for (uint64_t i = 0; i < n; i++) acc += (uintptr_t)gguf_find_tensor(c, names[i]);
    uint64_t t1 = now_ns();
    sink += acc;
    return t1 - t0;
}

/* Passes needed for one measurement to take at least ~5 ms. */
static int calibrate(uint64_t (*run)(void *, const char **, uint64_t, int), void *h,
                     const char **names, uint64_t n) {
    int passes = 1;
    while (passes < (1 << 20) && run(h, names, n, passes) < 5000000u) passes *= 2;
    return passes;
}

static uint64_t run_ours(void *h, const char **names, uint64_t n, int passes) {
    return lookups_ours((GGUFFile)h, names, n, passes);
}

static uint64_t run_ggml(void *h, const char **names, uint64_t n, int passes) {
    return lookups_ggml((struct gguf_context *)h, names, n, passes);
}

static int bench_file(const char *path, int rounds, struct file_result *out) {
    const char *name = base_name(path);
    memset(out, 0, sizeof *out);
    out->name = name;

    /* Warm-up and checks: one untimed open with each reader. */
    GGUFFile h = gguf_open(path);
    if (!h) {
        FAIL("%s: gguf_open failed: %s", path, gguf_last_error());
        return -1;
    }
    uint64_t n_tensors = gguf_tensor_count(h);
    out->with_ggml = ggml_max_tensors == 0 || n_tensors <= ggml_max_tensors;
    struct gguf_context *g = out->with_ggml ? ggml_open(path) : NULL;
    if (out->with_ggml && !g) {
        FAIL("%s: ggml's gguf_init_from_file failed", path);
        gguf_close(h);
        return -1;
    }
    struct floor_map fm = floor_walk(path);
    if (!fm.map) {
        FAIL("%s: floor_walk could not map the file", path);
        if (g) gguf_free(g);
        gguf_close(h);
        return -1;
    }
    if (g && ((uint64_t)gguf_get_n_tensors(g) != n_tensors ||
              (uint64_t)gguf_get_n_kv(g) != gguf_metadata_count(h))) {
        FAIL("%s: the readers disagree: %llu/%lld tensors, %llu/%lld keys", path,
             (unsigned long long)n_tensors, (long long)gguf_get_n_tensors(g),
             (unsigned long long)gguf_metadata_count(h), (long long)gguf_get_n_kv(g));
    }
    if (fm.end > gguf_data_offset(h) || fm.end + gguf_alignment(h) < gguf_data_offset(h)) {
        FAIL("%s: the floor walk ended at %llu, the data section starts at %llu", path,
             (unsigned long long)fm.end, (unsigned long long)gguf_data_offset(h));
    }
    floor_release(&fm);

    /* The vocabulary, if any, and the plain copy's buffers. */
    const GGUFMetadataKV *kv = gguf_get_metadata(h, VOCAB_KEY);
    uint64_t n_vocab = 0;
    size_t copy_bytes = 0;
    char *buf = NULL;
    const char **ptrs = NULL;
    if (kv && kv->type == GGUF_VALUE_TYPE_ARRAY && kv->array_type == GGUF_VALUE_TYPE_STRING) {
        out->has_vocab = 1;
        n_vocab = kv->array_len;
        copy_bytes = (size_t)(kv->array_bytes - 8 * n_vocab + n_vocab);
        buf = malloc(copy_bytes);
        ptrs = malloc(sizeof(char *) * (size_t)n_vocab);
        if (!buf || !ptrs) {
            FAIL("out of memory");
            return -1;
        }
        plain_copy(kv->array_data, n_vocab, buf, ptrs); /* touches the buffers once */
        int64_t k = g ? gguf_find_key(g, VOCAB_KEY) : -1;
        if (g && (k < 0 || gguf_get_arr_n(g, k) != n_vocab)) {
            FAIL("%s: ggml sees %zu tokens, libgguf %llu", path, k < 0 ? 0 : gguf_get_arr_n(g, k),
                 (unsigned long long)n_vocab);
        }
    }
    if (g) gguf_free(g);

    double *t_ours = calloc((size_t)rounds, sizeof(double));
    double *t_first = calloc((size_t)rounds, sizeof(double));
    double *t_ggml = calloc((size_t)rounds, sizeof(double));
    double *t_floor = calloc((size_t)rounds, sizeof(double));
    double *t_str = calloc((size_t)rounds, sizeof(double));
    double *t_copy = calloc((size_t)rounds, sizeof(double));
    double *t_copy_alloc = calloc((size_t)rounds, sizeof(double));

    for (int r = 0; r < rounds; r++) {
        /* ours (and the first string-array call on the fresh handle) */
        uint64_t t0 = now_ns();
        GGUFFile f = gguf_open(path);
        uint64_t t1 = now_ns();
        if (!f) {
            FAIL("%s: gguf_open failed in round %d: %s", path, r, gguf_last_error());
            break;
        }
        t_ours[r] = (double)(t1 - t0) / 1e6;
        if (n_tensors > 0) {
            t0 = now_ns();
            const GGUFTensorInfo *t = gguf_get_tensor_by_index(f, 0);
            t1 = now_ns();
            if (!t) FAIL("%s: gguf_get_tensor_by_index failed: %s", path, gguf_last_error());
            sink += (uintptr_t)t;
            t_first[r] = (double)(t1 - t0) / 1e6;
        }
        if (out->has_vocab) {
            uint64_t count = 0;
            t0 = now_ns();
            const char **tokens = gguf_get_string_array(f, VOCAB_KEY, &count);
            t1 = now_ns();
            if (!tokens || count != n_vocab) {
                FAIL("%s: gguf_get_string_array failed: %s", path, gguf_last_error());
            }
            sink += (uintptr_t)tokens;
            t_str[r] = (double)(t1 - t0) / 1e6;
        }
        gguf_close(f);

        /* ggml */
        if (out->with_ggml) {
            t0 = now_ns();
            struct gguf_context *c = ggml_open(path);
            t1 = now_ns();
            if (!c) {
                FAIL("%s: gguf_init_from_file failed in round %d", path, r);
                break;
            }
            t_ggml[r] = (double)(t1 - t0) / 1e6;
            gguf_free(c);
        }

        /* floor */
        t0 = now_ns();
        struct floor_map m = floor_walk(path);
        t1 = now_ns();
        if (!m.map) {
            FAIL("%s: floor_walk failed in round %d", path, r);
            break;
        }
        sink += m.end;
        t_floor[r] = (double)(t1 - t0) / 1e6;
        floor_release(&m);

        /* plain copies of the vocabulary */
        if (out->has_vocab) {
            t0 = now_ns();
            plain_copy(kv->array_data, n_vocab, buf, ptrs);
            t1 = now_ns();
            sink += (uintptr_t)ptrs[n_vocab - 1][0];
            t_copy[r] = (double)(t1 - t0) / 1e6;

            t0 = now_ns();
            char *b2 = malloc(copy_bytes);
            const char **p2 = malloc(sizeof(char *) * (size_t)n_vocab);
            if (!b2 || !p2) {
                FAIL("out of memory");
                break;
            }
            plain_copy(kv->array_data, n_vocab, b2, p2);
            t1 = now_ns();
            sink += (uintptr_t)p2[n_vocab - 1][0];
            t_copy_alloc[r] = (double)(t1 - t0) / 1e6;
            free(b2);
            free(p2);
        }
    }

    out->ours = stats(t_ours, rounds);
    if (out->with_ggml) out->ggml = stats(t_ggml, rounds);
    out->floor = stats(t_floor, rounds);
    if (n_tensors > 0) out->first_tensor = stats(t_first, rounds);
    if (out->has_vocab) {
        out->strings = stats(t_str, rounds);
        out->copy = stats(t_copy, rounds);
        out->copy_alloc = stats(t_copy_alloc, rounds);
    }

    /* Lookups of every tensor name. */
    if (n_tensors > 0) {
        g = out->with_ggml ? ggml_open(path) : NULL;
        const char **names = malloc(sizeof(char *) * (size_t)n_tensors);
        for (uint64_t i = 0; i < n_tensors; i++) {
            names[i] = gguf_get_tensor_by_index(h, i)->name;
            const GGUFTensorInfo *t = gguf_get_tensor(h, names[i]);
            if (!t || t->index != i) FAIL("%s: gguf_get_tensor(%s) failed", path, names[i]);
            if (out->with_ggml && (!g || gguf_find_tensor(g, names[i]) != (int64_t)i))
                FAIL("%s: gguf_find_tensor(%s) failed", path, names[i]);
        }
        int p_ours = calibrate(run_ours, h, names, n_tensors);
        int p_ggml = g ? calibrate(run_ggml, g, names, n_tensors) : 0;
        for (int r = 0; r < rounds; r++) {
            t_ours[r] = (double)run_ours(h, names, n_tensors, p_ours) /
                        ((double)p_ours * (double)n_tensors);
            if (g)
                t_ggml[r] = (double)run_ggml(g, names, n_tensors, p_ggml) /
                            ((double)p_ggml * (double)n_tensors);
        }
        out->look_ours = stats(t_ours, rounds);
        if (g) {
            out->look_ggml = stats(t_ggml, rounds);
            gguf_free(g);
        }
        free(names);
    }

    free(t_ours);
    free(t_first);
    free(t_ggml);
    free(t_floor);
    free(t_str);
    free(t_copy);
    free(t_copy_alloc);
    free(buf);
    free(ptrs);

    /* Report. */
    printf("\n%s: %llu bytes, header %llu bytes, %llu keys, %llu tensors", name,
           (unsigned long long)gguf_file_size(h), (unsigned long long)gguf_data_offset(h),
           (unsigned long long)gguf_metadata_count(h), (unsigned long long)n_tensors);
    if (out->has_vocab) printf(", %llu tokens", (unsigned long long)n_vocab);
    printf("; %d rounds\n", rounds);
    printf("  %-44s %12s %12s\n", "", "median ms", "min ms");
    printf("  %-44s %12.4f %12.4f\n", "open: libgguf gguf_open", out->ours.median, out->ours.min);
    if (out->with_ggml)
        printf("  %-44s %12.4f %12.4f\n", "open: ggml gguf_init_from_file (no_alloc)",
               out->ggml.median, out->ggml.min);
    else
        printf("  %-44s %12s %12s\n", "open: ggml (left out: -G)", "-", "-");
    printf("  %-44s %12.4f %12.4f\n", "open: floor (mmap + walk)", out->floor.median,
           out->floor.min);
    if (out->with_ggml) ratio_line("ggml / libgguf", out->ggml, out->ours);
    ratio_line("libgguf / floor", out->ours, out->floor);
    if (n_tensors > 0)
        printf("  %-44s %12.4f %12.4f\n", "records: first gguf_get_tensor_by_index",
               out->first_tensor.median, out->first_tensor.min);
    if (out->has_vocab) {
        printf("  %-44s %12.4f %12.4f\n", "vocab: gguf_get_string_array (first call)",
               out->strings.median, out->strings.min);
        printf("  %-44s %12.4f %12.4f\n", "vocab: plain copy (preallocated buffer)",
               out->copy.median, out->copy.min);
        printf("  %-44s %12.4f %12.4f\n", "vocab: plain copy (fresh malloc)",
               out->copy_alloc.median, out->copy_alloc.min);
        ratio_line("string_array / plain copy", out->strings, out->copy);
        ratio_line("string_array / plain copy, fresh malloc", out->strings, out->copy_alloc);
    }
    if (n_tensors > 0) {
        printf("  %-44s %12s %12s\n", "", "median ns", "min ns");
        printf("  %-44s %12.1f %12.1f\n", "lookup: libgguf gguf_get_tensor",
               out->look_ours.median, out->look_ours.min);
        if (out->with_ggml) {
            printf("  %-44s %12.1f %12.1f\n", "lookup: ggml gguf_find_tensor",
                   out->look_ggml.median, out->look_ggml.min);
            ratio_line("ggml / libgguf", out->look_ggml, out->look_ours);
        }
    }

    result_ms(name, "open_ours", out->ours);
    if (out->with_ggml) result_ms(name, "open_ggml", out->ggml);
    result_ms(name, "open_floor", out->floor);
    if (out->with_ggml) result_ratio(name, "ratio_ggml_over_ours", out->ggml, out->ours);
    result_ratio(name, "ratio_ours_over_floor", out->ours, out->floor);
    if (n_tensors > 0) result_ms(name, "first_tensor_ours", out->first_tensor);
    if (out->has_vocab) {
        result_ms(name, "string_array_ours", out->strings);
        result_ms(name, "plain_copy", out->copy);
        result_ms(name, "plain_copy_alloc", out->copy_alloc);
        result_ratio(name, "ratio_string_array_over_plain_copy", out->strings, out->copy);
        result_ratio(name, "ratio_string_array_over_plain_copy_alloc", out->strings,
                     out->copy_alloc);
    }
    if (n_tensors > 0) {
        printf("RESULT file=%s what=lookup_ours median_ns=%.2f min_ns=%.2f n=%d lookups=%llu\n",
               name, out->look_ours.median, out->look_ours.min, rounds,
               (unsigned long long)n_tensors);
        if (out->with_ggml) {
            printf("RESULT file=%s what=lookup_ggml median_ns=%.2f min_ns=%.2f n=%d lookups=%llu\n",
                   name, out->look_ggml.median, out->look_ggml.min, rounds,
                   (unsigned long long)n_tensors);
            result_ratio(name, "ratio_lookup_ggml_over_ours", out->look_ggml, out->look_ours);
        }
    }
    fflush(stdout);
    gguf_close(h);
    return 0;
}

int main(int argc, char **argv) {
    int rounds = 21, first = 1;
    while (first < argc && argv[first][0] == '-') {
        if (strcmp(argv[first], "-r") == 0 && first + 1 < argc) {
            rounds = atoi(argv[first + 1]);
            first += 2;
        } else if (strcmp(argv[first], "-G") == 0 && first + 1 < argc) {
            ggml_max_tensors = strtoull(argv[first + 1], NULL, 10);
            first += 2;
        } else {
            fprintf(stderr, "usage: open_bench [-r ROUNDS] [-G MAX] FILE...\n");
            return 2;
        }
    }
    if (rounds < 1 || first >= argc) {
        fprintf(stderr, "usage: open_bench [-r ROUNDS] [-G MAX] FILE...\n");
        return 2;
    }
    ggml_log_set(quiet_log, NULL);

    int n = argc - first;
    struct file_result *res = calloc((size_t)n, sizeof *res);
    for (int i = 0; i < n; i++) bench_file(argv[first + i], rounds, &res[i]);

    printf("\nSummary (medians of %d rounds, ms; lookups in ns)\n", rounds);
    printf("%-24s %10s %10s %10s %9s %9s %9s %10s %10s %8s %9s %9s\n", "file", "libgguf",
           "ggml", "floor", "ggml/ours", "(of min)", "ours/flr", "strarray", "plaincopy", "sa/copy",
           "look ours", "look ggml");
    for (int i = 0; i < n; i++) {
        struct file_result *r = &res[i];
        if (!r->name || r->ours.n == 0) continue;
        if (r->with_ggml)
            printf("%-24s %10.4f %10.4f %10.4f %8.2fx %8.2fx %8.2fx", r->name, r->ours.median,
                   r->ggml.median, r->floor.median, r->ggml.median / r->ours.median,
                   r->ggml.min / r->ours.min, r->ours.median / r->floor.median);
        else
            printf("%-24s %10.4f %10s %10.4f %9s %9s %8.2fx", r->name, r->ours.median, "-",
                   r->floor.median, "-", "-", r->ours.median / r->floor.median);
        if (r->has_vocab)
            printf(" %10.4f %10.4f %7.2fx", r->strings.median, r->copy.median,
                   r->strings.median / r->copy.median);
        else
            printf(" %10s %10s %8s", "-", "-", "-");
        if (r->with_ggml)
            printf(" %9.1f %9.1f\n", r->look_ours.median, r->look_ggml.median);
        else
            printf(" %9.1f %9s\n", r->look_ours.median, "-");
    }
    free(res);
    if (failures) {
        fprintf(stderr, "open_bench: %d failure(s)\n", failures);
        return 1;
    }
    return 0;
}
