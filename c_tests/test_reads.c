/*
 * test_reads.c: gguf_read_tensor and gguf_read_tensors held against a hostile caller and a
 * hostile source, under the sanitizers.
 *
 * A model made with the writer (a 9 MiB I8 tensor that crosses the file's 8 MiB read boundary
 * between two small ones), opened from memory, through a read callback, and from a file mapped
 * and unmapped: each tensor listed twice (or three times) in one gguf_read_tensors call fills
 * every buffer, on one thread and on several, buffered and direct; buffers that share a byte
 * (the same one given twice) are refused before anything is written. A huge `n` (2^40, 2^61)
 * with a NULL infos[0] fails at once, allocating nothing for it. gguf_read_tensor with size
 * UINT64_MAX (at offset 0 and 1) is refused before its buffer is touched. A read callback
 * declaring a size just under 2^64, with a tensor at its very top, reads that tensor. None of
 * this prints anything: stderr is sent to a file around the calls, which must stay empty.
 *
 * Usage: test_reads FIXTURE... (every path tests/c_api.rs writes; picked by file name).
 */
#include "gguf.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

/* ---- stderr sent to a file around calls that must print nothing. */

static FILE *g_quiet_file;
static int g_saved_stderr = -1;
static char g_quiet_path[4096];

/* (A named file beside the fixtures rather than tmpfile(), which on Windows writes to the root
 * of the drive.) */
static void quiet_begin(void) {
    fflush(stderr);
    if (g_quiet_path[0] == '\0')
        snprintf(g_quiet_path, sizeof g_quiet_path, "%s.stderr-%ld", fixture("full.gguf"),
                 (long)getpid());
    g_quiet_file = fopen(g_quiet_path, "w+b");
    CHECK(g_quiet_file != NULL);
    g_saved_stderr = dup(2);
    CHECK(g_saved_stderr >= 0);
    CHECK(dup2(fileno(g_quiet_file), 2) != -1); /* (Windows' C runtime returns 0, POSIX the descriptor) */
}

/* Restores stderr, then fails (showing what was printed) if anything was. */
static void quiet_end(const char *what) {
    fflush(stderr);
    CHECK(dup2(g_saved_stderr, 2) != -1);
    close(g_saved_stderr);
    g_saved_stderr = -1;
    long printed = (fseek(g_quiet_file, 0, SEEK_END) == 0) ? ftell(g_quiet_file) : -1;
    if (printed != 0) {
        char text[2048] = {0};
        rewind(g_quiet_file);
        size_t n = fread(text, 1, sizeof text - 1, g_quiet_file);
        text[n] = '\0';
        fprintf(stderr, "%s printed %ld bytes to stderr:\n%s\n", what, printed, text);
        exit(1);
    }
    fclose(g_quiet_file);
    g_quiet_file = NULL;
    remove(g_quiet_path);
}

/* ---- a source in memory, read through a callback: `head` first, then the byte
 * `filler(offset)` everywhere up to `declared`. */

struct source {
    const unsigned char *head;
    uint64_t head_len;
    uint64_t declared;
};

static unsigned char filler(uint64_t offset) { return (unsigned char)(offset % 251); }

static int64_t source_cb(void *user, uint64_t offset, void *dst, uint64_t size) {
    const struct source *s = user;
    unsigned char *out = dst;
    uint64_t n = offset >= s->declared ? 0 : s->declared - offset;
    if (n > size) n = size;
    uint64_t i = 0;
    if (offset < s->head_len) {
        uint64_t k = s->head_len - offset < n ? s->head_len - offset : n;
        memcpy(out, s->head + offset, (size_t)k);
        i = k;
    }
    for (; i < n; i++) out[i] = filler(offset + i);
    return (int64_t)n;
}

/* ---- the model: "small.a" (1000 bytes), "big" (9 MiB, I8: it crosses the file's 8 MiB read
 * boundary), "small.b" (3000 bytes). */

