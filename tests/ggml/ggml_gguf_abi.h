/*
 * ggml_gguf_abi.h: the part of ggml's public GGUF API (exported by libggml-base.so) that the
 * cross-check tests and benchmarks call, declared here from its public ABI so that nothing of
 * ggml has to be vendored. Only test and benchmark programs include this; libgguf's own header
 * uses none of these names.
 */
#ifndef LIBGGUF_TESTS_GGML_GGUF_ABI_H
#define LIBGGUF_TESTS_GGML_GGUF_ABI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct gguf_context;
struct ggml_context;

struct gguf_init_params {
    bool no_alloc;
    struct ggml_context **ctx;
};

typedef void (*ggml_log_callback)(int level, const char *text, void *user_data);
void ggml_log_set(ggml_log_callback log_callback, void *user_data);

struct gguf_context *gguf_init_from_file(const char *fname, struct gguf_init_params params);
void gguf_free(struct gguf_context *ctx);

uint32_t gguf_get_version(const struct gguf_context *ctx);
size_t gguf_get_alignment(const struct gguf_context *ctx);
size_t gguf_get_data_offset(const struct gguf_context *ctx);

int64_t gguf_get_n_kv(const struct gguf_context *ctx);
int64_t gguf_find_key(const struct gguf_context *ctx, const char *key);
const char *gguf_get_key(const struct gguf_context *ctx, int64_t key_id);
int gguf_get_kv_type(const struct gguf_context *ctx, int64_t key_id);
int gguf_get_arr_type(const struct gguf_context *ctx, int64_t key_id);
size_t gguf_get_arr_n(const struct gguf_context *ctx, int64_t key_id);
const void *gguf_get_arr_data(const struct gguf_context *ctx, int64_t key_id);
const char *gguf_get_arr_str(const struct gguf_context *ctx, int64_t key_id, size_t i);
uint8_t gguf_get_val_u8(const struct gguf_context *ctx, int64_t key_id);
int8_t gguf_get_val_i8(const struct gguf_context *ctx, int64_t key_id);
uint16_t gguf_get_val_u16(const struct gguf_context *ctx, int64_t key_id);
int16_t gguf_get_val_i16(const struct gguf_context *ctx, int64_t key_id);
uint32_t gguf_get_val_u32(const struct gguf_context *ctx, int64_t key_id);
int32_t gguf_get_val_i32(const struct gguf_context *ctx, int64_t key_id);
float gguf_get_val_f32(const struct gguf_context *ctx, int64_t key_id);
uint64_t gguf_get_val_u64(const struct gguf_context *ctx, int64_t key_id);
int64_t gguf_get_val_i64(const struct gguf_context *ctx, int64_t key_id);
double gguf_get_val_f64(const struct gguf_context *ctx, int64_t key_id);
bool gguf_get_val_bool(const struct gguf_context *ctx, int64_t key_id);
const char *gguf_get_val_str(const struct gguf_context *ctx, int64_t key_id);

int64_t gguf_get_n_tensors(const struct gguf_context *ctx);
int64_t gguf_find_tensor(const struct gguf_context *ctx, const char *name);
const char *gguf_get_tensor_name(const struct gguf_context *ctx, int64_t tensor_id);
int gguf_get_tensor_type(const struct gguf_context *ctx, int64_t tensor_id);
size_t gguf_get_tensor_offset(const struct gguf_context *ctx, int64_t tensor_id);
size_t gguf_get_tensor_size(const struct gguf_context *ctx, int64_t tensor_id);
const int64_t *gguf_get_tensor_ne(const struct gguf_context *ctx, int64_t tensor_id);

#endif
