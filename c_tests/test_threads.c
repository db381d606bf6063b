/*
 * test_threads.c: one handle shared by several threads. Released together by a barrier, the
 * threads race the lazy builders on their very first call (gguf_get_string_array,
 * gguf_get_float_array, gguf_get_array_string, every typed getter, then gguf_get_nested_array
 * into each element of an array of arrays), then call every getter;
 * every thread must see identical pointers and values. Each thread also opens and closes handles
 * of its own, and records a different error: the error record is per thread.
 * Rounds cover a little-endian file, a big-endian version-1 file and a handle from
 * gguf_open_memory.
 *
 * Usage: test_threads FIXTURE... (every path tests/c_api.rs writes; picked by file name).
 */
#define _POSIX_C_SOURCE 200809L

#include "gguf.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

/* ---- the test ------------------------------------------------------------------------------- */

#define THREADS 8
#define ROUNDS 12
#define N_KVS 32
#define N_TENSORS 8
#define N_TYPED 11

static const char *const TYPED_KEYS[N_TYPED] = {
    "arr.u8",  "arr.i8",  "arr.u16", "arr.i16", "arr.u32", "tokenizer.ggml.token_type",
    "arr.u64", "arr.i64", "tokenizer.ggml.scores", "arr.f64", "arr.bool",
};

static const void *typed(GGUFFile f, int which, uint64_t *n) {
    const char *key = TYPED_KEYS[which];
    switch (which) {
    case 0: return gguf_get_uint8_array(f, key, n);
    case 1: return gguf_get_int8_array(f, key, n);
    case 2: return gguf_get_uint16_array(f, key, n);
    case 3: return gguf_get_int16_array(f, key, n);
    case 4: return gguf_get_uint32_array(f, key, n);
    case 5: return gguf_get_int32_array(f, key, n);
    case 6: return gguf_get_uint64_array(f, key, n);
    case 7: return gguf_get_int64_array(f, key, n);
    case 8: return gguf_get_float_array(f, key, n);
    case 9: return gguf_get_float64_array(f, key, n);
    default: return gguf_get_bool_array(f, key, n);
    }
}

struct shared {
    GGUFFile f;
    const char *path;
    pthread_barrier_t barrier;
};

/* What one thread saw: every pointer the handle handed it. */
struct seen {
    const char *const *strings;
    const float *floats;
    const char *token[5];
    uint64_t token_len[5];
    const void *typed[N_TYPED];
    uint64_t typed_n[N_TYPED];
    const void *nested[2]; /* the data of arr.nested's elements (GGUFArray has padding) */
    uint64_t nested_n[2];
    const GGUFMetadataKV *kv[N_KVS];
    const GGUFTensorInfo *tensor[N_TENSORS];
    const void *data[N_TENSORS];
    uint64_t facts[7];
    const char *dtype_name;
    const char *value_type_name;
};

struct job {
    struct shared *shared;
    int index;
    struct seen seen;
};

static void wait_all(struct shared *s) {
    int rc = pthread_barrier_wait(&s->barrier);
    CHECK(rc == 0 || rc == PTHREAD_BARRIER_SERIAL_THREAD);
}

