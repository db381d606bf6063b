/*
 * check.h: the helpers every program in c_tests/ uses (CHECK, the error-record checks, the
 * fixture lookup, reading a whole file).
 *
 * Header-only on purpose: each program stays a single translation unit that tests/c_api.rs
 * compiles and links on its own (against libgguf.so or libgguf.a, with or without sanitizers),
 * with nothing else to build. So everything here is `static` (one private copy per program) and
 * `inline`, which keeps -Wall -Werror quiet in programs that leave a helper unused (GCC warns on
 * an unused plain `static` function even when it comes from a header).
 *
 * A program sets g_argc and g_argv from main's arguments before calling fixture().
 */
#ifndef LIBGGUF_C_TESTS_CHECK_H
#define LIBGGUF_C_TESTS_CHECK_H

#include "gguf.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int g_argc;
static char **g_argv;

/* Reports a failed check at file:line, with the calling thread's last error, and exits 1. */
static inline void fail_at(const char *file, int line, const char *what) {
    fprintf(stderr, "%s:%d: CHECK failed: %s\n", file, line, what);
    fprintf(stderr, "  last error: code %u, offset %" PRId64 ", message \"%s\"\n",
            (unsigned)gguf_last_error_code(), gguf_last_error_offset(), gguf_last_error());
    exit(1);
}

#define CHECK(cond)                                                                            \
    do {                                                                                       \
        if (!(cond)) fail_at(__FILE__, __LINE__, #cond);                                       \
    } while (0)

/* 1e300 as a double, for comparing with a double read from a file. On x87 (i686) a bare 1e300
 * in an expression has long double precision (FLT_EVAL_METHOD 2) and equals no double. */
static const double F64_1E300 = 1e300;

/* Expected offsets: exactly N >= 0, OFFSET_NONE (-1: no particular byte) or OFFSET_ANY (>= 0). */
#define OFFSET_NONE ((int64_t)-1)
#define OFFSET_ANY ((int64_t)-2)

/* Checks the calling thread's last error: its code, a non-empty message starting "gguf: " and
 * containing `needle` (when not NULL), its offset; then clears it and checks that
 * gguf_clear_error cleared the code, the message and the offset. */
static inline void check_error_at(const char *file, int line, uint32_t code, const char *needle,
                                  int64_t offset) {
    char what[1024];
    const char *msg = gguf_last_error();
    int64_t off = gguf_last_error_offset();
    if (gguf_last_error_code() != code) {
        snprintf(what, sizeof what, "last error code is %u, expected %u",
                 (unsigned)gguf_last_error_code(), (unsigned)code);
        fail_at(file, line, what);
    }
    if (msg == NULL || msg[0] == '\0') fail_at(file, line, "the error message is empty");
    if (strncmp(msg, "gguf: ", 6) != 0) fail_at(file, line, "the message does not start 'gguf: '");
    if (needle != NULL && strstr(msg, needle) == NULL) {
        snprintf(what, sizeof what, "the message does not contain \"%s\"", needle);
        fail_at(file, line, what);
    }
    if (offset == OFFSET_NONE ? off != -1 : offset == OFFSET_ANY ? off < 0 : off != offset) {
        snprintf(what, sizeof what, "error offset is %" PRId64 ", expected %" PRId64, off, offset);
        fail_at(file, line, what);
    }
    gguf_clear_error();
    if (gguf_last_error_code() != GGUF_ERROR_CODE_NONE || gguf_last_error() == NULL ||
        gguf_last_error()[0] != '\0' || gguf_last_error_offset() != -1)
        fail_at(file, line, "gguf_clear_error did not clear the record");
}

/* The last error of a failed call that concerns no particular byte (offset -1). */
#define CHECK_ERROR(code, needle) check_error_at(__FILE__, __LINE__, (code), (needle), OFFSET_NONE)
/* The last error of a failed parse: `offset` is exact, OFFSET_NONE or OFFSET_ANY. */
#define CHECK_PARSE_ERROR(code, needle, offset)                                                \
    check_error_at(__FILE__, __LINE__, (code), (needle), (offset))

/* Clears the record, checks that `cond` (the failing call's result) holds, then the error. */
#define FAILS(cond, code, needle)                                                              \
    do {                                                                                       \
        gguf_clear_error();                                                                    \
        CHECK(cond);                                                                           \
        CHECK_ERROR((code), (needle));                                                         \
    } while (0)

#ifdef _WIN32
#define GGUF_TESTS_WINDOWS 1
#else
#define GGUF_TESTS_WINDOWS 0
#endif

/* The file name in `path`: what follows its last separator (either slash on Windows). */
static inline const char *base_name(const char *path) {
    const char *base = path;
    for (const char *c = path; *c; c++) {
        if (*c == '/' || (*c == '\\' && GGUF_TESTS_WINDOWS)) base = c + 1;
    }
    return base;
}

/* The argument whose file name is `name`; exits 2 when there is none. */
static inline const char *fixture(const char *name) {
    for (int i = 1; i < g_argc; i++) {
        if (strcmp(base_name(g_argv[i]), name) == 0) return g_argv[i];
    }
    fprintf(stderr, "fixture %s is not among the arguments\n", name);
    exit(2);
}

/* The whole file, in an allocation of exactly its size (so ASan sees any over-read). */
static inline unsigned char *read_file(const char *path, size_t *len) {
    FILE *fp = fopen(path, "rb");
    CHECK(fp != NULL);
    CHECK(fseek(fp, 0, SEEK_END) == 0);
    long size = ftell(fp);
    CHECK(size >= 0);
    CHECK(fseek(fp, 0, SEEK_SET) == 0);
    unsigned char *buf = malloc(size > 0 ? (size_t)size : 1);
    CHECK(buf != NULL);
    CHECK(fread(buf, 1, (size_t)size, fp) == (size_t)size);
    fclose(fp);
    *len = (size_t)size;
    return buf;
}

#endif /* LIBGGUF_C_TESTS_CHECK_H */
