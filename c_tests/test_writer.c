/*
 * test_writer.c: the writer API (every gguf_writer_* function) and gguf_library_version.
 *
 * Files are built from C and read back with gguf_open; every key (in order), type, value, array
 * element and tensor (dims, type, size, offsets packed at the alignment, data bytes, zero
 * padding) is compared with what was given:
 *  - the 11 scalar setters at their extremes (float bits exact, NaN payloads and -0.0
 *    included); strings with explicit lengths (an embedded NUL, shorter than the C string, empty
 *    with and without a pointer); gguf_writer_set_array for every fixed-size type (empty with
 *    NULL data); string arrays with and without lengths; gguf_writer_set_array_encoded for flat
 *    arrays and nested ones (arrays of arrays of strings and integers, 3 levels, empty); all of
 *    it in versions 1, 2 and 3 and both byte orders (big-endian values read back in host order);
 *  - replacing a value (position kept, type may change), removing keys (present and missing),
 *    the alignment (gguf_writer_set_alignment, general.alignment as a UINT32; refused values
 *    leave the previous one in place);
 *  - tensors by pointer (F32, F16, BF16, Q4_0, Q8_0, Q4_K, Q6_K, I8 to I64, F64; 0-d, empty,
 *    4-d) and streamed (gguf_writer_begin_file, gguf_writer_write_tensor_data in order,
 *    gguf_writer_finish), and every misuse of streaming, each with its code;
 *  - every refusal with the reader's code (versions, byte orders, alignments, empty keys, BOOL
 *    bytes, element types, encoded arrays with trailing bytes, truncated or with type 13, nested
 *    too deep; duplicate tensors, more than 4 dims, bad block multiples, unknown types, wrong and
 *    overflowing sizes), each leaving the writer as it was; I/O failures;
 *  - gguf_writer_from_file: a faithful copy of every valid fixture (from a path and from memory,
 *    written whole, streamed or into memory with gguf_writer_write_memory) is byte-identical to
 *    it; a metadata editor (a value changed, a
 *    key removed, one added, a tensor added) leaves everything else identical; a split model
 *    opened from any shard is gathered into one file without split.* keys;
 *  - NULL for every pointer argument of every writer function; gguf_writer_free(NULL);
 *    gguf_library_version against LIBGGUF_VERSION and its MAJOR/MINOR/PATCH macros.
 *
 * The writer never loses a file: an in-place edit of a mapped file (the source handle keeps
 * reading the old one), failures under a file size limit (the destination unchanged, no
 * temporary file left, the writer reusable, streaming failures sticky); gguf_writer_set_sync.
 *
 * The interop corpus (values, aligned, streamed, edited, nested, big_endian .gguf) is written,
 * with a JSON manifest of what each file holds (NAME.expected.json), and read back on every run.
 * With GGUF_WRITER_OUT=DIR the corpus is written into DIR and nothing else runs:
 * tests/c_writer.rs then reads it with the reference Python reader and with ggml's parser.
 *
 * Usage: test_writer FIXTURE...   (every path tests/c_api.rs writes; picked by file name)
 *        GGUF_WRITER_OUT=DIR test_writer
 */
#define _POSIX_C_SOURCE 200809L /* mkdtemp, rmdir, setrlimit, sigaction */

#include "gguf.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <dirent.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "check.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))
#define T(x) GGUF_VALUE_TYPE_##x
#define D(x) GGUF_DATA_TYPE_##x

/* ---- where files go ------------------------------------------------------------------------ */

static char g_dir[2048];      /* the directory every file is written to */
static int g_keep;            /* export mode: leave the files there */
static char g_made[96][48];   /* names written into g_dir, removed at the end */
static size_t g_n_made;

/* `name` in g_dir, in one of 4 rotating buffers. */
static const char *in_dir(const char *name) {
    static char paths[4][2200];
    static unsigned slot;
    char *p = paths[slot++ % 4];
    int n = snprintf(p, sizeof paths[0], "%s/%s", g_dir, name);
    CHECK(n > 0 && (size_t)n < sizeof paths[0]);
    return p;
}

/* The path to write `name` to; the file is removed at the end (unless exporting). */
static const char *out_path(const char *name) {
    size_t i = 0;
    while (i < g_n_made && strcmp(g_made[i], name) != 0) i++;
    if (i == g_n_made) {
        CHECK(g_n_made < COUNT(g_made) && strlen(name) < sizeof g_made[0]);
        strcpy(g_made[g_n_made++], name);
    }
    return in_dir(name);
}

static void remove_outputs(void) {
    for (size_t i = 0; i < g_n_made; i++) remove(in_dir(g_made[i]));
    CHECK(rmdir(g_dir) == 0);
}

/* A fresh directory beside the fixtures (programs run concurrently: each has its own). */
static void make_dir(void) {
    const char *full = fixture("full.gguf");
    const char *slash = strrchr(full, '/');
    int len = slash ? (int)(slash - full) : 1;
    int n = snprintf(g_dir, sizeof g_dir, "%.*s/writer-XXXXXX", len, slash ? full : ".");
    CHECK(n > 0 && (size_t)n < sizeof g_dir);
    CHECK(mkdtemp(g_dir) != NULL);
}

/* ---- what the files hold --------------------------------------------------------------------- */

/* One metadata entry: how it is set, and what the file must then hold. */
struct kv {
    const char *key;
    uint32_t type;                /* GGUF_VALUE_TYPE_* */
    uint64_t u;                   /* unsigned integers, BOOL (0/1), the bits of FLOAT32/64 */
    int64_t i;                    /* signed integers */
    const char *str;              /* STRING: `len` bytes (str may be NULL when len is 0) */
    size_t len;
    uint32_t elem;                /* ARRAY: element type and count */
    uint64_t count;
    const void *data;             /* ... fixed-size elements as C values, host order */
    const char *const *strs;      /* ... STRING elements; lens NULL: NUL-terminated */
    const size_t *lens;
    int encoded;                  /* ... given to gguf_writer_set_array_encoded: */
    const unsigned char *enc;     /*     the elements as a little-endian v3 file holds them */
    size_t enc_size;
};

#define KU(t, k, v) {.key = k, .type = T(t), .u = (v)}
#define KI(t, k, v) {.key = k, .type = T(t), .i = (v)}
#define KSTR(k, s, n) {.key = k, .type = T(STRING), .str = s, .len = n}
#define KARR(t, k, a) {.key = k, .type = T(ARRAY), .elem = T(t), .count = COUNT(a), .data = a}
#define KSTRS(k, s, l)                                                                         \
    {.key = k, .type = T(ARRAY), .elem = T(STRING), .count = COUNT(s), .strs = s, .lens = l}
#define KENC(t, k, n, e)                                                                       \
    {.key = k, .type = T(ARRAY), .elem = T(t), .count = n, .encoded = 1, .enc = e,             \
     .enc_size = sizeof e}

/* Little-endian bytes of small constants, for encoded arrays. */
#define LE32(x)                                                                                \
    (unsigned char)((x) & 0xff), (unsigned char)(((x) >> 8) & 0xff),                           \
        (unsigned char)(((x) >> 16) & 0xff), (unsigned char)(((x) >> 24) & 0xff)
#define LE64(x) LE32(x), 0, 0, 0, 0

static const uint8_t A_U8[] = {0, 1, 255};
static const int8_t A_I8[] = {-128, 0, 127};
static const uint16_t A_U16[] = {0, 65535, 1234};
static const int16_t A_I16[] = {-32768, 32767, -1};
static const uint32_t A_U32[] = {0, UINT32_MAX, 123456789};
static const int32_t A_I32[] = {INT32_MIN, INT32_MAX, -1, 0};
/* 1.5, -0.0, infinity, a NaN with a payload, the smallest subnormal (given as float bits). */
static const uint32_t A_F32[] = {0x3fc00000u, 0x80000000u, 0x7f800000u, 0x7fc00123u, 1};
static const uint8_t A_BOOL[] = {1, 0, 1, 1};
static const uint64_t A_U64[] = {0, UINT64_MAX, UINT64_C(1) << 40};
static const int64_t A_I64[] = {INT64_MIN, INT64_MAX, -1};
/* 1.5, -0.125, -infinity, a NaN with a payload. */
static const uint64_t A_F64[] = {UINT64_C(0x3ff8000000000000), UINT64_C(0xbfc0000000000000),
                                 UINT64_C(0xfff0000000000000), UINT64_C(0x7ff8000000000abc)};
static const char *const TOKENS[] = {"<s>", "", "h\xc3\xa9llo", "a\0b", "</s>xyz"};
static const size_t TOKEN_LENS[] = {3, 0, 6, 3, 4}; /* "</s>xyz" is cut to "</s>" */
static const char *const WORDS[] = {"alpha", "", "gamma delta"};

/* Flat arrays, encoded: [1, 0x1234, 65535] and ["hi", ""]. */
static const unsigned char E_U16[] = {1, 0, 0x34, 0x12, 0xff, 0xff};
static const unsigned char E_STRINGS[] = {LE64(2), 'h', 'i', LE64(0)};

/* Every value type; flat arrays only, so ggml reads it too. */
static const struct kv VALUES[] = {
    KSTR("general.architecture", "llama", 5),
    KSTR("general.name", "written from C", 14),
    KU(UINT8, "v.u8", 255),
    KI(INT8, "v.i8", -128),
    KU(UINT16, "v.u16", 65535),
    KI(INT16, "v.i16", -32768),
    KU(UINT32, "v.u32", UINT32_MAX),
    KI(INT32, "v.i32", INT32_MIN),
    KU(FLOAT32, "v.f32", 0x3fc00000u),        /* 1.5 */
    KU(FLOAT32, "v.f32_nan", 0x7fc00123u),    /* a NaN with a payload */
    KU(BOOL, "v.true", 1),
    KU(BOOL, "v.false", 0),
    KU(UINT64, "v.u64", UINT64_MAX),
    KI(INT64, "v.i64", INT64_MIN),
    KU(FLOAT64, "v.f64", UINT64_C(0xc002000000000000)),   /* -2.25 */
    KU(FLOAT64, "v.f64_neg_zero", UINT64_C(0x8000000000000000)),
    KSTR("v.string", "h\xc3\xa9llo\0world", 12),
    KSTR("v.cut", "abcdef", 3),
    KSTR("v.empty", NULL, 0),
    KSTR("v.empty_ptr", "", 0),
    KARR(UINT8, "a.u8", A_U8),
    KARR(INT8, "a.i8", A_I8),
    KARR(UINT16, "a.u16", A_U16),
    KARR(INT16, "a.i16", A_I16),
    KARR(UINT32, "a.u32", A_U32),
    KARR(INT32, "a.i32", A_I32),
    KARR(FLOAT32, "a.f32", A_F32),
    KARR(BOOL, "a.bool", A_BOOL),
    KARR(UINT64, "a.u64", A_U64),
    KARR(INT64, "a.i64", A_I64),
    KARR(FLOAT64, "a.f64", A_F64),
    {.key = "a.empty", .type = T(ARRAY), .elem = T(UINT32)},
    KSTRS("a.tokens", TOKENS, TOKEN_LENS),
    KSTRS("a.words", WORDS, NULL),
    {.key = "a.no_strings", .type = T(ARRAY), .elem = T(STRING)},
    KENC(UINT16, "e.u16", 3, E_U16),
    KENC(STRING, "e.strings", 2, E_STRINGS),
};

/* [["ab", ""], [1, -1, INT32_MAX] as INT32, [[7, 8] as UINT8]]: arrays of arrays. */
static const unsigned char E_MIXED[] = {
    LE32(8),  LE64(2), LE64(2), 'a', 'b', LE64(0),
    LE32(5),  LE64(3), LE32(1), LE32(0xffffffffu), LE32(0x7fffffffu),
    LE32(9),  LE64(1), LE32(0), LE64(2), 7, 8,
};
/* [["x"], [], ["y", "zz"]]: arrays of strings. */
static const unsigned char E_ROWS[] = {
    LE32(8), LE64(1), LE64(1), 'x',
    LE32(8), LE64(0),
    LE32(8), LE64(2), LE64(1), 'y', LE64(2), 'z', 'z',
};
/* [[[1.5]]]: three levels. */
static const unsigned char E_DEEP[] = {LE32(9), LE64(1), LE32(6), LE64(1), LE32(0x3fc00000u)};

