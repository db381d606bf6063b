/*
 * test_shards.c: split models (`name-0000i-of-0000N.gguf`) opened as one, from any shard.
 *
 * The 5 shards of split-*.gguf (13 tensors, 3 to a shard, written by Writer::into_shards),
 * opened through the first, a middle and the last: gguf_shard_count, every field of every
 * gguf_get_shard (the path of each sibling, sizes, data offsets, tensor counts adding up,
 * first_tensor, and base + info->file_offset == gguf_tensor_data), the metadata of the first
 * shard only, every tensor's shard, index, offsets and bytes (against the pattern and against
 * the shard file itself), name lookups across shards, upload plans over the shards (views carry
 * their shard; a tensor is placed in a view of its own shard), gguf_contains for each shard,
 * and GGUF_OPEN_FLAG_SINGLE_SHARD (one shard alone). An unsplit file and memory are one shard.
 * Broken sets: a missing shard (IO naming it), a shard disagreeing on split.count, a wrong
 * split.tensors.count (SHARD_MISMATCH, naming the shard), the same tensor in two shards
 * (DUPLICATE_TENSOR), and a shard renamed out of the pattern (SHARD_MISMATCH; opens alone with
 * GGUF_OPEN_FLAG_SINGLE_SHARD).
 *
 * Usage: test_shards FIXTURE... (every path tests/c_api.rs writes; picked by file name).
 */
#include "gguf.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

/* The split model (tests/c_api.rs `split_model()`): 13 tensors in shards of 3. */
#define SPLIT_TENSORS 13
#define SPLIT_SHARDS 5
#define PER_SHARD 3
#define SPLIT_KVS 6 /* 3 of the model's, then split.no, split.count, split.tensors.count */

static uint64_t split_size(uint64_t k) {
    return k == 9 ? 200000 : 1000 + 4099 * k;
}

/* Byte j of tensor k (tests/c_api.rs `split_pattern()`). */
static unsigned char split_pattern(uint64_t k, uint64_t j) {
    return (unsigned char)((k * 53 + j * 7 + 3) & 0xff);
}

static uint64_t addr(const void *p) {
    return (uint64_t)(uintptr_t)p;
}

/* The fixture path of shard `no` (0-based) of the split model. */
static const char *split_path(int no) {
    char name[64];
    snprintf(name, sizeof name, "split-%05d-of-%05d.gguf", no + 1, SPLIT_SHARDS);
    return fixture(name);
}

/* The system page: a plan's page size for 0. */
static uint64_t system_page(GGUFFile f) {
    const GGUFUploadPlan *p = gguf_plan_upload(f, UINT64_MAX, 0);
    CHECK(p != NULL);
    return p->page_size;
}

static void check_plan(GGUFFile f, uint64_t max, uint64_t page) {
    const uint64_t sys_page = system_page(f);
    const GGUFUploadPlan *p = gguf_plan_upload(f, max, page);
    CHECK(p != NULL);
    CHECK(p->n_tensors == SPLIT_TENSORS);
    for (uint64_t i = 0; i < p->n_views; i++) {
        const GGUFView *v = &p->views[i];
        CHECK(v->shard < SPLIT_SHARDS);
        if (i > 0) CHECK(p->views[i - 1].shard <= v->shard);
        const GGUFShardInfo *sh = gguf_get_shard(f, v->shard);
        const uint64_t lo = addr(sh->base);
        const uint64_t hi = lo + (sh->file_size + sys_page - 1) / sys_page * sys_page;
        CHECK(addr(v->data) >= lo && addr(v->data) + v->size <= hi);
        CHECK(addr(v->data) % p->page_size == 0 || addr(v->data) == lo);
        CHECK(v->size <= p->max_view_size);
        CHECK(v->file_offset == addr(v->data) - lo);
        CHECK(gguf_contains(f, v->data, v->size));
    }
    uint64_t oversized = 0;
    for (uint64_t k = 0; k < SPLIT_TENSORS; k++) {
        const GGUFTensorInfo *info = gguf_get_tensor_by_index(f, k);
        const GGUFPlacement *pl = &p->placements[k];
        if (pl->view == GGUF_NO_VIEW) {
            oversized++;
            CHECK(info->size_bytes + 2 * p->page_size > p->max_view_size);
            continue;
        }
        CHECK(pl->view < p->n_views);
        const GGUFView *v = &p->views[pl->view];
        CHECK(v->shard == info->shard);
        CHECK(pl->offset + info->size_bytes <= v->size);
        const unsigned char *via = (const unsigned char *)v->data + pl->offset;
        CHECK(via == gguf_tensor_data(f, info));
        CHECK(v->file_offset + pl->offset == info->file_offset);
        for (uint64_t j = 0; j < info->size_bytes; j++) {
            if (via[j] != split_pattern(k, j)) CHECK(via[j] == split_pattern(k, j));
        }
    }
    CHECK(p->n_oversized == oversized);
    if (max == UINT64_MAX) {
        /* One view per shard, in order. */
        CHECK(p->n_views == SPLIT_SHARDS && oversized == 0);
        for (uint32_t s = 0; s < SPLIT_SHARDS; s++) CHECK(p->views[s].shard == s);
    }
}

