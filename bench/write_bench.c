/*
 * write_bench: the writer against the plain system tools, side by side in one process, one run.
 *
 *   write_bench [-r ROUNDS] [-m MIB] [-n TENSORS] [-s] [-c] DIR
 *
 * Every file goes to DIR (one file system). Each measurement alternates its two sides, ROUNDS
 * rounds (default 21), after one untimed warm-up round; the destination is removed before each
 * timed write (outside the timed region). No side syncs, unless -s: then both do (libgguf with
 * gguf_writer_set_sync on: fsync of the file and of the directory; the peers fsync the file).
 *
 *   memory   a model of MIB MiB (default 256) in 64 tensors held in memory, written with
 *            gguf_writer_write_file, against write_plain: open(O_CREAT|O_TRUNC) and write() of
 *            the same bytes (the same header and tensor buffers, padding included) in the same
 *            order, then close.
 *   rewrite  that model on disk: gguf_open, gguf_writer_from_file, one key changed,
 *            gguf_writer_write_file to another path, gguf_writer_free, gguf_close; against
 *            `cp SRC DST` (fork + exec of /bin/cp, waited for). With -c the source is cold on
 *            both sides: its pages are dropped from the page cache (posix_fadvise DONTNEED,
 *            outside the timed region) before each timed copy, so it is read from the disk.
 *   many     TENSORS (default 100000) tensors of 32 bytes added and written with
 *            gguf_writer_write_file (timed: add + write); reported alone (per tensor).
 *
 * Output: a table and one machine-readable line per measurement:
 *   RESULT what=WHAT median_ms=M min_ms=M n=ROUNDS
 *   RESULT what=ratio_WHAT value=X min_value=Y   (ours over the peer: medians, minimums)
 * Built without gguf_writer_set_sync (-DNO_SET_SYNC) it runs against older libraries, which
 * never sync.
 */
#define _POSIX_C_SOURCE 200809L /* strdup, fork, fsync */

#include "gguf.h"

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void die(const char *what) {
    fprintf(stderr, "write_bench: %s: %s\n", what, gguf_last_error());
    exit(1);
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

struct stats {
    double median_ms, min_ms;
};

static struct stats summarize(const char *what, uint64_t *ns, int n) {
    qsort(ns, (size_t)n, sizeof ns[0], cmp_u64);
    struct stats s = {ns[n / 2] / 1e6, ns[0] / 1e6};
    printf("RESULT what=%s median_ms=%.3f min_ms=%.3f n=%d\n", what, s.median_ms, s.min_ms, n);
    return s;
}

static void ratio(const char *what, struct stats ours, struct stats peer) {
    printf("RESULT what=ratio_%s value=%.3f min_value=%.3f\n", what,
           ours.median_ms / peer.median_ms, ours.min_ms / peer.min_ms);
}

static int g_sync, g_cold;

/* Drops `p`'s clean pages from the page cache (with -c). */
static void make_cold(const char *p) {
    if (!g_cold) return;
    int fd = open(p, O_RDONLY);
    if (fd < 0 || fdatasync(fd) != 0 || posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) != 0)
        perror("posix_fadvise");
    close(fd);
}
static char g_dir[1024];

static const char *path(const char *name) {
    static char p[4][1200];
    static unsigned slot;
    char *out = p[slot++ % 4];
    snprintf(out, sizeof p[0], "%s/%s", g_dir, name);
    return out;
}

static GGUFWriter new_writer(void) {
    GGUFWriter w = gguf_writer_new();
    if (!w) die("gguf_writer_new");
#ifndef NO_SET_SYNC
    if (!gguf_writer_set_sync(w, g_sync != 0)) die("gguf_writer_set_sync");
#endif
    return w;
}

/* ---- memory ----------------------------------------------------------------------------------- */

#define N_TENSORS 64

static unsigned char *g_data[N_TENSORS];
static uint64_t g_size;

static GGUFWriter memory_writer(void) {
    GGUFWriter w = new_writer();
    gguf_writer_set_string(w, "general.architecture", "llama", 5);
    gguf_writer_set_uint32(w, "bench.edit", 1);
    for (int i = 0; i < N_TENSORS; i++) {
        char name[64];
        snprintf(name, sizeof name, "blk.%d.weight", i);
        uint64_t dims[1] = {g_size};
        if (!gguf_writer_add_tensor(w, name, 1, dims, GGUF_DATA_TYPE_I8, g_data[i], g_size))
            die("gguf_writer_add_tensor");
    }
    return w;
}

