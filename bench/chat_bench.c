/*
 * chat_bench.c: the chat-template renderer's speed through the C API (figures in BENCHMARKS.md,
 * "Chat templates"; bench/chat_run.sh sets it beside transformers and llama.cpp).
 *
 *   chat_bench [-r ROUNDS] [-t SECONDS] [-o DIR] REQUEST TEMPLATE...
 *
 * For each TEMPLATE file, over the request in REQUEST (JSON, as gguf_chat_render_template takes
 * it): the time to compile the template (gguf_chat_template_compile); the time of one render
 * with the compiled handle (gguf_chat_template_render, the request's JSON parsed each time);
 * and the time of one gguf_chat_render_template, which compiles the template on every call.
 * Each of ROUNDS rounds (default 20) repeats the call for at least SECONDS (default 0.02) of the
 * thread's CPU time and takes the mean; the minimum and the median over the rounds are printed,
 * one tab-separated line per template: name, compile us (min, median), render us (min, median),
 * render_template us (min, median). With -o, the prompt goes to DIR/NAME.ours.txt. Any failure
 * fails the run.
 */
#define _POSIX_C_SOURCE 200809L
#include <gguf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "timing.h"

#define MAX_ROUNDS 1000

/* Seconds of this thread's CPU time: on a machine shared with other work, the time the render
 * ran rather than the time it waited (the other two sides of bench/chat_run.sh count the same). */
static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
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
    buf[n] = 0;
    *len = (size_t)n;
    return buf;
}

static const char *base_name(const char *path) {
    const char *s = strrchr(path, '/');
    const char *name = s ? s + 1 : path;
    return name;
}

enum { COMPILE, RENDER, ONESHOT };

typedef struct {
    const char *tmpl, *req;
    size_t tmpl_len, req_len;
    GGUFChatTemplate compiled;
    char *out;
    size_t out_size;
} job;

/* One call of kind `what`; exits on failure. */
static void once(job *j, int what) {
    int64_t n = 0;
    if (what == COMPILE) {
        GGUFChatTemplate t = gguf_chat_template_compile(j->tmpl, j->tmpl_len);
        if (!t) n = -1;
        gguf_chat_template_free(t);
    } else if (what == RENDER) {
        n = gguf_chat_template_render(j->compiled, j->req, j->req_len, j->out, j->out_size, 0);
    } else {
        n = gguf_chat_render_template(j->tmpl, j->tmpl_len, j->req, j->req_len, j->out,
                                      j->out_size, 0);
    }
    if (n < 0 || (uint64_t)n >= j->out_size) {
        fprintf(stderr, "chat_bench: %s\n", n < 0 ? gguf_last_error() : "prompt too long");
        exit(1);
    }
}

/* Minimum and median over `rounds` of the mean time of one call, in microseconds. */
static void measure(job *j, int what, int rounds, double seconds, double *min, double *median) {
    double t[MAX_ROUNDS];
    once(j, what); /* warm up */
    for (int r = 0; r < rounds; r++) {
        long calls = 0;
        double t0 = cpu_now(), t1;
        do {
            once(j, what);
            calls++;
            t1 = cpu_now();
        } while (t1 - t0 < seconds);
        t[r] = (t1 - t0) / (double)calls * 1e6;
    }
    qsort(t, (size_t)rounds, sizeof *t, cmp_double);
    *min = t[0];
    *median = t[rounds / 2];
}

int main(int argc, char **argv) {
    int rounds = 20, a = 1;
    double seconds = 0.02;
    const char *dir = NULL;
    while (a + 1 < argc && argv[a][0] == '-') {
        if (!strcmp(argv[a], "-r")) rounds = atoi(argv[a + 1]);
        else if (!strcmp(argv[a], "-t")) seconds = atof(argv[a + 1]);
        else if (!strcmp(argv[a], "-o")) dir = argv[a + 1];
        else break;
        a += 2;
    }
    if (argc - a < 2 || rounds < 1 || rounds > MAX_ROUNDS) {
        fprintf(stderr, "usage: %s [-r ROUNDS] [-t SECONDS] [-o DIR] REQUEST TEMPLATE...\n",
                argv[0]);
        return 2;
    }
    job j;
    j.req = read_all(argv[a], &j.req_len);
    j.out_size = 1 << 20;
    j.out = malloc(j.out_size);
    if (!j.out) return 2;
    for (int i = a + 1; i < argc; i++) {
        const char *name = base_name(argv[i]);
        char *tmpl = read_all(argv[i], &j.tmpl_len);
        j.tmpl = tmpl;
        j.compiled = gguf_chat_template_compile(j.tmpl, j.tmpl_len);
        if (!j.compiled) {
            fprintf(stderr, "chat_bench: %s: %s\n", name, gguf_last_error());
            return 1;
        }
        double c[2], r[2], o[2];
        measure(&j, COMPILE, rounds, seconds, &c[0], &c[1]);
        measure(&j, RENDER, rounds, seconds, &r[0], &r[1]);
        measure(&j, ONESHOT, rounds, seconds, &o[0], &o[1]);
        if (dir) {
            int64_t n = gguf_chat_template_render(j.compiled, j.req, j.req_len, j.out,
                                                  j.out_size, 0);
            char path[4096];
            snprintf(path, sizeof path, "%s/%s.ours.txt", dir, name);
            FILE *f = fopen(path, "wb");
            if (!f || fwrite(j.out, 1, (size_t)n, f) != (size_t)n || fclose(f)) {
                perror(path);
                return 2;
            }
        }
        printf("%s\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\n", name, c[0], c[1], r[0], r[1], o[0],
               o[1]);
        fflush(stdout);
        gguf_chat_template_free(j.compiled);
        free(tmpl);
    }
    free(j.out);
    free((char *)j.req);
    return 0;
}
