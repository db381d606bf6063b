/*
 * test_plan_pinned.c: what a CUDA engine does with pinned host memory, paging advice, and the
 * open flags.
 *
 * Upload: a plan of plan.gguf with no limit (one view to cudaHostRegister), every tensor copied
 * from view.data + offset into its own 256-byte-aligned buffer (as cudaMemcpyAsync would into a
 * device allocation); the FNV-1a 64 digest of each copy must equal the digest of
 * gguf_tensor_data's bytes and the one tests/c_api.rs wrote in plan.digests. The same with a
 * 4 MiB limit, the oversized tensors copied from gguf_tensor_data instead.
 *
 * Paging: gguf_advise_tensor, gguf_advise_tensors and gguf_advise_data with every GGUFPaging
 * value on a mapped file (the data reads the same after DONTNEED), and their failures: advice 5,
 * NULL infos with a count, an info of another handle, a handle opened from memory
 * (UNSUPPORTED), DONTNEED on a file read into memory (UNSUPPORTED, while its other advice
 * succeeds).
 *
 * gguf_open_ex: each flag and some combinations open plan.gguf with the same data; LOCK either
 * succeeds or, when the file is larger than `ulimit -l` allows, fails with IO naming the limit
 * (a privileged process may lock past it); unknown flags fail with INVALID_ARGUMENT.
 *
 * Besides the C library, it uses aligned_alloc (C11: _ISOC11_SOURCE under -std=c99) and POSIX
 * getrlimit for the locked-memory limit.
 *
 * Usage: test_plan_pinned FIXTURE... (every path tests/c_api.rs writes; picked by file name).
 */
#define _ISOC11_SOURCE 1
#define _POSIX_C_SOURCE 200809L

#include "gguf.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "check.h"

#define PLAN_TENSORS 40
#define DEVICE_ALIGN 256

static const uint32_t ALL_ADVICE[] = {GGUF_PAGING_NORMAL, GGUF_PAGING_WILL_NEED,
                                      GGUF_PAGING_DONT_NEED, GGUF_PAGING_SEQUENTIAL,
                                      GGUF_PAGING_RANDOM};
#define N_ADVICE (sizeof ALL_ADVICE / sizeof ALL_ADVICE[0])