/* Nested arrays (which ggml does not read). */
static const struct kv NESTED[] = {
    KENC(ARRAY, "n.mixed", 3, E_MIXED),
    KENC(ARRAY, "n.rows", 3, E_ROWS),
    KENC(ARRAY, "n.deep", 1, E_DEEP),
    {.key = "n.empty", .type = T(ARRAY), .elem = T(ARRAY), .encoded = 1},
};

/* One tensor: byte j of its data is pattern(seed, j). */
struct tensor {
    const char *name;
    uint32_t dtype;
    uint32_t n_dims;
    uint64_t dims[4];
    uint64_t size; /* bytes, from ggml's block geometry */
    unsigned seed;
};

static unsigned char pattern(unsigned seed, uint64_t j) {
    return (unsigned char)((seed * 29u + j * 13u + 7u) & 0xff);
}

static const struct tensor TENSORS[] = {
    {"token_embd.weight", D(F32), 2, {4, 3}, 48, 1},
    {"blk.0.attn_q.weight", D(Q4_0), 2, {64, 2}, 2 * 2 * 18, 2},
    {"blk.0.ffn_down.weight", D(Q4_K), 2, {256, 2}, 2 * 144, 3},
    {"blk.0.ffn_up.weight", D(Q8_0), 1, {32}, 34, 4},
    {"scalar", D(F16), 0, {0}, 2, 5},
    {"empty", D(F32), 2, {4, 0}, 0, 6},
    {"four_d", D(I8), 4, {2, 3, 4, 5}, 120, 7},
    {"bf16", D(BF16), 1, {8}, 16, 8},
    {"q6_k", D(Q6_K), 1, {256}, 210, 9},
    {"i16", D(I16), 2, {3, 2}, 12, 10},
    {"i32", D(I32), 1, {3}, 12, 11},
    {"i64", D(I64), 1, {2}, 16, 12},
    {"f64", D(F64), 3, {2, 2, 1}, 32, 13},
};

/* A file: how it is written and what it must hold. */
struct spec {
    const char *name;
    uint32_t version, order, alignment;
    const struct kv *kvs;
    size_t n_kvs;
    const struct tensor *ts;
    size_t n_ts;
    int ggml; /* ggml's parser reads it: little-endian, version 2 or 3, no nested arrays */
};

/* ---- values -------------------------------------------------------------------------------- */

static size_t type_size(uint32_t t) {
    switch (t) {
    case T(UINT8): case T(INT8): case T(BOOL): return 1;
    case T(UINT16): case T(INT16): return 2;
    case T(UINT32): case T(INT32): case T(FLOAT32): return 4;
    case T(UINT64): case T(INT64): case T(FLOAT64): return 8;
    }
    return 0;
}

static int is_signed(uint32_t t) {
    return t == T(INT8) || t == T(INT16) || t == T(INT32) || t == T(INT64);
}

/* A `size`-byte host-order element at p, zero-extended. */
static uint64_t host_elem(const void *p, size_t size) {
    uint8_t a; uint16_t b; uint32_t c; uint64_t d;
    switch (size) {
    case 1: memcpy(&a, p, 1); return a;
    case 2: memcpy(&b, p, 2); return b;
    case 4: memcpy(&c, p, 4); return c;
    default: memcpy(&d, p, 8); return d;
    }
}

static int64_t sign_extend(uint64_t raw, size_t size) {
    switch (size) {
    case 1: return (int8_t)(raw & 0xff);
    case 2: return (int16_t)(raw & 0xffff);
    case 4: return (int32_t)(raw & 0xffffffffu);
    default: return (int64_t)raw;
    }
}

/* Reads an n-byte little-endian number at *p (encoded arrays), advancing *p. */
static uint64_t le(const unsigned char **p, const unsigned char *end, size_t n) {
    CHECK((size_t)(end - *p) >= n);
    uint64_t v = 0;
    for (size_t i = n; i-- > 0;) v = v << 8 | (*p)[i];
    *p += n;
    return v;
}

/* Raw array bytes in a file's byte order and length width. */
struct cursor {
    const unsigned char *p, *end;
    int big;
    size_t w; /* 4 in version 1, 8 after */
};

static uint64_t take(struct cursor *c, size_t n) {
    CHECK((size_t)(c->end - c->p) >= n);
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) v = v << 8 | (c->big ? c->p[i] : c->p[n - 1 - i]);
    c->p += n;
    return v;
}

static void set_kv(GGUFWriter w, const struct kv *e) {
    float f;
    double d;
    uint32_t bits32 = (uint32_t)e->u;
    switch (e->type) {
    case T(UINT8): CHECK(gguf_writer_set_uint8(w, e->key, (uint8_t)e->u)); break;
    case T(INT8): CHECK(gguf_writer_set_int8(w, e->key, (int8_t)e->i)); break;
    case T(UINT16): CHECK(gguf_writer_set_uint16(w, e->key, (uint16_t)e->u)); break;
    case T(INT16): CHECK(gguf_writer_set_int16(w, e->key, (int16_t)e->i)); break;
    case T(UINT32): CHECK(gguf_writer_set_uint32(w, e->key, (uint32_t)e->u)); break;
    case T(INT32): CHECK(gguf_writer_set_int32(w, e->key, (int32_t)e->i)); break;
    case T(FLOAT32):
        memcpy(&f, &bits32, 4);
        CHECK(gguf_writer_set_float32(w, e->key, f));
        break;
    case T(BOOL): CHECK(gguf_writer_set_bool(w, e->key, e->u != 0)); break;
    case T(UINT64): CHECK(gguf_writer_set_uint64(w, e->key, e->u)); break;
    case T(INT64): CHECK(gguf_writer_set_int64(w, e->key, e->i)); break;
    case T(FLOAT64):
        memcpy(&d, &e->u, 8);
        CHECK(gguf_writer_set_float64(w, e->key, d));
        break;
    case T(STRING): CHECK(gguf_writer_set_string(w, e->key, e->str, e->len)); break;
    case T(ARRAY):
        if (e->encoded)
            CHECK(gguf_writer_set_array_encoded(w, e->key, e->elem, e->count, e->enc, e->enc_size));
        else if (e->elem == T(STRING))
            CHECK(gguf_writer_set_string_array(w, e->key, e->strs, e->lens, e->count));
        else
            CHECK(gguf_writer_set_array(w, e->key, e->elem, e->data, e->count));
        break;
    default: CHECK(!"a value type");
    }
}

/* The typed getter of `elem` (host order). */
static const void *typed_array(GGUFFile f, const char *key, uint32_t elem, uint64_t *n) {
    switch (elem) {
    case T(UINT8): return gguf_get_uint8_array(f, key, n);
    case T(INT8): return gguf_get_int8_array(f, key, n);
    case T(UINT16): return gguf_get_uint16_array(f, key, n);
    case T(INT16): return gguf_get_int16_array(f, key, n);
    case T(UINT32): return gguf_get_uint32_array(f, key, n);
    case T(INT32): return gguf_get_int32_array(f, key, n);
    case T(FLOAT32): return gguf_get_float_array(f, key, n);
    case T(BOOL): return gguf_get_bool_array(f, key, n);
    case T(UINT64): return gguf_get_uint64_array(f, key, n);
    case T(INT64): return gguf_get_int64_array(f, key, n);
    case T(FLOAT64): return gguf_get_float64_array(f, key, n);
    }
    return NULL;
}

/* Compares `count` elements of type `elem`, encoded little-endian v3 at *src, with the same
 * elements as the file holds them at `dst`; advances both. */
static void same_encoded(const unsigned char **src, const unsigned char *end, struct cursor *dst,
                         uint32_t elem, uint64_t count) {
    for (uint64_t i = 0; i < count; i++) {
        if (elem == T(STRING)) {
            uint64_t n = le(src, end, 8);
            CHECK(take(dst, dst->w) == n);
            CHECK((uint64_t)(end - *src) >= n && (uint64_t)(dst->end - dst->p) >= n);
            CHECK(n == 0 || memcmp(*src, dst->p, (size_t)n) == 0);
            *src += n;
            dst->p += n;
        } else if (elem == T(ARRAY)) {
            uint32_t inner = (uint32_t)le(src, end, 4);
            uint64_t n = le(src, end, 8);
            CHECK(take(dst, 4) == inner);
            CHECK(take(dst, dst->w) == n);
            same_encoded(src, end, dst, inner, n);
        } else {
            size_t s = type_size(elem);
            CHECK(s > 0);
            CHECK(le(src, end, s) == take(dst, s));
        }
    }
}

static void check_array(GGUFFile f, const GGUFMetadataKV *kv, const struct kv *e) {
    struct cursor c = {kv->array_data, (const unsigned char *)kv->array_data + kv->array_bytes,
                       gguf_byte_order(f) == GGUF_BYTE_ORDER_BIG, gguf_version(f) == 1 ? 4 : 8};
    CHECK(kv->array_type == e->elem && kv->value.u32 == e->elem);
    CHECK(kv->array_len == e->count);
    CHECK(kv->array_data != NULL);
    if (e->encoded) {
        const unsigned char *src = e->enc;
        same_encoded(&src, e->enc + e->enc_size, &c, e->elem, e->count);
        CHECK(src == e->enc + e->enc_size);
    } else if (e->elem == T(STRING)) {
        uint64_t n = 99;
        const char **cut = gguf_get_string_array(f, e->key, &n);
        CHECK(cut != NULL && n == e->count);
        for (uint64_t i = 0; i < e->count; i++) {
            size_t len = e->lens ? e->lens[i] : strlen(e->strs[i]);
            uint64_t got = 99;
            const char *s = gguf_get_array_string(f, e->key, i, &got);
            CHECK(s != NULL && got == len && memcmp(s, e->strs[i], len) == 0);
            CHECK(take(&c, c.w) == len && memcmp(c.p, e->strs[i], len) == 0);
            c.p += len;
            /* The C strings stop at the first NUL. */
            const char *nul = memchr(e->strs[i], 0, len);
            size_t cut_len = nul ? (size_t)(nul - e->strs[i]) : len;
            CHECK(strlen(cut[i]) == cut_len && memcmp(cut[i], e->strs[i], cut_len) == 0);
        }
    } else {
        size_t s = type_size(e->elem);
        for (uint64_t i = 0; i < e->count; i++)
            CHECK(take(&c, s) == host_elem((const unsigned char *)e->data + i * s, s));
        uint64_t n = 99;
        const void *host = typed_array(f, e->key, e->elem, &n);
        CHECK(host != NULL && n == e->count);
        CHECK(e->count == 0 || memcmp(host, e->data, (size_t)(e->count * s)) == 0);
    }
    CHECK(c.p == c.end);
}

/* Entry `index` of `f` is `e`. */
static void check_kv(GGUFFile f, uint64_t index, const struct kv *e) {
    const GGUFMetadataKV *kv = gguf_get_metadata_by_index(f, index);
    CHECK(kv != NULL && kv->index == index);
    if (strcmp(kv->key, e->key) != 0)
        fprintf(stderr, "entry %" PRIu64 " is %s, expected %s\n", index, kv->key, e->key);
    CHECK(strcmp(kv->key, e->key) == 0 && kv->key_len == strlen(e->key));
    CHECK(gguf_get_metadata(f, e->key) == kv);
    CHECK(kv->type == e->type);
    uint32_t b32;
    uint64_t b64;
    switch (e->type) {
    case T(UINT8): case T(UINT16): case T(UINT32): CHECK(kv->value.u32 == e->u); break;
    case T(INT8): case T(INT16): case T(INT32): CHECK(kv->value.i32 == e->i); break;
    case T(UINT64): CHECK(kv->value.u64 == e->u); break;
    case T(INT64): CHECK(kv->value.i64 == e->i); break;
    case T(BOOL): CHECK(kv->value.b == (e->u != 0)); break;
    case T(FLOAT32):
        memcpy(&b32, &kv->value.f32, 4);
        CHECK(b32 == e->u);
        break;
    case T(FLOAT64):
        memcpy(&b64, &kv->value.f64, 8);
        CHECK(b64 == e->u);
        break;
    case T(STRING):
        CHECK(kv->str_len == e->len);
        CHECK(e->len == 0 || memcmp(kv->value.str, e->str, e->len) == 0);
        CHECK(kv->value.str[e->len] == '\0');
        break;
    case T(ARRAY): check_array(f, kv, e); break;
    default: CHECK(!"a value type");
    }
    if (e->type != T(ARRAY)) CHECK(kv->array_len == 0 && kv->array_data == NULL);
    if (e->type != T(STRING)) CHECK(kv->str_len == 0);
}