static void *worker(void *arg) {
    struct job *job = arg;
    struct shared *s = job->shared;
    struct seen *seen = &job->seen;
    GGUFFile f = s->f;
    uint64_t n = 0;

    /* A new thread has no error recorded, whatever other threads did. */
    CHECK(gguf_last_error_code() == GGUF_ERROR_CODE_NONE);
    CHECK(gguf_last_error()[0] == '\0');

    /* Each lazy builder's first call, by every thread at once. */
    wait_all(s);
    seen->strings = gguf_get_string_array(f, "tokenizer.ggml.tokens", &n);
    CHECK(seen->strings != NULL && n == 5);
    wait_all(s);
    seen->floats = gguf_get_float_array(f, "tokenizer.ggml.scores", &n);
    CHECK(seen->floats != NULL && n == 5);
    wait_all(s);
    seen->token[2] = gguf_get_array_string(f, "tokenizer.ggml.tokens", 2, &seen->token_len[2]);
    CHECK(seen->token[2] != NULL);
    wait_all(s);
    /* Every typed builder, each thread starting at a different one. */
    for (int i = 0; i < N_TYPED; i++) {
        int which = (i + job->index) % N_TYPED;
        seen->typed[which] = typed(f, which, &seen->typed_n[which]);
        CHECK(seen->typed[which] != NULL);
    }
    wait_all(s);
    /* The nested builders: the array of arrays' elements, then each one's values. */
    const GGUFMetadataKV *nested = gguf_get_metadata(f, "arr.nested");
    CHECK(nested != NULL);
    for (int i = 0; i < 2; i++) {
        uint64_t path[1] = {(uint64_t)((i + job->index) % 2)};
        GGUFArray a;
        CHECK(gguf_get_nested_array(f, nested->index, path, 1, &a) && a.data != NULL);
        seen->nested[path[0]] = a.data;
        seen->nested_n[path[0]] = a.count;
    }
    wait_all(s);

    /* Then every getter, all threads at once. */
    for (int i = 0; i < 5; i++) {
        const char *t = gguf_get_array_string(f, "tokenizer.ggml.tokens", (uint64_t)i, &n);
        CHECK(t != NULL);
        CHECK(i != 2 || t == seen->token[2]);
        seen->token[i] = t;
        seen->token_len[i] = n;
    }
    CHECK(gguf_metadata_count(f) == N_KVS);
    for (uint64_t i = 0; i < N_KVS; i++) {
        seen->kv[i] = gguf_get_metadata_by_index(f, i);
        CHECK(seen->kv[i] != NULL && seen->kv[i]->index == i);
        if (seen->kv[i]->key_len == strlen(seen->kv[i]->key))
            CHECK(gguf_get_metadata(f, seen->kv[i]->key) == seen->kv[i]);
    }
    CHECK(gguf_tensor_count(f) == N_TENSORS);
    for (uint64_t i = 0; i < N_TENSORS; i++) {
        seen->tensor[i] = gguf_get_tensor_by_index(f, i);
        CHECK(seen->tensor[i] != NULL);
        if (seen->tensor[i]->name_len == strlen(seen->tensor[i]->name))
            CHECK(gguf_get_tensor(f, seen->tensor[i]->name) == seen->tensor[i]);
        seen->data[i] = gguf_tensor_data(f, seen->tensor[i]);
        CHECK(seen->data[i] != NULL);
    }
    seen->facts[0] = gguf_version(f);
    seen->facts[1] = gguf_alignment(f);
    seen->facts[2] = gguf_data_offset(f);
    seen->facts[3] = gguf_file_size(f);
    seen->facts[4] = gguf_byte_order(f);
    seen->facts[5] = gguf_metadata_count(f);
    seen->facts[6] = gguf_tensor_count(f);
    seen->dtype_name = gguf_dtype_name(GGUF_DATA_TYPE_Q4_K);
    CHECK(gguf_dtype_block_size(GGUF_DATA_TYPE_Q4_K) == 256);
    CHECK(gguf_dtype_block_bytes(GGUF_DATA_TYPE_Q4_K) == 144);
    seen->value_type_name = gguf_value_type_name(GGUF_VALUE_TYPE_STRING);
    /* Later calls to the builders return what the first did. */
    CHECK(gguf_get_string_array(f, "tokenizer.ggml.tokens", NULL) == seen->strings);
    CHECK(gguf_get_float_array(f, "tokenizer.ggml.scores", NULL) == seen->floats);
    for (int i = 0; i < N_TYPED; i++) CHECK(typed(f, i, NULL) == seen->typed[i]);

    /* The values, read concurrently. */
    CHECK(strcmp(seen->strings[0], "<s>") == 0 && strcmp(seen->strings[4], "</s>") == 0);
    CHECK(seen->floats[0] == 0.5f && seen->floats[4] == 100.0f);
    CHECK(seen->token_len[3] == 3 && memcmp(seen->token[3], "a\0b", 3) == 0);
    CHECK(((const int32_t *)seen->typed[5])[3] == INT32_MIN);
    CHECK(((const uint64_t *)seen->typed[6])[1] == UINT64_MAX);
    CHECK(((const double *)seen->typed[9])[2] == F64_1E300);

    /* Handles of its own, opened and closed while the others work. */
    for (int i = 0; i < 3; i++) {
        GGUFFile own = gguf_open(s->path);
        CHECK(own != NULL);
        CHECK(gguf_get_string_array(own, "tokenizer.ggml.tokens", NULL) != seen->strings);
        CHECK(gguf_tensor_data(own, seen->tensor[0]) == NULL); /* not its record */
        gguf_close(own);
    }

    /* Errors are per thread: each records a different one, then checks it still has its own. */
    gguf_clear_error();
    char key[64];
    snprintf(key, sizeof key, "thread.%d.missing", job->index);
    switch (job->index % 4) {
    case 0: CHECK(gguf_get_metadata(f, key) == NULL); break;
    case 1: CHECK(gguf_get_float_array(f, "tokenizer.ggml.token_type", NULL) == NULL); break;
    case 2: CHECK(gguf_get_tensor_by_index(f, 1000 + (uint64_t)job->index) == NULL); break;
    default: CHECK(gguf_get_metadata(f, NULL) == NULL); break;
    }
    wait_all(s);
    static const uint32_t CODES[4] = {GGUF_ERROR_CODE_NOT_FOUND, GGUF_ERROR_CODE_WRONG_TYPE,
                                      GGUF_ERROR_CODE_INVALID_ARGUMENT,
                                      GGUF_ERROR_CODE_NULL_ARGUMENT};
    CHECK(gguf_last_error_code() == CODES[job->index % 4]);
    CHECK(gguf_last_error_offset() == -1);
    if (job->index % 4 == 0) CHECK(strstr(gguf_last_error(), key) != NULL);
    if (job->index % 4 == 2) {
        char index[32];
        snprintf(index, sizeof index, "%d", 1000 + job->index);
        CHECK(strstr(gguf_last_error(), index) != NULL);
    }
    wait_all(s);
    gguf_clear_error();
    return NULL;
}