/* FNV-1a, 64 bits (tests/c_api.rs `fnv1a64`). */
static uint64_t fnv1a64(const unsigned char *p, uint64_t n) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (uint64_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

/* plan.digests: one line `NAME SIZE FNV1A64` per tensor of plan.gguf, in file order. */
static struct {
    char name[64];
    uint64_t size;
    uint64_t digest;
} g_expected[PLAN_TENSORS];

static void read_digests(void) {
    FILE *fp = fopen(fixture("plan.digests"), "r");
    CHECK(fp != NULL);
    for (int k = 0; k < PLAN_TENSORS; k++) {
        CHECK(fscanf(fp, "%63s %" SCNu64 " %" SCNx64, g_expected[k].name, &g_expected[k].size,
                     &g_expected[k].digest) == 3);
    }
    char extra[8];
    CHECK(fscanf(fp, "%7s", extra) == EOF);
    fclose(fp);
}

/* Every tensor of `f` reads as plan.digests says, through gguf_tensor_data. */
static void check_digests(GGUFFile f) {
    CHECK(f != NULL);
    CHECK(gguf_tensor_count(f) == PLAN_TENSORS);
    for (uint64_t k = 0; k < PLAN_TENSORS; k++) {
        const GGUFTensorInfo *info = gguf_get_tensor_by_index(f, k);
        CHECK(info != NULL);
        CHECK(strcmp(info->name, g_expected[k].name) == 0);
        CHECK(info->size_bytes == g_expected[k].size);
        const unsigned char *data = gguf_tensor_data(f, info);
        CHECK(data != NULL);
        CHECK(fnv1a64(data, info->size_bytes) == g_expected[k].digest);
    }
}

/* A "device" allocation: 256-byte-aligned, as cudaMalloc returns. */
static unsigned char *device_alloc(uint64_t size) {
    uint64_t rounded = (size + DEVICE_ALIGN - 1) / DEVICE_ALIGN * DEVICE_ALIGN;
    unsigned char *p = aligned_alloc(DEVICE_ALIGN, rounded ? rounded : DEVICE_ALIGN);
    CHECK(p != NULL);
    CHECK((uintptr_t)p % DEVICE_ALIGN == 0);
    return p;
}

/* Registers each view (cudaHostRegister), copies each tensor out of its view
 * (cudaMemcpyAsync), and checks the copies' digests. Oversized tensors are copied from
 * gguf_tensor_data (an engine would stage them in pieces). Returns the number copied through
 * a view. */
static uint64_t upload(GGUFFile f, const GGUFUploadPlan *p) {
    CHECK(p != NULL && p->n_tensors == PLAN_TENSORS);
    for (uint64_t i = 0; i < p->n_views; i++) {
        /* What cudaHostRegister(view.data, view.size, cudaHostRegisterReadOnly) gets. */
        CHECK(p->views[i].data != NULL && p->views[i].size > 0);
        CHECK((uintptr_t)p->views[i].data % p->page_size == 0 ||
              (const unsigned char *)p->views[i].data == gguf_get_shard(f, 0)->base);
        CHECK(gguf_contains(f, p->views[i].data, p->views[i].size));
    }
    uint64_t through_views = 0;
    for (uint64_t k = 0; k < PLAN_TENSORS; k++) {
        const GGUFTensorInfo *info = gguf_get_tensor_by_index(f, k);
        const GGUFPlacement *pl = &p->placements[k];
        const unsigned char *src;
        if (pl->view == GGUF_NO_VIEW) {
            src = gguf_tensor_data(f, info);
        } else {
            CHECK(pl->view < p->n_views);
            const GGUFView *v = &p->views[pl->view];
            CHECK(pl->offset + info->size_bytes <= v->size);
            src = (const unsigned char *)v->data + pl->offset;
            through_views++;
        }
        unsigned char *dst = device_alloc(info->size_bytes);
        memcpy(dst, src, info->size_bytes);
        const uint64_t copied = fnv1a64(dst, info->size_bytes);
        const uint64_t direct = fnv1a64(gguf_tensor_data(f, info), info->size_bytes);
        CHECK(copied == direct);
        CHECK(copied == g_expected[k].digest);
        free(dst);
    }
    return through_views;
}

static void test_upload(void) {
    GGUFFile f = gguf_open(fixture("plan.gguf"));
    CHECK(f != NULL);
    check_digests(f);

    /* No limit: one view holds every tensor. */
    const GGUFUploadPlan *all = gguf_plan_upload(f, UINT64_MAX, 0);
    CHECK(all != NULL);
    CHECK(all->n_views == 1 && all->n_oversized == 0);
    CHECK(all->views[0].file_offset <= gguf_data_offset(f));
    CHECK(upload(f, all) == PLAN_TENSORS);

    /* A 4 MiB registration budget: the 3 MB tensor still fits its pages, nothing is left out
     * but what exceeds 4 MiB. */
    const GGUFUploadPlan *budget = gguf_plan_upload(f, 4u << 20, 0);
    CHECK(budget != NULL && budget->n_views >= 3);
    CHECK(upload(f, budget) == PLAN_TENSORS - budget->n_oversized);
    CHECK(budget->n_oversized == 0);

    /* 1 MiB: two tensors do not fit and are copied directly. */
    const GGUFUploadPlan *small = gguf_plan_upload(f, 1u << 20, 0);
    CHECK(small != NULL && small->n_oversized >= 2);
    CHECK(upload(f, small) == PLAN_TENSORS - small->n_oversized);
    gguf_close(f);
}

static void test_paging(void) {
    const char *path = fixture("plan.gguf");
    GGUFFile f = gguf_open(path);
    GGUFFile other = gguf_open(fixture("full.gguf"));
    CHECK(f != NULL && other != NULL);
    const GGUFTensorInfo *infos[PLAN_TENSORS];
    for (uint64_t k = 0; k < PLAN_TENSORS; k++) infos[k] = gguf_get_tensor_by_index(f, k);

    /* Every advice on every tensor, on all of them at once, and on the whole data section. */
    for (size_t a = 0; a < N_ADVICE; a++) {
        gguf_clear_error();
        for (uint64_t k = 0; k < PLAN_TENSORS; k++) CHECK(gguf_advise_tensor(f, infos[k], ALL_ADVICE[a]));
        CHECK(gguf_advise_tensors(f, infos, PLAN_TENSORS, ALL_ADVICE[a]));
        CHECK(gguf_advise_tensors(f, infos + 7, 3, ALL_ADVICE[a]));
        CHECK(gguf_advise_tensors(f, NULL, 0, ALL_ADVICE[a]));
        CHECK(gguf_advise_data(f, ALL_ADVICE[a]));
        CHECK(gguf_last_error_code() == GGUF_ERROR_CODE_NONE);
        /* Dropped pages come back from the file unchanged. */
        check_digests(f);
    }
    /* The empty tensor, and a file without tensors. */
    CHECK(infos[12]->size_bytes == 0);
    CHECK(gguf_advise_tensor(f, infos[12], GGUF_PAGING_WILL_NEED));
    GGUFFile e = gguf_open(fixture("empty.gguf"));
    CHECK(e != NULL);
    CHECK(gguf_advise_data(e, GGUF_PAGING_WILL_NEED));
    gguf_close(e);

    /* Failures. */
    FAILS(!gguf_advise_tensor(f, infos[0], 5), GGUF_ERROR_CODE_INVALID_ARGUMENT,
          "not a GGUFPaging value");
    FAILS(!gguf_advise_tensor(f, infos[0], UINT32_MAX), GGUF_ERROR_CODE_INVALID_ARGUMENT,
          "not a GGUFPaging value");
    FAILS(!gguf_advise_tensors(f, infos, PLAN_TENSORS, 5), GGUF_ERROR_CODE_INVALID_ARGUMENT,
          "not a GGUFPaging value");
    FAILS(!gguf_advise_data(f, 5), GGUF_ERROR_CODE_INVALID_ARGUMENT, "not a GGUFPaging value");
    FAILS(!gguf_advise_tensors(f, NULL, 3, GGUF_PAGING_WILL_NEED), GGUF_ERROR_CODE_NULL_ARGUMENT,
          "infos");
    FAILS(!gguf_advise_tensor(f, NULL, GGUF_PAGING_WILL_NEED), GGUF_ERROR_CODE_NULL_ARGUMENT,
          "info");
    FAILS(!gguf_advise_tensor(NULL, infos[0], GGUF_PAGING_WILL_NEED),
          GGUF_ERROR_CODE_NULL_ARGUMENT, "file");
    FAILS(!gguf_advise_tensors(NULL, infos, 1, GGUF_PAGING_WILL_NEED),
          GGUF_ERROR_CODE_NULL_ARGUMENT, "file");
    FAILS(!gguf_advise_data(NULL, GGUF_PAGING_WILL_NEED), GGUF_ERROR_CODE_NULL_ARGUMENT, "file");
    /* An info of another handle, alone or among this handle's. */
    const GGUFTensorInfo *foreign = gguf_get_tensor_by_index(other, 0);
    FAILS(!gguf_advise_tensor(f, foreign, GGUF_PAGING_WILL_NEED),
          GGUF_ERROR_CODE_INVALID_ARGUMENT, "does not belong");
    const GGUFTensorInfo *mixed[3] = {infos[0], foreign, infos[1]};
    FAILS(!gguf_advise_tensors(f, mixed, 3, GGUF_PAGING_WILL_NEED),
          GGUF_ERROR_CODE_INVALID_ARGUMENT, path);
    const GGUFTensorInfo *with_null[2] = {infos[0], NULL};
    FAILS(!gguf_advise_tensors(f, with_null, 2, GGUF_PAGING_WILL_NEED),
          GGUF_ERROR_CODE_NULL_ARGUMENT, "info");
    GGUFTensorInfo copy = *infos[3];
    FAILS(!gguf_advise_tensor(f, &copy, GGUF_PAGING_WILL_NEED), GGUF_ERROR_CODE_INVALID_ARGUMENT,
          NULL);
    FAILS(!gguf_advise_tensor(f, infos[PLAN_TENSORS - 1] + 1, GGUF_PAGING_WILL_NEED),
          GGUF_ERROR_CODE_INVALID_ARGUMENT, NULL);
    gguf_close(other);
    gguf_close(f);

    /* Memory lent to gguf_open_memory takes no advice. */
    size_t len;
    unsigned char *buf = read_file(path, &len);
    GGUFFile m = gguf_open_memory(buf, len);
    CHECK(m != NULL);
    for (uint64_t k = 0; k < PLAN_TENSORS; k++) infos[k] = gguf_get_tensor_by_index(m, k);
    for (size_t a = 0; a < N_ADVICE; a++) {
        FAILS(!gguf_advise_tensor(m, infos[0], ALL_ADVICE[a]), GGUF_ERROR_CODE_UNSUPPORTED,
              "gguf_open_memory");
        FAILS(!gguf_advise_tensors(m, infos, PLAN_TENSORS, ALL_ADVICE[a]),
              GGUF_ERROR_CODE_UNSUPPORTED, "<memory>");
        FAILS(!gguf_advise_data(m, ALL_ADVICE[a]), GGUF_ERROR_CODE_UNSUPPORTED,
              "gguf_open_memory");
    }
    check_digests(m);
    gguf_close(m);
    free(buf);

    /* A file read into memory takes every advice but DONTNEED, which would zero it. */
    GGUFFile r = gguf_open_ex(path, GGUF_OPEN_FLAG_READ);
    CHECK(r != NULL);
    for (uint64_t k = 0; k < PLAN_TENSORS; k++) infos[k] = gguf_get_tensor_by_index(r, k);
    for (size_t a = 0; a < N_ADVICE; a++) {
        if (ALL_ADVICE[a] == GGUF_PAGING_DONT_NEED) {
            FAILS(!gguf_advise_tensor(r, infos[1], GGUF_PAGING_DONT_NEED),
                  GGUF_ERROR_CODE_UNSUPPORTED, "DONTNEED");
            FAILS(!gguf_advise_tensors(r, infos, PLAN_TENSORS, GGUF_PAGING_DONT_NEED),
                  GGUF_ERROR_CODE_UNSUPPORTED, "DONTNEED");
            FAILS(!gguf_advise_data(r, GGUF_PAGING_DONT_NEED), GGUF_ERROR_CODE_UNSUPPORTED,
                  "DONTNEED");
        } else {
            CHECK(gguf_advise_tensor(r, infos[1], ALL_ADVICE[a]));
            CHECK(gguf_advise_tensors(r, infos, PLAN_TENSORS, ALL_ADVICE[a]));
            CHECK(gguf_advise_data(r, ALL_ADVICE[a]));
        }
    }
    check_digests(r);
    gguf_close(r);
}

/* Opens `name` with GGUF_OPEN_FLAG_LOCK (plus `extra`): it must succeed when the file fits the
 * locked-memory limit; past it, it may fail only with IO naming the limit (a process with
 * CAP_IPC_LOCK locks past it). Returns the handle or NULL. */
static GGUFFile open_locked(const char *path, uint32_t extra) {
    struct rlimit lim;
    CHECK(getrlimit(RLIMIT_MEMLOCK, &lim) == 0);
    size_t len;
    free(read_file(path, &len));
    const uint64_t pages = ((uint64_t)len + 65535) / 65536 * 65536;
    const int fits = lim.rlim_cur == RLIM_INFINITY || (uint64_t)lim.rlim_cur >= pages;
    gguf_clear_error();
    GGUFFile f = gguf_open_ex(path, GGUF_OPEN_FLAG_LOCK | extra);
    fprintf(stderr, "LOCK of %s (%zu bytes, ulimit -l %s%" PRIu64 " bytes): %s\n", path, len,
            lim.rlim_cur == RLIM_INFINITY ? "unlimited, " : "",
            (uint64_t)lim.rlim_cur, f ? "locked" : gguf_last_error());
    if (f == NULL) {
        CHECK(!fits);
        CHECK_ERROR(GGUF_ERROR_CODE_IO, "ulimit -l");
    }
    return f;
}

static void test_open_flags(void) {
    const char *path = fixture("plan.gguf");
    static const uint32_t FLAGS[] = {
        0,
        GGUF_OPEN_FLAG_POPULATE,
        GGUF_OPEN_FLAG_READ,
        GGUF_OPEN_FLAG_SINGLE_SHARD,
        GGUF_OPEN_FLAG_POPULATE | GGUF_OPEN_FLAG_READ,
        GGUF_OPEN_FLAG_POPULATE | GGUF_OPEN_FLAG_SINGLE_SHARD,
    };
    for (size_t i = 0; i < sizeof FLAGS / sizeof FLAGS[0]; i++) {
        fprintf(stderr, "gguf_open_ex(plan.gguf, %u)\n", (unsigned)FLAGS[i]);
        GGUFFile f = gguf_open_ex(path, FLAGS[i]);
        CHECK(f != NULL);
        CHECK(gguf_shard_count(f) == 1);
        CHECK(gguf_metadata_count(f) == 2);
        CHECK(strcmp(gguf_get_metadata(f, "general.name")->value.str, "upload plan model") == 0);
        check_digests(f);
        CHECK(upload(f, gguf_plan_upload(f, UINT64_MAX, 0)) == PLAN_TENSORS);
        gguf_close(f);
    }

    /* LOCK: a small file, then plan.gguf (about 9 MiB: past a default `ulimit -l` of 8 MiB). */
    GGUFFile f = open_locked(fixture("full.gguf"), 0);
    if (f != NULL) {
        CHECK(gguf_tensor_count(f) == 8);
        CHECK(gguf_advise_data(f, GGUF_PAGING_WILL_NEED));
        gguf_close(f);
    }
    static const uint32_t WITH_LOCK[] = {0, GGUF_OPEN_FLAG_POPULATE, GGUF_OPEN_FLAG_READ};
    for (size_t i = 0; i < sizeof WITH_LOCK / sizeof WITH_LOCK[0]; i++) {
        f = open_locked(path, WITH_LOCK[i]);
        if (f != NULL) {
            check_digests(f);
            gguf_close(f);
        }
    }

    /* Unknown flags. */
    static const uint32_t UNKNOWN[] = {32, 64, 0x80000000u, 0xffffffffu,
                                       GGUF_OPEN_FLAG_READ | 64};
    for (size_t i = 0; i < sizeof UNKNOWN / sizeof UNKNOWN[0]; i++) {
        FAILS(gguf_open_ex(path, UNKNOWN[i]) == NULL, GGUF_ERROR_CODE_INVALID_ARGUMENT,
              "unknown open flags");
    }
    FAILS(gguf_open_ex(NULL, GGUF_OPEN_FLAG_READ) == NULL, GGUF_ERROR_CODE_NULL_ARGUMENT, "path");
    /* The flags apply to broken and missing files like gguf_open. */
    FAILS(gguf_open_ex(fixture("does_not_exist.gguf"), GGUF_OPEN_FLAG_POPULATE) == NULL,
          GGUF_ERROR_CODE_IO, "does_not_exist.gguf");
    gguf_clear_error();
    CHECK(gguf_open_ex(fixture("not_gguf.txt"), GGUF_OPEN_FLAG_READ) == NULL);
    CHECK_PARSE_ERROR(GGUF_ERROR_CODE_BAD_MAGIC, "not_gguf.txt", 0);
    gguf_clear_error();
    CHECK(gguf_open_ex(fixture("zero.bin"), GGUF_OPEN_FLAG_READ | GGUF_OPEN_FLAG_LOCK) == NULL);
    CHECK_PARSE_ERROR(GGUF_ERROR_CODE_TRUNCATED, "zero.bin", 0);
}

int main(int argc, char **argv) {
    g_argc = argc;
    g_argv = argv;
    read_digests();
    test_upload();
    test_paging();
    test_open_flags();
    fprintf(stderr, "test_plan_pinned: OK\n");
    return 0;
}