/* ---- tensors ------------------------------------------------------------------------------- */

static unsigned char *make_data(const struct tensor *t) {
    unsigned char *p = malloc(t->size ? (size_t)t->size : 1); /* never NULL: NULL streams */
    CHECK(p != NULL);
    for (uint64_t j = 0; j < t->size; j++) p[j] = pattern(t->seed, j);
    return p;
}

static uint64_t align_up(uint64_t x, uint64_t a) {
    return (x + a - 1) / a * a;
}

/* Adds the tensors with their data, kept in `bufs` until the file is written. */
static void add_tensors(GGUFWriter w, const struct tensor *ts, size_t n, unsigned char **bufs) {
    for (size_t k = 0; k < n; k++) {
        bufs[k] = make_data(&ts[k]);
        CHECK(gguf_writer_add_tensor(w, ts[k].name, ts[k].n_dims, ts[k].dims, ts[k].dtype,
                                     bufs[k], ts[k].size));
    }
}

static void free_all(unsigned char **bufs, size_t n) {
    for (size_t k = 0; k < n; k++) free(bufs[k]);
}

/* The tensors of `f` are `ts`, in order, packed at the alignment, padded with zeros. */
static void check_tensors(GGUFFile f, const struct tensor *ts, size_t n, uint64_t alignment) {
    CHECK(gguf_tensor_count(f) == n);
    const uint64_t data_offset = gguf_data_offset(f);
    CHECK(data_offset % alignment == 0);
    const unsigned char *section = gguf_get_shard(f, 0)->base + data_offset;
    uint64_t next = 0;
    for (size_t k = 0; k < n; k++) {
        const struct tensor *e = &ts[k];
        const GGUFTensorInfo *t = gguf_get_tensor_by_index(f, k);
        CHECK(t != NULL && t->index == k);
        CHECK(strcmp(t->name, e->name) == 0 && t->name_len == strlen(e->name));
        CHECK(gguf_get_tensor(f, e->name) == t);
        CHECK(t->dtype == e->dtype && t->n_dims == e->n_dims);
        uint64_t elements = 1;
        for (uint32_t d = 0; d < 4; d++) {
            uint64_t dim = d < e->n_dims ? e->dims[d] : 1;
            CHECK(t->dims[d] == dim);
            elements *= dim;
        }
        CHECK(t->n_elements == elements);
        CHECK(t->size_bytes == e->size);
        CHECK(t->offset == next && t->offset % alignment == 0);
        CHECK(t->file_offset == data_offset + t->offset && t->shard == 0);
        const unsigned char *data = gguf_tensor_data(f, t);
        CHECK(data == section + t->offset);
        for (uint64_t j = 0; j < e->size; j++) CHECK(data[j] == pattern(e->seed, j));
        next = align_up(t->offset + e->size, alignment);
        for (uint64_t j = t->offset + e->size; j < next; j++) CHECK(section[j] == 0);
    }
    if (n > 0) CHECK(gguf_file_size(f) == data_offset + next);
}

/* ---- whole files ----------------------------------------------------------------------------- */

static void check_file(const char *path, const struct spec *s) {
    GGUFFile f = gguf_open(path);
    if (f == NULL) fprintf(stderr, "cannot open %s\n", path);
    CHECK(f != NULL);
    CHECK(gguf_version(f) == s->version);
    CHECK(gguf_byte_order(f) == s->order);
    CHECK(gguf_alignment(f) == s->alignment);
    CHECK(gguf_shard_count(f) == 1);
    CHECK(gguf_metadata_count(f) == s->n_kvs);
    for (size_t i = 0; i < s->n_kvs; i++) check_kv(f, i, &s->kvs[i]);
    check_tensors(f, s->ts, s->n_ts, s->alignment);
    gguf_close(f);
}

/* Writes the spec's file in one call (tensors by pointer). */
static void write_spec(const struct spec *s) {
    GGUFWriter w = gguf_writer_new();
    CHECK(w != NULL);
    CHECK(gguf_writer_set_version(w, s->version));
    CHECK(gguf_writer_set_byte_order(w, s->order));
    for (size_t i = 0; i < s->n_kvs; i++) set_kv(w, &s->kvs[i]);
    unsigned char *bufs[COUNT(TENSORS)];
    CHECK(s->n_ts <= COUNT(bufs));
    add_tensors(w, s->ts, s->n_ts, bufs);
    CHECK(gguf_writer_write_file(w, out_path(s->name)));
    gguf_writer_free(w);
    free_all(bufs, s->n_ts);
}

/* ---- the JSON manifest (read by tests/c_writer.rs) ----------------------------------------- */

static const char *const TYPE_NAMES[13] = {"UINT8", "INT8",   "UINT16", "INT16", "UINT32",
                                           "INT32", "FLOAT32", "BOOL",  "STRING", "ARRAY",
                                           "UINT64", "INT64", "FLOAT64"};

static void json_hex(FILE *o, const void *p, uint64_t n) {
    fputc('"', o);
    for (uint64_t i = 0; i < n; i++) fprintf(o, "%02x", ((const unsigned char *)p)[i]);
    fputc('"', o);
}

static void json_fixed(FILE *o, uint32_t type, uint64_t raw) {
    fprintf(o, "{\"type\": \"%s\", ", TYPE_NAMES[type]);
    if (type == T(FLOAT32) || type == T(FLOAT64))
        fprintf(o, "\"bits\": %" PRIu64 "}", raw);
    else if (type == T(BOOL))
        fprintf(o, "\"value\": %s}", raw ? "true" : "false");
    else if (is_signed(type))
        fprintf(o, "\"value\": %" PRId64 "}", sign_extend(raw, type_size(type)));
    else
        fprintf(o, "\"value\": %" PRIu64 "}", raw);
}

static void json_string(FILE *o, const void *p, uint64_t n) {
    fprintf(o, "{\"type\": \"STRING\", \"hex\": ");
    json_hex(o, p, n);
    fputc('}', o);
}

static void json_array_start(FILE *o, uint32_t elem, uint64_t count) {
    fprintf(o, "{\"type\": \"ARRAY\", \"elem\": \"%s\", \"len\": %" PRIu64 ", \"items\": [",
            TYPE_NAMES[elem], count);
}

static void json_encoded(FILE *o, const unsigned char **src, const unsigned char *end,
                         uint32_t elem, uint64_t count) {
    json_array_start(o, elem, count);
    for (uint64_t i = 0; i < count; i++) {
        if (i) fputs(", ", o);
        if (elem == T(STRING)) {
            uint64_t n = le(src, end, 8);
            CHECK((uint64_t)(end - *src) >= n);
            json_string(o, *src, n);
            *src += n;
        } else if (elem == T(ARRAY)) {
            uint32_t inner = (uint32_t)le(src, end, 4);
            uint64_t n = le(src, end, 8);
            json_encoded(o, src, end, inner, n);
        } else {
            json_fixed(o, elem, le(src, end, type_size(elem)));
        }
    }
    fputs("]}", o);
}

static void json_value(FILE *o, const struct kv *e) {
    if (e->type == T(STRING)) {
        json_string(o, e->str, e->len);
    } else if (e->type != T(ARRAY)) {
        json_fixed(o, e->type, is_signed(e->type) ? (uint64_t)e->i : e->u);
    } else if (e->encoded) {
        const unsigned char *src = e->enc;
        json_encoded(o, &src, e->enc + e->enc_size, e->elem, e->count);
    } else {
        json_array_start(o, e->elem, e->count);
        for (uint64_t i = 0; i < e->count; i++) {
            if (i) fputs(", ", o);
            if (e->elem == T(STRING)) {
                json_string(o, e->strs[i], e->lens ? e->lens[i] : strlen(e->strs[i]));
            } else {
                size_t s = type_size(e->elem);
                json_fixed(o, e->elem, host_elem((const unsigned char *)e->data + i * s, s));
            }
        }
        fputs("]}", o);
    }
}

/* NAME.expected.json: {"file", "ggml", "version", "byte_order", "alignment", "metadata":
 * [{"key_hex", "value"}], "tensors": [{"name_hex", "n_dims", "shape", "type", "n_bytes",
 * "data_hex"}]}, values as in tests/conformance/generate.py's sidecars. */
static void write_manifest(const struct spec *s) {
    char name[128];
    int len = snprintf(name, sizeof name, "%s.expected.json", s->name);
    CHECK(len > 0 && (size_t)len < sizeof name);
    FILE *o = fopen(out_path(name), "w");
    CHECK(o != NULL);
    fprintf(o, "{\"file\": \"%s\", \"ggml\": %s, \"version\": %u, \"byte_order\": \"%s\", "
               "\"alignment\": %u,\n \"metadata\": [",
            s->name, s->ggml ? "true" : "false", (unsigned)s->version,
            s->order == GGUF_BYTE_ORDER_BIG ? "big" : "little", (unsigned)s->alignment);
    for (size_t i = 0; i < s->n_kvs; i++) {
        fprintf(o, "%s\n  {\"key_hex\": ", i ? "," : "");
        json_hex(o, s->kvs[i].key, strlen(s->kvs[i].key));
        fputs(", \"value\": ", o);
        json_value(o, &s->kvs[i]);
        fputc('}', o);
    }
    fputs("],\n \"tensors\": [", o);
    for (size_t k = 0; k < s->n_ts; k++) {
        const struct tensor *t = &s->ts[k];
        fprintf(o, "%s\n  {\"name_hex\": ", k ? "," : "");
        json_hex(o, t->name, strlen(t->name));
        fprintf(o, ", \"n_dims\": %u, \"shape\": [", (unsigned)t->n_dims);
        for (uint32_t d = 0; d < t->n_dims; d++)
            fprintf(o, "%s%" PRIu64, d ? ", " : "", t->dims[d]);
        fprintf(o, "], \"type\": %u, \"n_bytes\": %" PRIu64 ", \"data_hex\": ", (unsigned)t->dtype,
                t->size);
        unsigned char *data = make_data(t);
        json_hex(o, data, t->size);
        free(data);
        fputc('}', o);
    }
    fputs("]}\n", o);
    CHECK(fclose(o) == 0);
}

/* ---- the interop corpus -------------------------------------------------------------------- */

static size_t concat(struct kv *out, size_t cap, const struct kv *a, size_t na,
                     const struct kv *b, size_t nb) {
    CHECK(na + nb <= cap);
    memcpy(out, a, na * sizeof *a);
    if (nb) memcpy(out + na, b, nb * sizeof *b);
    return na + nb;
}

static const struct kv ALIGNED[] = {
    KSTR("general.architecture", "llama", 5),
    KU(UINT32, "a.replaced", 2),
    KU(FLOAT64, "a.retyped", UINT64_C(0x3fe0000000000000)), /* 0.5 */
    KU(UINT32, "general.alignment", 256),
    KI(INT16, "a.last", -7),
};

static const struct tensor ALIGNED_TENSORS[] = {
    {"a.f32", D(F32), 1, {7}, 28, 21},
    {"a.q4_k", D(Q4_K), 1, {256}, 144, 22},
    {"a.i8", D(I8), 1, {1}, 1, 23},
    {"a.f16", D(F16), 2, {3, 3}, 18, 24},
};

