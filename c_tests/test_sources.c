/*
 * test_sources.c: models opened from somewhere other than a path, and tensor data
 * copied into the caller's buffers.
 *
 * Every fixture (valid and broken) opens the same way through gguf_open, through
 * gguf_open_reader (a read callback over a FILE), and through gguf_open_fd with and without
 * GGUF_OPEN_FLAG_NO_MAP: the same success, or the same error code and offset. Callbacks that
 * fail, return more than asked, or end before the size they declared are refused with an error
 * naming `<reader>` and the offset. A model stored inside a bigger file (a "tar member" at an
 * unaligned offset) opens from a descriptor the caller closes at once: tensor pointers, offsets
 * relative to the member, and data identical to the fixture's. gguf_read_tensor and
 * gguf_read_tensors on every kind of handle (mapped, memory, fd, reader, no-map, split): bytes
 * equal to the mapping's, bounds refused, threads 0/1/3, direct and buffered, progress reported
 * on the calling thread and a cancel giving GGUF_ERROR_CODE_CANCELLED.
 *
 * Read callbacks that answer short (half of every request, or of the one reaching the header's
 * end) are asked again for the rest; one that reads its own handle fails at once instead of
 * waiting for itself. Descriptors: O_DIRECT ones read as any other (the caller's keeps its
 * flag), O_RDWR|O_APPEND ones too; write-only descriptors, pipes, sockets and directories are
 * refused saying what they are; the caller's descriptor may be closed while threads read.
 *
 * Usage: test_sources FIXTURE... (every path tests/c_api.rs writes; picked by file name).
 */
#define _GNU_SOURCE /* O_DIRECT */
#include "gguf.h"

#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifndef _WIN32
#include <sys/socket.h> /* socketpair: descriptors that are not files (POSIX only) */
#endif
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"

/* A read callback over a FILE, with ways to misbehave. */
struct reader {
    FILE *fp;
    uint64_t size;
    int64_t fail_from;   /* -1 when reads never fail */
    int64_t short_from;  /* reads from here return 0 (the source ends early); -1: never */
    int too_many;        /* returns one byte more than asked */
    pthread_t thread;    /* the thread expected to call */
    int calls;
    int half;            /* returns half of every request */
    int64_t half_at;     /* returns half of the request that reaches this offset; -1: never */
    GGUFFile self;       /* when set, the callback reads this handle (its own) once */
    int reentry_ok, reentry_refused;
};

static int64_t read_cb(void *user, uint64_t offset, void *dst, uint64_t size) {
    struct reader *r = user;
    r->calls++;
    if (!pthread_equal(pthread_self(), r->thread)) {
        fprintf(stderr, "the read callback was called from another thread\n");
        exit(1);
    }
    if (r->fail_from >= 0 && offset >= (uint64_t)r->fail_from) return -1;
    if (r->short_from >= 0 && offset >= (uint64_t)r->short_from) return 0;
    if (r->self != NULL) {
        GGUFFile self = r->self;
        r->self = NULL;
        unsigned char byte;
        r->reentry_ok = gguf_read_tensor(self, gguf_get_tensor_by_index(self, 0), 0, &byte, 1);
        r->reentry_refused = gguf_last_error_code() == GGUF_ERROR_CODE_INVALID_ARGUMENT &&
                             strstr(gguf_last_error(), "must not read its own handle") != NULL;
        gguf_clear_error();
    }
    uint64_t want = size;
    if (r->half || (r->half_at >= 0 && offset <= (uint64_t)r->half_at && (uint64_t)r->half_at < offset + size))
        want = size > 1 ? size / 2 : size;
    if (fseek(r->fp, (long)offset, SEEK_SET) != 0) return -1;
    size_t n = fread(dst, 1, (size_t)want, r->fp);
    if (ferror(r->fp)) return -1;
    return (int64_t)n + (r->too_many ? 1 : 0);
}

static struct reader reader_of(const char *path) {
    struct reader r = {fopen(path, "rb"), 0, -1, -1, 0, pthread_self(), 0, 0, -1, NULL, 0, 0};
    CHECK(r.fp != NULL);
    struct stat st;
    CHECK(stat(path, &st) == 0);
    r.size = (uint64_t)st.st_size;
    r.half_at = -1;
    return r;
}

