/*
 * load_bench.c: loading every tensor of a multi-gigabyte model into memory the caller owns, four
 * ways side by side in one run:
 *
 *   direct    gguf_read_tensors with GGUF_READ_FLAG_DIRECT (page cache bypassed)
 *   buffered  gguf_read_tensors without it
 *   mmap      memcpy of every tensor from a fresh mapping (gguf_open, gguf_tensor_data), what
 *             mmap-based loaders do
 *   dd        `dd if=MODEL of=/dev/null bs=16M iflag=direct`: the device's bandwidth
 *
 * Cold: before each measurement the file's pages are evicted (posix_fadvise DONTNEED on the
 * whole file). Warm: the file is read once first and nothing is evicted. Rounds interleave the
 * four ways; reported are the minimum and median throughput (GB/s, 1e9 bytes) of each, and the
 * ratio of the medians to dd's.
 *
 * The destination is one buffer laid out like the file's data section (tensor k at its file
 * offset less the data section's page-aligned start, the buffer page-aligned), as an engine that
 * loads a model into one pinned staging buffer has it: tensor starts then share their file
 * offsets' remainder modulo 4096, so that direct reads land in place.
 *
 *   load_bench [-r ROUNDS] [-t THREADS] [-g GIB] MODEL
 *
 * Writes MODEL first (GIB GiB of F32 tensors of 64 MiB and 1 MiB, with a small vocabulary) when
 * it does not exist.
 */
#define _GNU_SOURCE
#include "gguf.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "timing.h"

static void die(const char *what) {
    fprintf(stderr, "load_bench: %s: %s\n", what, gguf_last_error());
    exit(1);
}

static void evict(const char *path) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) {
        perror(path);
        exit(1);
    }
    fdatasync(fd);
    if (posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) != 0) {
        fprintf(stderr, "load_bench: posix_fadvise failed\n");
        exit(1);
    }
    close(fd);
}

/* Per GiB of model: 15 tensors of 64 MiB then 64 of 1 MiB (the weights of a real model are
 * large, its norms and biases small). */
static uint64_t tensor_elems(uint64_t i) {
    return i % 79 < 15 ? (16u << 20) : (1u << 18);
}

static void make_model(const char *path, unsigned gib) {
    GGUFWriter w = gguf_writer_new();
    if (!w) die("gguf_writer_new");
    gguf_writer_set_sync(w, false);
    const char *arch = "bench";
    if (!gguf_writer_set_string(w, "general.architecture", arch, strlen(arch))) die("metadata");
    uint64_t n = 79ull * gib;
    char name[64];
    for (uint64_t i = 0; i < n; i++) {
        snprintf(name, sizeof name, "blk.%" PRIu64 ".weight", i);
        uint64_t dims[1] = {tensor_elems(i)};
        if (!gguf_writer_add_tensor(w, name, 1, dims, GGUF_DATA_TYPE_F32, NULL, dims[0] * 4))
            die("add_tensor");
    }
    if (!gguf_writer_begin_file(w, path)) die("begin_file");
    size_t chunk = 64u << 20;
    unsigned char *buf = malloc(chunk);
    if (!buf) return;
    for (size_t i = 0; i < chunk; i++) buf[i] = (unsigned char)(i * 131 + 7);
    for (uint64_t i = 0; i < n; i++)
        if (!gguf_writer_write_tensor_data(w, buf, tensor_elems(i) * 4)) die("write_tensor_data");
    if (!gguf_writer_finish(w)) die("finish");
    gguf_writer_free(w);
    free(buf);
}

struct layout {
    uint64_t n, total, base_offset, span;
    const GGUFTensorInfo **infos;
    void **dsts;
    unsigned char *buffer;
};