/* Version 2, alignment 256; values replaced (one changing type) and a key removed on the way. */
static void write_aligned(const struct spec *s) {
    GGUFWriter w = gguf_writer_new();
    CHECK(gguf_writer_set_version(w, 2));
    CHECK(gguf_writer_set_string(w, "general.architecture", "llama", 5));
    CHECK(gguf_writer_set_uint32(w, "a.replaced", 1));
    CHECK(gguf_writer_set_string(w, "a.retyped", "text", 4));
    CHECK(gguf_writer_set_uint8(w, "a.removed", 9));
    CHECK(gguf_writer_set_alignment(w, 256));
    CHECK(gguf_writer_set_int16(w, "a.last", -7));
    CHECK(gguf_writer_set_uint32(w, "a.replaced", 2)); /* in place */
    CHECK(gguf_writer_set_float64(w, "a.retyped", 0.5));
    CHECK(gguf_writer_remove_key(w, "a.removed"));
    unsigned char *bufs[COUNT(ALIGNED_TENSORS)];
    add_tensors(w, s->ts, s->n_ts, bufs);
    CHECK(gguf_writer_write_file(w, out_path(s->name)));
    gguf_writer_free(w);
    free_all(bufs, s->n_ts);
}

static const struct kv STREAMED[] = {
    KSTR("general.architecture", "llama", 5),
    KU(UINT32, "general.alignment", 64), /* set as a plain UINT32 */
    KU(UINT64, "s.count", 5),
};

static const struct tensor STREAMED_TENSORS[] = {
    {"s.0", D(F32), 1, {5}, 20, 31},
    {"s.1", D(Q8_0), 2, {32, 2}, 68, 32},
    {"s.2", D(F16), 0, {0}, 2, 33},
    {"s.3", D(F32), 2, {8, 0}, 0, 34},
    {"s.4", D(Q4_K), 2, {256, 3}, 432, 35},
};

/* Streams every tensor's data after the header: the data is in memory one tensor at a time. */
static void stream_tensors(GGUFWriter w, const char *path, const struct tensor *ts, size_t n) {
    CHECK(gguf_writer_begin_file(w, path));
    for (size_t k = 0; k < n; k++) {
        unsigned char *data = make_data(&ts[k]);
        CHECK(gguf_writer_write_tensor_data(w, data, ts[k].size));
        free(data);
    }
    CHECK(gguf_writer_finish(w));
}

static void write_streamed(const struct spec *s) {
    GGUFWriter w = gguf_writer_new();
    for (size_t i = 0; i < s->n_kvs; i++) set_kv(w, &s->kvs[i]);
    for (size_t k = 0; k < s->n_ts; k++) {
        const struct tensor *t = &s->ts[k];
        CHECK(gguf_writer_add_tensor(w, t->name, t->n_dims, t->dims, t->dtype, NULL, 0));
    }
    stream_tensors(w, out_path(s->name), s->ts, s->n_ts);
    gguf_writer_free(w);
}

/* values.gguf edited: general.name changed (in place), v.u8 removed, edit.added appended. */
static void write_edited(const struct spec *s) {
    GGUFFile src = gguf_open(in_dir("values.gguf"));
    CHECK(src != NULL);
    GGUFWriter w = gguf_writer_from_file(src);
    CHECK(w != NULL);
    CHECK(gguf_writer_set_string(w, "general.name", "edited from C", 13));
    CHECK(gguf_writer_remove_key(w, "v.u8"));
    CHECK(gguf_writer_set_uint32(w, "edit.added", 42));
    CHECK(gguf_writer_write_file(w, out_path(s->name)));
    gguf_writer_free(w);
    gguf_close(src);
}

static void corpus(void) {
    static struct kv edited[COUNT(VALUES) + 1], big[COUNT(VALUES) + COUNT(NESTED)],
        nested[COUNT(NESTED) + 1];
    const struct kv arch = KSTR("general.architecture", "llama", 5);
    size_t n_edited = 0;
    for (size_t i = 0; i < COUNT(VALUES); i++) {
        if (strcmp(VALUES[i].key, "v.u8") == 0) continue;
        edited[n_edited++] = VALUES[i];
    }
    const struct kv renamed = KSTR("general.name", "edited from C", 13);
    const struct kv added = KU(UINT32, "edit.added", 42);
    CHECK(strcmp(edited[1].key, "general.name") == 0);
    edited[1] = renamed;
    edited[n_edited++] = added;
    size_t n_big = concat(big, COUNT(big), VALUES, COUNT(VALUES), NESTED, COUNT(NESTED));
    size_t n_nested = concat(nested, COUNT(nested), &arch, 1, NESTED, COUNT(NESTED));

    const struct spec values = {"values.gguf", 3, GGUF_BYTE_ORDER_LITTLE, 32, VALUES,
                                COUNT(VALUES), TENSORS, COUNT(TENSORS), 1};
    const struct spec aligned = {"aligned.gguf", 2, GGUF_BYTE_ORDER_LITTLE, 256, ALIGNED,
                                 COUNT(ALIGNED), ALIGNED_TENSORS, COUNT(ALIGNED_TENSORS), 1};
    const struct spec streamed = {"streamed.gguf", 3, GGUF_BYTE_ORDER_LITTLE, 64, STREAMED,
                                  COUNT(STREAMED), STREAMED_TENSORS, COUNT(STREAMED_TENSORS), 1};
    const struct spec edit = {"edited.gguf", 3, GGUF_BYTE_ORDER_LITTLE, 32, edited, n_edited,
                              TENSORS, COUNT(TENSORS), 1};
    const struct spec nest = {"nested.gguf", 2, GGUF_BYTE_ORDER_LITTLE, 32, nested, n_nested,
                              TENSORS, 2, 0};
    const struct spec bigs = {"big_endian.gguf", 3, GGUF_BYTE_ORDER_BIG, 32, big, n_big,
                              TENSORS, COUNT(TENSORS), 0};

    write_spec(&values);
    write_aligned(&aligned);
    write_streamed(&streamed);
    write_edited(&edit);
    write_spec(&nest);
    write_spec(&bigs);
    const struct spec *all[] = {&values, &aligned, &streamed, &edit, &nest, &bigs};
    for (size_t i = 0; i < COUNT(all); i++) {
        check_file(in_dir(all[i]->name), all[i]);
        write_manifest(all[i]);
    }
}

/* ---- the tests ------------------------------------------------------------------------------- */

static void test_library_version(void) {
    const char *v = gguf_library_version();
    CHECK(v != NULL && strcmp(v, LIBGGUF_VERSION) == 0);
    CHECK(gguf_library_version() == v); /* static */
    char parts[64];
    int n = snprintf(parts, sizeof parts, "%d.%d.%d", LIBGGUF_VERSION_MAJOR,
                     LIBGGUF_VERSION_MINOR, LIBGGUF_VERSION_PATCH);
    CHECK(n > 0 && (size_t)n < sizeof parts);
    CHECK(strcmp(parts, v) == 0);
}

/* Every value, nested arrays included, in versions 1 to 3 and both byte orders. */
static void test_versions_and_byte_orders(void) {
    static struct kv all[COUNT(VALUES) + COUNT(NESTED)];
    size_t n = concat(all, COUNT(all), VALUES, COUNT(VALUES), NESTED, COUNT(NESTED));
    for (uint32_t version = 1; version <= 3; version++) {
        for (uint32_t order = 0; order <= 1; order++) {
            char name[48];
            snprintf(name, sizeof name, "matrix-v%u-%s.gguf", (unsigned)version,
                     order ? "big" : "little");
            const struct spec s = {name, version, order, 32, all, n, TENSORS, COUNT(TENSORS), 0};
            write_spec(&s);
            check_file(in_dir(name), &s);
        }
    }
}

/* Replacing keeps the position (the type may change); removing, then setting, appends. */
static void test_replace_and_remove(void) {
    static const uint16_t ROW[] = {4, 5};
    GGUFWriter w = gguf_writer_new();
    CHECK(gguf_writer_set_uint32(w, "r.a", 1));
    CHECK(gguf_writer_set_string(w, "r.b", "x", 1));
    CHECK(gguf_writer_set_uint32(w, "r.c", 3));
    CHECK(gguf_writer_set_uint32(w, "r.a", 10));
    CHECK(gguf_writer_set_float64(w, "r.b", 2.5));
    CHECK(gguf_writer_set_array(w, "r.c", T(UINT16), ROW, 2));
    CHECK(gguf_writer_remove_key(w, "r.b"));
    FAILS(!gguf_writer_remove_key(w, "r.b"), GGUF_ERROR_CODE_NOT_FOUND, "no metadata key 'r.b'");
    FAILS(!gguf_writer_remove_key(w, "never.set"), GGUF_ERROR_CODE_NOT_FOUND, "never.set");
    CHECK(gguf_writer_set_string(w, "r.b", "back", 4));
    CHECK(gguf_writer_write_file(w, out_path("replaced.gguf")));
    gguf_writer_free(w);
    const struct kv expected[] = {
        KU(UINT32, "r.a", 10),
        KARR(UINT16, "r.c", ROW),
        KSTR("r.b", "back", 4),
    };
    const struct spec s = {"replaced.gguf", 3, 0, 32, expected, COUNT(expected), NULL, 0, 0};
    check_file(in_dir(s.name), &s);
}

/* The alignment of `path`, and the value of its general.alignment (0 when absent). */
static uint64_t alignment_of(const char *path, uint32_t *entry) {
    GGUFFile f = gguf_open(path);
    CHECK(f != NULL);
    uint64_t a = gguf_alignment(f);
    gguf_clear_error();
    const GGUFMetadataKV *kv = gguf_get_metadata(f, "general.alignment");
    *entry = kv ? kv->value.u32 : 0;
    if (kv) CHECK(kv->type == T(UINT32) && kv->value.u32 == a);
    gguf_close(f);
    return a;
}

static void test_alignment(void) {
    static const uint32_t GOOD[] = {1, 2, 8, 64, 4096, UINT32_C(1) << 24};
    static const uint32_t BAD[] = {0, 3, 48, 100, UINT32_C(1) << 25, UINT32_C(1) << 31,
                                   UINT32_MAX};
    static const struct tensor TS[] = {{"t0", D(I8), 1, {3}, 3, 41}, {"t1", D(F32), 1, {2}, 8, 42}};
    uint32_t entry;
    for (size_t i = 0; i < COUNT(GOOD); i++) {
        GGUFWriter w = gguf_writer_new();
        CHECK(gguf_writer_set_alignment(w, 64));
        CHECK(gguf_writer_set_alignment(w, GOOD[i])); /* replaces */
        unsigned char *bufs[2];
        add_tensors(w, TS, 2, bufs);
        CHECK(gguf_writer_write_file(w, out_path("aligned-good.gguf")));
        gguf_writer_free(w);
        free_all(bufs, 2);
        GGUFFile f = gguf_open(in_dir("aligned-good.gguf"));
        CHECK(f != NULL && gguf_alignment(f) == GOOD[i] && gguf_metadata_count(f) == 1);
        check_tensors(f, TS, 2, GOOD[i]);
        gguf_close(f);
    }
    GGUFWriter w = gguf_writer_new();
    CHECK(gguf_writer_set_alignment(w, 128));
    CHECK(gguf_writer_set_uint8(w, "k", 1));
    for (size_t i = 0; i < COUNT(BAD); i++) {
        FAILS(!gguf_writer_set_alignment(w, BAD[i]), GGUF_ERROR_CODE_BAD_ALIGNMENT,
              "power of two");
        /* general.alignment set directly: the same rule; a refused value changes nothing. */
        FAILS(!gguf_writer_set_uint32(w, "general.alignment", BAD[i]),
              GGUF_ERROR_CODE_BAD_ALIGNMENT, "power of two");
    }
    FAILS(!gguf_writer_set_uint64(w, "general.alignment", 64), GGUF_ERROR_CODE_BAD_ALIGNMENT,
          "UINT32");
    FAILS(!gguf_writer_set_string(w, "general.alignment", "64", 2),
          GGUF_ERROR_CODE_BAD_ALIGNMENT, "STRING");
    CHECK(gguf_writer_write_file(w, out_path("aligned-kept.gguf")));
    CHECK(alignment_of(in_dir("aligned-kept.gguf"), &entry) == 128 && entry == 128);
    CHECK(gguf_writer_set_uint32(w, "general.alignment", 16)); /* a valid one, directly */
    CHECK(gguf_writer_write_file(w, out_path("aligned-kept.gguf")));
    CHECK(alignment_of(in_dir("aligned-kept.gguf"), &entry) == 16 && entry == 16);
    /* Removing the entry brings back the default. */
    CHECK(gguf_writer_remove_key(w, "general.alignment"));
    CHECK(gguf_writer_write_file(w, out_path("aligned-kept.gguf")));
    CHECK(alignment_of(in_dir("aligned-kept.gguf"), &entry) == 32 && entry == 0);
    gguf_writer_free(w);
}