static int is_regular(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0;
}

/* The outcome of an open: NULL-ness, then code and offset of the error. */
struct outcome {
    int ok;
    uint32_t code;
    int64_t offset;
};

static struct outcome outcome_of(GGUFFile f) {
    struct outcome o = {f != NULL, f ? 0 : gguf_last_error_code(), f ? -1 : gguf_last_error_offset()};
    gguf_close(f);
    gguf_clear_error();
    return o;
}

static void same_outcome(const char *path, const char *how, struct outcome a, struct outcome b) {
    if (a.ok != b.ok || a.code != b.code || a.offset != b.offset) {
        fprintf(stderr, "%s: gguf_open gives ok %d code %u offset %" PRId64 ", %s gives ok %d code %u offset %" PRId64 "\n",
                path, a.ok, a.code, a.offset, how, b.ok, b.code, b.offset);
        exit(1);
    }
}

static void every_fixture_opens_alike(void) {
    int compared = 0;
    for (int i = 1; i < g_argc; i++) {
        const char *path = g_argv[i];
        if (!is_regular(path) || strstr(path, "split-") != NULL) continue;
        struct outcome mapped = outcome_of(gguf_open_ex(path, GGUF_OPEN_FLAG_SINGLE_SHARD));
        struct reader r = reader_of(path);
        same_outcome(path, "gguf_open_reader", mapped, outcome_of(gguf_open_reader(read_cb, &r, r.size, 0)));
        fclose(r.fp);
        int fd = open(path, O_RDONLY);
        CHECK(fd >= 0);
        same_outcome(path, "gguf_open_fd", mapped, outcome_of(gguf_open_fd(fd, 0, 0, 0)));
        same_outcome(path, "gguf_open_fd NO_MAP", mapped,
                     outcome_of(gguf_open_fd(fd, 0, 0, GGUF_OPEN_FLAG_NO_MAP)));
        close(fd);
        same_outcome(path, "gguf_open_ex NO_MAP", mapped,
                     outcome_of(gguf_open_ex(path, GGUF_OPEN_FLAG_NO_MAP | GGUF_OPEN_FLAG_SINGLE_SHARD)));
        compared++;
    }
    CHECK(compared > 10);
}

static void lying_callbacks_are_refused(void) {
    const char *path = fixture("full.gguf");
    struct reader r = reader_of(path);
    r.fail_from = 0;
    gguf_clear_error();
    CHECK(gguf_open_reader(read_cb, &r, r.size, 0) == NULL);
    CHECK_PARSE_ERROR(GGUF_ERROR_CODE_IO, "<reader> failed (returned -1)", 0);
    r.fail_from = -1;
    r.too_many = 1;
    gguf_clear_error();
    CHECK(gguf_open_reader(read_cb, &r, r.size, 0) == NULL);
    CHECK_PARSE_ERROR(GGUF_ERROR_CODE_IO, "returned", 0);
    r.too_many = 0;
    /* Declares more than it holds: ends early inside the header. */
    r.short_from = 64;
    gguf_clear_error();
    CHECK(gguf_open_reader(read_cb, &r, r.size + 100000, 0) == NULL);
    CHECK_PARSE_ERROR(GGUF_ERROR_CODE_IO, "ended early: it declared", (int64_t)r.size);
    r.short_from = -1;
    /* NULL callback; flags that concern mapping a path. */
    FAILS(gguf_open_reader(NULL, &r, r.size, 0) == NULL, GGUF_ERROR_CODE_NULL_ARGUMENT, "read");
    FAILS(gguf_open_reader(read_cb, &r, r.size, GGUF_OPEN_FLAG_LOCK) == NULL,
          GGUF_ERROR_CODE_INVALID_ARGUMENT, "gguf_open_reader");
    /* A good one reads data with gguf_read_tensor only; gguf_tensor_data is NULL. */
    GGUFFile f = gguf_open_reader(read_cb, &r, r.size, 0);
    CHECK(f != NULL);
    CHECK(!gguf_is_mapped(f));
    const GGUFTensorInfo *info = gguf_get_tensor_by_index(f, 0);
    CHECK(info != NULL);
    FAILS(gguf_tensor_data(f, info) == NULL, GGUF_ERROR_CODE_UNSUPPORTED, "gguf_read_tensor");
    /* The callback failing while reading data. */
    r.fail_from = (int64_t)info->file_offset;
    unsigned char byte;
    gguf_clear_error();
    CHECK(!gguf_read_tensor(f, info, 0, &byte, 1));
    CHECK_PARSE_ERROR(GGUF_ERROR_CODE_IO, "<reader> failed", (int64_t)info->file_offset);
    gguf_close(f);
    fclose(r.fp);
}