static uint64_t time_ours_memory(GGUFWriter w, const char *dst) {
    unlink(dst);
    uint64_t t = now_ns();
    if (!gguf_writer_write_file(w, dst)) die("gguf_writer_write_file");
    return now_ns() - t;
}

static void write_all(int fd, const void *p, size_t n) {
    const unsigned char *b = p;
    while (n > 0) {
        ssize_t k = write(fd, b, n);
        if (k <= 0) {
            perror("write");
            exit(1);
        }
        b += k;
        n -= (size_t)k;
    }
}

/* The same bytes as the model file: its header (read back from a written file) and the tensors
 * (sizes are multiples of the alignment: no padding). */
static unsigned char *g_header;
static size_t g_header_len;

static uint64_t time_plain_write(const char *dst) {
    unlink(dst);
    uint64_t t = now_ns();
    int fd = open(dst, O_WRONLY | O_CREAT | O_TRUNC, 0666);
    if (fd < 0) {
        perror("open");
        exit(1);
    }
    write_all(fd, g_header, g_header_len);
    for (int i = 0; i < N_TENSORS; i++) write_all(fd, g_data[i], g_size);
    if (g_sync && fsync(fd) != 0) perror("fsync");
    close(fd);
    return now_ns() - t;
}

/* ---- rewrite ---------------------------------------------------------------------------------- */

static uint64_t time_ours_rewrite(const char *src, const char *dst, uint32_t v) {
    unlink(dst);
    make_cold(src);
    uint64_t t = now_ns();
    GGUFFile f = gguf_open(src);
    if (!f) die("gguf_open");
    GGUFWriter w = gguf_writer_from_file(f);
    if (!w) die("gguf_writer_from_file");
#ifndef NO_SET_SYNC
    gguf_writer_set_sync(w, g_sync != 0);
#endif
    if (!gguf_writer_set_uint32(w, "bench.edit", v)) die("set");
    if (!gguf_writer_write_file(w, dst)) die("gguf_writer_write_file (rewrite)");
    gguf_writer_free(w);
    gguf_close(f);
    return now_ns() - t;
}

static uint64_t time_cp(const char *src, const char *dst) {
    unlink(dst);
    make_cold(src);
    uint64_t t = now_ns();
    pid_t pid = fork();
    if (pid == 0) {
        execl("/bin/cp", "cp", src, dst, (char *)NULL);
        _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "cp failed\n");
        exit(1);
    }
    if (g_sync) {
        int fd = open(dst, O_RDONLY);
        if (fd < 0 || fsync(fd) != 0) perror("fsync");
        close(fd);
    }
    return now_ns() - t;
}

/* ---- many tensors ------------------------------------------------------------------------------ */

static uint64_t time_many(int n, const char *dst) {
    static const unsigned char data[32];
    unlink(dst);
    uint64_t t = now_ns();
    GGUFWriter w = new_writer();
    for (int i = 0; i < n; i++) {
        char name[64];
        snprintf(name, sizeof name, "blk.%d.ffn_up.weight", i);
        uint64_t dims[1] = {8};
        if (!gguf_writer_add_tensor(w, name, 1, dims, GGUF_DATA_TYPE_F32, data, 32))
            die("gguf_writer_add_tensor (many)");
    }
    if (!gguf_writer_write_file(w, dst)) die("gguf_writer_write_file (many)");
    uint64_t elapsed = now_ns() - t;
    gguf_writer_free(w);
    return elapsed;
}

