/*
 * gguf-quantize: a model requantized in one command, as llama.cpp's llama-quantize does it
 * (the same presets, per-tensor choices and options where they overlap), through libgguf's C API
 * alone (gguf_requantize).
 *
 *   gguf-quantize [OPTIONS] SRC.gguf [DST.gguf] PRESET [NTHREADS]
 *
 * PRESET is one of llama-quantize's (Q4_K_M, Q5_K_S, Q8_0, IQ4_XS, F16, COPY, ...; any case;
 * Q3_K, Q4_K and Q5_K are the medium mixtures). Without DST the output is
 * ggml-model-PRESET.gguf beside SRC. NTHREADS: threads to use (default: one per core).
 *
 *   --pure                      every quantized tensor the preset's default type, no mixture
 *   --leave-output-tensor       output.weight keeps its type
 *   --output-tensor-type TYPE   the type of output.weight
 *   --token-embedding-type TYPE the type of the token embeddings
 *   --tensor-type PATTERN=TYPE  the type of the tensors whose name PATTERN (a regular
 *                               expression) matches; repeatable, the first match wins
 *   --tensor-type-file FILE     PATTERN=TYPE arguments read from FILE (separated by blanks)
 *   --imatrix FILE              an importance matrix (llama-imatrix's GGUF files)
 *   --include-weights NAME      use the imatrix only for the tensors whose name contains NAME
 *   --exclude-weights NAME      do not use it for those (not with --include-weights)
 *   --allow-requantize          allow quantizing tensors that are already quantized
 *   --keep-split                one output shard per shard of SRC (DST-NNNNN-of-MMMMM.gguf)
 *   --split-max-tensors N       split the output into shards of at most N tensors
 *   --no-sync                   do not flush the output to disk before it replaces DST
 *   -q, --quiet                 no progress and no summary
 *   -h, --help                  this help
 *
 * Progress goes to stderr when it is a terminal; a summary line to stdout. The output appears
 * whole or not at all: a failure (or Ctrl-C) leaves DST as it was. Exit status: 0 done,
 * 1 failed (the reason on stderr), 2 bad usage.
 */
#ifndef _WIN32
#define _POSIX_C_SOURCE 200809L /* isatty, sysconf, sigaction */
#include <unistd.h>
#endif

#include "gguf.h"

#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef _WIN32
#include <io.h>
#define isatty _isatty
#define STDERR_FILENO 2
#endif

static volatile sig_atomic_t g_interrupted;

static void on_signal(int sig) {
  (void)sig;
  g_interrupted = 1;
}

typedef struct {
  int terminal, quiet, shown;
  time_t started;
} Progress;

static bool progress(void *user, const GGUFRequantizeStep *s) {
  Progress *p = user;
  if (g_interrupted) return false;
  if (p->quiet || !p->terminal) return true;
  int permille = s->total_in ? (int)((double)s->bytes_in / (double)s->total_in * 1000) : 1000;
  fprintf(stderr, "\r\033[K[%4" PRIu64 "/%4" PRIu64 "] %5.1f%% %-40.40s %s -> %s", s->index + 1,
          s->count, permille / 10.0, s->name, gguf_dtype_name(s->from_type),
          gguf_dtype_name(s->to_type));
  fflush(stderr);
  p->shown = 1;
  return true;
}

static void usage(FILE *out, const char *argv0) {
  fprintf(out,
          "usage: %s [OPTIONS] SRC.gguf [DST.gguf] PRESET [NTHREADS]\n"
          "\n"
          "Requantizes a model as llama-quantize does: the preset's per-tensor types, streamed\n"
          "through an atomic write (a failure leaves no output).\n"
          "\n"
          "PRESET: Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q1_0 Q2_0 Q2_K Q2_K_S Q3_K_S Q3_K_M Q3_K_L Q4_K_S\n"
          "        Q4_K_M Q5_K_S Q5_K_M Q6_K IQ1_S IQ1_M IQ2_XXS IQ2_XS IQ2_S IQ2_M IQ3_XXS IQ3_XS\n"
          "        IQ3_S IQ3_M IQ4_NL IQ4_XS TQ1_0 TQ2_0 MXFP4_MOE F16 BF16 F32 COPY (any case;\n"
          "        Q3_K, Q4_K, Q5_K: the medium mixtures)\n"
          "DST:    default ggml-model-PRESET.gguf beside SRC\n"
          "NTHREADS: default one per core\n"
          "\n"
          "  --pure                      every quantized tensor the preset's type, no mixture\n"
          "  --leave-output-tensor       output.weight keeps its type\n"
          "  --output-tensor-type TYPE   the type of output.weight\n"
          "  --token-embedding-type TYPE the type of the token embeddings\n"
          "  --tensor-type PATTERN=TYPE  the type of the tensors PATTERN matches (repeatable)\n"
          "  --tensor-type-file FILE     PATTERN=TYPE arguments read from FILE\n"
          "  --imatrix FILE              an importance matrix (llama-imatrix's GGUF file)\n"
          "  --include-weights NAME      use the imatrix only for tensors whose name has NAME\n"
          "  --exclude-weights NAME      do not use it for those\n"
          "  --allow-requantize          allow quantizing tensors already quantized\n"
          "  --keep-split                one output shard per shard of SRC\n"
          "  --split-max-tensors N       shards of at most N tensors\n"
          "  --no-sync                   do not flush the output to disk before replacing DST\n"
          "  -q, --quiet                 no progress, no summary\n"
          "  -h, --help                  this help\n"
          "\n"
          "exit status: 0 done, 1 failed, 2 bad usage\n",
          argv0);
}