/* Reads every tensor of `f` through gguf_read_tensor and gguf_read_tensors (threads, direct,
 * progress) and compares with `ref`, a mapped handle of the same model. */
static uint64_t g_last_done, g_total;
static int g_progress_calls;
static pthread_t g_caller;

static bool progress_cb(void *user, uint64_t done, uint64_t total) {
    (void)user;
    if (!pthread_equal(pthread_self(), g_caller)) {
        fprintf(stderr, "progress was called from another thread\n");
        exit(1);
    }
    CHECK(done >= g_last_done && done <= total);
    g_last_done = done;
    g_total = total;
    g_progress_calls++;
    return true;
}

static bool cancel_cb(void *user, uint64_t done, uint64_t total) {
    (void)total;
    int *calls = user;
    (*calls)++;
    return done == 0;
}

static void reads_match(GGUFFile f, GGUFFile ref) {
    uint64_t n = gguf_tensor_count(f);
    CHECK(n == gguf_tensor_count(ref) && n > 0);
    const GGUFTensorInfo **infos = calloc(n, sizeof *infos);
    void **dsts = calloc(n, sizeof *dsts);
    CHECK(infos && dsts);
    uint64_t total = 0;
    for (uint64_t k = 0; k < n; k++) {
        infos[k] = gguf_get_tensor_by_index(f, k);
        dsts[k] = malloc(infos[k]->size_bytes ? infos[k]->size_bytes : 1);
        CHECK(dsts[k] != NULL);
        total += infos[k]->size_bytes;
        const GGUFTensorInfo *r = gguf_get_tensor_by_index(ref, k);
        const unsigned char *want = gguf_tensor_data(ref, r);
        if (r->size_bytes > 0) {
            unsigned char *one = malloc(r->size_bytes);
            CHECK(gguf_read_tensor(f, infos[k], 0, one, r->size_bytes));
            CHECK(memcmp(one, want, r->size_bytes) == 0);
            /* A part, and bounds. */
            uint64_t half = r->size_bytes / 2;
            CHECK(gguf_read_tensor(f, infos[k], half, one, r->size_bytes - half));
            CHECK(memcmp(one, want + half, r->size_bytes - half) == 0);
            FAILS(!gguf_read_tensor(f, infos[k], half + 1, one, r->size_bytes - half),
                  GGUF_ERROR_CODE_INVALID_ARGUMENT, "cannot read");
            free(one);
        }
    }
    FAILS(!gguf_read_tensor(f, infos[0], 0, NULL, 1), GGUF_ERROR_CODE_NULL_ARGUMENT, "dst");
    if (f != ref)
        FAILS(!gguf_read_tensor(f, gguf_get_tensor_by_index(ref, 0), 0, dsts[0], 1),
              GGUF_ERROR_CODE_INVALID_ARGUMENT, "does not belong");
    static const uint32_t THREADS[] = {0, 1, 3};
    for (int t = 0; t < 3; t++) {
        for (uint32_t flags = 0; flags <= GGUF_READ_FLAG_DIRECT; flags++) {
            for (uint64_t k = 0; k < n; k++) memset(dsts[k], 0xEE, infos[k]->size_bytes);
            g_last_done = 0;
            g_progress_calls = 0;
            g_caller = pthread_self();
            CHECK(gguf_read_tensors(f, infos, (void *const *)dsts, n, THREADS[t], flags, progress_cb, NULL));
            CHECK(g_progress_calls >= 2 && g_last_done == total && g_total == total);
            for (uint64_t k = 0; k < n; k++) {
                const GGUFTensorInfo *r = gguf_get_tensor_by_index(ref, k);
                CHECK(memcmp(dsts[k], gguf_tensor_data(ref, r), r->size_bytes) == 0);
            }
        }
    }
    int calls = 0;
    FAILS(!gguf_read_tensors(f, infos, (void *const *)dsts, n, 2, 0, cancel_cb, &calls),
          GGUF_ERROR_CODE_CANCELLED, "progress callback stopped");
    CHECK(calls >= 2);
    FAILS(!gguf_read_tensors(f, infos, (void *const *)dsts, n, 0, 0x80, NULL, NULL),
          GGUF_ERROR_CODE_INVALID_ARGUMENT, "unknown read flags");
    FAILS(!gguf_read_tensors(f, NULL, (void *const *)dsts, n, 0, 0, NULL, NULL),
          GGUF_ERROR_CODE_NULL_ARGUMENT, "infos");
    CHECK(gguf_read_tensors(f, NULL, NULL, 0, 0, 0, NULL, NULL));
    for (uint64_t k = 0; k < n; k++) free(dsts[k]);
    free(dsts);
    free(infos);
}

