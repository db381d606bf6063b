// An outside C++ program using an installed libgguf: the C++ twin of tests/install/consumer.c
// (same arguments, same checks, same output), built by tests/install.rs through pkg-config and
// through CMake against a temporary `make install` prefix.
#include <gguf.h>

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

static_assert(LIBGGUF_VERSION_MAJOR >= 0 && LIBGGUF_VERSION_MINOR >= 0 && LIBGGUF_VERSION_PATCH >= 0,
              "the version macros are integer constants");

namespace {

struct Closer {
  void operator()(GGUFFileImpl *f) const { gguf_close(f); }
};
using File = std::unique_ptr<GGUFFileImpl, Closer>;

int fail(const char *what, const std::string &a, const std::string &b) {
  std::fprintf(stderr, "consumer: %s: '%s' != '%s'\n", what, a.c_str(), b.c_str());
  return 1;
}

}  // namespace

int main(int argc, char **argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: consumer FILE.gguf EXPECTED_VERSION\n");
    return 2;
  }
  const std::string header = LIBGGUF_VERSION;
  const std::string macros = std::to_string(LIBGGUF_VERSION_MAJOR) + "." +
                             std::to_string(LIBGGUF_VERSION_MINOR) + "." +
                             std::to_string(LIBGGUF_VERSION_PATCH);
  if (macros != header) return fail("version macros", macros, header);
  if (gguf_library_version() != header) return fail("linked library vs header", gguf_library_version(), header);
  if (argv[2] != header) return fail("Cargo.toml vs header", argv[2], header);
#ifdef GGUF_PACKAGE_VERSION
  if (std::string(GGUF_PACKAGE_VERSION) != header)
    return fail("package metadata vs header", GGUF_PACKAGE_VERSION, header);
#endif
  std::printf("library %s\n", gguf_library_version());

  File f(gguf_open(argv[1]));
  if (!f) {
    std::fprintf(stderr, "consumer: %s\n", gguf_last_error());
    return 1;
  }
  const GGUFMetadataKV *arch = gguf_get_metadata(f.get(), "general.architecture");
  std::printf("architecture %s\n",
              arch && arch->type == GGUF_VALUE_TYPE_STRING ? arch->value.str : "?");
  std::printf("metadata %" PRIu64 "\n", gguf_metadata_count(f.get()));
  std::printf("tensors %" PRIu64 "\n", gguf_tensor_count(f.get()));
  if (const GGUFTensorInfo *t = gguf_get_tensor_by_index(f.get(), 0)) {
    std::string dims;
    for (uint32_t d = 0; d < t->n_dims; d++) dims += (d ? "x" : " ") + std::to_string(t->dims[d]);
    std::printf("tensor0 %s %s%s %s\n", t->name, gguf_dtype_name(t->dtype), dims.c_str(),
                gguf_tensor_data(f.get(), t) ? "data" : "no-data");
  }
  uint64_t n_vocab = 0;
  const char **tokens = gguf_get_string_array(f.get(), "tokenizer.ggml.tokens", &n_vocab);
  if (tokens && n_vocab) {
    std::vector<std::string> vocab(tokens, tokens + n_vocab);
    std::printf("vocab %zu %s\n", vocab.size(), vocab.front().c_str());
  }
  f.reset();
  std::printf("ok\n");
  return 0;
}