#define BIG_BYTES (9u << 20)
static const char *NAMES[3] = {"small.a", "big", "small.b"};
static const uint64_t SIZES[3] = {1000, BIG_BYTES, 3000};
static unsigned char *g_data[3];

static unsigned char *make_model(size_t *len) {
    GGUFWriter w = gguf_writer_new();
    CHECK(w != NULL);
    for (int k = 0; k < 3; k++) {
        g_data[k] = malloc((size_t)SIZES[k]);
        CHECK(g_data[k] != NULL);
        for (uint64_t j = 0; j < SIZES[k]; j++) g_data[k][j] = (unsigned char)(k * 37 + j * 11 + 1);
        CHECK(gguf_writer_add_tensor(w, NAMES[k], 1, &SIZES[k], GGUF_DATA_TYPE_I8, g_data[k],
                                     SIZES[k]));
    }
    uint64_t size = gguf_writer_memory_size(w);
    CHECK(size > BIG_BYTES);
    unsigned char *bytes = malloc((size_t)size);
    CHECK(bytes != NULL);
    CHECK(gguf_writer_write_memory(w, bytes, (size_t)size));
    gguf_writer_free(w);
    *len = (size_t)size;
    return bytes;
}

/* Lists tensors in `order` (indices, repeats allowed) and reads them into separate buffers. */
static void read_listed(GGUFFile f, const int *order, int n, uint32_t threads, uint32_t flags) {
    const GGUFTensorInfo *infos[8];
    void *dsts[8];
    CHECK(n <= 8);
    for (int i = 0; i < n; i++) {
        infos[i] = gguf_get_tensor(f, NAMES[order[i]]);
        CHECK(infos[i] != NULL && infos[i]->size_bytes == SIZES[order[i]]);
        dsts[i] = malloc((size_t)SIZES[order[i]]);
        CHECK(dsts[i] != NULL);
        memset(dsts[i], 0xEE, (size_t)SIZES[order[i]]);
    }
    quiet_begin();
    bool ok = gguf_read_tensors(f, infos, (void *const *)dsts, (uint64_t)n, threads, flags, NULL, NULL);
    quiet_end("gguf_read_tensors with a tensor listed twice");
    CHECK(ok);
    for (int i = 0; i < n; i++) {
        if (memcmp(dsts[i], g_data[order[i]], (size_t)SIZES[order[i]]) != 0) {
            fprintf(stderr, "entry %d (%s) holds other bytes (threads %u, flags %u)\n", i,
                    NAMES[order[i]], threads, flags);
            exit(1);
        }
        free(dsts[i]);
    }
}

/* The big tensor twice, and the small ones each listed again and again, on one thread and on
 * four; `direct`: with GGUF_READ_FLAG_DIRECT too. */
static void every_listing(GGUFFile f, int direct) {
    static const int TWICE[] = {1, 1};
    static const int SMALL[] = {0, 2, 0, 2, 2, 0};
    static const int MIXED[] = {2, 1, 0, 1};
    read_listed(f, TWICE, 2, 1, 0);
    read_listed(f, TWICE, 2, 4, 0);
    read_listed(f, SMALL, 6, 1, 0);
    read_listed(f, SMALL, 6, 4, 0);
    read_listed(f, MIXED, 4, 0, 0);
    if (direct) {
        read_listed(f, TWICE, 2, 4, GGUF_READ_FLAG_DIRECT);
        read_listed(f, SMALL, 6, 1, GGUF_READ_FLAG_DIRECT);
    }
}

