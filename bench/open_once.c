/*
 * open_once: opens one GGUF file once and closes it, for counting heap allocations under
 * valgrind (bench/run.sh runs it with `valgrind --tool=memcheck` and reads the heap summary).
 *
 *   open_once none   FILE     nothing (the process's own allocations: the baseline)
 *   open_once ours   FILE     gguf_open + gguf_close
 *   open_once tokens FILE     gguf_open + gguf_get_string_array(tokenizer.ggml.tokens) + close
 *   open_once ggml   FILE     ggml's gguf_init_from_file({.no_alloc = true}) + gguf_free
 *
 * Both libraries are linked in every mode, so the baseline includes their load-time allocations.
 */
#include "ggml_gguf_abi.h"
#include "gguf.h"

#include <stdio.h>
#include <string.h>

static void quiet_log(int level, const char *text, void *user) {
    (void)level;
    (void)text;
    (void)user;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: open_once none|ours|tokens|ggml FILE\n");
        return 2;
    }
    const char *mode = argv[1], *path = argv[2];
    ggml_log_set(quiet_log, NULL);
    if (strcmp(mode, "none") == 0) return 0;
    if (strcmp(mode, "ours") == 0 || strcmp(mode, "tokens") == 0) {
        GGUFFile f = gguf_open(path);
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
    if (strcmp(mode, "ggml") == 0) {
        struct gguf_init_params p = {.no_alloc = true, .ctx = NULL};
        struct gguf_context *c = gguf_init_from_file(path, p);
        if (!c) {
            fprintf(stderr, "open_once: ggml's gguf_init_from_file failed on %s\n", path);
            return 1;
        }
        gguf_free(c);
        return 0;
    }
    fprintf(stderr, "open_once: unknown mode %s\n", mode);
    return 2;
}