/* The whole split model, opened through shard `through`. */
static void check_split(int through) {
    const char *path = split_path(through);
    fprintf(stderr, "split model through %s\n", path);
    gguf_clear_error();
    GGUFFile f = gguf_open(path);
    CHECK(f != NULL);
    CHECK(gguf_shard_count(f) == SPLIT_SHARDS);
    CHECK(gguf_tensor_count(f) == SPLIT_TENSORS);

    /* The shards: paths (siblings of the path opened), sizes, layout, tensor counts. */
    const size_t dir_len = (size_t)(base_name(path) - path);
    uint64_t total = 0;
    for (uint32_t s = 0; s < SPLIT_SHARDS; s++) {
        const GGUFShardInfo *sh = gguf_get_shard(f, s);
        CHECK(sh != NULL);
        CHECK(gguf_get_shard(f, s) == sh);
        const char *want = split_path((int)s);
        CHECK(strcmp(sh->path, want) == 0);
        CHECK(strncmp(sh->path, path, dir_len) == 0);
        char name[64];
        snprintf(name, sizeof name, "split-%05u-of-%05d.gguf", (unsigned)s + 1, SPLIT_SHARDS);
        CHECK(strcmp(base_name(sh->path), name) == 0);
        size_t len;
        unsigned char *bytes = read_file(want, &len);
        CHECK(sh->file_size == len);
        CHECK(sh->version == 3);
        CHECK(sh->alignment == 32);
        CHECK(sh->data_offset % 32 == 0 && sh->data_offset <= sh->file_size);
        CHECK(sh->tensor_count == (s + 1 < SPLIT_SHARDS ? PER_SHARD : 1));
        CHECK(sh->first_tensor == (uint64_t)s * PER_SHARD);
        CHECK(sh->first_tensor == total);
        CHECK(sh->base != NULL);
        CHECK(memcmp(sh->base, bytes, len) == 0);
        CHECK(gguf_contains(f, sh->base, sh->file_size));
        for (uint32_t t = 0; t < s; t++) CHECK(gguf_get_shard(f, t)->base != sh->base);
        total += sh->tensor_count;

        /* Its tensors: in its file at file_offset, which is relative to its base. */
        for (uint64_t k = sh->first_tensor; k < sh->first_tensor + sh->tensor_count; k++) {
            const GGUFTensorInfo *info = gguf_get_tensor_by_index(f, k);
            CHECK(info != NULL);
            CHECK(info->index == k);
            CHECK(info->shard == s);
            char tname[16];
            snprintf(tname, sizeof tname, "split.%02u", (unsigned)k);
            CHECK(strcmp(info->name, tname) == 0);
            CHECK(gguf_get_tensor(f, tname) == info);
            CHECK(info->dtype == GGUF_DATA_TYPE_I8);
            CHECK(info->n_dims == 1 && info->dims[0] == split_size(k));
            CHECK(info->size_bytes == split_size(k));
            CHECK(info->file_offset == sh->data_offset + info->offset);
            if (k == sh->first_tensor) CHECK(info->offset == 0);
            const unsigned char *data = gguf_tensor_data(f, info);
            CHECK(data == sh->base + info->file_offset);
            CHECK(info->file_offset + info->size_bytes <= len);
            CHECK(memcmp(data, bytes + info->file_offset, info->size_bytes) == 0);
            for (uint64_t j = 0; j < info->size_bytes; j++) {
                if (data[j] != split_pattern(k, j)) CHECK(data[j] == split_pattern(k, j));
            }
            CHECK(gguf_contains(f, data, info->size_bytes));
        }
        free(bytes);
    }
    CHECK(total == SPLIT_TENSORS);
    FAILS(gguf_get_shard(f, SPLIT_SHARDS) == NULL, GGUF_ERROR_CODE_INVALID_ARGUMENT, "shard");
    FAILS(gguf_get_shard(f, UINT32_MAX) == NULL, GGUF_ERROR_CODE_INVALID_ARGUMENT, NULL);
    FAILS(gguf_get_tensor(f, "split.13") == NULL, GGUF_ERROR_CODE_NOT_FOUND, NULL);

    /* The file-level facts and the metadata are the first shard's. */
    const GGUFShardInfo *first = gguf_get_shard(f, 0);
    CHECK(gguf_file_size(f) == first->file_size);
    CHECK(gguf_data_offset(f) == first->data_offset);
    CHECK(gguf_version(f) == 3 && gguf_alignment(f) == 32);
    CHECK(gguf_metadata_count(f) == SPLIT_KVS);
    CHECK(strcmp(gguf_get_metadata(f, "general.name")->value.str, "split test model") == 0);
    CHECK(gguf_get_metadata(f, "test.u32")->value.u32 == 77);
    const GGUFMetadataKV *no = gguf_get_metadata(f, "split.no");
    CHECK(no != NULL && no->type == GGUF_VALUE_TYPE_UINT16 && no->value.u32 == 0);
    const GGUFMetadataKV *count = gguf_get_metadata(f, "split.count");
    CHECK(count != NULL && count->value.u32 == SPLIT_SHARDS);
    const GGUFMetadataKV *tensors = gguf_get_metadata(f, "split.tensors.count");
    CHECK(tensors != NULL && tensors->type == GGUF_VALUE_TYPE_INT32);
    CHECK(tensors->value.i32 == SPLIT_TENSORS);

    /* Plans over the shards: 64 KiB of 4 KiB pages (split.09, 200000 bytes, is the only
     * tensor too large), one view per shard without a limit, and the system page. */
    check_plan(f, 64 * 1024, 4096);
    const GGUFUploadPlan *p = gguf_plan_upload(f, 64 * 1024, 4096);
    CHECK(p->n_oversized == 1 && p->placements[9].view == GGUF_NO_VIEW);
    check_plan(f, UINT64_MAX, 0);
    check_plan(f, UINT64_MAX, 16384);
    check_plan(f, 1 << 20, 0);

    /* Paging advice reaches every shard. Windows has a counterpart for WILL_NEED only (the
     * header says so): the others are UNSUPPORTED there. */
    CHECK(gguf_advise_data(f, GGUF_PAGING_WILL_NEED));
    const GGUFTensorInfo *all[SPLIT_TENSORS];
    for (uint64_t k = 0; k < SPLIT_TENSORS; k++) all[k] = gguf_get_tensor_by_index(f, k);
    if (GGUF_TESTS_WINDOWS) {
        FAILS(!gguf_advise_data(f, GGUF_PAGING_DONT_NEED), GGUF_ERROR_CODE_UNSUPPORTED,
              "no Windows counterpart");
        CHECK(gguf_advise_tensors(f, all, SPLIT_TENSORS, GGUF_PAGING_WILL_NEED));
    } else {
        CHECK(gguf_advise_data(f, GGUF_PAGING_DONT_NEED));
        CHECK(gguf_advise_tensors(f, all, SPLIT_TENSORS, GGUF_PAGING_SEQUENTIAL));
    }
    CHECK(memcmp(gguf_tensor_data(f, all[12]), gguf_get_shard(f, 4)->base + all[12]->file_offset,
                 all[12]->size_bytes) == 0);
    gguf_close(f);
}

