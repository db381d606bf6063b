/*
 * test_tokenizer.c: the tokenizer API (gguf_tokenizer_open / _close, gguf_tokenize,
 * gguf_detokenize, gguf_token_to_piece, gguf_tokenizer_special_tokens, gguf_tokenizer_n_tokens,
 * gguf_token_is_eog) on vocab_spm.gguf, a small SentencePiece vocabulary: known tokens, the
 * sizing rule (the full count returned, nothing written when it does not fit), the flags, a
 * tokenizer that outlives its file, and the refusals (a file without vocabulary, a BOS id past
 * the vocabulary (at the offset of its value), unknown flags, ids outside the vocabulary, NULL pointers, token ids not
 * aligned for int32_t).
 *
 * Usage: test_tokenizer FIXTURE... (every path tests/c_api.rs writes; picked by file name).
 */
#include "gguf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

/* Token ids of vocab_spm.gguf (tests/c_api.rs). */
enum { UNK = 0, BOS = 1, EOS = 2, BYTE0 = 3, SPACE = 259, SP_H = 260, SP_HELLO = 264 };

static void tokens_and_text(GGUFTokenizer tok) {
    int32_t ids[16];
    char text[64];

    /* "Hello": a leading space is added, and the merges make one token. */
    CHECK(gguf_tokenize(tok, "Hello", 5, ids, 16, 0) == 1);
    CHECK(ids[0] == SP_HELLO);
    CHECK(gguf_tokenize(tok, "Hello", 5, ids, 16, GGUF_TOKENIZE_ADD_SPECIAL) == 2);
    CHECK(ids[0] == BOS && ids[1] == SP_HELLO);

    /* "Hi\0": 'i' and NUL have no token but their bytes. */
    CHECK(gguf_tokenize(tok, "Hi\0", 3, ids, 16, 0) == 3);
    CHECK(ids[0] == SP_H && ids[1] == BYTE0 + 'i' && ids[2] == BYTE0);

    /* Sizing: the count comes back, and nothing is written past the room given. */
    ids[0] = -7;
    CHECK(gguf_tokenize(tok, "Hi\0", 3, NULL, 0, 0) == 3);
    CHECK(gguf_tokenize(tok, "Hi\0", 3, ids, 2, 0) == 3);
    CHECK(ids[0] == -7);
    CHECK(gguf_tokenize(tok, NULL, 0, NULL, 0, 0) == 0);
    CHECK(gguf_tokenize(tok, NULL, 0, ids, 16, GGUF_TOKENIZE_ADD_SPECIAL) == 1 && ids[0] == BOS);

    /* Special-token text is a token only with PARSE_SPECIAL. */
    CHECK(gguf_tokenize(tok, "<s>", 3, ids, 16, GGUF_TOKENIZE_PARSE_SPECIAL) == 1);
    CHECK(ids[0] == BOS);
    CHECK(gguf_tokenize(tok, "<s>", 3, ids, 16, 0) == 4); /* the space token, then 3 bytes */
    CHECK(ids[0] == SPACE && ids[1] == BYTE0 + '<');

    /* Back to text. The space the tokenizer adds goes from the first token only: here BOS,
     * which gives nothing without UNPARSE_SPECIAL (llama.cpp's rule). */
    int32_t hello[] = {BOS, SP_HELLO, BYTE0 + '!', EOS};
    CHECK(gguf_detokenize(tok, hello + 1, 2, text, sizeof text, 0) == 6);
    CHECK(memcmp(text, "Hello!", 6) == 0);
    CHECK(gguf_detokenize(tok, hello, 4, text, sizeof text, 0) == 7);
    CHECK(memcmp(text, " Hello!", 7) == 0);
    CHECK(gguf_detokenize(tok, hello, 4, text, sizeof text, GGUF_DETOKENIZE_UNPARSE_SPECIAL) == 14);
    CHECK(memcmp(text, "<s> Hello!</s>", 14) == 0);
    /* remove_special drops the BOS, and the leading space stays (llama.cpp's rule). */
    CHECK(gguf_detokenize(tok, hello, 4,
                          text, sizeof text,
                          GGUF_DETOKENIZE_REMOVE_SPECIAL | GGUF_DETOKENIZE_UNPARSE_SPECIAL) == 11);
    CHECK(memcmp(text, " Hello!</s>", 11) == 0);
    memset(text, 'x', sizeof text);
    CHECK(gguf_detokenize(tok, hello, 4, text, 3, 0) == 7);
    CHECK(text[0] == 'x');
    CHECK(gguf_detokenize(tok, hello, 4, NULL, 0, 0) == 7);
    CHECK(gguf_detokenize(tok, NULL, 0, NULL, 0, 0) == 0);

    /* One token's piece. */
    CHECK(gguf_token_to_piece(tok, SP_HELLO, text, sizeof text, 0) == 6);
    CHECK(memcmp(text, " Hello", 6) == 0);
    CHECK(gguf_token_to_piece(tok, BOS, text, sizeof text, 0) == 0);
    CHECK(gguf_token_to_piece(tok, BOS, text, sizeof text, GGUF_DETOKENIZE_UNPARSE_SPECIAL) == 3);
    CHECK(memcmp(text, "<s>", 3) == 0);
    CHECK(gguf_token_to_piece(tok, BYTE0 + 0x0a, text, 1, 0) == 1 && text[0] == '\n');
    CHECK(gguf_token_to_piece(tok, SPACE, NULL, 0, 0) == 1);
}