/* The library's last error without its "gguf: " prefix (this program names itself). */
static const char *message(void) {
  const char *m = gguf_last_error();
  return strncmp(m, "gguf: ", 6) == 0 ? m + 6 : m;
}

static int bad_usage(const char *argv0, const char *what, const char *arg) {
  fprintf(stderr, "%s: %s%s%s%s (see %s --help)\n", argv0, what, arg ? " '" : "", arg ? arg : "",
          arg ? "'" : "", argv0);
  return 2;
}

/* A growing list of strings (pointers into argv or into `owned`). */
typedef struct {
  const char **items;
  size_t n, cap;
} List;

static int push(List *l, const char *s) {
  if (l->n == l->cap) {
    size_t cap = l->cap ? l->cap * 2 : 8;
    const char **items = realloc((void *)l->items, cap * sizeof *items);
    if (!items) return 0;
    l->items = items;
    l->cap = cap;
  }
  l->items[l->n++] = s;
  return 1;
}

/* The blank-separated words of FILE appended to `l`; the words stay allocated in *buffer. */
static int read_words(const char *path, List *l, char **buffer) {
  FILE *fp = fopen(path, "rb");
  if (!fp) return 0;
  size_t cap = 4096, len = 0;
  char *buf = malloc(cap);
  int c;
  while (buf && (c = fgetc(fp)) != EOF) {
    if (len + 2 > cap) {
      char *bigger = realloc(buf, cap *= 2);
      if (!bigger) {
        free(buf);
        buf = NULL;
        break;
      }
      buf = bigger;
    }
    buf[len++] = (char)c;
  }
  /* A read error (a directory, an I/O error) is no end of file. */
  int failed = ferror(fp);
  fclose(fp);
  if (!buf) return 0;
  if (failed) {
    free(buf);
    return 0;
  }
  buf[len] = '\0';
  *buffer = buf;
  for (char *w = strtok(buf, " \t\r\n"); w; w = strtok(NULL, " \t\r\n")) {
    if (!push(l, w)) return 0;
  }
  return 1;
}

static unsigned cores(void) {
#if defined(_SC_NPROCESSORS_ONLN)
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (unsigned)n : 1;
#else
  return 1;
#endif
}