/* `path`'s bytes stored after `before` bytes of junk, followed by junk: a tar member. */
static char *member_of(const char *path, size_t before, size_t *len) {
    unsigned char *bytes = read_file(path, len);
    static char out[4096];
    snprintf(out, sizeof out, "%s.member-%ld.tar", path, (long)getpid());
    FILE *fp = fopen(out, "wb");
    CHECK(fp != NULL);
    for (size_t i = 0; i < before; i++) fputc(0x5A, fp);
    CHECK(fwrite(bytes, 1, *len, fp) == *len);
    for (int i = 0; i < 333; i++) fputc(0xA5, fp);
    fclose(fp);
    free(bytes);
    return out;
}

static void every_kind_of_handle_reads_alike(void) {
    const char *path = fixture("full.gguf");
    GGUFFile ref = gguf_open(path);
    CHECK(ref != NULL && gguf_is_mapped(ref));
    reads_match(ref, ref);

    size_t len;
    unsigned char *bytes = read_file(path, &len);
    GGUFFile mem = gguf_open_memory(bytes, len);
    CHECK(mem != NULL && gguf_is_mapped(mem));
    reads_match(mem, ref);
    gguf_close(mem);
    free(bytes);

    GGUFFile nomap = gguf_open_ex(path, GGUF_OPEN_FLAG_NO_MAP);
    CHECK(nomap != NULL && !gguf_is_mapped(nomap));
    reads_match(nomap, ref);
    gguf_close(nomap);

    struct reader r = reader_of(path);
    GGUFFile rd = gguf_open_reader(read_cb, &r, r.size, 0);
    CHECK(rd != NULL);
    reads_match(rd, ref);
    gguf_close(rd);
    fclose(r.fp);

    static const size_t BEFORE[] = {0, 1000, 4096, 5003};
    for (int b = 0; b < 4; b++) {
        const char *tar = member_of(path, BEFORE[b], &len);
        for (uint32_t flags = 0; flags <= GGUF_OPEN_FLAG_NO_MAP; flags += GGUF_OPEN_FLAG_NO_MAP) {
            int fd = open(tar, O_RDONLY);
            CHECK(fd >= 0);
            GGUFFile f = gguf_open_fd(fd, BEFORE[b], len, flags);
            CHECK(close(fd) == 0); /* the handle has its own descriptor */
            CHECK(f != NULL);
            CHECK(gguf_is_mapped(f) == (flags == 0));
            CHECK(gguf_file_size(f) == len);
            CHECK(gguf_data_offset(f) == gguf_data_offset(ref));
            for (uint64_t k = 0; k < gguf_tensor_count(f); k++) {
                const GGUFTensorInfo *a = gguf_get_tensor_by_index(f, k);
                const GGUFTensorInfo *e = gguf_get_tensor_by_index(ref, k);
                CHECK(a->file_offset == e->file_offset);
                if (flags == 0 && a->size_bytes > 0)
                    CHECK(memcmp(gguf_tensor_data(f, a), gguf_tensor_data(ref, e), a->size_bytes) == 0);
            }
            const GGUFUploadPlan *plan = gguf_plan_upload(f, UINT64_MAX, 0);
            if (flags == 0) {
                /* Views over the embedded file's bytes hold every tensor where its data is. */
                CHECK(plan != NULL && gguf_get_shard(f, 0)->base != NULL);
                for (uint64_t k = 0; k < gguf_tensor_count(f); k++) {
                    const GGUFPlacement *p = &plan->placements[k];
                    if (p->view == GGUF_NO_VIEW) continue;
                    const unsigned char *at = (const unsigned char *)plan->views[p->view].data + p->offset;
                    CHECK(at == gguf_tensor_data(f, gguf_get_tensor_by_index(f, k)));
                }
            } else {
                CHECK(plan == NULL);
                CHECK_ERROR(GGUF_ERROR_CODE_UNSUPPORTED, "gguf_read_tensors");
                CHECK(gguf_get_shard(f, 0)->base == NULL);
            }
            reads_match(f, ref);
            gguf_close(f);
        }
        int fd = open(tar, O_RDONLY);
        FAILS(gguf_open_fd(fd, BEFORE[b], len + 334, 0) == NULL, GGUF_ERROR_CODE_INVALID_ARGUMENT,
              "do not lie inside");
        close(fd);
        unlink(tar);
    }
    FAILS(gguf_open_fd(-1, 0, 0, 0) == NULL, GGUF_ERROR_CODE_IO, "file descriptor -1");
    gguf_close(ref);

    /* A split model opened by path reads across its shards. */
    GGUFFile split = gguf_open(fixture("split-00001-of-00005.gguf"));
    CHECK(split != NULL && gguf_shard_count(split) == 5);
    reads_match(split, split);
    gguf_close(split);
}