/* Calls that must fail without touching their buffers or allocating for `n`. */
static void refusals(GGUFFile f) {
    const GGUFTensorInfo *big = gguf_get_tensor(f, "big");
    CHECK(big != NULL);
    unsigned char small[16];
    memset(small, 0x5A, sizeof small);
    quiet_begin();
    bool past_end = gguf_read_tensor(f, big, 1, small, UINT64_MAX);
    uint32_t past_end_code = gguf_last_error_code();
    bool from_start = gguf_read_tensor(f, big, 0, small, UINT64_MAX);
    uint32_t from_start_code = gguf_last_error_code();
    quiet_end("gguf_read_tensor with size UINT64_MAX");
    CHECK(!past_end && past_end_code == GGUF_ERROR_CODE_INVALID_ARGUMENT);
    CHECK(!from_start && from_start_code == GGUF_ERROR_CODE_INVALID_ARGUMENT);
    for (size_t i = 0; i < sizeof small; i++) CHECK(small[i] == 0x5A);
    FAILS(!gguf_read_tensor(f, big, 1, small, UINT64_MAX), GGUF_ERROR_CODE_INVALID_ARGUMENT,
          "cannot read 18446744073709551615 bytes from offset 1");

    /* A huge n: refused at once (arrays of 2^61 pointers cannot be in memory), or at its first
     * entry (NULL), with nothing allocated for the rest. */
    const GGUFTensorInfo *infos[1] = {NULL};
    void *dsts[1] = {small};
    quiet_begin();
    bool huge = gguf_read_tensors(f, infos, dsts, (uint64_t)1 << 61, 0, 0, NULL, NULL);
    uint32_t huge_code = gguf_last_error_code();
    bool large = gguf_read_tensors(f, infos, dsts, (uint64_t)1 << 40, 0, 0, NULL, NULL);
    uint32_t large_code = gguf_last_error_code();
    quiet_end("gguf_read_tensors with a huge n");
    CHECK(!huge && huge_code == GGUF_ERROR_CODE_INVALID_ARGUMENT);
    /* 2^40 pointers fit in a 64-bit address space, not in a 32-bit one. */
    CHECK(!large && large_code == (sizeof(void *) >= 8 ? GGUF_ERROR_CODE_NULL_ARGUMENT
                                                        : GGUF_ERROR_CODE_INVALID_ARGUMENT));
    FAILS(!gguf_read_tensors(f, infos, dsts, (uint64_t)1 << 61, 0, 0, NULL, NULL),
          GGUF_ERROR_CODE_INVALID_ARGUMENT, "pointers");
    if (sizeof(void *) >= 8)
        FAILS(!gguf_read_tensors(f, infos, dsts, (uint64_t)1 << 40, 0, 0, NULL, NULL),
              GGUF_ERROR_CODE_NULL_ARGUMENT, "infos[0]");
    /* Buffers that share a byte: the same buffer twice, or one starting inside another.
     * Refused before anything is written to them. */
    const GGUFTensorInfo *a = gguf_get_tensor(f, "small.a"), *b = gguf_get_tensor(f, "small.b");
    unsigned char *shared = malloc(8000);
    CHECK(shared != NULL);
    memset(shared, 0x5A, 8000);
    const GGUFTensorInfo *pair[3] = {a, b, a};
    void *same[3] = {shared, shared + 4000, shared};
    FAILS(!gguf_read_tensors(f, pair, same, 3, 0, 0, NULL, NULL), GGUF_ERROR_CODE_INVALID_ARGUMENT,
          "dsts[0] and dsts[2] overlap");
    void *inside[2] = {shared + 4000, shared + 4000 + 999};
    FAILS(!gguf_read_tensors(f, pair + 1, inside, 2, 0, 0, NULL, NULL),
          GGUF_ERROR_CODE_INVALID_ARGUMENT, "dsts[0] and dsts[1] overlap");
    for (int i = 0; i < 8000; i++) CHECK(shared[i] == 0x5A);
    /* Next to each other, sharing nothing: read. */
    void *apart[2] = {shared + 3000, shared};
    CHECK(gguf_read_tensors(f, pair + 1, apart, 2, 0, 0, NULL, NULL));
    CHECK(memcmp(shared + 3000, g_data[2], 3000) == 0 && memcmp(shared, g_data[0], 1000) == 0);
    free(shared);

    /* A NULL entry further on, after good ones. */
    const GGUFTensorInfo *two[2] = {big, NULL};
    void *two_dsts[2] = {small, small};
    FAILS(!gguf_read_tensors(f, two, two_dsts, 2, 0, 0, NULL, NULL), GGUF_ERROR_CODE_NULL_ARGUMENT,
          "infos[1]");
}