static void special_tokens(GGUFTokenizer tok) {
    GGUFSpecialTokens s;
    memset(&s, 0x55, sizeof s);
    CHECK(gguf_tokenizer_special_tokens(tok, &s));
    CHECK(s.bos == BOS && s.eos == EOS && s.unk == UNK);
    CHECK(s.eot == -1 && s.eom == -1 && s.sep == -1 && s.pad == -1 && s.mask == -1);
    CHECK(s.fim_pre == -1 && s.fim_suf == -1 && s.fim_mid == -1);
    CHECK(s.fim_pad == -1 && s.fim_rep == -1 && s.fim_sep == -1);
    CHECK(s.nl == BYTE0 + 0x0a);
    CHECK(s.add_bos && !s.add_eos);
    CHECK(gguf_tokenizer_n_tokens(tok) == 265);
    CHECK(gguf_token_is_eog(tok, EOS));
    CHECK(!gguf_token_is_eog(tok, BOS));
}

static void refusals(GGUFTokenizer tok) {
    int32_t ids[4];
    char text[8];
    int32_t bad[] = {SP_HELLO, 265};
    int32_t negative[] = {-1};

    FAILS(gguf_tokenize(tok, "a", 1, ids, 4, 4) == -1, GGUF_ERROR_CODE_INVALID_ARGUMENT,
          "unknown flags");
    FAILS(gguf_tokenize(tok, NULL, 1, ids, 4, 0) == -1, GGUF_ERROR_CODE_NULL_ARGUMENT, "text");
    FAILS(gguf_tokenize(tok, "Hi", 2, NULL, 4, 0) == -1, GGUF_ERROR_CODE_NULL_ARGUMENT, "tokens");
    FAILS(gguf_tokenize(NULL, "a", 1, ids, 4, 0) == -1, GGUF_ERROR_CODE_NULL_ARGUMENT, "tok");
    FAILS(gguf_detokenize(tok, bad, 2, text, sizeof text, 0) == -1,
          GGUF_ERROR_CODE_INVALID_ARGUMENT, "token id 265 is not in the vocabulary");
    FAILS(gguf_detokenize(tok, negative, 1, text, sizeof text, 0) == -1,
          GGUF_ERROR_CODE_INVALID_ARGUMENT, "token id -1");
    FAILS(gguf_detokenize(tok, NULL, 1, text, sizeof text, 0) == -1,
          GGUF_ERROR_CODE_NULL_ARGUMENT, "tokens");
    FAILS(gguf_detokenize(tok, bad, 1, text, sizeof text, 8) == -1,
          GGUF_ERROR_CODE_INVALID_ARGUMENT, "unknown flags");
    FAILS(gguf_token_to_piece(tok, 100000, text, sizeof text, 0) == -1,
          GGUF_ERROR_CODE_INVALID_ARGUMENT, "token id 100000");
    FAILS(gguf_token_to_piece(tok, BOS, text, sizeof text, GGUF_DETOKENIZE_REMOVE_SPECIAL) == -1,
          GGUF_ERROR_CODE_INVALID_ARGUMENT, "unknown flags");
    /* Token ids at an address not aligned for int32_t are refused (as input and as room),
     * whether or not the tokens would fit, and nothing is written. */
    int32_t store[8] = {0};
    int32_t *odd = (int32_t *)(void *)((char *)store + 1);
    FAILS(gguf_tokenize(tok, "Hi", 2, odd, 4, 0) == -1, GGUF_ERROR_CODE_INVALID_ARGUMENT,
          "not aligned");
    FAILS(gguf_tokenize(tok, "Hi", 2, odd, 1, 0) == -1, GGUF_ERROR_CODE_INVALID_ARGUMENT,
          "not aligned");
    for (int i = 0; i < 8; i++) CHECK(store[i] == 0);
    CHECK(gguf_tokenize(tok, "Hi", 2, odd, 0, 0) == 2); /* no room: the count alone */
    FAILS(gguf_detokenize(tok, odd, 1, text, sizeof text, 0) == -1,
          GGUF_ERROR_CODE_INVALID_ARGUMENT, "not aligned");
    FAILS(!gguf_tokenizer_special_tokens(tok, NULL), GGUF_ERROR_CODE_NULL_ARGUMENT, "out");
    FAILS(gguf_tokenizer_n_tokens(NULL) == 0, GGUF_ERROR_CODE_NULL_ARGUMENT, "tok");
    FAILS(!gguf_token_is_eog(NULL, 0), GGUF_ERROR_CODE_NULL_ARGUMENT, "tok");
}

