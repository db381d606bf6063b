/*
 * open_once: opens one GGUF file once and closes it, for counting heap allocations and
 * instructions under valgrind (bench/run.sh runs it with `valgrind --tool=memcheck` and reads the
 * heap summary, and with `valgrind --tool=callgrind --toggle-collect=open_once_*` to count the
 * instructions of the open alone).
 *
 *   open_once none   FILE     nothing (the process's own allocations: the baseline)
 *   open_once ours   FILE     gguf_open + gguf_close
 *   open_once tokens FILE     gguf_open + gguf_get_string_array(tokenizer.ggml.tokens) + close
 *   open_once first  FILE     gguf_open + the first gguf_get_tensor_by_index (which builds the C
 *                             records of every tensor) + close, both counted in open_once_first
 *   open_once ggml   FILE     ggml's gguf_init_from_file({.no_alloc = true}) + gguf_free
 *   open_once floor  FILE     the floor walk (bench/floor.h) + its munmap
 *
 * The opens are made in the functions open_once_ours, open_once_ggml and open_once_floor (the
 * close outside them), so callgrind can count exactly what the timed region of open_bench times.
 *
 * Both libraries are linked in every mode, so the baseline includes their load-time allocations.
 */
#include "floor.h"
#include "ggml_gguf_abi.h"
#include "gguf.h"

#include <stdio.h>
#include <string.h>

static void quiet_log(int level, const char *text, void *user) {
    (void)level;
    (void)text;
    (void)user;
}

/* Not inlined, and not static: callgrind's --toggle-collect names them. */
__attribute__((noinline)) GGUFFile open_once_ours(const char *path) { return gguf_open(path); }

__attribute__((noinline)) GGUFFile open_once_first(const char *path) {
    GGUFFile f = gguf_open(path);
    if (f && gguf_tensor_count(f) > 0 && !gguf_get_tensor_by_index(f, 0)) {
        gguf_close(f);
        return NULL;
    }
    return f;
}

__attribute__((noinline)) struct gguf_context *open_once_ggml(const char *path) {
    struct gguf_init_params p = {.no_alloc = true, .ctx = NULL};
    return gguf_init_from_file(path, p);
}

__attribute__((noinline)) struct floor_map open_once_floor(const char *path) {
    return floor_walk(path);
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: open_once none|ours|tokens|first|ggml|floor FILE\n");
        return 2;
    }
    const char *mode = argv[1], *path = argv[2];
    ggml_log_set(quiet_log, NULL);
    if (strcmp(mode, "none") == 0) return 0;
    if (strcmp(mode, "ours") == 0 || strcmp(mode, "tokens") == 0) {
        GGUFFile f = open_once_ours(path);
        if (!f) {
            fprintf(stderr, "open_once: %s\n", gguf_last_error());
            return 1;
        }
        if (strcmp(mode, "tokens") == 0) {
            uint64_t n = 0;
            if (!gguf_get_string_array(f, "tokenizer.ggml.tokens", &n)) {
                fprintf(stderr, "open_once: %s\n", gguf_last_error());
                gguf_close(f);
                return 1;
            }
        }
        gguf_close(f);
        return 0;
    }
    if (strcmp(mode, "first") == 0) {
        GGUFFile f = open_once_first(path);
        if (!f) {
            fprintf(stderr, "open_once: %s\n", gguf_last_error());
            return 1;
        }
        gguf_close(f);
        return 0;
    }
    if (strcmp(mode, "ggml") == 0) {
        struct gguf_context *c = open_once_ggml(path);
        if (!c) {
            fprintf(stderr, "open_once: ggml's gguf_init_from_file failed on %s\n", path);
            return 1;
        }
        gguf_free(c);
        return 0;
    }
    if (strcmp(mode, "floor") == 0) {
        struct floor_map m = open_once_floor(path);
        if (!m.map) {
            fprintf(stderr, "open_once: the floor walk could not map %s\n", path);
            return 1;
        }
        floor_release(&m);
        return 0;
    }
    fprintf(stderr, "open_once: unknown mode %s\n", mode);
    return 2;
}
