/*
 * test_errors.c: the error record (gguf_last_error_code / gguf_last_error /
 * gguf_last_error_offset / gguf_clear_error), every way gguf_open and gguf_open_memory fail (files
 * that are not regular files refused at once), names and paths escaped in messages, and NULL for
 * every pointer argument of every function.
 *
 * Usage: test_errors FIXTURE... (every path tests/c_api.rs writes; picked by file name).
 */
#define _POSIX_C_SOURCE 200809L /* alarm */

#include "gguf.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifndef _WIN32
#include <unistd.h> /* alarm */
#endif

#include "check.h"

/* ---- the tests ------------------------------------------------------------------------------ */

static void test_initial_state_and_clear(void) {
    /* Nothing has failed on this thread yet. */
    CHECK(gguf_last_error_code() == GGUF_ERROR_CODE_NONE);
    CHECK(gguf_last_error() != NULL);
    CHECK(strcmp(gguf_last_error(), "") == 0);
    CHECK(gguf_last_error_offset() == -1);
    gguf_clear_error();
    CHECK(gguf_last_error_code() == GGUF_ERROR_CODE_NONE);
    CHECK(gguf_last_error_offset() == -1);
    CHECK(strcmp(gguf_last_error(), "") == 0);
}

/* Successful calls leave the record as it was; the message stays valid until the next failure. */
static void test_record_survives_success(void) {
    const char *path = fixture("full.gguf");
    GGUFFile f = gguf_open(path);
    CHECK(f != NULL);

    gguf_clear_error();
    CHECK(gguf_get_metadata(f, "missing.key") == NULL);
    const char *msg = gguf_last_error();
    char copy[512];
    CHECK(strlen(msg) < sizeof copy);
    strcpy(copy, msg);
    CHECK(strstr(copy, "missing.key") != NULL);
    CHECK(strstr(copy, path) != NULL);

    /* Successes of every kind. */
    CHECK(gguf_get_metadata(f, "general.architecture") != NULL);
    CHECK(gguf_get_tensor_by_index(f, 0) != NULL);
    CHECK(gguf_get_float_array(f, "tokenizer.ggml.scores", NULL) != NULL);
    CHECK(gguf_dtype_name(GGUF_DATA_TYPE_Q4_K) != NULL);
    CHECK(gguf_version(f) == 3);
    GGUFFile g = gguf_open(path);
    CHECK(g != NULL);
    gguf_close(g);
    gguf_close(NULL);

    CHECK(gguf_last_error_code() == GGUF_ERROR_CODE_NOT_FOUND);
    CHECK(gguf_last_error() == msg);
    CHECK(strcmp(gguf_last_error(), copy) == 0);
    CHECK(gguf_last_error_offset() == -1);

    /* The next failure replaces it. */
    CHECK(gguf_get_tensor_by_index(f, 1000) == NULL);
    CHECK(gguf_last_error_code() == GGUF_ERROR_CODE_INVALID_ARGUMENT);
    CHECK(strstr(gguf_last_error(), "1000") != NULL);
    CHECK_ERROR(GGUF_ERROR_CODE_INVALID_ARGUMENT, path);

    gguf_close(f);
    CHECK(gguf_last_error_code() == GGUF_ERROR_CODE_NONE);
}

/* gguf_close(NULL) is a no-op that records nothing. */
static void test_close_null(void) {
    gguf_clear_error();
    gguf_close(NULL);
    CHECK(gguf_last_error_code() == GGUF_ERROR_CODE_NONE);
    CHECK(gguf_last_error()[0] == '\0');

    CHECK(gguf_open(NULL) == NULL); /* leave an error recorded */
    gguf_close(NULL);
    CHECK_ERROR(GGUF_ERROR_CODE_NULL_ARGUMENT, "NULL");
}

/* A broken file, where its error must be, and what the message must mention. */
struct broken {
    const char *name;
    uint32_t code;
    int64_t offset;
};

