/*
 * test_url.c: models opened by URL (gguf_open_url, gguf_open_url_ex, gguf_open_url_with) from
 * the nginx that tests/url.rs starts on the loopback, and their tensors read by ranges.
 *
 * The models (tests/url.rs): vocab.gguf (a 262144-token vocabulary; tensors t0, t1, t2 of 1M,
 * 256 and 1M FLOAT32 elements), small.gguf (s0, s1 of 1024 FLOAT32 elements), and
 * split-0000i-of-00003.gguf (vocab.gguf split one tensor to a shard). Byte j of tensor k is
 * (k * 31 + j * 7 + 3) mod 256. Under /m/ the files, under /gated/ the same wanting the bearer
 * token "sekrit".
 *
 * Checked: the header (counts, the vocabulary's length, the data offset), that tensor data is
 * not mapped (gguf_is_mapped false, gguf_tensor_data NULL) and reads back by gguf_read_tensor
 * (whole, in pieces, out of range refused) and gguf_read_tensors (with progress); HTTPS with the
 * test's own certificate authority (SSL_CERT_FILE, set by the driver); the bearer token (401
 * without it; gguf_open_url and gguf_open_url_ex); a split model by its second shard's URL (every
 * shard's path is its URL); and the errors: NULL, a scheme that is not http(s), a flag about
 * mapping, a 404, a silent server past a 200 ms timeout; gguf_open_url_with reading the options
 * by their size (a newer header's larger struct, unset fields accepted, set ones refused) and a
 * 300 ms deadline bounding a call whose wait may last 10 s.
 *
 * Usage: test_url HTTP_BASE HTTPS_BASE SILENT_URL (bases end with '/'; HTTPS_BASE '-' leaves
 * HTTPS out, as the valgrind run does: memcheck cannot follow ring's assembly).
 */
#include "gguf.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static char g_url[1024];

/* BASE followed by PATH, in a static buffer. */
static const char *url(const char *base, const char *path) {
    snprintf(g_url, sizeof g_url, "%s%s", base, path);
    return g_url;
}

static unsigned char pattern(uint64_t k, uint64_t j) {
    return (unsigned char)((k * 31 + j * 7 + 3) & 0xff);
}

/* Tensor `index` of f, read whole into a fresh buffer: byte j is pattern(k, j). */
static void check_tensor(GGUFFile f, uint64_t index, uint64_t k) {
    const GGUFTensorInfo *t = gguf_get_tensor_by_index(f, index);
    CHECK(t != NULL);
    unsigned char *buf = malloc(t->size_bytes ? (size_t)t->size_bytes : 1);
    CHECK(buf != NULL);
    CHECK(gguf_read_tensor(f, t, 0, buf, t->size_bytes));
    for (uint64_t j = 0; j < t->size_bytes; j++) {
        if (buf[j] != pattern(k, j)) {
            fprintf(stderr, "tensor %" PRIu64 " byte %" PRIu64 ": %u\n", index, j, buf[j]);
            CHECK(!"tensor bytes match the pattern");
        }
    }
    free(buf);
}

static int progress_calls;
static uint64_t progress_done, progress_total;

static bool on_progress(void *user, uint64_t done, uint64_t total) {
    CHECK(user == &progress_calls);
    progress_calls++;
    progress_done = done;
    progress_total = total;
    return true;
}