static void test_single_shard(void) {
    /* One shard alone: its own tensors and metadata, shard 0 of 1. */
    const char *path = split_path(2);
    GGUFFile f = gguf_open_ex(path, GGUF_OPEN_FLAG_SINGLE_SHARD);
    CHECK(f != NULL);
    CHECK(gguf_shard_count(f) == 1);
    CHECK(gguf_tensor_count(f) == PER_SHARD);
    CHECK(gguf_metadata_count(f) == 3);
    CHECK(gguf_get_metadata(f, "split.no")->value.u32 == 2);
    FAILS(gguf_get_metadata(f, "general.name") == NULL, GGUF_ERROR_CODE_NOT_FOUND, NULL);
    const GGUFShardInfo *sh = gguf_get_shard(f, 0);
    CHECK(sh != NULL && strcmp(sh->path, path) == 0);
    CHECK(sh->first_tensor == 0 && sh->tensor_count == PER_SHARD);
    for (uint64_t i = 0; i < PER_SHARD; i++) {
        const GGUFTensorInfo *info = gguf_get_tensor_by_index(f, i);
        char tname[16];
        snprintf(tname, sizeof tname, "split.%02u", (unsigned)(6 + i));
        CHECK(strcmp(info->name, tname) == 0);
        CHECK(info->shard == 0 && info->index == i);
        const unsigned char *data = gguf_tensor_data(f, info);
        CHECK(data == sh->base + info->file_offset);
        for (uint64_t j = 0; j < info->size_bytes; j++) CHECK(data[j] == split_pattern(6 + i, j));
    }
    FAILS(gguf_get_tensor(f, "split.00") == NULL, GGUF_ERROR_CODE_NOT_FOUND, NULL);
    FAILS(gguf_get_shard(f, 1) == NULL, GGUF_ERROR_CODE_INVALID_ARGUMENT, NULL);
    gguf_close(f);

    /* With the other flags too. */
    f = gguf_open_ex(split_path(0), GGUF_OPEN_FLAG_SINGLE_SHARD | GGUF_OPEN_FLAG_READ);
    CHECK(f != NULL && gguf_shard_count(f) == 1 && gguf_tensor_count(f) == PER_SHARD);
    CHECK(gguf_metadata_count(f) == SPLIT_KVS);
    gguf_close(f);
    f = gguf_open_ex(split_path(4), GGUF_OPEN_FLAG_POPULATE | GGUF_OPEN_FLAG_READ);
    CHECK(f != NULL && gguf_shard_count(f) == SPLIT_SHARDS);
    CHECK(gguf_tensor_count(f) == SPLIT_TENSORS);
    gguf_close(f);
}