static const struct broken BROKEN[] = {
    {"not_gguf.txt", GGUF_ERROR_CODE_BAD_MAGIC, 0},
    {"zero.bin", GGUF_ERROR_CODE_TRUNCATED, 0},
    {"bad_version.gguf", GGUF_ERROR_CODE_UNSUPPORTED_VERSION, 4},
    /* 8 tensors (the count at 8) cannot fit in the 16 bytes after the header. */
    {"cut_model.gguf", GGUF_ERROR_CODE_TENSOR_COUNT_TOO_LARGE, 8},
    /* A string of 15 bytes (its length at 48) in a file cut 4 bytes into them. */
    {"truncated.gguf", GGUF_ERROR_CODE_STRING_TOO_LONG, 48},
    {"bad_bool.gguf", GGUF_ERROR_CODE_BAD_BOOL, 37},
    {"dup_key.gguf", GGUF_ERROR_CODE_DUPLICATE_KEY, 39},
    {"bad_dtype.gguf", GGUF_ERROR_CODE_BAD_DATA_TYPE, 45},
};

static void test_open_failures(void) {
    /* Files that are not there or not files. */
    const char *missing = fixture("does_not_exist.gguf");
    FAILS(gguf_open(missing) == NULL, GGUF_ERROR_CODE_IO, missing);
    const char *dir = fixture("a_directory.gguf");
    FAILS(gguf_open(dir) == NULL, GGUF_ERROR_CODE_IO, dir);
    FAILS(gguf_open("") == NULL, GGUF_ERROR_CODE_IO, NULL);
    FAILS(gguf_open(NULL) == NULL, GGUF_ERROR_CODE_NULL_ARGUMENT, "NULL");

    /* Broken files: by path (the message names it) and in memory (the message names
     * "<memory>"), with the same code and offset. */
    for (size_t i = 0; i < sizeof BROKEN / sizeof BROKEN[0]; i++) {
        const struct broken *b = &BROKEN[i];
        const char *path = fixture(b->name);
        fprintf(stderr, "broken file %s\n", b->name);
        gguf_clear_error();
        CHECK(gguf_open(path) == NULL);
        CHECK(gguf_last_error_offset() >= 0);
        CHECK_PARSE_ERROR(b->code, path, b->offset);

        size_t len;
        unsigned char *bytes = read_file(path, &len);
        gguf_clear_error();
        CHECK(gguf_open_memory(bytes, len) == NULL);
        CHECK(strstr(gguf_last_error(), path) == NULL);
        CHECK_PARSE_ERROR(b->code, "<memory>", b->offset);
        free(bytes);
    }

    /* In memory: NULL data, zero length, non-GGUF bytes, a lone magic. */
    static const unsigned char text[] = "hello, world";
    FAILS(gguf_open_memory(NULL, 0) == NULL, GGUF_ERROR_CODE_NULL_ARGUMENT, "NULL");
    FAILS(gguf_open_memory(NULL, 100) == NULL, GGUF_ERROR_CODE_NULL_ARGUMENT, "NULL");
    gguf_clear_error();
    CHECK(gguf_open_memory(text, 0) == NULL);
    CHECK_PARSE_ERROR(GGUF_ERROR_CODE_TRUNCATED, "<memory>", 0);
    gguf_clear_error();
    CHECK(gguf_open_memory(text, sizeof text - 1) == NULL);
    CHECK_PARSE_ERROR(GGUF_ERROR_CODE_BAD_MAGIC, "<memory>", 0);
    gguf_clear_error();
    CHECK(gguf_open_memory("GGUF", 4) == NULL);
    CHECK_PARSE_ERROR(GGUF_ERROR_CODE_TRUNCATED, "<memory>", 4);
}

/* What is not a regular file is refused at once, saying what it is. A FIFO without a writer
 * used to block gguf_open forever: the alarm turns a hang into a failure. */
