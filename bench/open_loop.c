/*
 * open_loop: opens one GGUF file with gguf_open and closes it with gguf_close, N times in a row
 * (an engine's open/close loop), and reports the page faults and the time an open + close costs:
 * what the allocator gives back to the system on each close and takes again on the next open
 * shows as minor faults here.
 *
 *   open_loop [-n N] FILE   (N defaults to 1000)
 *
 * Prints, after one untimed open + close (to warm the page cache and the allocator):
 *   RESULT file=NAME what=open_loop n=N minflt_per_open=F us_per_open=T min_us=M
 * where F is getrusage's ru_minflt over the loop divided by N, T the loop's wall time per open +
 * close, and M the fastest single open + close.
 */
#define _POSIX_C_SOURCE 200809L

#include "gguf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static long minflt(void) {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_minflt;
}

int main(int argc, char **argv) {
    long n = 1000;
    int i = 1;
    if (argc > 2 && strcmp(argv[1], "-n") == 0) {
        n = strtol(argv[2], NULL, 10);
        i = 3;
    }
    if (argc != i + 1 || n <= 0) {
        fprintf(stderr, "usage: open_loop [-n N] FILE\n");
        return 2;
    }
    const char *path = argv[i];
    GGUFFile f = gguf_open(path);
    if (!f) {
        fprintf(stderr, "open_loop: %s\n", gguf_last_error());
        return 1;
    }
    gguf_close(f);
    uint64_t best = UINT64_MAX;
    long faults = minflt();
    uint64_t start = now_ns();
    for (long k = 0; k < n; k++) {
        uint64_t t = now_ns();
        f = gguf_open(path);
        if (!f) {
            fprintf(stderr, "open_loop: %s\n", gguf_last_error());
            return 1;
        }
        gguf_close(f);
        t = now_ns() - t;
        if (t < best) best = t;
    }
    uint64_t total = now_ns() - start;
    faults = minflt() - faults;
    const char *name = strrchr(path, '/');
    name = name ? name + 1 : path;
    printf("RESULT file=%s what=open_loop n=%ld minflt_per_open=%.2f us_per_open=%.1f min_us=%.1f\n",
           name, n, (double)faults / (double)n, (double)total / 1e3 / (double)n, (double)best / 1e3);
    return 0;
}