int main(int argc, char **argv) {
    int rounds = 21, mib = 256, many = 100000, opt;
    while ((opt = getopt(argc, argv, "r:m:n:sc")) != -1) {
        switch (opt) {
        case 'r': rounds = atoi(optarg); break;
        case 'm': mib = atoi(optarg); break;
        case 'n': many = atoi(optarg); break;
        case 's': g_sync = 1; break;
        case 'c': g_cold = 1; break;
        default:
            fprintf(stderr, "usage: write_bench [-r ROUNDS] [-m MIB] [-n TENSORS] [-s] [-c] DIR\n");
            return 2;
        }
    }
    if (optind != argc - 1 || rounds < 1 || mib < 1) {
        fprintf(stderr, "usage: write_bench [-r ROUNDS] [-m MIB] [-n TENSORS] [-s] [-c] DIR\n");
        return 2;
    }
    snprintf(g_dir, sizeof g_dir, "%s", argv[optind]);
    uint64_t *a = calloc((size_t)rounds, sizeof *a), *b = calloc((size_t)rounds, sizeof *b);

    g_size = (uint64_t)mib * 1024 * 1024 / N_TENSORS;
    for (int i = 0; i < N_TENSORS; i++) {
        g_data[i] = malloc(g_size);
        for (uint64_t j = 0; j < g_size; j++) g_data[i][j] = (unsigned char)(j * 31 + (uint64_t)i);
    }
    printf("write_bench: %d rounds, %d MiB model, %s%s\n", rounds, mib,
           g_sync ? "both sides fsync" : "no side fsyncs",
           g_cold ? ", rewrite from a cold source" : "");

    /* memory */
    GGUFWriter w = memory_writer();
    char *model = strdup(path("model.gguf"));
    time_ours_memory(w, model);
    GGUFFile f = gguf_open(model);
    if (!f) die("gguf_open");
    g_header_len = (size_t)gguf_data_offset(f);
    gguf_close(f);
    g_header = malloc(g_header_len);
    FILE *h = fopen(model, "rb");
    if (!h || fread(g_header, 1, g_header_len, h) != g_header_len) return 1;
    fclose(h);
    time_plain_write(path("plain.bin"));
    for (int r = 0; r < rounds; r++) {
        if (r % 2) {
            a[r] = time_ours_memory(w, path("ours.gguf"));
            b[r] = time_plain_write(path("plain.bin"));
        } else {
            b[r] = time_plain_write(path("plain.bin"));
            a[r] = time_ours_memory(w, path("ours.gguf"));
        }
    }
    gguf_writer_free(w);
    struct stats om = summarize("memory_libgguf", a, rounds);
    struct stats pm = summarize("memory_plain_write", b, rounds);
    ratio("memory_libgguf_over_plain_write", om, pm);

    /* rewrite */
    time_ours_rewrite(model, path("edited.gguf"), 2);
    time_cp(model, path("copy.gguf"));
    for (int r = 0; r < rounds; r++) {
        if (r % 2) {
            a[r] = time_ours_rewrite(model, path("edited.gguf"), (uint32_t)r);
            b[r] = time_cp(model, path("copy.gguf"));
        } else {
            b[r] = time_cp(model, path("copy.gguf"));
            a[r] = time_ours_rewrite(model, path("edited.gguf"), (uint32_t)r);
        }
    }
    struct stats orw = summarize("rewrite_libgguf", a, rounds);
    struct stats pcp = summarize("rewrite_cp", b, rounds);
    ratio("rewrite_libgguf_over_cp", orw, pcp);

    /* many tensors */
    int many_rounds = rounds < 5 ? rounds : 5;
    if (many > 0) {
        for (int r = 0; r < many_rounds; r++) a[r] = time_many(many, path("many.gguf"));
        struct stats m = summarize("many_tensors", a, many_rounds);
        printf("many: %d tensors, median %.1f ns per tensor\n", many, m.median_ms * 1e6 / many);
    }

    printf("\n%-28s %12s %12s\n", "what", "median ms", "min ms");
    printf("%-28s %12.2f %12.2f\n", "memory: libgguf", om.median_ms, om.min_ms);
    printf("%-28s %12.2f %12.2f\n", "memory: plain write()", pm.median_ms, pm.min_ms);
    printf("%-28s %12.2f %12.2f\n", "rewrite: libgguf", orw.median_ms, orw.min_ms);
    printf("%-28s %12.2f %12.2f\n", "rewrite: cp", pcp.median_ms, pcp.min_ms);
    printf("plain write() / libgguf throughput: %.0f%% (median), %.0f%% (min)\n",
           100 * pm.median_ms / om.median_ms, 100 * pm.min_ms / om.min_ms);
    printf("rewrite libgguf / cp: %.2fx (median), %.2fx (min)\n", orw.median_ms / pcp.median_ms,
           orw.min_ms / pcp.min_ms);
    const char *names[] = {"model.gguf", "plain.bin", "ours.gguf", "edited.gguf", "copy.gguf",
                           "many.gguf"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) unlink(path(names[i]));
    free(model);
    return 0;
}
