/*
 * An outside C program using an installed libgguf: tests/install.rs builds it against a
 * temporary `make install` prefix, through pkg-config and through CMake (find_package(gguf)),
 * linked to the shared and to the static library, then runs it on testdata/sample.gguf.
 *
 *   consumer FILE.gguf EXPECTED_VERSION
 *
 * Checks that the header's version macros agree with each other, with the linked library
 * (gguf_library_version()), with EXPECTED_VERSION (Cargo.toml's, from the test) and, when the
 * build defines it, with GGUF_PACKAGE_VERSION (pkg-config's or CMake's idea of the version);
 * then prints a few facts about the file. tests/install/consumer.cpp prints the same lines.
 */
#include <gguf.h>

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static int fail(const char *what, const char *a, const char *b) {
  fprintf(stderr, "consumer: %s: '%s' != '%s'\n", what, a, b);
  return 1;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: consumer FILE.gguf EXPECTED_VERSION\n");
    return 2;
  }
  char macros[64];
  snprintf(macros, sizeof macros, "%d.%d.%d", LIBGGUF_VERSION_MAJOR, LIBGGUF_VERSION_MINOR,
           LIBGGUF_VERSION_PATCH);
  if (strcmp(macros, LIBGGUF_VERSION)) return fail("version macros", macros, LIBGGUF_VERSION);
  if (strcmp(gguf_library_version(), LIBGGUF_VERSION))
    return fail("linked library vs header", gguf_library_version(), LIBGGUF_VERSION);
  if (strcmp(argv[2], LIBGGUF_VERSION)) return fail("Cargo.toml vs header", argv[2], LIBGGUF_VERSION);
#ifdef GGUF_PACKAGE_VERSION
  if (strcmp(GGUF_PACKAGE_VERSION, LIBGGUF_VERSION))
    return fail("package metadata vs header", GGUF_PACKAGE_VERSION, LIBGGUF_VERSION);
#endif
  printf("library %s\n", gguf_library_version());

  GGUFFile f = gguf_open(argv[1]);
  if (!f) {
    fprintf(stderr, "consumer: %s\n", gguf_last_error());
    return 1;
  }
  const GGUFMetadataKV *arch = gguf_get_metadata(f, "general.architecture");
  printf("architecture %s\n", arch && arch->type == GGUF_VALUE_TYPE_STRING ? arch->value.str : "?");
  printf("metadata %" PRIu64 "\n", gguf_metadata_count(f));
  printf("tensors %" PRIu64 "\n", gguf_tensor_count(f));
  const GGUFTensorInfo *t = gguf_get_tensor_by_index(f, 0);
  if (t) {
    printf("tensor0 %s %s", t->name, gguf_dtype_name(t->dtype));
    for (uint32_t d = 0; d < t->n_dims; d++) printf("%c%" PRIu64, d ? 'x' : ' ', t->dims[d]);
    printf(" %s\n", gguf_tensor_data(f, t) ? "data" : "no-data");
  }
  uint64_t n_vocab = 0;
  const char **tokens = gguf_get_string_array(f, "tokenizer.ggml.tokens", &n_vocab);
  if (tokens && n_vocab) printf("vocab %" PRIu64 " %s\n", n_vocab, tokens[0]);
  gguf_close(f);
  printf("ok\n");
  return 0;
}
