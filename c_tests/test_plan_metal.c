/*
 * test_plan_metal.c: gguf_plan_upload as a Metal engine uses it, one newBufferWithBytesNoCopy
 * per view (page-aligned pointer, page-multiple length, at most maxBufferLength bytes), and
 * gguf_contains.
 *
 * Over plan.gguf (40 tensors, about 9 MiB, data section not page-aligned; two tensors over
 * 1 MiB) with limits of 1 MiB (pages of 16384 bytes as on Apple GPUs, and the system's via 0),
 * 64 KiB, 1 MiB + 5000 and none, checks every view (aligned to the page, a page multiple unless
 * it ends where the mapping ends, within the limit, inside its shard's mapping, its file_offset),
 * every placement (the whole tensor inside its view, the same bytes through view.data + offset
 * as through gguf_tensor_data, the view's file offset leading to info->file_offset), that the
 * oversized tensors are exactly those whose page-rounded extent exceeds the limit, and
 * gguf_contains for every view, every tensor and ranges at and past the ends of the mapping. The
 * same over the file read into memory (GGUF_OPEN_FLAG_READ), opened from a malloc'd buffer
 * (views clamped to the buffer), and over full.gguf and empty.gguf. Invalid parameters, and the
 * same plan made twice: two plans, both valid until gguf_close.
 *
 * Usage: test_plan_metal FIXTURE... (every path tests/c_api.rs writes; picked by file name).
 */
#include "gguf.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#define MIB ((uint64_t)1 << 20)
#define APPLE_PAGE ((uint64_t)16384)
#define PLAN_TENSORS 40

/* Byte j of tensor k's data in plan.gguf and full.gguf (tests/c_api.rs `pattern()`). */
static unsigned char pattern(uint64_t k, uint64_t j) {
    return (unsigned char)((k * 37 + j * 11 + 1) & 0xff);
}

static uint64_t addr(const void *p) {
    return (uint64_t)(uintptr_t)p;
}

static uint64_t round_down(uint64_t x, uint64_t a) {
    return x / a * a;
}

static uint64_t round_up(uint64_t x, uint64_t a) {
    return (x + a - 1) / a * a;
}

static uint64_t max_u64(uint64_t a, uint64_t b) {
    return a > b ? a : b;
}

static uint64_t min_u64(uint64_t a, uint64_t b) {
    return a < b ? a : b;
}

/* The system's page size: what a plan with page size 0 uses. */
static uint64_t g_system_page;

/* Where the views of shard `s` may lie: its mapping (whole system pages), or exactly the buffer
 * lent to gguf_open_memory (`lent`). */
static void shard_bounds(GGUFFile f, uint32_t s, int lent, uint64_t *lo, uint64_t *hi) {
    const GGUFShardInfo *sh = gguf_get_shard(f, s);
    CHECK(sh != NULL && sh->base != NULL);
    *lo = addr(sh->base);
    *hi = *lo + (lent ? sh->file_size : round_up(sh->file_size, g_system_page));
}

/* Checks `p`, a plan of `f` made with (`max`, `page`), against everything a Metal engine relies
 * on. `lent`: `f` was opened from memory. `bytes`: also compare every byte read through the
 * views with gguf_tensor_data's and with pattern(k, j) (slow under valgrind, so not for every
 * plan: the pointers are compared always). */
