/* The digest of all of a GGUF file's tensor data through the C API (one GGUFDigester fed every
 * tensor in order, or one gguf_tensor_digest per tensor): the single-stream speed that
 * bench/digest.sh compares with sha256sum and cat.
 *
 *   digest_file sha1|sha256|xxh64 [--per-tensor] FILE
 *   digest_file --make MIB FILE     writes a model of 64 I8 tensors of pseudo-random bytes
 */
#include "gguf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int make(uint64_t mib, const char *path) {
  uint64_t per = (mib << 20) / 64, x = 0x9e3779b97f4a7c15ull;
  unsigned char *data = malloc(per ? per : 1);
  GGUFWriter w = gguf_writer_new();
  if (!data || !w) return 1;
  for (int i = 0; i < 64; i++) {
    for (uint64_t k = 0; k < per; k++) { /* xorshift64 */
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      data[k] = (unsigned char)(x >> 32);
    }
    char name[32];
    snprintf(name, sizeof name, "blk.%d.weight", i);
    if (!gguf_writer_add_tensor(w, name, 1, &per, GGUF_DATA_TYPE_I8, data, per)) break;
  }
  int ok = gguf_writer_write_file(w, path);
  if (!ok) fprintf(stderr, "%s\n", gguf_last_error());
  gguf_writer_free(w);
  free(data);
  return ok ? 0 : 1;
}

int main(int argc, char **argv) {
  if (argc == 4 && !strcmp(argv[1], "--make")) return make(strtoull(argv[2], NULL, 10), argv[3]);
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