static void test_unsplit(void) {
    /* An unsplit file is one shard: its path, its layout, all its tensors. */
    const char *path = fixture("full.gguf");
    GGUFFile f = gguf_open(path);
    CHECK(f != NULL);
    CHECK(gguf_shard_count(f) == 1);
    const GGUFShardInfo *sh = gguf_get_shard(f, 0);
    CHECK(sh != NULL);
    CHECK(strcmp(sh->path, path) == 0);
    CHECK(sh->file_size == gguf_file_size(f));
    CHECK(sh->data_offset == gguf_data_offset(f));
    CHECK(sh->alignment == gguf_alignment(f) && sh->version == gguf_version(f));
    CHECK(sh->tensor_count == gguf_tensor_count(f) && sh->first_tensor == 0);
    for (uint64_t k = 0; k < gguf_tensor_count(f); k++) {
        const GGUFTensorInfo *info = gguf_get_tensor_by_index(f, k);
        CHECK(info->shard == 0);
        CHECK((const unsigned char *)gguf_tensor_data(f, info) == sh->base + info->file_offset);
    }
    FAILS(gguf_get_shard(f, 1) == NULL, GGUF_ERROR_CODE_INVALID_ARGUMENT, path);
    gguf_close(f);

    size_t len;
    unsigned char *buf = read_file(path, &len);
    GGUFFile m = gguf_open_memory(buf, len);
    CHECK(m != NULL);
    CHECK(gguf_shard_count(m) == 1);
    sh = gguf_get_shard(m, 0);
    CHECK(sh != NULL && strcmp(sh->path, "<memory>") == 0);
    CHECK(sh->base == buf && sh->file_size == len);
    gguf_close(m);
    free(buf);

    /* A shard of a split model opened from memory is that shard alone. */
    buf = read_file(split_path(1), &len);
    m = gguf_open_memory(buf, len);
    CHECK(m != NULL);
    CHECK(gguf_shard_count(m) == 1 && gguf_tensor_count(m) == PER_SHARD);
    gguf_close(m);
    free(buf);

    FAILS(gguf_shard_count(NULL) == 0, GGUF_ERROR_CODE_NULL_ARGUMENT, "file");
    FAILS(gguf_get_shard(NULL, 0) == NULL, GGUF_ERROR_CODE_NULL_ARGUMENT, "file");
}