static void test_refused_values(void) {
    static const uint8_t BAD_BOOLS[] = {1, 0, 2};
    static const char *const STRS[] = {"a"};
    GGUFWriter w = gguf_writer_new();
    CHECK(gguf_writer_set_uint32(w, "ok", 1));
    FAILS(!gguf_writer_set_version(w, 0), GGUF_ERROR_CODE_UNSUPPORTED_VERSION, "found 0");
    FAILS(!gguf_writer_set_version(w, 4), GGUF_ERROR_CODE_UNSUPPORTED_VERSION, "found 4");
    FAILS(!gguf_writer_set_version(w, UINT32_MAX), GGUF_ERROR_CODE_UNSUPPORTED_VERSION, NULL);
    FAILS(!gguf_writer_set_byte_order(w, 2), GGUF_ERROR_CODE_INVALID_ARGUMENT,
          "2 is not a GGUFByteOrder");
    FAILS(!gguf_writer_set_uint8(w, "", 1), GGUF_ERROR_CODE_EMPTY_KEY, "empty");
    FAILS(!gguf_writer_set_string(w, "", "x", 1), GGUF_ERROR_CODE_EMPTY_KEY, NULL);
    FAILS(!gguf_writer_set_array(w, "", T(UINT8), A_U8, 3), GGUF_ERROR_CODE_EMPTY_KEY, NULL);
    FAILS(!gguf_writer_set_string_array(w, "", STRS, NULL, 1), GGUF_ERROR_CODE_EMPTY_KEY, NULL);
    FAILS(!gguf_writer_set_array_encoded(w, "", T(UINT16), 3, E_U16, sizeof E_U16),
          GGUF_ERROR_CODE_EMPTY_KEY, NULL);
    /* BOOL bytes other than 0 and 1, also when replacing a value: "ok" keeps its own. */
    FAILS(!gguf_writer_set_array(w, "b", T(BOOL), BAD_BOOLS, 3), GGUF_ERROR_CODE_BAD_BOOL,
          "element 2 is 2");
    FAILS(!gguf_writer_set_array(w, "ok", T(BOOL), BAD_BOOLS, 3), GGUF_ERROR_CODE_BAD_BOOL, NULL);
    /* Element types that are not fixed-size, or not types. */
    static const uint32_t NOT_FIXED[] = {T(STRING), T(ARRAY), 13, 1000, UINT32_MAX};
    for (size_t i = 0; i < COUNT(NOT_FIXED); i++)
        FAILS(!gguf_writer_set_array(w, "x", NOT_FIXED[i], A_U8, 1),
              GGUF_ERROR_CODE_INVALID_ARGUMENT, "not a fixed-size value type");
    /* Counts whose size overflows, refused before any element is read. */
    FAILS(!gguf_writer_set_array(w, "x", T(UINT16), A_U16, UINT64_MAX),
          GGUF_ERROR_CODE_SIZE_OVERFLOW, NULL);
    FAILS(!gguf_writer_set_string_array(w, "x", STRS, NULL, (UINT64_MAX >> 3) + 1),
          GGUF_ERROR_CODE_SIZE_OVERFLOW, NULL);
    /* Nothing refused reached the file. */
    CHECK(gguf_writer_write_file(w, out_path("refused.gguf")));
    gguf_writer_free(w);
    const struct kv expected[] = {KU(UINT32, "ok", 1)};
    const struct spec s = {"refused.gguf", 3, 0, 32, expected, 1, NULL, 0, 0};
    check_file(in_dir(s.name), &s);
}

/* The error of gguf_writer_set_array_encoded: its code, and the offset in `data` it concerns
 * (-1 for the arguments themselves). */
#define ENC_FAILS(call, code, needle, offset)                                                  \
    do {                                                                                       \
        gguf_clear_error();                                                                    \
        CHECK(!(call));                                                                        \
        CHECK_PARSE_ERROR((code), (needle), (offset));                                         \
    } while (0)

static void test_refused_encoded(void) {
    GGUFWriter w = gguf_writer_new();
    CHECK(gguf_writer_set_array_encoded(w, "e", T(UINT16), 3, E_U16, sizeof E_U16));
    /* Trailing bytes: 2 elements given in 6 bytes. */
    ENC_FAILS(gguf_writer_set_array_encoded(w, "e", T(UINT16), 2, E_U16, sizeof E_U16),
              GGUF_ERROR_CODE_INVALID_ARGUMENT, "2 elements end after 4 of the 6 bytes",
              OFFSET_NONE);
    ENC_FAILS(gguf_writer_set_array_encoded(w, "e", T(UINT8), 0, E_U16, 1),
              GGUF_ERROR_CODE_INVALID_ARGUMENT, "end after 0 of the 1 bytes", OFFSET_NONE);
    /* Truncated: 3 elements in 5 bytes; a string's bytes cut; a string's length cut. */
    ENC_FAILS(gguf_writer_set_array_encoded(w, "e", T(UINT16), 3, E_U16, 5),
              GGUF_ERROR_CODE_ARRAY_TOO_LONG, "3 UINT16 elements", OFFSET_NONE);
    ENC_FAILS(gguf_writer_set_array_encoded(w, "e", T(STRING), 1, E_STRINGS, 9),
              GGUF_ERROR_CODE_STRING_TOO_LONG, "length 2", 0);
    ENC_FAILS(gguf_writer_set_array_encoded(w, "e", T(STRING), 2, E_STRINGS, 16),
              GGUF_ERROR_CODE_TRUNCATED, NULL, 10);
    ENC_FAILS(gguf_writer_set_array_encoded(w, "e", T(UINT8), 1, NULL, 0),
              GGUF_ERROR_CODE_ARRAY_TOO_LONG, NULL, OFFSET_NONE);
    ENC_FAILS(gguf_writer_set_array_encoded(w, "e", T(ARRAY), 3, E_MIXED, sizeof E_MIXED - 1),
              GGUF_ERROR_CODE_ARRAY_TOO_LONG, NULL, OFFSET_ANY);
    /* Element type 13, at the top and nested. */
    ENC_FAILS(gguf_writer_set_array_encoded(w, "e", 13, 0, NULL, 0),
              GGUF_ERROR_CODE_BAD_VALUE_TYPE, "found 13", OFFSET_NONE);
    static const unsigned char INNER_13[] = {LE32(13), LE64(0)};
    ENC_FAILS(gguf_writer_set_array_encoded(w, "e", T(ARRAY), 1, INNER_13, sizeof INNER_13),
              GGUF_ERROR_CODE_BAD_VALUE_TYPE, "found 13", 0);
    /* A BOOL byte of 2, at data[1]. */
    static const unsigned char BOOLS[] = {1, 2};
    ENC_FAILS(gguf_writer_set_array_encoded(w, "e", T(BOOL), 2, BOOLS, 2),
              GGUF_ERROR_CODE_BAD_BOOL, "found 2", 1);
    /* Arrays nested too deep: 8 headers of an array of one array, then an empty UINT8 array. */
    unsigned char deep[9 * 12];
    size_t n = 0;
    for (int level = 0; level < 9; level++) {
        const unsigned char header[] = {LE32(level < 8 ? 9u : 0u), LE64(level < 8 ? 1u : 0u)};
        memcpy(deep + n, header, sizeof header);
        n += sizeof header;
    }
    /* From deep + 12: 9 levels (this array, then 8 in `data`); from deep + 24: 8, accepted. */
    ENC_FAILS(gguf_writer_set_array_encoded(w, "e", T(ARRAY), 1, deep + 12, n - 12),
              GGUF_ERROR_CODE_ARRAY_TOO_DEEP, "deeper than 8", OFFSET_ANY);
    CHECK(gguf_writer_set_array_encoded(w, "deep", T(ARRAY), 1, deep + 24, n - 24));
    /* "e" kept the value it had; every refusal left the writer unchanged. */
    CHECK(gguf_writer_write_file(w, out_path("refused-encoded.gguf")));
    gguf_writer_free(w);
    const struct kv expected[] = {
        KENC(UINT16, "e", 3, E_U16),
        {.key = "deep", .type = T(ARRAY), .elem = T(ARRAY), .count = 1, .encoded = 1,
         .enc = deep + 24, .enc_size = 9 * 12 - 24},
    };
    const struct spec s = {"refused-encoded.gguf", 3, 0, 32, expected, 2, NULL, 0, 0};
    check_file(in_dir(s.name), &s);
}

static void test_refused_tensors(void) {
    static unsigned char buf[1024];
    static const struct tensor ONE[] = {{"t", D(F32), 1, {4}, 16, 51}};
    GGUFWriter w = gguf_writer_new();
    unsigned char *data[1];
    add_tensors(w, ONE, 1, data);
    const uint64_t d4[] = {4}, d5[] = {1, 1, 1, 1, 1}, d33[] = {33}, d255[] = {255, 2};
    const uint64_t huge[] = {UINT64_C(1) << 37, UINT64_C(1) << 37};
    const uint64_t huge_f32[] = {UINT64_C(1) << 62};
    FAILS(!gguf_writer_add_tensor(w, "t", 1, d4, D(F32), buf, 16),
          GGUF_ERROR_CODE_DUPLICATE_TENSOR, "tensor 't' is already added");
    FAILS(!gguf_writer_add_tensor(w, "t", 1, d4, D(I8), NULL, 0), GGUF_ERROR_CODE_DUPLICATE_TENSOR,
          NULL);
    FAILS(!gguf_writer_add_tensor(w, "five", 5, d5, D(F32), buf, 4), GGUF_ERROR_CODE_TOO_MANY_DIMS,
          "found 5");
    FAILS(!gguf_writer_add_tensor(w, "many", UINT32_MAX, d5, D(F32), NULL, 0),
          GGUF_ERROR_CODE_TOO_MANY_DIMS, NULL);
    FAILS(!gguf_writer_add_tensor(w, "q", 1, d33, D(Q4_0), buf, 18),
          GGUF_ERROR_CODE_BAD_BLOCK_MULTIPLE, "first dimension 33");
    FAILS(!gguf_writer_add_tensor(w, "q", 1, d33, D(Q4_0), NULL, 0),
          GGUF_ERROR_CODE_BAD_BLOCK_MULTIPLE, NULL);
    FAILS(!gguf_writer_add_tensor(w, "k", 2, d255, D(Q4_K), buf, 288),
          GGUF_ERROR_CODE_BAD_BLOCK_MULTIPLE, "256");
    static const uint32_t UNKNOWN[] = {4, 5, 31, 32, 33, 36, 37, 38, 43, 1000, UINT32_MAX};
    for (size_t i = 0; i < COUNT(UNKNOWN); i++)
        FAILS(!gguf_writer_add_tensor(w, "u", 1, d4, UNKNOWN[i], buf, 16),
              GGUF_ERROR_CODE_BAD_DATA_TYPE, "is not a ggml data type");
    FAILS(!gguf_writer_add_tensor(w, "s", 1, d4, D(F32), buf, 15),
          GGUF_ERROR_CODE_INVALID_ARGUMENT, "takes 16 bytes, 15 given");
    FAILS(!gguf_writer_add_tensor(w, "s", 1, d4, D(F32), buf, 17),
          GGUF_ERROR_CODE_INVALID_ARGUMENT, "17 given");
    FAILS(!gguf_writer_add_tensor(w, "s", 1, d4, D(F32), buf, 0), GGUF_ERROR_CODE_INVALID_ARGUMENT,
          "0 given");
    FAILS(!gguf_writer_add_tensor(w, "o", 2, huge, D(I8), NULL, 0), GGUF_ERROR_CODE_SIZE_OVERFLOW,
          "overflows");
    FAILS(!gguf_writer_add_tensor(w, "o", 2, huge, D(I8), buf, 16), GGUF_ERROR_CODE_SIZE_OVERFLOW,
          NULL);
    FAILS(!gguf_writer_add_tensor(w, "o", 1, huge_f32, D(F32), NULL, 0),
          GGUF_ERROR_CODE_SIZE_OVERFLOW, NULL);
    /* Only "t" reached the file. */
    CHECK(gguf_writer_write_file(w, out_path("refused-tensors.gguf")));
    gguf_writer_free(w);
    free_all(data, 1);
    const struct spec s = {"refused-tensors.gguf", 3, 0, 32, NULL, 0, ONE, 1, 0};
    check_file(in_dir(s.name), &s);
}

