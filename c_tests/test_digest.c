/*
 * test_digest.c: the digest API (gguf_digest_size, gguf_digest_name, gguf_digest,
 * gguf_tensor_digest, GGUFDigester) with known answers for every algorithm, agreement between
 * one-shot, per-tensor and streamed digests over every tensor of full.gguf, and the refusals
 * (unknown algorithm, short or NULL output, a foreign tensor info, NULL handles); and
 * gguf_get_metadata_n, the lookup of keys holding NUL bytes.
 *
 * Usage: test_digest FIXTURE... (every path tests/c_api.rs writes; picked by file name).
 */
#include "gguf.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

/* The digest of `algorithm` over `len` bytes, in hex (a UUID with its dashes). */
static void hex_of(uint32_t algorithm, const unsigned char *d, char *out) {
    size_t size = gguf_digest_size(algorithm);
    for (size_t i = 0; i < size; i++) {
        if (algorithm == GGUF_DIGEST_ALGORITHM_UUID && (i == 4 || i == 6 || i == 8 || i == 10))
            *out++ = '-';
        out += sprintf(out, "%02x", d[i]);
    }
    *out = 0;
}

static void known_answers(void) {
    static const struct {
        uint32_t algorithm;
        const char *data, *name, *hex;
        size_t size;
    } cases[] = {
        {GGUF_DIGEST_ALGORITHM_SHA1, "abc", "sha1", "a9993e364706816aba3e25717850c26c9cd0d89d", 20},
        {GGUF_DIGEST_ALGORITHM_SHA256, "abc", "sha256",
         "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", 32},
        {GGUF_DIGEST_ALGORITHM_XXH64, "abc", "xxh64", "44bc2cf5ad770999", 8},
        {GGUF_DIGEST_ALGORITHM_XXH3, "", "xxh3", "2d06800538d394c2", 8},
        /* Python: uuid.UUID(bytes=sha1(namespace + b"abc").digest()[:16], version=5) */
        {GGUF_DIGEST_ALGORITHM_UUID, "abc", "uuid", "9f2200fc-45e8-5a39-9535-c3ea5c0e0cef", 16},
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        unsigned char out[40];
        char hex[80];
        memset(out, 0xaa, sizeof out);
        CHECK(gguf_digest_size(cases[k].algorithm) == cases[k].size);
        CHECK(strcmp(gguf_digest_name(cases[k].algorithm), cases[k].name) == 0);
        CHECK(gguf_digest(cases[k].algorithm, cases[k].data, strlen(cases[k].data), out,
                          cases[k].size));
        hex_of(cases[k].algorithm, out, hex);
        CHECK(strcmp(hex, cases[k].hex) == 0);
        CHECK(out[cases[k].size] == 0xaa); /* nothing past the digest */
        /* The same in pieces: one byte at a time. */
        GGUFDigester d = gguf_digester_new(cases[k].algorithm);
        CHECK(d != NULL);
        for (size_t i = 0; cases[k].data[i]; i++) CHECK(gguf_digester_update(d, cases[k].data + i, 1));
        CHECK(gguf_digester_update(d, NULL, 0));
        CHECK(gguf_digester_finish(d, out, sizeof out));
        hex_of(cases[k].algorithm, out, hex);
        CHECK(strcmp(hex, cases[k].hex) == 0);
        gguf_digester_free(d);
    }
    FAILS(gguf_digest_size(0) == 0, GGUF_ERROR_CODE_INVALID_ARGUMENT, "unknown digest algorithm 0");
    FAILS(gguf_digest_name(99) == NULL, GGUF_ERROR_CODE_INVALID_ARGUMENT, "99");
    FAILS(gguf_digester_new(6) == NULL, GGUF_ERROR_CODE_INVALID_ARGUMENT, "6");
    unsigned char out[32];
    FAILS(!gguf_digest(7, "a", 1, out, sizeof out), GGUF_ERROR_CODE_INVALID_ARGUMENT, "7");
    FAILS(!gguf_digest(GGUF_DIGEST_ALGORITHM_SHA256, "a", 1, out, 31),
          GGUF_ERROR_CODE_INVALID_ARGUMENT, "needs 32 bytes");
    FAILS(!gguf_digest(GGUF_DIGEST_ALGORITHM_SHA1, "a", 1, NULL, 20), GGUF_ERROR_CODE_NULL_ARGUMENT,
          "out");
    FAILS(!gguf_digest(GGUF_DIGEST_ALGORITHM_SHA1, NULL, 1, out, 20), GGUF_ERROR_CODE_NULL_ARGUMENT,
          "data");
    FAILS(!gguf_digester_update(NULL, "a", 1), GGUF_ERROR_CODE_NULL_ARGUMENT, "digester");
    FAILS(!gguf_digester_finish(NULL, out, 32), GGUF_ERROR_CODE_NULL_ARGUMENT, "digester");
    gguf_digester_free(NULL);
}