static void run_round(GGUFFile f, const char *path) {
    struct shared s;
    s.f = f;
    s.path = path;
    CHECK(pthread_barrier_init(&s.barrier, NULL, THREADS) == 0);
    struct job jobs[THREADS];
    pthread_t threads[THREADS];
    memset(jobs, 0, sizeof jobs);
    for (int i = 0; i < THREADS; i++) {
        jobs[i].shared = &s;
        jobs[i].index = i;
        CHECK(pthread_create(&threads[i], NULL, worker, &jobs[i]) == 0);
    }
    for (int i = 0; i < THREADS; i++) CHECK(pthread_join(threads[i], NULL) == 0);
    CHECK(pthread_barrier_destroy(&s.barrier) == 0);

    /* Every thread saw the same pointers and facts. */
    for (int i = 1; i < THREADS; i++) {
        CHECK(memcmp(&jobs[i].seen, &jobs[0].seen, sizeof jobs[0].seen) == 0);
    }
    /* And the main thread sees them too. */
    const struct seen *seen = &jobs[0].seen;
    CHECK(gguf_get_string_array(f, "tokenizer.ggml.tokens", NULL) == seen->strings);
    CHECK(gguf_get_float_array(f, "tokenizer.ggml.scores", NULL) == seen->floats);
    CHECK(gguf_get_metadata_by_index(f, 0) == seen->kv[0]);
    CHECK(gguf_tensor_data(f, seen->tensor[7]) == seen->data[7]);
    /* None of the threads' errors leaked into this one. */
    CHECK(gguf_last_error_code() == GGUF_ERROR_CODE_NONE);
}

int main(int argc, char **argv) {
    g_argc = argc;
    g_argv = argv;
    static const char *const NAMES[] = {"full.gguf", "v1big.gguf"};
    for (int round = 0; round < ROUNDS; round++) {
        const char *path = fixture(NAMES[round % 2]);
        GGUFFile f = gguf_open(path);
        CHECK(f != NULL);
        run_round(f, path);
        gguf_close(f);

        size_t len;
        unsigned char *buf = read_file(path, &len);
        GGUFFile m = gguf_open_memory(buf, len);
        CHECK(m != NULL);
        run_round(m, path);
        gguf_close(m);
        free(buf);
    }
    printf("test_threads: ok\n");
    return 0;
}