/* Streaming, and each way to misuse it. */
static void test_streaming(void) {
    static const struct tensor TS[] = {
        {"m.0", D(F32), 1, {3}, 12, 61},
        {"m.1", D(Q4_0), 1, {32}, 18, 62},
        {"m.2", D(F32), 2, {2, 0}, 0, 63},
        {"m.3", D(I8), 1, {5}, 5, 64},
    };
    static const uint16_t ROW[] = {1};
    static const char *const STRS[] = {"a"};
    unsigned char *data[COUNT(TS)];
    for (size_t k = 0; k < COUNT(TS); k++) data[k] = make_data(&TS[k]);
    GGUFWriter w = gguf_writer_new();
    CHECK(gguf_writer_set_string(w, "general.architecture", "llama", 5));
    /* A tensor given by pointer is streamed like the others. */
    for (size_t k = 0; k < COUNT(TS); k++)
        CHECK(gguf_writer_add_tensor(w, TS[k].name, TS[k].n_dims, TS[k].dims, TS[k].dtype,
                                     k == 1 ? data[k] : NULL, k == 1 ? TS[k].size : 0));
    FAILS(!gguf_writer_write_tensor_data(w, data[0], 12), GGUF_ERROR_CODE_INVALID_ARGUMENT,
          "call gguf_writer_begin_file first");
    FAILS(!gguf_writer_finish(w), GGUF_ERROR_CODE_INVALID_ARGUMENT, "no file is being written");
    FAILS(!gguf_writer_write_file(w, out_path("never.gguf")), GGUF_ERROR_CODE_INVALID_ARGUMENT,
          "tensor 0 has no data");

    CHECK(gguf_writer_begin_file(w, out_path("streamed-twice-1.gguf")));
    /* The header is written: metadata and tensors are frozen. */
    const char *frozen = "the header is already written";
    FAILS(!gguf_writer_set_uint8(w, "k", 1), GGUF_ERROR_CODE_INVALID_ARGUMENT, frozen);
    FAILS(!gguf_writer_set_float64(w, "k", 1.0), GGUF_ERROR_CODE_INVALID_ARGUMENT, frozen);
    FAILS(!gguf_writer_set_string(w, "k", "v", 1), GGUF_ERROR_CODE_INVALID_ARGUMENT, frozen);
    FAILS(!gguf_writer_set_array(w, "k", T(UINT16), ROW, 1), GGUF_ERROR_CODE_INVALID_ARGUMENT,
          frozen);
    FAILS(!gguf_writer_set_string_array(w, "k", STRS, NULL, 1), GGUF_ERROR_CODE_INVALID_ARGUMENT,
          frozen);
    FAILS(!gguf_writer_set_array_encoded(w, "k", T(UINT16), 3, E_U16, sizeof E_U16),
          GGUF_ERROR_CODE_INVALID_ARGUMENT, frozen);
    FAILS(!gguf_writer_remove_key(w, "general.architecture"), GGUF_ERROR_CODE_INVALID_ARGUMENT,
          frozen);
    FAILS(!gguf_writer_set_version(w, 2), GGUF_ERROR_CODE_INVALID_ARGUMENT, frozen);
    FAILS(!gguf_writer_set_byte_order(w, GGUF_BYTE_ORDER_BIG), GGUF_ERROR_CODE_INVALID_ARGUMENT,
          frozen);
    FAILS(!gguf_writer_set_alignment(w, 64), GGUF_ERROR_CODE_INVALID_ARGUMENT, frozen);
    FAILS(!gguf_writer_set_sync(w, false), GGUF_ERROR_CODE_INVALID_ARGUMENT, frozen);
    FAILS(!gguf_writer_add_tensor(w, "late", 1, TS[0].dims, D(F32), NULL, 0),
          GGUF_ERROR_CODE_INVALID_ARGUMENT, frozen);
    FAILS(!gguf_writer_begin_file(w, out_path("never.gguf")), GGUF_ERROR_CODE_INVALID_ARGUMENT,
          frozen);
    FAILS(!gguf_writer_write_file(w, out_path("never.gguf")), GGUF_ERROR_CODE_INVALID_ARGUMENT,
          NULL);
    /* Wrong sizes are refused and change nothing: the same tensor is expected next. */
    FAILS(!gguf_writer_write_tensor_data(w, data[0], 11), GGUF_ERROR_CODE_INVALID_ARGUMENT,
          "tensor 0 takes 12 bytes, 11 given");
    FAILS(!gguf_writer_write_tensor_data(w, data[0], 13), GGUF_ERROR_CODE_INVALID_ARGUMENT,
          "13 given");
    CHECK(gguf_writer_write_tensor_data(w, data[0], 12));
    FAILS(!gguf_writer_write_tensor_data(w, data[0], 12), GGUF_ERROR_CODE_INVALID_ARGUMENT,
          "tensor 1 takes 18 bytes, 12 given");
    /* Finishing early is refused, and the file stays open. */
    FAILS(!gguf_writer_finish(w), GGUF_ERROR_CODE_INVALID_ARGUMENT,
          "only 1 of the 4 tensors' data were written");
    CHECK(gguf_writer_write_tensor_data(w, data[1], 18));
    CHECK(gguf_writer_write_tensor_data(w, NULL, 0)); /* the empty tensor */
    CHECK(gguf_writer_write_tensor_data(w, data[3], 5));
    /* Too many tensors. */
    FAILS(!gguf_writer_write_tensor_data(w, data[3], 5), GGUF_ERROR_CODE_INVALID_ARGUMENT,
          "every tensor's data is already written");
    CHECK(gguf_writer_finish(w));
    FAILS(!gguf_writer_finish(w), GGUF_ERROR_CODE_INVALID_ARGUMENT, "no file is being written");
    FAILS(!gguf_writer_write_tensor_data(w, data[0], 12), GGUF_ERROR_CODE_INVALID_ARGUMENT,
          "begin_file first");
    const struct kv kvs[] = {KSTR("general.architecture", "llama", 5), KU(UINT8, "after", 5)};
    const struct spec first = {"streamed-twice-1.gguf", 3, 0, 32, kvs, 1, TS, COUNT(TS), 0};
    check_file(in_dir(first.name), &first);

    /* After finishing the writer is editable again, and can begin another file. */
    CHECK(gguf_writer_set_uint8(w, "after", 5));
    stream_tensors(w, out_path("streamed-twice-2.gguf"), TS, COUNT(TS));
    const struct spec second = {"streamed-twice-2.gguf", 3, 0, 32, kvs, 2, TS, COUNT(TS), 0};
    check_file(in_dir(second.name), &second);

    /* Freed in the middle of a file: the file is abandoned, nothing appears under its name. */
    CHECK(gguf_writer_begin_file(w, out_path("unfinished.gguf")));
    CHECK(gguf_writer_write_tensor_data(w, data[0], 12));
    gguf_writer_free(w);
    CHECK(access(in_dir("unfinished.gguf"), F_OK) != 0);
    free_all(data, COUNT(TS));
}

/* One writer writes the same file twice, whole or streamed: identical bytes. */
static void test_same_bytes_every_time(void) {
    static struct kv all[COUNT(VALUES) + COUNT(NESTED)];
    size_t n = concat(all, COUNT(all), VALUES, COUNT(VALUES), NESTED, COUNT(NESTED));
    GGUFWriter w = gguf_writer_new();
    for (size_t i = 0; i < n; i++) set_kv(w, &all[i]);
    unsigned char *bufs[COUNT(TENSORS)];
    add_tensors(w, TENSORS, COUNT(TENSORS), bufs);
    CHECK(gguf_writer_write_file(w, out_path("once.gguf")));
    CHECK(gguf_writer_write_file(w, out_path("twice.gguf")));
    stream_tensors(w, out_path("once-streamed.gguf"), TENSORS, COUNT(TENSORS));
    gguf_writer_free(w);
    free_all(bufs, COUNT(TENSORS));
    size_t a_len, b_len, c_len;
    unsigned char *a = read_file(in_dir("once.gguf"), &a_len);
    unsigned char *b = read_file(in_dir("twice.gguf"), &b_len);
    unsigned char *c = read_file(in_dir("once-streamed.gguf"), &c_len);
    CHECK(a_len == b_len && memcmp(a, b, a_len) == 0);
    CHECK(a_len == c_len && memcmp(a, c, a_len) == 0);
    free(a);
    free(b);
    free(c);
}

static void test_io_errors(void) {
    GGUFWriter w = gguf_writer_new();
    CHECK(gguf_writer_set_uint8(w, "k", 1));
    FAILS(!gguf_writer_begin_file(w, in_dir("no/such/dir/x.gguf")), GGUF_ERROR_CODE_IO,
          "cannot write");
    FAILS(!gguf_writer_write_file(w, in_dir("no/such/dir/x.gguf")), GGUF_ERROR_CODE_IO,
          "no/such/dir/x.gguf");
    FAILS(!gguf_writer_write_file(w, g_dir), GGUF_ERROR_CODE_IO, NULL); /* a directory */
    /* A failed begin leaves the writer as it was. */
    CHECK(gguf_writer_set_uint8(w, "k", 2));
    CHECK(gguf_writer_write_file(w, out_path("after-io.gguf")));
    gguf_writer_free(w);
    const struct kv kvs[] = {KU(UINT8, "k", 2)};
    const struct spec s = {"after-io.gguf", 3, 0, 32, kvs, 1, NULL, 0, 0};
    check_file(in_dir(s.name), &s);
}

/* ---- the writer never loses a file ------------------------------------------------------------ */

/* The number of entries in g_dir whose name starts with `prefix`. */
static int count_named(const char *prefix) {
    DIR *d = opendir(g_dir);
    CHECK(d != NULL);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
    closedir(d);
    return n;
}

static void set_file_size_limit(rlim_t limit) {
    struct rlimit r;
    CHECK(getrlimit(RLIMIT_FSIZE, &r) == 0);
    r.rlim_cur = limit;
    CHECK(setrlimit(RLIMIT_FSIZE, &r) == 0);
}

/* In-place editing of a mapped file: the new file is right, the source handle keeps reading the
 * old one. Then failures (a file size limit): the destination keeps its bytes, no temporary file
 * remains, the writer can write elsewhere, and a streaming failure sticks. */