static void vocab_over_http(const char *base) {
    GGUFFile f = gguf_open_url(url(base, "m/vocab.gguf"), NULL, 0);
    CHECK(f != NULL);
    CHECK(gguf_tensor_count(f) == 3);
    CHECK(gguf_shard_count(f) == 1);
    CHECK(!gguf_is_mapped(f));
    const GGUFMetadataKV *tokens = gguf_get_metadata(f, "tokenizer.ggml.tokens");
    CHECK(tokens != NULL && tokens->array_len == 262144);
    CHECK(gguf_data_offset(f) > 262144 * 8);
    CHECK(strcmp(gguf_get_shard(f, 0)->path, g_url) == 0);

    /* Data stays on the server: no pointer, but reads. */
    const GGUFTensorInfo *t0 = gguf_get_tensor(f, "t0");
    CHECK(t0 != NULL && t0->size_bytes == 4u << 20);
    gguf_clear_error();
    CHECK(gguf_tensor_data(f, t0) == NULL);
    CHECK(gguf_last_error_code() != GGUF_ERROR_CODE_NONE);
    gguf_clear_error();
    for (uint64_t k = 0; k < 3; k++) check_tensor(f, k, k);

    /* A piece from the middle. */
    unsigned char piece[100];
    CHECK(gguf_read_tensor(f, t0, 1000000, piece, sizeof piece));
    for (uint64_t j = 0; j < sizeof piece; j++) CHECK(piece[j] == pattern(0, 1000000 + j));
    FAILS(!gguf_read_tensor(f, t0, t0->size_bytes - 10, piece, 11),
          GGUF_ERROR_CODE_INVALID_ARGUMENT, "cannot read 11 bytes");

    /* All three at once, on threads, with progress. */
    const GGUFTensorInfo *infos[3];
    void *dsts[3];
    for (uint64_t k = 0; k < 3; k++) {
        infos[k] = gguf_get_tensor_by_index(f, k);
        dsts[k] = malloc((size_t)infos[k]->size_bytes);
        CHECK(dsts[k] != NULL);
    }
    CHECK(gguf_read_tensors(f, infos, dsts, 3, 0, 0, on_progress, &progress_calls));
    CHECK(progress_calls >= 2);
    CHECK(progress_done == progress_total);
    CHECK(progress_total == infos[0]->size_bytes + infos[1]->size_bytes + infos[2]->size_bytes);
    for (uint64_t k = 0; k < 3; k++) {
        const unsigned char *d = dsts[k];
        for (uint64_t j = 0; j < infos[k]->size_bytes; j += 4093) CHECK(d[j] == pattern(k, j));
        free(dsts[k]);
    }
    gguf_close(f);
}

static void small_over_https(const char *base) {
    GGUFFile f = gguf_open_url(url(base, "m/small.gguf"), NULL, 0);
    CHECK(f != NULL);
    CHECK(gguf_tensor_count(f) == 2);
    check_tensor(f, 0, 0);
    check_tensor(f, 1, 1);
    gguf_close(f);
}

static void bearer_token(const char *base) {
    FAILS(gguf_open_url(url(base, "gated/small.gguf"), NULL, 0) == NULL, GGUF_ERROR_CODE_IO,
          "HTTP 401");
    GGUFFile f = gguf_open_url(url(base, "gated/small.gguf"), "sekrit", 0);
    CHECK(f != NULL);
    check_tensor(f, 1, 1);
    gguf_close(f);

    GGUFUrlOptions o = {0};
    o.bearer_token = "sekrit";
    o.timeout_ms = 10000;
    f = gguf_open_url_ex(url(base, "gated/small.gguf"), &o, 0);
    CHECK(f != NULL);
    check_tensor(f, 0, 0);
    gguf_close(f);
    /* NULL options: no token. */
    FAILS(gguf_open_url_ex(url(base, "gated/small.gguf"), NULL, 0) == NULL, GGUF_ERROR_CODE_IO,
          "HTTP 401");
}

static void split_model(const char *base) {
    char second[1024];
    snprintf(second, sizeof second, "%s", url(base, "m/split-00002-of-00003.gguf"));
    GGUFFile f = gguf_open_url(second, NULL, 0);
    CHECK(f != NULL);
    CHECK(gguf_shard_count(f) == 3);
    CHECK(gguf_tensor_count(f) == 3);
    for (uint32_t no = 0; no < 3; no++) {
        char want[64];
        snprintf(want, sizeof want, "m/split-%05u-of-00003.gguf", (unsigned)no + 1);
        CHECK(strcmp(gguf_get_shard(f, no)->path, url(base, want)) == 0);
        CHECK(gguf_get_tensor_by_index(f, no)->shard == no);
        check_tensor(f, no, no);
    }
    CHECK(gguf_get_metadata(f, "tokenizer.ggml.tokens") != NULL);
    gguf_close(f);

    f = gguf_open_url(second, NULL, GGUF_OPEN_FLAG_SINGLE_SHARD);
    CHECK(f != NULL);
    CHECK(gguf_shard_count(f) == 1 && gguf_tensor_count(f) == 1);
    check_tensor(f, 0, 1);
    gguf_close(f);
}