static void test_not_regular_files(void) {
    FAILS(gguf_open(fixture("a_directory.gguf")) == NULL, GGUF_ERROR_CODE_IO, "a directory");
#ifndef _WIN32 /* Windows has no FIFOs, /dev or /proc in its file system. */
    const char *fifo = fixture("a_fifo.gguf");
    alarm(60);
    FAILS(gguf_open(fifo) == NULL, GGUF_ERROR_CODE_IO, "a FIFO (named pipe)");
    FAILS(gguf_open_ex(fifo, GGUF_OPEN_FLAG_READ) == NULL, GGUF_ERROR_CODE_IO, fifo);
    alarm(0);
    FAILS(gguf_open("/dev/null") == NULL, GGUF_ERROR_CODE_IO, "a character device");
    FAILS(gguf_open_ex("/dev/zero", GGUF_OPEN_FLAG_READ) == NULL, GGUF_ERROR_CODE_IO,
          "a character device");
    /* procfs reports size 0 for files with contents: not "an empty file". */
    FAILS(gguf_open("/proc/self/status") == NULL, GGUF_ERROR_CODE_IO, "reports size 0");
#endif
}

/* The calling thread's last message holds no control byte (C0, DEL); C1 controls and bytes
 * that are not UTF-8 would show as \xNN too. */
static void check_printable(void) {
    for (const unsigned char *p = (const unsigned char *)gguf_last_error(); *p; p++) {
        CHECK(*p >= 0x20 && *p != 0x7f);
    }
}

/* Names and paths reach messages escaped: a key that clears the screen, retitles the terminal
 * and forges a line of output shows as text. */
static void test_escaped_messages(void) {
    const char *path = fixture("full.gguf");
    GGUFFile f = gguf_open(path);
    CHECK(f != NULL);
    static const char hostile[] = "\x1b[2J\x1b]0;owned\x07\r\ngguf: all tensors OK\n\xc2\x9b\xff\\x41";
    static const char shown[] =
        "'\\x1b[2J\\x1b]0;owned\\x07\\x0d\\x0agguf: all tensors OK\\x0a\\xc2\\x9b\\xff\\\\x41'";
    gguf_clear_error();
    CHECK(gguf_get_metadata(f, hostile) == NULL);
    check_printable();
    CHECK_ERROR(GGUF_ERROR_CODE_NOT_FOUND, shown);
    CHECK(gguf_get_tensor(f, hostile) == NULL);
    check_printable();
    CHECK_ERROR(GGUF_ERROR_CODE_NOT_FOUND, shown);
    uint64_t n = 9;
    CHECK(gguf_get_string_array(f, hostile, &n) == NULL && n == 0);
    check_printable();
    CHECK_ERROR(GGUF_ERROR_CODE_NOT_FOUND, shown);
    gguf_close(f);

    /* A path that is not UTF-8, with control bytes: its bytes shown escaped, not replaced. */
    char missing[4096];
    const char *slash = strrchr(path, '/');
    CHECK(slash != NULL && (size_t)(slash - path) + 32 < sizeof missing);
    memcpy(missing, path, (size_t)(slash - path));
    strcpy(missing + (slash - path), "/caf\xe9\x1b]0;x\x07.gguf");
    gguf_clear_error();
    CHECK(gguf_open(missing) == NULL);
    check_printable();
    if (GGUF_TESTS_WINDOWS) {
        /* Windows paths are Unicode: bytes that are not UTF-8 name no file there. */
        CHECK_ERROR(GGUF_ERROR_CODE_INVALID_ARGUMENT, "the path is not valid UTF-8");
    } else {
        CHECK_ERROR(GGUF_ERROR_CODE_IO, "/caf\\xe9\\x1b]0;x\\x07.gguf: cannot open the file");
    }
}