static void check_plan(GGUFFile f, const GGUFUploadPlan *p, uint64_t max, uint64_t page,
                       int lent, int bytes) {
    const uint64_t want_page = page ? page : g_system_page;
    CHECK(p != NULL);
    CHECK(p->page_size == want_page);
    CHECK(p->max_view_size == round_down(max, want_page));
    CHECK(p->n_tensors == gguf_tensor_count(f));
    CHECK(p->n_views == 0 || p->views != NULL);
    CHECK(p->n_tensors == 0 || p->placements != NULL);
    const uint32_t shards = gguf_shard_count(f);

    /* Views: shard by shard, in file order, each aligned, sized and inside its mapping. */
    for (uint64_t i = 0; i < p->n_views; i++) {
        const GGUFView *v = &p->views[i];
        uint64_t lo, hi;
        CHECK(v->shard < shards);
        shard_bounds(f, v->shard, lent, &lo, &hi);
        const uint64_t start = addr(v->data), end = start + v->size;
        CHECK(v->size > 0);
        CHECK(v->size <= p->max_view_size);
        CHECK(start >= lo && end <= hi);
        /* Page-aligned, unless the page would start before the shard's memory: lent memory,
         * or a mapping (on a system page) under a larger page size. */
        CHECK(start % want_page == 0 ||
              (start == lo && (lent || (want_page > g_system_page && lo % g_system_page == 0))));
        /* Ending on a page, or where the mapping (or the buffer) ends. */
        CHECK(end % want_page == 0 || end == hi);
        /* So a page multiple, but for a view at an edge of the shard's memory. */
        CHECK(v->size % want_page == 0 || start == lo || end == hi);
        CHECK(v->file_offset == start - lo);
        CHECK(gguf_contains(f, v->data, v->size));
        if (i > 0) {
            const GGUFView *prev = &p->views[i - 1];
            CHECK(prev->shard <= v->shard);
            if (prev->shard == v->shard) CHECK(addr(prev->data) < start);
        }
    }

    /* Placements: every tensor inside its view, or oversized exactly when its pages exceed
     * the limit. */
    uint64_t oversized = 0;
    unsigned char *used = calloc(p->n_views ? p->n_views : 1, 1);
    CHECK(used != NULL);
    for (uint64_t k = 0; k < p->n_tensors; k++) {
        const GGUFTensorInfo *info = gguf_get_tensor_by_index(f, k);
        CHECK(info != NULL);
        const GGUFPlacement *pl = &p->placements[k];
        const unsigned char *direct = gguf_tensor_data(f, info);
        CHECK(direct != NULL);
        CHECK(gguf_contains(f, direct, info->size_bytes));
        const GGUFShardInfo *sh = gguf_get_shard(f, info->shard);
        CHECK(sh != NULL && direct == sh->base + info->file_offset);
        uint64_t lo, hi;
        shard_bounds(f, info->shard, lent, &lo, &hi);
        const uint64_t first_page = max_u64(round_down(addr(direct), want_page), lo);
        const uint64_t last_page = min_u64(round_up(addr(direct) + info->size_bytes, want_page), hi);
        const int too_large = last_page - first_page > p->max_view_size;
        if (pl->view == GGUF_NO_VIEW) {
            CHECK(too_large);
            CHECK(pl->offset == 0);
            oversized++;
            continue;
        }
        CHECK(!too_large);
        CHECK(pl->view < p->n_views);
        used[pl->view] = 1;
        const GGUFView *v = &p->views[pl->view];
        CHECK(v->shard == info->shard);
        CHECK(pl->offset <= v->size && info->size_bytes <= v->size - pl->offset);
        const unsigned char *via = (const unsigned char *)v->data + pl->offset;
        CHECK(via == direct);
        CHECK(v->file_offset + (uint64_t)(via - (const unsigned char *)v->data) ==
              info->file_offset);
        for (uint64_t j = 0; bytes && j < info->size_bytes; j++) {
            if (via[j] != direct[j]) CHECK(via[j] == direct[j]);
            if (via[j] != pattern(k, j)) CHECK(via[j] == pattern(k, j));
        }
    }
    CHECK(p->n_oversized == oversized);
    /* No view is wasted: each one holds at least one tensor. */
    for (uint64_t i = 0; i < p->n_views; i++) CHECK(used[i]);
    free(used);
}

/* gguf_contains at the edges of shard 0's memory, `hi - lo` bytes at `lo`. */
static void check_contains(GGUFFile f, int lent) {
    uint64_t lo, hi;
    shard_bounds(f, 0, lent, &lo, &hi);
    const unsigned char *base = gguf_get_shard(f, 0)->base;
    const uint64_t len = hi - lo;
    CHECK(gguf_contains(f, base, len));
    CHECK(gguf_contains(f, base, 0));
    CHECK(gguf_contains(f, base + len - 1, 1));
    FAILS(!gguf_contains(f, base, len + 1), GGUF_ERROR_CODE_INVALID_ARGUMENT, "not inside");
    FAILS(!gguf_contains(f, base + len - 1, 2), GGUF_ERROR_CODE_INVALID_ARGUMENT, NULL);
    FAILS(!gguf_contains(f, (const void *)(uintptr_t)(lo + len), 1),
          GGUF_ERROR_CODE_INVALID_ARGUMENT, NULL);
    FAILS(!gguf_contains(f, (const void *)(uintptr_t)(lo - 1), 1),
          GGUF_ERROR_CODE_INVALID_ARGUMENT, NULL);
    FAILS(!gguf_contains(f, base, UINT64_MAX), GGUF_ERROR_CODE_INVALID_ARGUMENT, NULL);
    FAILS(!gguf_contains(f, base + 1, UINT64_MAX), GGUF_ERROR_CODE_INVALID_ARGUMENT, NULL);
    int local = 0;
    FAILS(!gguf_contains(f, &local, sizeof local), GGUF_ERROR_CODE_INVALID_ARGUMENT, NULL);
    FAILS(!gguf_contains(f, NULL, 1), GGUF_ERROR_CODE_NULL_ARGUMENT, NULL);
    FAILS(!gguf_contains(NULL, base, 1), GGUF_ERROR_CODE_NULL_ARGUMENT, NULL);
    /* The tensor past the last one's end. */
    const uint64_t n = gguf_tensor_count(f);
    if (n > 0) {
        const GGUFTensorInfo *last = gguf_get_tensor_by_index(f, n - 1);
        const unsigned char *data = gguf_tensor_data(f, last);
        CHECK(gguf_contains(f, data, last->size_bytes));
        CHECK(gguf_contains(f, data, hi - addr(data)));
        FAILS(!gguf_contains(f, data, hi - addr(data) + 1), GGUF_ERROR_CODE_INVALID_ARGUMENT,
              NULL);
    }
}