int main(int argc, char **argv) {
    g_argc = argc;
    g_argv = argv;

    /* The tokenizer outlives its file. */
    GGUFFile f = gguf_open(fixture("vocab_spm.gguf"));
    CHECK(f != NULL);
    GGUFTokenizer tok = gguf_tokenizer_open(f);
    CHECK(tok != NULL);
    gguf_close(f);
    tokens_and_text(tok);
    special_tokens(tok);
    refusals(tok);
    gguf_tokenizer_close(tok);
    gguf_tokenizer_close(NULL);

    /* Files without a usable vocabulary. */
    f = gguf_open(fixture("full.gguf"));
    CHECK(f != NULL);
    FAILS(gguf_tokenizer_open(f) == NULL, GGUF_ERROR_CODE_INVALID_ARGUMENT, "no tokenizer");
    gguf_close(f);
    /* The refusal names the offset of the value refused: the UINT32 100000 is there. */
    f = gguf_open(fixture("vocab_bad_bos.gguf"));
    CHECK(f != NULL);
    gguf_clear_error();
    CHECK(gguf_tokenizer_open(f) == NULL);
    int64_t at = gguf_last_error_offset();
    CHECK_PARSE_ERROR(GGUF_ERROR_CODE_INVALID_ARGUMENT,
                      "tokenizer.ggml.bos_token_id is 100000, past the vocabulary's 265 tokens",
                      OFFSET_ANY);
    CHECK(at > 0);
    FILE *raw = fopen(fixture("vocab_bad_bos.gguf"), "rb");
    CHECK(raw != NULL);
    unsigned char v[4] = {0};
    CHECK(fseek(raw, (long)at, SEEK_SET) == 0 && fread(v, 1, 4, raw) == 4);
    CHECK((v[0] | v[1] << 8 | v[2] << 16 | (uint32_t)v[3] << 24) == 100000);
    fclose(raw);
    gguf_close(f);
    FAILS(gguf_tokenizer_open(NULL) == NULL, GGUF_ERROR_CODE_NULL_ARGUMENT, "file");

    printf("test_tokenizer: ok\n");
    return 0;
}