static void test_never_loses_a_file(void) {
    static const struct tensor TS[] = {
        {"small", D(I8), 1, {16}, 16, 71},
        {"big", D(I8), 1, {1u << 20}, 1u << 20, 72},
    };
    unsigned char *bufs[COUNT(TS)];
    const char *path = out_path("in-place.gguf");
    GGUFWriter w = gguf_writer_new();
    CHECK(gguf_writer_set_sync(w, false)); /* a scratch file: no fsync */
    CHECK(gguf_writer_set_uint32(w, "edit.n", 1));
    add_tensors(w, TS, COUNT(TS), bufs);
    CHECK(gguf_writer_write_file(w, path));
    gguf_writer_free(w);

    GGUFFile src = gguf_open(path);
    CHECK(src != NULL);
    GGUFWriter e = gguf_writer_from_file(src);
    CHECK(e != NULL && gguf_writer_set_uint32(e, "edit.n", 2));
    CHECK(gguf_writer_write_file(e, path));
    GGUFFile now = gguf_open(path);
    CHECK(now != NULL && gguf_get_metadata(now, "edit.n")->value.u32 == 2);
    CHECK(gguf_get_metadata(src, "edit.n")->value.u32 == 1);
    for (size_t k = 0; k < COUNT(TS); k++) {
        const GGUFTensorInfo *a = gguf_get_tensor(src, TS[k].name);
        const GGUFTensorInfo *b = gguf_get_tensor(now, TS[k].name);
        CHECK(a != NULL && b != NULL && a->size_bytes == TS[k].size);
        CHECK(memcmp(gguf_tensor_data(src, a), bufs[k], TS[k].size) == 0);
        CHECK(memcmp(gguf_tensor_data(now, b), bufs[k], TS[k].size) == 0);
    }
    gguf_close(now);
    CHECK(count_named(".in-place.gguf.gguf-tmp-") == 0);

    /* Failures under a 64 KiB file size limit (SIGXFSZ ignored: writes fail with EFBIG). */
    struct sigaction ignore, before;
    memset(&ignore, 0, sizeof ignore);
    ignore.sa_handler = SIG_IGN;
    CHECK(sigaction(SIGXFSZ, &ignore, &before) == 0);
    struct rlimit limit;
    CHECK(getrlimit(RLIMIT_FSIZE, &limit) == 0);
    CHECK(gguf_writer_write_file(e, out_path("edited-in-place.gguf"))); /* reference bytes */
    set_file_size_limit(64 * 1024);
    FAILS(!gguf_writer_write_file(e, path), GGUF_ERROR_CODE_IO, "File too large");
    size_t len;
    unsigned char *now_bytes = read_file(path, &len);
    set_file_size_limit(limit.rlim_cur);
    /* The file edited above is still there, whole; no temporary file is left. */
    size_t edited_len;
    unsigned char *edited = read_file(in_dir("edited-in-place.gguf"), &edited_len);
    CHECK(len == edited_len && memcmp(now_bytes, edited, len) == 0);
    CHECK(count_named(".in-place.gguf.gguf-tmp-") == 0);
    /* The writer is as it was: written again, elsewhere. */
    CHECK(gguf_writer_write_file(e, out_path("after-efbig.gguf")));
    free(now_bytes);
    now_bytes = read_file(in_dir("after-efbig.gguf"), &len);
    CHECK(len == edited_len && memcmp(now_bytes, edited, len) == 0);

    /* Streaming: the first failure sticks, with its code and message, until a new file. */
    GGUFWriter st = gguf_writer_new();
    for (size_t k = 0; k < COUNT(TS); k++)
        CHECK(gguf_writer_add_tensor(st, TS[k].name, TS[k].n_dims, TS[k].dims, TS[k].dtype,
                                     NULL, 0));
    set_file_size_limit(64 * 1024);
    CHECK(gguf_writer_begin_file(st, path));
    CHECK(gguf_writer_write_tensor_data(st, bufs[0], TS[0].size));
    FAILS(!gguf_writer_write_tensor_data(st, bufs[1], TS[1].size), GGUF_ERROR_CODE_IO,
          "File too large");
    set_file_size_limit(limit.rlim_cur);
    char first[512];
    CHECK(!gguf_writer_write_tensor_data(st, bufs[1], TS[1].size));
    snprintf(first, sizeof first, "%s", gguf_last_error());
    CHECK(strstr(first, "File too large") != NULL);
    CHECK(!gguf_writer_finish(st) && gguf_last_error_code() == GGUF_ERROR_CODE_IO);
    CHECK(strcmp(gguf_last_error(), first) == 0);
    CHECK(count_named(".in-place.gguf.gguf-tmp-") == 0);
    free(now_bytes);
    now_bytes = read_file(path, &len);
    CHECK(len == edited_len && memcmp(now_bytes, edited, len) == 0);
    /* A new file starts afresh. */
    CHECK(gguf_writer_begin_file(st, out_path("restarted.gguf")));
    for (size_t k = 0; k < COUNT(TS); k++)
        CHECK(gguf_writer_write_tensor_data(st, bufs[k], TS[k].size));
    CHECK(gguf_writer_finish(st));
    gguf_writer_free(st);
    CHECK(sigaction(SIGXFSZ, &before, NULL) == 0);

    gguf_writer_free(e);
    gguf_close(src);
    free(edited);
    free(now_bytes);
    free_all(bufs, COUNT(TS));
}

/* ---- gguf_writer_from_file -------------------------------------------------------------------- */

static void same_kv(const GGUFMetadataKV *a, const GGUFMetadataKV *b) {
    CHECK(a->key_len == b->key_len && memcmp(a->key, b->key, a->key_len + 1) == 0);
    CHECK(a->type == b->type);
    switch (a->type) {
    case T(UINT8): case T(UINT16): case T(UINT32): CHECK(a->value.u32 == b->value.u32); break;
    case T(INT8): case T(INT16): case T(INT32): CHECK(a->value.i32 == b->value.i32); break;
    case T(BOOL): CHECK(a->value.b == b->value.b); break;
    case T(FLOAT32): CHECK(memcmp(&a->value.f32, &b->value.f32, 4) == 0); break;
    case T(UINT64): case T(INT64): case T(FLOAT64):
        CHECK(a->value.u64 == b->value.u64);
        break;
    case T(STRING):
        CHECK(a->str_len == b->str_len);
        CHECK(memcmp(a->value.str, b->value.str, a->str_len + 1) == 0);
        break;
    case T(ARRAY):
        /* Same version and byte order: the raw elements are the same bytes. */
        CHECK(a->array_type == b->array_type && a->array_len == b->array_len);
        CHECK(a->array_bytes == b->array_bytes);
        CHECK(a->array_bytes == 0 || memcmp(a->array_data, b->array_data, a->array_bytes) == 0);
        break;
    default: CHECK(!"a value type");
    }
}

static void same_tensor(GGUFFile fa, const GGUFTensorInfo *a, GGUFFile fb,
                        const GGUFTensorInfo *b) {
    CHECK(a->name_len == b->name_len && memcmp(a->name, b->name, a->name_len + 1) == 0);
    CHECK(a->n_dims == b->n_dims && memcmp(a->dims, b->dims, sizeof a->dims) == 0);
    CHECK(a->dtype == b->dtype && a->size_bytes == b->size_bytes);
    CHECK(a->n_elements == b->n_elements);
    const void *da = gguf_tensor_data(fa, a), *db = gguf_tensor_data(fb, b);
    CHECK(da != NULL && db != NULL);
    CHECK(a->size_bytes == 0 || memcmp(da, db, (size_t)a->size_bytes) == 0);
}

static void same_bytes(const char *a_path, const char *b_path) {
    size_t a_len, b_len;
    unsigned char *a = read_file(a_path, &a_len);
    unsigned char *b = read_file(b_path, &b_len);
    if (a_len != b_len || memcmp(a, b, a_len) != 0)
        fprintf(stderr, "%s (%zu bytes) differs from %s (%zu bytes)\n", a_path, a_len, b_path,
                b_len);
    CHECK(a_len == b_len && memcmp(a, b, a_len) == 0);
    free(a);
    free(b);
}

/* A copy of every valid fixture, unchanged: the same bytes, written whole or streamed, from a
 * handle on the path or on memory. */
static void test_faithful_copies(void) {
    static const char *const NAMES[] = {"full.gguf", "big.gguf",   "v2.gguf",   "v1.gguf",
                                        "v1big.gguf", "align.gguf", "empty.gguf"};
    for (size_t i = 0; i < COUNT(NAMES); i++) {
        const char *path = fixture(NAMES[i]);
        GGUFFile src = gguf_open(path);
        CHECK(src != NULL);
        GGUFWriter w = gguf_writer_from_file(src);
        CHECK(w != NULL);
        CHECK(gguf_writer_write_file(w, out_path("copy.gguf")));
        gguf_writer_free(w);
        same_bytes(path, in_dir("copy.gguf"));

        /* Streamed, the data taken from the source. */
        w = gguf_writer_from_file(src);
        CHECK(gguf_writer_begin_file(w, out_path("copy-streamed.gguf")));
        for (uint64_t k = 0; k < gguf_tensor_count(src); k++) {
            const GGUFTensorInfo *t = gguf_get_tensor_by_index(src, k);
            CHECK(gguf_writer_write_tensor_data(w, gguf_tensor_data(src, t), t->size_bytes));
        }
        CHECK(gguf_writer_finish(w));
        gguf_writer_free(w);
        gguf_close(src);
        same_bytes(path, in_dir("copy-streamed.gguf"));

        /* From memory. */
        size_t len;
        unsigned char *buf = read_file(path, &len);
        GGUFFile mem = gguf_open_memory(buf, len);
        CHECK(mem != NULL);
        w = gguf_writer_from_file(mem);
        CHECK(gguf_writer_write_file(w, out_path("copy-memory.gguf")));

        /* Into memory (gguf_writer_write_memory): the same bytes, and exactly as many as
         * gguf_writer_memory_size says; a buffer one byte short is refused and untouched. */
        CHECK(gguf_writer_memory_size(w) == len);
        unsigned char *out = malloc(len + 8);
        CHECK(out != NULL);
        memset(out, 0xa5, len + 8);
        FAILS(!gguf_writer_write_memory(w, out, len - 1), GGUF_ERROR_CODE_INVALID_ARGUMENT,
              "gguf_writer_memory_size");
        for (size_t k = 0; k < len + 8; k++) CHECK(out[k] == 0xa5);
        CHECK(gguf_writer_write_memory(w, out, len + 8));
        CHECK(memcmp(out, buf, len) == 0);
        for (size_t k = len; k < len + 8; k++) CHECK(out[k] == 0xa5);
        FAILS(!gguf_writer_write_memory(w, NULL, len), GGUF_ERROR_CODE_NULL_ARGUMENT, "buffer");
        /* While a file is streamed the header is frozen: no copy into memory. */
        CHECK(gguf_writer_begin_file(w, out_path("copy-abandoned.gguf")));
        FAILS(gguf_writer_memory_size(w) == 0, GGUF_ERROR_CODE_INVALID_ARGUMENT, "header");
        FAILS(!gguf_writer_write_memory(w, out, len + 8), GGUF_ERROR_CODE_INVALID_ARGUMENT,
              "header");
        free(out);
        gguf_writer_free(w);
        gguf_close(mem);
        free(buf);
        same_bytes(path, in_dir("copy-memory.gguf"));
    }
}

/* A metadata editor: one value changed, one key removed, one added, one tensor added; all else
 * identical, in both byte orders. */
static void test_editor(void) {
    static const char *const NAMES[] = {"full.gguf", "big.gguf", "v1.gguf", "align.gguf"};
    static const struct tensor EXTRA[] = {{"extra", D(Q8_0), 1, {64}, 68, 71}};
    for (size_t i = 0; i < COUNT(NAMES); i++) {
        GGUFFile src = gguf_open(fixture(NAMES[i]));
        CHECK(src != NULL);
        GGUFWriter w = gguf_writer_from_file(src);
        CHECK(w != NULL);
        CHECK(gguf_writer_set_string(w, "general.name", "edited", 6));
        CHECK(gguf_writer_set_float32(w, "test.f32", -0.75f));
        CHECK(gguf_writer_remove_key(w, "test.u8"));
        FAILS(!gguf_writer_remove_key(w, "test.u8"), GGUF_ERROR_CODE_NOT_FOUND, "test.u8");
        CHECK(gguf_writer_set_int64(w, "edit.added", -42));
        unsigned char *extra[1];
        add_tensors(w, EXTRA, 1, extra);
        CHECK(gguf_writer_write_file(w, out_path("edited-fixture.gguf")));
        gguf_writer_free(w);
        free_all(extra, 1);

        GGUFFile out = gguf_open(in_dir("edited-fixture.gguf"));
        CHECK(out != NULL);
        CHECK(gguf_version(out) == gguf_version(src));
        CHECK(gguf_byte_order(out) == gguf_byte_order(src));
        CHECK(gguf_alignment(out) == gguf_alignment(src));
        const uint64_t n = gguf_metadata_count(src);
        CHECK(gguf_metadata_count(out) == n);
        uint64_t j = 0;
        for (uint64_t k = 0; k < n; k++) {
            const GGUFMetadataKV *a = gguf_get_metadata_by_index(src, k);
            if (strcmp(a->key, "test.u8") == 0) continue;
            const GGUFMetadataKV *b = gguf_get_metadata_by_index(out, j++);
            if (strcmp(a->key, "general.name") == 0) {
                CHECK(strcmp(b->key, a->key) == 0 && b->type == T(STRING));
                CHECK(b->str_len == 6 && strcmp(b->value.str, "edited") == 0);
            } else if (strcmp(a->key, "test.f32") == 0) {
                CHECK(strcmp(b->key, a->key) == 0 && b->type == T(FLOAT32));
                CHECK(b->value.f32 == -0.75f);
            } else {
                same_kv(a, b);
            }
        }
        const GGUFMetadataKV *added = gguf_get_metadata_by_index(out, j);
        CHECK(added && strcmp(added->key, "edit.added") == 0 && added->value.i64 == -42);
        FAILS(gguf_get_metadata(out, "test.u8") == NULL, GGUF_ERROR_CODE_NOT_FOUND, NULL);
        const uint64_t nt = gguf_tensor_count(src);
        CHECK(gguf_tensor_count(out) == nt + 1);
        for (uint64_t k = 0; k < nt; k++)
            same_tensor(src, gguf_get_tensor_by_index(src, k), out,
                        gguf_get_tensor_by_index(out, k));
        const GGUFTensorInfo *t = gguf_get_tensor_by_index(out, nt);
        CHECK(t && strcmp(t->name, "extra") == 0 && t->size_bytes == 68);
        const unsigned char *d = gguf_tensor_data(out, t);
        for (uint64_t b = 0; b < 68; b++) CHECK(d[b] == pattern(71, b));
        CHECK(t->offset % gguf_alignment(out) == 0);
        gguf_close(out);
        gguf_close(src);
    }
}