static void errors(const char *base, const char *silent) {
    FAILS(gguf_open_url(NULL, NULL, 0) == NULL, GGUF_ERROR_CODE_NULL_ARGUMENT, "url");
    FAILS(gguf_open_url("ftp://127.0.0.1/m.gguf", NULL, 0) == NULL,
          GGUF_ERROR_CODE_INVALID_ARGUMENT, "http:// or https://");
    FAILS(gguf_open_url(url(base, "m/small.gguf"), NULL, GGUF_OPEN_FLAG_LOCK) == NULL,
          GGUF_ERROR_CODE_INVALID_ARGUMENT, "GGUF_OPEN_FLAG_LOCK does not apply to a URL");
    FAILS(gguf_open_url(url(base, "m/missing.gguf"), NULL, 0) == NULL, GGUF_ERROR_CODE_IO,
          "HTTP 404 Not Found for bytes 0-");
    GGUFUrlOptions o = {0};
    o.timeout_ms = 200;
    FAILS(gguf_open_url_ex(silent, &o, 0) == NULL, GGUF_ERROR_CODE_IO,
          "no data from the server for 200 ms");
}

/* gguf_open_url_with: the options read by their size, the deadline bounding the call. */
static void options_by_size(const char *base, const char *silent) {
    GGUFUrlOptions o = {0};
    o.timeout_ms = 10000;
    o.deadline_ms = 300;
    FAILS(gguf_open_url_with(silent, &o, sizeof o, 0) == NULL, GGUF_ERROR_CODE_IO,
          "the open's deadline of 300 ms passed");
    GGUFFile f = gguf_open_url_with(url(base, "m/small.gguf"), &o, sizeof o, 0);
    CHECK(f != NULL);
    check_tensor(f, 1, 1);
    gguf_close(f);
    /* A newer header's larger struct, its extra fields unset; then one of them set. */
    struct {
        GGUFUrlOptions o;
        uint32_t more[3];
    } newer;
    memset(&newer, 0, sizeof newer);
    newer.o.timeout_ms = 10000;
    f = gguf_open_url_with(url(base, "m/small.gguf"), &newer.o, sizeof newer, 0);
    CHECK(f != NULL);
    gguf_close(f);
    newer.more[1] = 1;
    FAILS(gguf_open_url_with(url(base, "m/small.gguf"), &newer.o, sizeof newer, 0) == NULL,
          GGUF_ERROR_CODE_INVALID_ARGUMENT, "built for a newer header");
    FAILS(gguf_open_url_with(url(base, "m/small.gguf"), &o, 4, 0) == NULL,
          GGUF_ERROR_CODE_INVALID_ARGUMENT, "smaller than the first GGUFUrlOptions");
    f = gguf_open_url_with(url(base, "m/small.gguf"), NULL, 0, 0);
    CHECK(f != NULL);
    gguf_close(f);
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s HTTP_BASE HTTPS_BASE SILENT_URL\n", argv[0]);
        return 2;
    }
    vocab_over_http(argv[1]);
    if (strcmp(argv[2], "-") != 0) small_over_https(argv[2]);
    else printf("test_url: HTTPS not run (HTTPS_BASE is '-')\n");
    bearer_token(argv[1]);
    split_model(argv[1]);
    errors(argv[1], argv[3]);
    options_by_size(argv[1], argv[3]);
    printf("test_url: ok\n");
    return 0;
}