int main(int argc, char **argv) {
  const char *argv0 = argc > 0 ? argv[0] : "gguf-quantize";
  GGUFRequantizeOptions o;
  memset(&o, 0, sizeof o);
  List types = {0}, include = {0}, exclude = {0}, positional = {0};
  char *type_file = NULL;
  int quiet = 0, status = 1;
  unsigned long split = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *next = i + 1 < argc ? argv[i + 1] : NULL;
#define NEEDS(what)                                                                          \
  if (!next) {                                                                               \
    fprintf(stderr, "%s: %s needs %s (see %s --help)\n", argv0, a, what, argv0);             \
    status = 2;                                                                              \
    goto done;                                                                               \
  }                                                                                          \
  i++;
    if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
      usage(stdout, argv0);
      status = 0;
      goto done;
    } else if (strcmp(a, "--pure") == 0) {
      o.flags |= GGUF_REQUANTIZE_PURE;
    } else if (strcmp(a, "--leave-output-tensor") == 0) {
      o.flags |= GGUF_REQUANTIZE_LEAVE_OUTPUT_TENSOR;
    } else if (strcmp(a, "--allow-requantize") == 0) {
      o.flags |= GGUF_REQUANTIZE_ALLOW_REQUANTIZE;
    } else if (strcmp(a, "--keep-split") == 0) {
      o.flags |= GGUF_REQUANTIZE_KEEP_SPLIT;
    } else if (strcmp(a, "--no-sync") == 0) {
      o.flags |= GGUF_REQUANTIZE_NO_SYNC;
    } else if (strcmp(a, "-q") == 0 || strcmp(a, "--quiet") == 0) {
      quiet = 1;
    } else if (strcmp(a, "--output-tensor-type") == 0) {
      NEEDS("a TYPE");
      o.output_tensor_type = next;
    } else if (strcmp(a, "--token-embedding-type") == 0) {
      NEEDS("a TYPE");
      o.token_embedding_type = next;
    } else if (strcmp(a, "--tensor-type") == 0) {
      NEEDS("PATTERN=TYPE");
      if (!push(&types, next)) goto oom;
    } else if (strcmp(a, "--tensor-type-file") == 0) {
      NEEDS("a FILE");
      if (type_file) {
        status = bad_usage(argv0, "--tensor-type-file given twice, the second", next);
        goto done;
      }
      if (!read_words(next, &types, &type_file)) {
        fprintf(stderr, "%s: cannot read the tensor types in '%s'\n", argv0, next);
        goto done;
      }
    } else if (strcmp(a, "--imatrix") == 0) {
      NEEDS("a FILE");
      o.imatrix = next;
    } else if (strcmp(a, "--include-weights") == 0) {
      NEEDS("a NAME");
      if (!push(&include, next)) goto oom;
    } else if (strcmp(a, "--exclude-weights") == 0) {
      NEEDS("a NAME");
      if (!push(&exclude, next)) goto oom;
    } else if (strcmp(a, "--split-max-tensors") == 0) {
      NEEDS("a count");
      char *end = NULL;
      split = strtoul(next, &end, 10);
      if (!*next || *end || split == 0 || split > UINT32_MAX) {
        status = bad_usage(argv0, "--split-max-tensors takes a positive count, not", next);
        goto done;
      }
    } else if (a[0] == '-' && a[1] != '\0') {
      status = bad_usage(argv0, "unknown option", a);
      goto done;
    } else if (!push(&positional, a)) {
      goto oom;
    }
  }
  if (include.n && exclude.n) {
    status = bad_usage(argv0, "--include-weights and --exclude-weights cannot go together", NULL);
    goto done;
  }
  if (positional.n < 2) {
    status = bad_usage(argv0, "SRC.gguf and a PRESET are needed", NULL);
    goto done;
  }
  const char *src = positional.items[0];
  const char *dst = NULL, *preset = NULL;
  size_t at = 1;
  char default_dst[4096];
  if (gguf_requantize_preset_id(positional.items[1]) >= 0) {
    /* SRC PRESET: the output goes beside SRC. */
    preset = positional.items[1];
    const char *slash = strrchr(src, '/');
    int dir = slash ? (int)(slash - src + 1) : 0;
    char upper[64];
    size_t k = 0;
    for (; preset[k] && k + 1 < sizeof upper; k++)
      upper[k] = (char)(preset[k] >= 'a' && preset[k] <= 'z' ? preset[k] - 32 : preset[k]);
    upper[k] = '\0';
    snprintf(default_dst, sizeof default_dst, "%.*sggml-model-%s.gguf", dir, src, upper);
    dst = default_dst;
    at = 2;
  } else {
    dst = positional.items[1];
    if (positional.n < 3) {
      status = bad_usage(argv0, "a PRESET is needed after", dst);
      goto done;
    }
    preset = positional.items[2];
    if (gguf_requantize_preset_id(preset) < 0) {
      status = bad_usage(argv0, "not a preset:", preset);
      goto done;
    }
    at = 3;
  }
  unsigned long threads = cores();
  if (at < positional.n) {
    char *end = NULL;
    threads = strtoul(positional.items[at], &end, 10);
    if (!*positional.items[at] || *end || threads > 1024) {
      status = bad_usage(argv0, "NTHREADS is a count up to 1024, not", positional.items[at]);
      goto done;
    }
    if (threads == 0) threads = cores();
    at++;
  }
  if (at < positional.n) {
    status = bad_usage(argv0, "unexpected argument", positional.items[at]);
    goto done;
  }

  o.preset = preset;
  o.threads = (uint32_t)threads;
  o.tensor_types = types.items;
  o.n_tensor_types = types.n;
  o.include_weights = include.items;
  o.n_include_weights = include.n;
  o.exclude_weights = exclude.items;
  o.n_exclude_weights = exclude.n;
  o.split_max_tensors = (uint32_t)split;
  Progress p = {isatty(STDERR_FILENO), quiet, 0, time(NULL)};
  o.progress = progress;
  o.progress_user = &p;
  /* Ctrl-C or SIGTERM stops the work within about a second, even inside a tensor. */
  o.cancel = (const int *)&g_interrupted;
  signal(SIGINT, on_signal);
#ifdef SIGTERM
  signal(SIGTERM, on_signal);
#endif

  GGUFRequantizeResult r;
  bool ok = gguf_requantize(src, dst, &o, sizeof o, &r);
  if (p.shown) fprintf(stderr, "\r\033[K");
  if (!ok) {
    fprintf(stderr, "%s: %s\n", argv0,
            g_interrupted ? "interrupted: no output was written" : message());
    status = 1;
    goto done;
  }
  if (!quiet) {
    printf("%s: %s -> %s (%s): %" PRIu64 " tensors, %" PRIu64 " converted", argv0, src, dst,
           preset, r.tensors, r.converted);
    if (r.fell_back) printf(", %" PRIu64 " fell back", r.fell_back);
    printf(", %.2f MiB -> %.2f MiB", r.bytes_in / 1048576.0, r.bytes_out / 1048576.0);
    if (r.files > 1) printf(", %" PRIu64 " files", r.files);
    printf(", %ld s\n", (long)(time(NULL) - p.started));
  }
  status = 0;
  goto done;
oom:
  fprintf(stderr, "%s: out of memory\n", argv0);
  status = 1;
done:
  free((void *)types.items);
  free((void *)include.items);
  free((void *)exclude.items);
  free((void *)positional.items);
  free(type_file);
  return status;
}