static void short_answers_are_asked_again_and_reading_its_own_handle_fails(void) {
    const char *path = fixture("full.gguf");
    GGUFFile ref = gguf_open(path);
    CHECK(ref != NULL);
    struct reader r = reader_of(path);
    r.half = 1;
    GGUFFile f = gguf_open_reader(read_cb, &r, r.size, 0);
    CHECK(f != NULL);
    reads_match(f, ref);
    gguf_close(f);
    r.half = 0;
    r.half_at = (int64_t)gguf_data_offset(ref) - 1; /* the request reaching the header's end */
    int before = r.calls;
    f = gguf_open_reader(read_cb, &r, r.size, 0);
    CHECK(f != NULL);
    CHECK(r.calls >= before + 2); /* asked again for what was not given */
    reads_match(f, ref);
    gguf_close(f);
    r.half_at = -1;

    /* The callback reads its own handle: that read fails at once, the outer one works. */
    f = gguf_open_reader(read_cb, &r, r.size, 0);
    CHECK(f != NULL);
    const GGUFTensorInfo *info = gguf_get_tensor_by_index(f, 1);
    unsigned char *buf = malloc(info->size_bytes);
    CHECK(buf != NULL);
    r.self = f;
    CHECK(gguf_read_tensor(f, info, 0, buf, info->size_bytes));
    CHECK(r.self == NULL && !r.reentry_ok && r.reentry_refused);
    CHECK(memcmp(buf, gguf_tensor_data(ref, gguf_get_tensor_by_index(ref, 1)), info->size_bytes) == 0);
    /* Reading another handle from inside the callback works. */
    GGUFFile other = gguf_open(path);
    r.self = other;
    CHECK(gguf_read_tensor(f, info, 0, buf, info->size_bytes));
    CHECK(r.self == NULL && r.reentry_ok);
    gguf_close(other);
    free(buf);
    gguf_close(f);
    fclose(r.fp);
    gguf_close(ref);
}

struct reading {
    GGUFFile f, ref;
};