/* NULL for every pointer argument of every function. */
static void test_null_arguments(void) {
    const char *path = fixture("full.gguf");
    GGUFFile f = gguf_open(path);
    CHECK(f != NULL);
    const GGUFTensorInfo *info = gguf_get_tensor_by_index(f, 0);
    CHECK(info != NULL);
    uint64_t n = 99;

    /* A NULL handle. */
    FAILS(gguf_metadata_count(NULL) == 0, GGUF_ERROR_CODE_NULL_ARGUMENT, "file");
    FAILS(gguf_get_metadata(NULL, "general.name") == NULL, GGUF_ERROR_CODE_NULL_ARGUMENT, "file");
    FAILS(gguf_get_metadata_by_index(NULL, 0) == NULL, GGUF_ERROR_CODE_NULL_ARGUMENT, "file");
    FAILS(gguf_version(NULL) == 0, GGUF_ERROR_CODE_NULL_ARGUMENT, "file");
    FAILS(gguf_alignment(NULL) == 0, GGUF_ERROR_CODE_NULL_ARGUMENT, "file");
    FAILS(gguf_data_offset(NULL) == 0, GGUF_ERROR_CODE_NULL_ARGUMENT, "file");
    FAILS(gguf_file_size(NULL) == 0, GGUF_ERROR_CODE_NULL_ARGUMENT, "file");
    FAILS(gguf_byte_order(NULL) == GGUF_BYTE_ORDER_LITTLE, GGUF_ERROR_CODE_NULL_ARGUMENT, "file");
    FAILS(gguf_tensor_count(NULL) == 0, GGUF_ERROR_CODE_NULL_ARGUMENT, "file");
    FAILS(gguf_get_tensor(NULL, "scalar") == NULL, GGUF_ERROR_CODE_NULL_ARGUMENT, "file");
    FAILS(gguf_get_tensor_by_index(NULL, 0) == NULL, GGUF_ERROR_CODE_NULL_ARGUMENT, "file");
    FAILS(gguf_tensor_data(NULL, info) == NULL, GGUF_ERROR_CODE_NULL_ARGUMENT, "file");
    n = 99;
    FAILS(gguf_get_string_array(NULL, "tokenizer.ggml.tokens", &n) == NULL && n == 0,
          GGUF_ERROR_CODE_NULL_ARGUMENT, "file");
    n = 99;
    FAILS(gguf_get_array_string(NULL, "tokenizer.ggml.tokens", 0, &n) == NULL && n == 0,
          GGUF_ERROR_CODE_NULL_ARGUMENT, "file");
    n = 99;
    FAILS(gguf_get_float_array(NULL, "tokenizer.ggml.scores", &n) == NULL && n == 0,
          GGUF_ERROR_CODE_NULL_ARGUMENT, "file");
    n = 99;
    FAILS(gguf_get_float64_array(NULL, "arr.f64", &n) == NULL && n == 0,
          GGUF_ERROR_CODE_NULL_ARGUMENT, "file");
    n = 99;
    FAILS(gguf_get_uint8_array(NULL, "arr.u8", &n) == NULL && n == 0,
          GGUF_ERROR_CODE_NULL_ARGUMENT, "file");
    n = 99;
    FAILS(gguf_get_int8_array(NULL, "arr.i8", &n) == NULL && n == 0,
          GGUF_ERROR_CODE_NULL_ARGUMENT, "file");
    n = 99;
    FAILS(gguf_get_uint16_array(NULL, "arr.u16", &n) == NULL && n == 0,
          GGUF_ERROR_CODE_NULL_ARGUMENT, "file");
    n = 99;
    FAILS(gguf_get_int16_array(NULL, "arr.i16", &n) == NULL && n == 0,
          GGUF_ERROR_CODE_NULL_ARGUMENT, "file");
    n = 99;
    FAILS(gguf_get_uint32_array(NULL, "arr.u32", &n) == NULL && n == 0,
          GGUF_ERROR_CODE_NULL_ARGUMENT, "file");
    n = 99;
    FAILS(gguf_get_int32_array(NULL, "tokenizer.ggml.token_type", &n) == NULL && n == 0,
          GGUF_ERROR_CODE_NULL_ARGUMENT, "file");
    n = 99;
    FAILS(gguf_get_uint64_array(NULL, "arr.u64", &n) == NULL && n == 0,
          GGUF_ERROR_CODE_NULL_ARGUMENT, "file");
    n = 99;
    FAILS(gguf_get_int64_array(NULL, "arr.i64", &n) == NULL && n == 0,
          GGUF_ERROR_CODE_NULL_ARGUMENT, "file");
    n = 99;
    FAILS(gguf_get_bool_array(NULL, "arr.bool", &n) == NULL && n == 0,
          GGUF_ERROR_CODE_NULL_ARGUMENT, "file");

    /* A NULL key, name, info, path or data. */
    FAILS(gguf_get_metadata(f, NULL) == NULL, GGUF_ERROR_CODE_NULL_ARGUMENT, "key");
    FAILS(gguf_get_tensor(f, NULL) == NULL, GGUF_ERROR_CODE_NULL_ARGUMENT, "name");
    FAILS(gguf_tensor_data(f, NULL) == NULL, GGUF_ERROR_CODE_NULL_ARGUMENT, "info");
    FAILS(gguf_tensor_data(NULL, NULL) == NULL, GGUF_ERROR_CODE_NULL_ARGUMENT, NULL);
    FAILS(gguf_open(NULL) == NULL, GGUF_ERROR_CODE_NULL_ARGUMENT, "path");
    FAILS(gguf_open_memory(NULL, 64) == NULL, GGUF_ERROR_CODE_NULL_ARGUMENT, "data");
    n = 99;
    FAILS(gguf_get_string_array(f, NULL, &n) == NULL && n == 0, GGUF_ERROR_CODE_NULL_ARGUMENT,
          "key");
    n = 99;
    FAILS(gguf_get_array_string(f, NULL, 0, &n) == NULL && n == 0, GGUF_ERROR_CODE_NULL_ARGUMENT,
          "key");
    n = 99;
    FAILS(gguf_get_float_array(f, NULL, &n) == NULL && n == 0, GGUF_ERROR_CODE_NULL_ARGUMENT,
          "key");
    n = 99;
    FAILS(gguf_get_float64_array(f, NULL, &n) == NULL && n == 0, GGUF_ERROR_CODE_NULL_ARGUMENT,
          "key");
    n = 99;
    FAILS(gguf_get_uint8_array(f, NULL, &n) == NULL && n == 0, GGUF_ERROR_CODE_NULL_ARGUMENT,
          "key");
    n = 99;
    FAILS(gguf_get_int8_array(f, NULL, &n) == NULL && n == 0, GGUF_ERROR_CODE_NULL_ARGUMENT,
          "key");
    n = 99;
    FAILS(gguf_get_uint16_array(f, NULL, &n) == NULL && n == 0, GGUF_ERROR_CODE_NULL_ARGUMENT,
          "key");
    n = 99;
    FAILS(gguf_get_int16_array(f, NULL, &n) == NULL && n == 0, GGUF_ERROR_CODE_NULL_ARGUMENT,
          "key");
    n = 99;
    FAILS(gguf_get_uint32_array(f, NULL, &n) == NULL && n == 0, GGUF_ERROR_CODE_NULL_ARGUMENT,
          "key");
    n = 99;
    FAILS(gguf_get_int32_array(f, NULL, &n) == NULL && n == 0, GGUF_ERROR_CODE_NULL_ARGUMENT,
          "key");
    n = 99;
    FAILS(gguf_get_uint64_array(f, NULL, &n) == NULL && n == 0, GGUF_ERROR_CODE_NULL_ARGUMENT,
          "key");
    n = 99;
    FAILS(gguf_get_int64_array(f, NULL, &n) == NULL && n == 0, GGUF_ERROR_CODE_NULL_ARGUMENT,
          "key");
    n = 99;
    FAILS(gguf_get_bool_array(f, NULL, &n) == NULL && n == 0, GGUF_ERROR_CODE_NULL_ARGUMENT,
          "key");
    /* Both NULL. */
    FAILS(gguf_get_metadata(NULL, NULL) == NULL, GGUF_ERROR_CODE_NULL_ARGUMENT, NULL);
    FAILS(gguf_get_tensor(NULL, NULL) == NULL, GGUF_ERROR_CODE_NULL_ARGUMENT, NULL);
    FAILS(gguf_get_string_array(NULL, NULL, NULL) == NULL, GGUF_ERROR_CODE_NULL_ARGUMENT, NULL);
    FAILS(gguf_get_array_string(NULL, NULL, 0, NULL) == NULL, GGUF_ERROR_CODE_NULL_ARGUMENT,
          NULL);
    FAILS(gguf_get_float_array(NULL, NULL, NULL) == NULL, GGUF_ERROR_CODE_NULL_ARGUMENT, NULL);

    /* out_count / out_len may be NULL: success and failure both work without them. */
    gguf_clear_error();
    CHECK(gguf_get_string_array(f, "tokenizer.ggml.tokens", NULL) != NULL);
    CHECK(gguf_get_array_string(f, "tokenizer.ggml.tokens", 0, NULL) != NULL);
    CHECK(gguf_get_float_array(f, "tokenizer.ggml.scores", NULL) != NULL);
    CHECK(gguf_get_int32_array(f, "tokenizer.ggml.token_type", NULL) != NULL);
    CHECK(gguf_last_error_code() == GGUF_ERROR_CODE_NONE);
    FAILS(gguf_get_string_array(f, "no.such.key", NULL) == NULL, GGUF_ERROR_CODE_NOT_FOUND,
          "no.such.key");
    FAILS(gguf_get_array_string(f, "tokenizer.ggml.tokens", 99, NULL) == NULL,
          GGUF_ERROR_CODE_INVALID_ARGUMENT, path);
    FAILS(gguf_get_uint8_array(f, "tokenizer.ggml.scores", NULL) == NULL,
          GGUF_ERROR_CODE_WRONG_TYPE, "tokenizer.ggml.scores");

    gguf_close(f);
}