/* The limits and page sizes of a Metal engine (and a few more), over `f`. */
static void check_all_plans(GGUFFile f, const char *label, int lent) {
    static const struct {
        uint64_t max, page;
    } PLANS[] = {
        {MIB, APPLE_PAGE}, {MIB, 0},           {UINT64_MAX, APPLE_PAGE}, {UINT64_MAX, 0},
        {MIB + 5000, APPLE_PAGE}, {64 * 1024, 0}, {APPLE_PAGE, APPLE_PAGE}, {3 * MIB, 65536},
        {MIB, 1},
    };
    for (size_t i = 0; i < sizeof PLANS / sizeof PLANS[0]; i++) {
        fprintf(stderr, "plan of %s: max %" PRIu64 ", page %" PRIu64 "\n", label, PLANS[i].max,
                PLANS[i].page);
        gguf_clear_error();
        const GGUFUploadPlan *p = gguf_plan_upload(f, PLANS[i].max, PLANS[i].page);
        check_plan(f, p, PLANS[i].max, PLANS[i].page, lent, i < 2);
        if (PLANS[i].max == UINT64_MAX) {
            CHECK(p->n_oversized == 0);
            CHECK(p->n_views == (gguf_tensor_count(f) > 0 ? 1 : 0));
        }
    }
    check_contains(f, lent);
}