/* Opening `name` fails with `code`, the message containing `needle` and `needle2`. */
static void check_broken(const char *name, uint32_t flags, uint32_t code, const char *needle,
                         const char *needle2) {
    fprintf(stderr, "broken set: %s\n", name);
    gguf_clear_error();
    CHECK(gguf_open_ex(fixture(name), flags) == NULL);
    if (needle2 != NULL && strstr(gguf_last_error(), needle2) == NULL) {
        fprintf(stderr, "  the message does not contain \"%s\"\n", needle2);
        CHECK(strstr(gguf_last_error(), needle2) != NULL);
    }
    CHECK_ERROR(code, needle);
}

static void test_broken_sets(void) {
    /* Shard 2 of 3 missing: IO, naming it, from either side. */
    check_broken("missing-00001-of-00003.gguf", 0, GGUF_ERROR_CODE_IO,
                 "missing-00002-of-00003.gguf", "cannot open");
    check_broken("missing-00003-of-00003.gguf", GGUF_OPEN_FLAG_POPULATE, GGUF_ERROR_CODE_IO,
                 "missing-00002-of-00003.gguf", NULL);
    /* Shard 3 says split.count 4. */
    check_broken("badcount-00001-of-00003.gguf", 0, GGUF_ERROR_CODE_SHARD_MISMATCH,
                 "expected split.count 3 like the other shards, found 4",
                 "badcount-00003-of-00003.gguf");
    check_broken("badcount-00002-of-00003.gguf", 0, GGUF_ERROR_CODE_SHARD_MISMATCH,
                 "split.count", "badcount-00003-of-00003.gguf");
    /* ... and opened itself, its name is not shard 3 of 4. */
    check_broken("badcount-00003-of-00003.gguf", 0, GGUF_ERROR_CODE_SHARD_MISMATCH,
                 "-00003-of-00004.gguf", "badcount-00003-of-00003.gguf");
    /* Shard 2 says split.tensors.count 5; the shards hold 4. */
    check_broken("badtensors-00001-of-00002.gguf", 0, GGUF_ERROR_CODE_SHARD_MISMATCH,
                 "split.tensors.count is 5, but the shards hold 4 tensors",
                 "badtensors-00002-of-00002.gguf");
    check_broken("badtensors-00002-of-00002.gguf", GGUF_OPEN_FLAG_READ,
                 GGUF_ERROR_CODE_SHARD_MISMATCH, "split.tensors.count", NULL);
    /* dup.weight in both shards. */
    check_broken("dup-00001-of-00002.gguf", 0, GGUF_ERROR_CODE_DUPLICATE_TENSOR, "dup.weight",
                 "dup-00002-of-00002.gguf");
    check_broken("dup-00002-of-00002.gguf", 0, GGUF_ERROR_CODE_DUPLICATE_TENSOR, "dup.weight",
                 NULL);
    /* A shard whose name does not say which shard it is. */
    check_broken("renamed.gguf", 0, GGUF_ERROR_CODE_SHARD_MISMATCH, "-00001-of-00002.gguf",
                 "GGUF_OPEN_FLAG_SINGLE_SHARD");
    check_broken("renamed.gguf", GGUF_OPEN_FLAG_READ, GGUF_ERROR_CODE_SHARD_MISMATCH,
                 "renamed.gguf", "shard 1 of 2");

    /* Each opens alone. */
    static const char *ALONE[] = {"missing-00001-of-00003.gguf", "badcount-00003-of-00003.gguf",
                                  "badtensors-00002-of-00002.gguf", "dup-00001-of-00002.gguf",
                                  "renamed.gguf"};
    for (size_t i = 0; i < sizeof ALONE / sizeof ALONE[0]; i++) {
        GGUFFile f = gguf_open_ex(fixture(ALONE[i]), GGUF_OPEN_FLAG_SINGLE_SHARD);
        CHECK(f != NULL);
        CHECK(gguf_shard_count(f) == 1 && gguf_tensor_count(f) == 2);
        gguf_close(f);
    }
}

int main(int argc, char **argv) {
    g_argc = argc;
    g_argv = argv;
    check_split(0);
    check_split(2);
    check_split(4);
    test_single_shard();
    test_unsplit();
    test_broken_sets();
    fprintf(stderr, "test_shards: OK\n");
    return 0;
}