/* Messages say what was expected and found, and name the key or tensor. */
static void test_messages(void) {
    const char *path = fixture("full.gguf");
    GGUFFile f = gguf_open(path);
    CHECK(f != NULL);
    uint64_t n = 5;
    FAILS(gguf_get_metadata(f, "no.such.key") == NULL, GGUF_ERROR_CODE_NOT_FOUND, "no.such.key");
    FAILS(gguf_get_tensor(f, "no.such.tensor") == NULL, GGUF_ERROR_CODE_NOT_FOUND,
          "no.such.tensor");
    FAILS(gguf_get_float_array(f, "tokenizer.ggml.token_type", &n) == NULL && n == 0,
          GGUF_ERROR_CODE_WRONG_TYPE, "INT32");
    FAILS(gguf_get_float_array(f, "general.name", &n) == NULL && n == 0,
          GGUF_ERROR_CODE_WRONG_TYPE, "STRING");
    FAILS(gguf_get_metadata_by_index(f, 32) == NULL, GGUF_ERROR_CODE_INVALID_ARGUMENT, "32");
    FAILS(gguf_dtype_name(4) == NULL, GGUF_ERROR_CODE_INVALID_ARGUMENT, "4");
    FAILS(gguf_value_type_name(13) == NULL, GGUF_ERROR_CODE_INVALID_ARGUMENT, "13");
    gguf_close(f);
}

int main(int argc, char **argv) {
    g_argc = argc;
    g_argv = argv;
    test_initial_state_and_clear();
    test_record_survives_success();
    test_close_null();
    test_open_failures();
    test_not_regular_files();
    test_escaped_messages();
    test_null_arguments();
    test_messages();
    printf("test_errors: ok\n");
    return 0;
}