static void test_plan_model(void) {
    const char *path = fixture("plan.gguf");
    GGUFFile f = gguf_open(path);
    CHECK(f != NULL);
    CHECK(gguf_tensor_count(f) == PLAN_TENSORS);
    CHECK(gguf_shard_count(f) == 1);
    /* The data section does not start on a page: the first view must start before it. */
    CHECK(gguf_data_offset(f) % 4096 != 0);
    const GGUFShardInfo *sh = gguf_get_shard(f, 0);
    CHECK(sh != NULL && sh->data_offset == gguf_data_offset(f));
    CHECK(sh->first_tensor == 0 && sh->tensor_count == PLAN_TENSORS);

    const GGUFUploadPlan *sys = gguf_plan_upload(f, UINT64_MAX, 0);
    CHECK(sys != NULL);
    g_system_page = sys->page_size;
    CHECK(g_system_page >= 4096 && (g_system_page & (g_system_page - 1)) == 0);
    CHECK(addr(sh->base) % g_system_page == 0);

    check_all_plans(f, path, 0);

    /* 1 MiB buffers of 16 KiB pages: plan.05 (1.5 MB) and plan.29 (3 MB) cannot be placed. */
    const GGUFUploadPlan *a = gguf_plan_upload(f, MIB, APPLE_PAGE);
    CHECK(a != NULL);
    CHECK(a->placements[5].view == GGUF_NO_VIEW);
    CHECK(a->placements[29].view == GGUF_NO_VIEW);
    CHECK(a->n_oversized >= 2 && a->n_oversized <= 3);
    CHECK(a->n_views >= 6);
    for (uint64_t k = 0; k < PLAN_TENSORS; k++) {
        const GGUFTensorInfo *t = gguf_get_tensor_by_index(f, k);
        if (t->size_bytes > MIB) CHECK(a->placements[k].view == GGUF_NO_VIEW);
        if (t->size_bytes + 2 * APPLE_PAGE <= MIB) CHECK(a->placements[k].view != GGUF_NO_VIEW);
    }

    /* The same plan twice: two plans, equal, both valid until gguf_close (checked again after
     * more plans were made). */
    const GGUFUploadPlan *b = gguf_plan_upload(f, MIB, APPLE_PAGE);
    CHECK(b != NULL && b != a);
    CHECK(b->views != a->views && b->placements != a->placements);
    CHECK(b->n_views == a->n_views && b->n_oversized == a->n_oversized);
    for (uint64_t i = 0; i < a->n_views; i++) {
        /* Field by field: the struct has padding after `shard`. */
        CHECK(a->views[i].data == b->views[i].data && a->views[i].size == b->views[i].size);
        CHECK(a->views[i].file_offset == b->views[i].file_offset);
        CHECK(a->views[i].shard == b->views[i].shard);
    }
    CHECK(memcmp(a->placements, b->placements, a->n_tensors * sizeof *a->placements) == 0);
    for (int i = 0; i < 50; i++) CHECK(gguf_plan_upload(f, MIB + (uint64_t)i * 4096, 0) != NULL);
    check_plan(f, a, MIB, APPLE_PAGE, 0, 1);
    check_plan(f, b, MIB, APPLE_PAGE, 0, 0);
    check_plan(f, sys, UINT64_MAX, 0, 0, 0);

    /* Invalid parameters. */
    FAILS(gguf_plan_upload(f, MIB, 3000) == NULL, GGUF_ERROR_CODE_INVALID_ARGUMENT,
          "power of two");
    FAILS(gguf_plan_upload(f, UINT64_MAX, UINT64_MAX) == NULL, GGUF_ERROR_CODE_INVALID_ARGUMENT,
          "power of two");
    FAILS(gguf_plan_upload(f, APPLE_PAGE - 1, APPLE_PAGE) == NULL,
          GGUF_ERROR_CODE_INVALID_ARGUMENT, "smaller than a page");
    FAILS(gguf_plan_upload(f, g_system_page - 1, 0) == NULL, GGUF_ERROR_CODE_INVALID_ARGUMENT,
          "smaller than a page");
    FAILS(gguf_plan_upload(f, 0, 0) == NULL, GGUF_ERROR_CODE_INVALID_ARGUMENT, path);
    FAILS(gguf_plan_upload(NULL, MIB, 0) == NULL, GGUF_ERROR_CODE_NULL_ARGUMENT, NULL);
    /* A failed plan leaves the others alone. */
    check_plan(f, a, MIB, APPLE_PAGE, 0, 0);
    gguf_close(f);

    /* Read into private memory: the same plans. */
    f = gguf_open_ex(path, GGUF_OPEN_FLAG_READ);
    CHECK(f != NULL);
    check_all_plans(f, "plan.gguf (GGUF_OPEN_FLAG_READ)", 0);
    gguf_close(f);

    /* Opened from a malloc'd buffer (not page-aligned): views are clamped to the buffer. */
    size_t len;
    unsigned char *buf = read_file(path, &len);
    GGUFFile m = gguf_open_memory(buf, len);
    CHECK(m != NULL);
    CHECK(gguf_get_shard(m, 0)->base == buf);
    check_all_plans(m, "plan.gguf (memory)", 1);
    const GGUFUploadPlan *pm = gguf_plan_upload(m, UINT64_MAX, APPLE_PAGE);
    CHECK(pm != NULL && pm->n_views == 1);
    CHECK(addr(pm->views[0].data) == max_u64(round_down(addr(buf) + gguf_data_offset(m),
                                                        APPLE_PAGE),
                                             addr(buf)));
    gguf_close(m);
    free(buf);
}

static void test_small_files(void) {
    GGUFFile f = gguf_open(fixture("full.gguf"));
    CHECK(f != NULL);
    check_all_plans(f, "full.gguf", 0);
    /* Every tensor of full.gguf fits one page. */
    const GGUFUploadPlan *p = gguf_plan_upload(f, g_system_page, 0);
    check_plan(f, p, g_system_page, 0, 0, 1);
    CHECK(p->n_oversized == 0 && p->n_views == 1);
    gguf_close(f);

    GGUFFile e = gguf_open(fixture("empty.gguf"));
    CHECK(e != NULL);
    p = gguf_plan_upload(e, MIB, APPLE_PAGE);
    CHECK(p != NULL);
    CHECK(p->n_views == 0 && p->n_tensors == 0 && p->n_oversized == 0);
    check_plan(e, p, MIB, APPLE_PAGE, 0, 1);
    FAILS(gguf_plan_upload(e, 100, APPLE_PAGE) == NULL, GGUF_ERROR_CODE_INVALID_ARGUMENT,
          "smaller than a page");
    gguf_close(e);
}

int main(int argc, char **argv) {
    g_argc = argc;
    g_argv = argv;
    test_plan_model();
    test_small_files();
    fprintf(stderr, "test_plan_metal: OK\n");
    return 0;
}