/* A split model opened from any shard: every tensor gathered into one file, no split.* keys. */
static void test_split_gathered(void) {
    static const char *const SHARDS[] = {"split-00001-of-00005.gguf", "split-00003-of-00005.gguf",
                                         "split-00005-of-00005.gguf"};
    static const char *const SPLIT_KEYS[] = {"split.no", "split.count", "split.tensors.count"};
    for (size_t i = 0; i < COUNT(SHARDS); i++) {
        GGUFFile src = gguf_open(fixture(SHARDS[i]));
        CHECK(src != NULL && gguf_shard_count(src) == 5 && gguf_tensor_count(src) == 13);
        GGUFWriter w = gguf_writer_from_file(src);
        CHECK(w != NULL);
        CHECK(gguf_writer_write_file(w, out_path("gathered.gguf")));
        gguf_writer_free(w);

        GGUFFile out = gguf_open(in_dir("gathered.gguf"));
        CHECK(out != NULL);
        CHECK(gguf_shard_count(out) == 1 && gguf_tensor_count(out) == 13);
        CHECK(gguf_metadata_count(src) == 6 && gguf_metadata_count(out) == 3);
        for (uint64_t k = 0; k < 3; k++)
            same_kv(gguf_get_metadata_by_index(src, k), gguf_get_metadata_by_index(out, k));
        for (size_t k = 0; k < COUNT(SPLIT_KEYS); k++)
            FAILS(gguf_get_metadata(out, SPLIT_KEYS[k]) == NULL, GGUF_ERROR_CODE_NOT_FOUND,
                  SPLIT_KEYS[k]);
        uint64_t next = 0;
        for (uint64_t k = 0; k < 13; k++) {
            const GGUFTensorInfo *a = gguf_get_tensor_by_index(src, k);
            const GGUFTensorInfo *b = gguf_get_tensor_by_index(out, k);
            CHECK(a->shard == k / 3 && b->shard == 0);
            same_tensor(src, a, out, b);
            CHECK(b->offset == next);
            next = align_up(b->offset + b->size_bytes, 32);
        }
        gguf_close(out);
        gguf_close(src);
    }
    /* One shard opened alone is copied as it is, split.* keys included. */
    const char *one = fixture("split-00002-of-00005.gguf");
    GGUFFile src = gguf_open_ex(one, GGUF_OPEN_FLAG_SINGLE_SHARD);
    CHECK(src != NULL && gguf_shard_count(src) == 1);
    GGUFWriter w = gguf_writer_from_file(src);
    CHECK(gguf_writer_write_file(w, out_path("one-shard.gguf")));
    gguf_writer_free(w);
    gguf_close(src);
    same_bytes(one, in_dir("one-shard.gguf"));
}

/* NULL for every pointer argument of every writer function. */
static void test_null_arguments(void) {
    static const char *const STRS[] = {"a", NULL};
    static const size_t LENS[] = {1, 2};
    const uint64_t dims[] = {4};
    static const float DATA[4];
    const uint32_t NA = GGUF_ERROR_CODE_NULL_ARGUMENT;
    gguf_writer_free(NULL);
    FAILS(gguf_writer_from_file(NULL) == NULL, NA, "NULL");
    FAILS(!gguf_writer_set_version(NULL, 3), NA, "writer is NULL");
    /* The argument is named once: the whole message. */
    CHECK(!gguf_writer_set_version(NULL, 3));
    CHECK(strcmp(gguf_last_error(), "gguf: writer is NULL") == 0);
    FAILS(!gguf_writer_set_byte_order(NULL, 0), NA, "writer is NULL");
    FAILS(!gguf_writer_set_alignment(NULL, 32), NA, "writer is NULL");
    FAILS(!gguf_writer_set_uint8(NULL, "k", 1), NA, "writer is NULL");
    FAILS(!gguf_writer_set_int8(NULL, "k", 1), NA, NULL);
    FAILS(!gguf_writer_set_uint16(NULL, "k", 1), NA, NULL);
    FAILS(!gguf_writer_set_int16(NULL, "k", 1), NA, NULL);
    FAILS(!gguf_writer_set_uint32(NULL, "k", 1), NA, NULL);
    FAILS(!gguf_writer_set_int32(NULL, "k", 1), NA, NULL);
    FAILS(!gguf_writer_set_float32(NULL, "k", 1), NA, NULL);
    FAILS(!gguf_writer_set_bool(NULL, "k", 1), NA, NULL);
    FAILS(!gguf_writer_set_uint64(NULL, "k", 1), NA, NULL);
    FAILS(!gguf_writer_set_int64(NULL, "k", 1), NA, NULL);
    FAILS(!gguf_writer_set_float64(NULL, "k", 1), NA, NULL);
    FAILS(!gguf_writer_set_string(NULL, "k", "v", 1), NA, NULL);
    FAILS(!gguf_writer_set_array(NULL, "k", T(FLOAT32), DATA, 4), NA, NULL);
    FAILS(!gguf_writer_set_string_array(NULL, "k", STRS, NULL, 1), NA, NULL);
    FAILS(!gguf_writer_set_array_encoded(NULL, "k", T(UINT16), 3, E_U16, 6), NA, NULL);
    FAILS(!gguf_writer_remove_key(NULL, "k"), NA, NULL);
    FAILS(!gguf_writer_add_tensor(NULL, "t", 1, dims, D(F32), DATA, 16), NA, NULL);
    FAILS(!gguf_writer_begin_file(NULL, "x.gguf"), NA, NULL);
    FAILS(gguf_writer_memory_size(NULL) == 0, NA, "writer is NULL");
    FAILS(!gguf_writer_write_memory(NULL, (void *)DATA, sizeof DATA), NA, "writer is NULL");
    FAILS(!gguf_writer_write_tensor_data(NULL, DATA, 16), NA, NULL);
    FAILS(!gguf_writer_finish(NULL), NA, NULL);
    FAILS(!gguf_writer_write_file(NULL, "x.gguf"), NA, NULL);
    FAILS(!gguf_writer_set_sync(NULL, true), NA, "writer is NULL");

    GGUFWriter w = gguf_writer_new();
    CHECK(w != NULL);
    FAILS(!gguf_writer_set_uint8(w, NULL, 1), NA, "key is NULL");
    FAILS(!gguf_writer_set_int8(w, NULL, 1), NA, "key is NULL");
    FAILS(!gguf_writer_set_uint16(w, NULL, 1), NA, NULL);
    FAILS(!gguf_writer_set_int16(w, NULL, 1), NA, NULL);
    FAILS(!gguf_writer_set_uint32(w, NULL, 1), NA, NULL);
    FAILS(!gguf_writer_set_int32(w, NULL, 1), NA, NULL);
    FAILS(!gguf_writer_set_float32(w, NULL, 1), NA, NULL);
    FAILS(!gguf_writer_set_bool(w, NULL, 1), NA, NULL);
    FAILS(!gguf_writer_set_uint64(w, NULL, 1), NA, NULL);
    FAILS(!gguf_writer_set_int64(w, NULL, 1), NA, NULL);
    FAILS(!gguf_writer_set_float64(w, NULL, 1), NA, NULL);
    FAILS(!gguf_writer_set_string(w, NULL, "v", 1), NA, "key is NULL");
    FAILS(!gguf_writer_set_string(w, "k", NULL, 1), NA, "str is NULL");
    FAILS(!gguf_writer_set_array(w, NULL, T(FLOAT32), DATA, 4), NA, "key is NULL");
    FAILS(!gguf_writer_set_array(w, "k", T(FLOAT32), NULL, 4), NA, "data is NULL");
    FAILS(!gguf_writer_set_string_array(w, NULL, STRS, NULL, 1), NA, "key is NULL");
    FAILS(!gguf_writer_set_string_array(w, "k", NULL, NULL, 1), NA, "strs is NULL");
    FAILS(!gguf_writer_set_string_array(w, "k", STRS, NULL, 2), NA, "strs[i] is NULL");
    FAILS(!gguf_writer_set_string_array(w, "k", STRS, LENS, 2), NA, "strs[i] is NULL");
    FAILS(!gguf_writer_set_array_encoded(w, NULL, T(UINT16), 3, E_U16, 6), NA, "key is NULL");
    FAILS(!gguf_writer_set_array_encoded(w, "k", T(UINT16), 3, NULL, 6), NA, "data is NULL");
    FAILS(!gguf_writer_remove_key(w, NULL), NA, "key is NULL");
    FAILS(!gguf_writer_add_tensor(w, NULL, 1, dims, D(F32), DATA, 16), NA, "name is NULL");
    FAILS(!gguf_writer_add_tensor(w, "t", 1, NULL, D(F32), DATA, 16), NA, "dims is NULL");
    FAILS(!gguf_writer_begin_file(w, NULL), NA, "path is NULL");
    FAILS(!gguf_writer_write_file(w, NULL), NA, "path is NULL");
    /* What may be NULL: data and strings of length 0, dims of a 0-d tensor. */
    CHECK(gguf_writer_set_string(w, "empty", NULL, 0));
    CHECK(gguf_writer_set_array(w, "none", T(FLOAT32), NULL, 0));
    CHECK(gguf_writer_set_string_array(w, "no_strings", NULL, NULL, 0));
    CHECK(gguf_writer_set_array_encoded(w, "no_items", T(STRING), 0, NULL, 0));
    CHECK(gguf_writer_add_tensor(w, "t", 0, NULL, D(F32), DATA, 4));
    CHECK(gguf_writer_add_tensor(w, "s", 1, dims, D(F32), NULL, 0));
    CHECK(gguf_writer_begin_file(w, out_path("nulls.gguf")));
    FAILS(!gguf_writer_write_tensor_data(w, NULL, 4), NA, "data is NULL");
    CHECK(gguf_writer_write_tensor_data(w, DATA, 4));
    CHECK(gguf_writer_write_tensor_data(w, DATA, 16));
    CHECK(gguf_writer_finish(w));
    gguf_writer_free(w);
    GGUFFile f = gguf_open(in_dir("nulls.gguf"));
    CHECK(f != NULL && gguf_metadata_count(f) == 4 && gguf_tensor_count(f) == 2);
    gguf_close(f);
}

int main(int argc, char **argv) {
    g_argc = argc;
    g_argv = argv;
    const char *out = getenv("GGUF_WRITER_OUT");
    if (out != NULL && out[0] != '\0') {
        int n = snprintf(g_dir, sizeof g_dir, "%s", out);
        CHECK(n > 0 && (size_t)n < sizeof g_dir);
        g_keep = 1;
        corpus();
        printf("test_writer: corpus written to %s\n", g_dir);
        return 0;
    }
    make_dir();
    test_library_version();
    corpus();
    test_versions_and_byte_orders();
    test_replace_and_remove();
    test_alignment();
    test_refused_values();
    test_refused_encoded();
    test_refused_tensors();
    test_streaming();
    test_same_bytes_every_time();
    test_io_errors();
    test_never_loses_a_file();
    test_faithful_copies();
    test_editor();
    test_split_gathered();
    test_null_arguments();
    remove_outputs();
    printf("test_writer: ok\n");
    return 0;
}