static struct layout layout_of(GGUFFile f) {
    struct layout l = {0};
    l.n = gguf_tensor_count(f);
    l.infos = calloc(l.n, sizeof *l.infos);
    l.dsts = calloc(l.n, sizeof *l.dsts);
    l.base_offset = gguf_data_offset(f) / 4096 * 4096;
    uint64_t end = 0;
    for (uint64_t k = 0; k < l.n; k++) {
        l.infos[k] = gguf_get_tensor_by_index(f, k);
        l.total += l.infos[k]->size_bytes;
        uint64_t e = l.infos[k]->file_offset + l.infos[k]->size_bytes;
        if (e > end) end = e;
    }
    l.span = end - l.base_offset;
    if (posix_memalign((void **)&l.buffer, 4096, l.span) != 0) {
        fprintf(stderr, "load_bench: cannot allocate %" PRIu64 " bytes\n", l.span);
        exit(1);
    }
    memset(l.buffer, 0, l.span); /* fault the destination in: its pages are not measured */
    for (uint64_t k = 0; k < l.n; k++) l.dsts[k] = l.buffer + (l.infos[k]->file_offset - l.base_offset);
    return l;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

enum { DIRECT, BUFFERED, MMAP, DD, WAYS };
static const char *NAMES[WAYS] = {"read_tensors direct", "read_tensors buffered",
                                  "memcpy from mmap", "dd iflag=direct bs=16M"};

static double run_way(int way, const char *path, GGUFFile f, struct layout *l, uint32_t threads) {
    double t0 = now();
    if (way == DIRECT || way == BUFFERED) {
        uint32_t flags = way == DIRECT ? GGUF_READ_FLAG_DIRECT : 0;
        if (!gguf_read_tensors(f, l->infos, l->dsts, l->n, threads, flags, NULL, NULL))
            die("gguf_read_tensors");
    } else if (way == MMAP) {
        GGUFFile m = gguf_open(path); /* a fresh mapping each time */
        if (!m) die("gguf_open");
        for (uint64_t k = 0; k < l->n; k++) {
            const GGUFTensorInfo *info = gguf_get_tensor_by_index(m, k);
            memcpy(l->dsts[k], gguf_tensor_data(m, info), info->size_bytes);
        }
        gguf_close(m);
    } else {
        char cmd[4096];
        snprintf(cmd, sizeof cmd, "dd if='%s' of=/dev/null bs=16M iflag=direct status=none", path);
        if (system(cmd) != 0) {
            fprintf(stderr, "load_bench: dd failed\n");
            exit(1);
        }
    }
    return now() - t0;
}

int main(int argc, char **argv) {
    int rounds = 5;
    uint32_t threads = 0;
    unsigned gib = 3;
    int opt;
    while ((opt = getopt(argc, argv, "r:t:g:")) != -1) {
        if (opt == 'r') rounds = atoi(optarg);
        else if (opt == 't') threads = (uint32_t)atoi(optarg);
        else if (opt == 'g') gib = (unsigned)atoi(optarg);
        else return 2;
    }
    if (optind + 1 != argc || rounds < 1) {
        fprintf(stderr, "usage: load_bench [-r ROUNDS] [-t THREADS] [-g GIB] MODEL\n");
        return 2;
    }
    const char *path = argv[optind];
    struct stat st;
    if (stat(path, &st) != 0) {
        fprintf(stderr, "writing %s (%u GiB)...\n", path, gib);
        make_model(path, gib);
        if (stat(path, &st) != 0) return 1;
    }
    GGUFFile f = gguf_open(path);
    if (!f) die("gguf_open");
    struct layout l = layout_of(f);
    printf("model: %s, %" PRIu64 " tensors, %.3f GB of tensor data, file %.3f GB; %d rounds, "
           "threads %u (0: the library's choice)\n",
           path, l.n, (double)l.total / 1e9, (double)st.st_size / 1e9, rounds, threads);
    for (int warm = 0; warm <= 1; warm++) {
        double *secs[WAYS];
        for (int w = 0; w < WAYS; w++) secs[w] = calloc((size_t)rounds, sizeof(double));
        if (warm) run_way(BUFFERED, path, f, &l, threads); /* the file in the page cache */
        for (int r = 0; r < rounds; r++) {
            for (int w = 0; w < WAYS; w++) {
                if (!warm) evict(path);
                secs[w][r] = run_way(w, path, f, &l, threads);
            }
        }
        /* dd reads the whole file, the others the tensors: each at its own byte count. */
        double bytes[WAYS] = {(double)l.total, (double)l.total, (double)l.total, (double)st.st_size};
        double median[WAYS];
        printf("\n%s cache:\n", warm ? "warm" : "cold");
        printf("  %-24s %10s %10s %10s\n", "", "min GB/s", "median", "max");
        for (int w = 0; w < WAYS; w++) {
            qsort(secs[w], (size_t)rounds, sizeof(double), cmp);
            double slow = bytes[w] / secs[w][rounds - 1] / 1e9;
            median[w] = bytes[w] / secs[w][rounds / 2] / 1e9;
            double fast = bytes[w] / secs[w][0] / 1e9;
            printf("  %-24s %10.2f %10.2f %10.2f\n", NAMES[w], slow, median[w], fast);
        }
        printf("  median direct / dd: %.2f; direct / mmap: %.2f; buffered / mmap: %.2f\n",
               median[DIRECT] / median[DD], median[DIRECT] / median[MMAP],
               median[BUFFERED] / median[MMAP]);
        for (int w = 0; w < WAYS; w++) free(secs[w]);
    }
    /* The loaded bytes are the file's. */
    for (uint64_t k = 0; k < l.n; k += 7) {
        if (memcmp(l.dsts[k], gguf_tensor_data(f, l.infos[k]), l.infos[k]->size_bytes) != 0) {
            fprintf(stderr, "load_bench: tensor %" PRIu64 " differs\n", k);
            return 1;
        }
    }
    gguf_close(f);
    free(l.buffer);
    free(l.infos);
    free(l.dsts);
    return 0;
}