static void *read_every_tensor_often(void *arg) {
    struct reading *rd = arg;
    for (int round = 0; round < 20; round++) {
        for (uint64_t k = 0; k < gguf_tensor_count(rd->f); k++) {
            const GGUFTensorInfo *a = gguf_get_tensor_by_index(rd->f, k);
            const GGUFTensorInfo *e = gguf_get_tensor_by_index(rd->ref, k);
            if (a->size_bytes == 0) continue;
            unsigned char *buf = malloc(a->size_bytes);
            CHECK(buf != NULL);
            CHECK(gguf_read_tensor(rd->f, a, 0, buf, a->size_bytes));
            CHECK(memcmp(buf, gguf_tensor_data(rd->ref, e), a->size_bytes) == 0);
            free(buf);
        }
    }
    return NULL;
}

static void descriptors_of_every_kind(void) {
    const char *path = fixture("full.gguf");
    GGUFFile ref = gguf_open(path);
    CHECK(ref != NULL);
    for (uint32_t flags = 0; flags <= GGUF_OPEN_FLAG_NO_MAP; flags += GGUF_OPEN_FLAG_NO_MAP) {
#ifdef O_DIRECT
        int fd = open(path, O_RDONLY | O_DIRECT);
        CHECK(fd >= 0);
        GGUFFile f = gguf_open_fd(fd, 0, 0, flags);
        CHECK(f != NULL);
        CHECK(gguf_is_mapped(f) == (flags == 0));
        reads_match(f, ref);
        gguf_close(f);
        CHECK((fcntl(fd, F_GETFL) & O_DIRECT) != 0); /* the caller's keeps its flag */
        close(fd);
#endif
        int rw = open(path, O_RDWR | O_APPEND);
        CHECK(rw >= 0);
        GGUFFile a = gguf_open_fd(rw, 0, 0, flags);
        CHECK(a != NULL);
        reads_match(a, ref);
        gguf_close(a);
        close(rw);

#ifndef _WIN32 /* write-only descriptors, pipes, sockets and directories: the POSIX kinds */
        int wr = open(path, O_WRONLY);
        CHECK(wr >= 0);
        FAILS(gguf_open_fd(wr, 0, 0, flags) == NULL, GGUF_ERROR_CODE_IO, "is open for writing only");
        close(wr);
        int p[2];
        CHECK(pipe(p) == 0);
        FAILS(gguf_open_fd(p[0], 0, 0, flags) == NULL, GGUF_ERROR_CODE_IO, "is a FIFO");
        close(p[0]);
        close(p[1]);
        int sv[2];
        CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
        FAILS(gguf_open_fd(sv[0], 0, 0, flags) == NULL, GGUF_ERROR_CODE_IO, "is a socket");
        close(sv[0]);
        close(sv[1]);
        int dir = open(fixture("a_directory.gguf"), O_RDONLY);
        CHECK(dir >= 0);
        FAILS(gguf_open_fd(dir, 0, 0, flags) == NULL, GGUF_ERROR_CODE_IO, "is a directory");
        close(dir);
#endif

        /* The caller closes its descriptor while two threads read through the handle. */
        int own = open(path, O_RDONLY);
        CHECK(own >= 0);
        struct reading rd = {gguf_open_fd(own, 0, 0, flags), ref};
        CHECK(rd.f != NULL);
        pthread_t t[2];
        for (int i = 0; i < 2; i++) CHECK(pthread_create(&t[i], NULL, read_every_tensor_often, &rd) == 0);
        CHECK(close(own) == 0);
        for (int i = 0; i < 2; i++) CHECK(pthread_join(t[i], NULL) == 0);
        gguf_close(rd.f); /* once no other thread uses it */
    }
    gguf_close(ref);
}

int main(int argc, char **argv) {
    g_argc = argc;
    g_argv = argv;
    every_fixture_opens_alike();
    lying_callbacks_are_refused();
    every_kind_of_handle_reads_alike();
    short_answers_are_asked_again_and_reading_its_own_handle_fails();
    descriptors_of_every_kind();
    printf("test_sources: ok\n");
    return 0;
}