static void put_le(unsigned char *at, uint64_t v, int bytes) {
    for (int i = 0; i < bytes; i++) at[i] = (unsigned char)(v >> (8 * i));
}

/* A read callback declaring 2^64 - 32 bytes, with a 64-byte I8 tensor ending there. */
static void a_tensor_at_the_top_of_2_to_the_64(void) {
    const uint64_t top = UINT64_MAX / 32 * 32;
    unsigned char head[57];
    memcpy(head, "GGUF", 4);
    put_le(head + 4, 3, 4);  /* version */
    put_le(head + 8, 1, 8);  /* one tensor */
    put_le(head + 16, 0, 8); /* no metadata */
    put_le(head + 24, 1, 8); /* name "t" */
    head[32] = 't';
    put_le(head + 33, 1, 4);                     /* one dimension */
    put_le(head + 37, 64, 8);                    /* of 64 */
    put_le(head + 45, GGUF_DATA_TYPE_I8, 4);     /* I8 */
    put_le(head + 49, top - 64 - 64, 8);         /* data at 64 (57 rounded up) + offset */
    struct source s = {head, sizeof head, top};
    GGUFFile f = gguf_open_reader(source_cb, &s, top, 0);
    CHECK(f != NULL);
    const GGUFTensorInfo *t = gguf_get_tensor(f, "t");
    CHECK(t != NULL && t->file_offset == top - 64 && t->size_bytes == 64);
    unsigned char a[64], b[64], part[10];
    const GGUFTensorInfo *infos[2] = {t, t};
    void *dsts[2] = {a, b};
    quiet_begin();
    bool ok = gguf_read_tensors(f, infos, dsts, 2, 0, 0, NULL, NULL);
    bool one = gguf_read_tensor(f, t, 54, part, 10);
    quiet_end("reading a tensor at the top of 2^64");
    CHECK(ok && one);
    for (int j = 0; j < 64; j++) CHECK(a[j] == filler(top - 64 + (uint64_t)j) && b[j] == a[j]);
    CHECK(memcmp(part, a + 54, 10) == 0);
    FAILS(!gguf_read_tensor(f, t, 55, part, 10), GGUF_ERROR_CODE_INVALID_ARGUMENT, "cannot read");
    gguf_close(f);
}

int main(int argc, char **argv) {
    g_argc = argc;
    g_argv = argv;
    size_t len;
    unsigned char *bytes = make_model(&len);

    GGUFFile mem = gguf_open_memory(bytes, len);
    CHECK(mem != NULL);
    every_listing(mem, 0);
    refusals(mem);
    gguf_close(mem);

    struct source s = {bytes, len, len};
    GGUFFile rd = gguf_open_reader(source_cb, &s, len, 0);
    CHECK(rd != NULL && !gguf_is_mapped(rd));
    every_listing(rd, 0);
    refusals(rd);
    gguf_close(rd);

    /* A file beside the fixtures, mapped and read by position (direct reads included). */
    char path[4096];
    snprintf(path, sizeof path, "%s.reads-%ld.gguf", fixture("full.gguf"), (long)getpid());
    FILE *fp = fopen(path, "wb");
    CHECK(fp != NULL && fwrite(bytes, 1, len, fp) == len && fclose(fp) == 0);
    for (uint32_t flags = 0; flags <= GGUF_OPEN_FLAG_NO_MAP; flags += GGUF_OPEN_FLAG_NO_MAP) {
        GGUFFile f = gguf_open_ex(path, flags);
        CHECK(f != NULL);
        every_listing(f, 1);
        refusals(f);
        gguf_close(f);
    }
    remove(path);
    free(bytes);
    for (int k = 0; k < 3; k++) free(g_data[k]);

    a_tensor_at_the_top_of_2_to_the_64();
    puts("test_reads: ok");
    return 0;
}