static void tensors(void) {
    GGUFFile f = gguf_open(fixture("full.gguf"));
    GGUFFile other = gguf_open(fixture("big.gguf"));
    CHECK(f != NULL && other != NULL);
    uint64_t n = gguf_tensor_count(f), total = 0;
    CHECK(n >= 4);
    for (uint64_t i = 0; i < n; i++) total += gguf_get_tensor_by_index(f, i)->size_bytes;
    unsigned char *all = malloc(total ? total : 1), *at = all;
    CHECK(all != NULL);
    for (uint32_t a = GGUF_DIGEST_ALGORITHM_SHA1; a <= GGUF_DIGEST_ALGORITHM_UUID; a++) {
        GGUFDigester d = gguf_digester_new(a);
        unsigned char one[32], per[32], streamed[32], whole[32];
        at = all;
        for (uint64_t i = 0; i < n; i++) {
            const GGUFTensorInfo *t = gguf_get_tensor_by_index(f, i);
            const void *data = gguf_tensor_data(f, t);
            CHECK(gguf_tensor_digest(f, t, a, per, sizeof per));
            CHECK(gguf_digest(a, data, (size_t)t->size_bytes, one, sizeof one));
            CHECK(memcmp(per, one, gguf_digest_size(a)) == 0);
            CHECK(gguf_digester_update(d, data, (size_t)t->size_bytes));
            if (t->size_bytes) memcpy(at, data, (size_t)t->size_bytes);
            at += t->size_bytes;
        }
        CHECK(gguf_digester_finish(d, streamed, sizeof streamed));
        CHECK(gguf_digest(a, all, (size_t)total, whole, sizeof whole));
        CHECK(memcmp(streamed, whole, gguf_digest_size(a)) == 0);
        /* finish started it afresh: the same bytes again give the same digest. */
        CHECK(gguf_digester_update(d, all, (size_t)total));
        CHECK(gguf_digester_finish(d, streamed, sizeof streamed));
        CHECK(memcmp(streamed, whole, gguf_digest_size(a)) == 0);
        /* A refused finish keeps what was fed. */
        CHECK(gguf_digester_update(d, all, (size_t)total));
        FAILS(!gguf_digester_finish(d, streamed, gguf_digest_size(a) - 1),
              GGUF_ERROR_CODE_INVALID_ARGUMENT, "out_len");
        CHECK(gguf_digester_finish(d, streamed, sizeof streamed));
        CHECK(memcmp(streamed, whole, gguf_digest_size(a)) == 0);
        gguf_digester_free(d);
    }
    const GGUFTensorInfo *t = gguf_get_tensor_by_index(f, 0);
    GGUFTensorInfo copy = *t;
    unsigned char out[32];
    FAILS(!gguf_tensor_digest(f, gguf_get_tensor_by_index(other, 0), 1, out, sizeof out),
          GGUF_ERROR_CODE_INVALID_ARGUMENT, "does not belong");
    FAILS(!gguf_tensor_digest(f, &copy, 1, out, sizeof out), GGUF_ERROR_CODE_INVALID_ARGUMENT,
          "does not belong");
    FAILS(!gguf_tensor_digest(f, t, 0, out, sizeof out), GGUF_ERROR_CODE_INVALID_ARGUMENT,
          "algorithm");
    FAILS(!gguf_tensor_digest(f, t, 1, out, 19), GGUF_ERROR_CODE_INVALID_ARGUMENT, "20 bytes");
    FAILS(!gguf_tensor_digest(f, t, 1, NULL, 20), GGUF_ERROR_CODE_NULL_ARGUMENT, "out");
    FAILS(!gguf_tensor_digest(NULL, t, 1, out, 20), GGUF_ERROR_CODE_NULL_ARGUMENT, "file");
    FAILS(!gguf_tensor_digest(f, NULL, 1, out, 20), GGUF_ERROR_CODE_NULL_ARGUMENT, "info");
    free(all);
    gguf_close(other);
    gguf_close(f);
}

static void metadata_n(void) {
    GGUFFile f = gguf_open(fixture("full.gguf"));
    CHECK(f != NULL);
    for (uint64_t i = 0; i < gguf_metadata_count(f); i++) {
        const GGUFMetadataKV *kv = gguf_get_metadata_by_index(f, i);
        CHECK(gguf_get_metadata_n(f, kv->key, (size_t)kv->key_len) == kv);
    }
    /* A key holding NUL: found with its length; the NUL-terminated lookup cannot reach it. */
    const GGUFMetadataKV *kv = gguf_get_metadata_n(f, "key\0tail", 8);
    CHECK(kv != NULL && kv->key_len == 8 && kv->type == GGUF_VALUE_TYPE_UINT32 &&
          kv->value.u32 == 7);
    CHECK(gguf_get_metadata(f, "key\0tail") != kv);
    gguf_clear_error();
    /* Not NUL-terminated: only key_len bytes are read. */
    char buf[12];
    memcpy(buf, "test.u8XXXX", sizeof buf);
    kv = gguf_get_metadata_n(f, buf, 7);
    CHECK(kv != NULL && kv->value.u32 == 200);
    FAILS(gguf_get_metadata_n(f, "key\0tai", 7) == NULL, GGUF_ERROR_CODE_NOT_FOUND, "key");
    FAILS(gguf_get_metadata_n(f, "test.u8", 0) == NULL, GGUF_ERROR_CODE_NOT_FOUND, "no metadata key");
    FAILS(gguf_get_metadata_n(f, NULL, 3) == NULL, GGUF_ERROR_CODE_NULL_ARGUMENT, "key");
    FAILS(gguf_get_metadata_n(NULL, "k", 1) == NULL, GGUF_ERROR_CODE_NULL_ARGUMENT, "file");
    gguf_close(f);
}

int main(int argc, char **argv) {
    g_argc = argc;
    g_argv = argv;
    known_answers();
    tensors();
    metadata_n();
    printf("test_digest: OK\n");
    return 0;
}
