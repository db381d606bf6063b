/*
 * timing.h: what the C benchmarks share to time their rounds: a monotonic clock in seconds and
 * a qsort comparison of doubles (for medians). The includer defines _POSIX_C_SOURCE or
 * _GNU_SOURCE first (clock_gettime).
 */
#ifndef LIBGGUF_BENCH_TIMING_H
#define LIBGGUF_BENCH_TIMING_H

#include <time.h>

/* Seconds on CLOCK_MONOTONIC. */
static inline double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* qsort's comparison of two doubles, ascending. */
static inline int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

#endif
