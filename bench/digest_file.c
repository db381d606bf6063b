/* The digest of all of a GGUF file's tensor data through the C API (one GGUFDigester fed every
 * tensor in order, or one gguf_tensor_digest per tensor): the single-stream speed that
 * bench/digest.sh compares with sha256sum and cat.
 *
 *   digest_file sha1|sha256|xxh64 [--per-tensor] FILE
 */
#include "gguf.h"

#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
  int per_tensor = argc == 4 && !strcmp(argv[2], "--per-tensor");
  if (argc != 3 + per_tensor) {
    fprintf(stderr, "usage: %s sha1|sha256|xxh64 [--per-tensor] FILE\n", argv[0]);
    return 2;
  }
  uint32_t alg = 0;
  for (uint32_t id = 1; gguf_digest_name(id); id++)
    if (!strcmp(gguf_digest_name(id), argv[1])) alg = id;
  GGUFFile f = alg ? gguf_open_ex(argv[argc - 1], GGUF_OPEN_FLAG_SINGLE_SHARD) : NULL;
  if (!f) {
    fprintf(stderr, "%s\n", gguf_last_error());
    return 1;
  }
  unsigned char out[32];
  size_t size = gguf_digest_size(alg);
  GGUFDigester d = gguf_digester_new(alg);
  for (uint64_t i = 0; i < gguf_tensor_count(f); i++) {
    const GGUFTensorInfo *t = gguf_get_tensor_by_index(f, i);
    int ok = per_tensor ? gguf_tensor_digest(f, t, alg, out, sizeof out)
                        : gguf_digester_update(d, gguf_tensor_data(f, t), (size_t)t->size_bytes);
    if (!ok) {
      fprintf(stderr, "%s\n", gguf_last_error());
      return 1;
    }
  }
  if (!per_tensor && !gguf_digester_finish(d, out, sizeof out)) return 1;
  for (size_t i = 0; i < size; i++) printf("%02x", out[i]);
  printf("\n");
  gguf_digester_free(d);
  gguf_close(f);
  return 0;
}
