/*
 * test_chat.c: the chat-template API (gguf_chat_render_template, gguf_chat_render,
 * gguf_chat_template_count / _name, gguf_chat_template_compile / _render / _free) on chat.gguf
 * (tests/c_api.rs): a render with the file's special tokens, a named template, the sizing rule
 * (the full length returned, nothing written when it does not fit), a compiled template
 * rendered many times, and the refusals (a template that raises, a syntax error with its line,
 * a request with its byte offset, a runaway recursion, unknown flags, NULL), and the llama.cpp flag's
 * rendering (developer to system, its default generation prompt, its message checks).
 *
 * Usage: test_chat FIXTURE... (every path tests/c_api.rs writes; picked by file name).
 */
#include "gguf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static const char REQUEST[] =
    "{\"messages\": [{\"role\": \"user\", \"content\": \"h\\u00e9llo\"}], \"add_generation_prompt\": true}";

static void file_templates(void) {
    GGUFFile f = gguf_open(fixture("chat.gguf"));
    CHECK(f != NULL);
    CHECK(gguf_chat_template_count(f) == 2);
    CHECK(strcmp(gguf_chat_template_name(f, 0), "") == 0);
    CHECK(strcmp(gguf_chat_template_name(f, 1), "shout") == 0);
    FAILS(gguf_chat_template_name(f, 2) == NULL, GGUF_ERROR_CODE_INVALID_ARGUMENT, "past the 2");

    /* The default template, BOS from the vocabulary. */
    const char *want = "<s>user: h\xc3\xa9llo\n<|assistant|>";
    char out[128];
    int64_t n = gguf_chat_render(f, NULL, REQUEST, strlen(REQUEST), out, sizeof out, 0);
    CHECK(n == (int64_t)strlen(want));
    CHECK(memcmp(out, want, (size_t)n) == 0);

    /* Sizing: the length alone, then too little room writes nothing. */
    CHECK(gguf_chat_render(f, NULL, REQUEST, strlen(REQUEST), NULL, 0, 0) == n);
    memset(out, 'x', sizeof out);
    CHECK(gguf_chat_render(f, NULL, REQUEST, strlen(REQUEST), out, (uint64_t)n - 1, 0) == n);
    CHECK(out[0] == 'x');

    /* The request's own bos_token replaces the file's. */
    const char *own = "{\"messages\": [{\"role\": \"user\", \"content\": \"a\"}], \"bos_token\": \"[B]\"}";
    n = gguf_chat_render(f, NULL, own, strlen(own), out, sizeof out, 0);
    CHECK(n == 11 && memcmp(out, "[B]user: a\n", 11) == 0);

    /* A named template. */
    n = gguf_chat_render(f, "shout", REQUEST, strlen(REQUEST), out, sizeof out, 0);
    CHECK(n == 6 && memcmp(out, "H\xc3\x89LLO", 6) == 0);
    FAILS(gguf_chat_render(f, "missing", REQUEST, strlen(REQUEST), out, sizeof out, 0) == -1,
          GGUF_ERROR_CODE_NOT_FOUND, "tokenizer.chat_template.missing");

    /* llama-server's rendering: developer becomes system, BOS from the vocabulary, and the
       generation prompt unless the request says otherwise. */
    const char *dev = "{\"messages\": [{\"role\": \"developer\", \"content\": \"d\"}, {\"role\": \"user\", \"content\": \"u\"}]}";
    const char *llama = "<s>system: d\nuser: u\n<|assistant|>";
    n = gguf_chat_render(f, NULL, dev, strlen(dev), out, sizeof out, GGUF_CHAT_LLAMA_CPP);
    CHECK(n == (int64_t)strlen(llama) && memcmp(out, llama, (size_t)n) == 0);
    n = gguf_chat_render(f, NULL, dev, strlen(dev), out, sizeof out, 0);
    const char *plain = "<s>developer: d\nuser: u\n";
    CHECK(n == (int64_t)strlen(plain) && memcmp(out, plain, (size_t)n) == 0);
    const char *no_content = "{\"messages\": [{\"role\": \"user\"}]}";
    FAILS(gguf_chat_render(f, NULL, no_content, strlen(no_content), out, sizeof out, GGUF_CHAT_LLAMA_CPP) == -1,
          GGUF_ERROR_CODE_BAD_REQUEST, "Expected 'content' or 'tool_calls'");
    FAILS(gguf_chat_render(f, NULL, REQUEST, strlen(REQUEST), out, sizeof out, 8) == -1,
          GGUF_ERROR_CODE_INVALID_ARGUMENT, "unknown flags");
    gguf_close(f);

    /* A file without templates. */
    f = gguf_open(fixture("full.gguf"));
    CHECK(f != NULL);
    CHECK(gguf_chat_template_count(f) == 0);
    FAILS(gguf_chat_render(f, NULL, REQUEST, strlen(REQUEST), out, sizeof out, 0) == -1,
          GGUF_ERROR_CODE_NOT_FOUND, "tokenizer.chat_template");
    gguf_close(f);
}

static void given_templates(void) {
    char out[256];
    const char *t = "{% for m in messages %}[{{ m['content'] | tojson }}]{% endfor %}";
    int64_t n = gguf_chat_render_template(t, strlen(t), REQUEST, strlen(REQUEST), out, sizeof out, 0);
    CHECK(n == 10 && memcmp(out, "[\"h\xc3\xa9llo\"]", 10) == 0);

    /* The template's own message. */
    const char *raises = "{{ raise_exception('Conversation roles must alternate') }}";
    FAILS(gguf_chat_render_template(raises, strlen(raises), REQUEST, strlen(REQUEST), out, sizeof out, 0) == -1,
          GGUF_ERROR_CODE_TEMPLATE_RENDER, "Conversation roles must alternate");
    const char *broken = "ok\n{% for m in messages %}";
    FAILS(gguf_chat_render_template(broken, strlen(broken), REQUEST, strlen(REQUEST), out, sizeof out, 0) == -1,
          GGUF_ERROR_CODE_TEMPLATE_SYNTAX, "line 2");
    /* A runaway recursion (the loops that exhaust the work bound are tests/chat_safety.rs's:
       they take long under valgrind). */
    const char *runaway = "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}";
    FAILS(gguf_chat_render_template(runaway, strlen(runaway), REQUEST, strlen(REQUEST), out, sizeof out, 0) == -1,
          GGUF_ERROR_CODE_TEMPLATE_LIMIT, "deep");

    /* A malformed request: the byte offset. */
    const char *bad = "{\"messages\": [1,]}";
    gguf_clear_error();
    CHECK(gguf_chat_render_template(t, strlen(t), bad, strlen(bad), out, sizeof out, 0) == -1);
    CHECK_PARSE_ERROR(GGUF_ERROR_CODE_BAD_REQUEST, "expected a JSON value", 16);

    FAILS(gguf_chat_render_template(NULL, 3, REQUEST, strlen(REQUEST), out, sizeof out, 0) == -1,
          GGUF_ERROR_CODE_NULL_ARGUMENT, "tmpl");
    FAILS(gguf_chat_render_template(t, strlen(t), REQUEST, strlen(REQUEST), NULL, 64, 0) == -1,
          GGUF_ERROR_CODE_NULL_ARGUMENT, "out");
    FAILS(gguf_chat_render(NULL, NULL, REQUEST, strlen(REQUEST), out, sizeof out, 0) == -1,
          GGUF_ERROR_CODE_NULL_ARGUMENT, "file");
}

static void compiled_templates(void) {
    const char *t = "{{ messages | length }}:{{ messages[-1].content }}";
    GGUFChatTemplate c = gguf_chat_template_compile(t, strlen(t));
    CHECK(c != NULL);
    char out[64];
    for (int i = 0; i < 100; i++) {
        int64_t n = gguf_chat_template_render(c, REQUEST, strlen(REQUEST), out, sizeof out, 0);
        CHECK(n == 8 && memcmp(out, "1:h\xc3\xa9llo", 8) == 0);
    }
    gguf_chat_template_free(c);
    gguf_chat_template_free(NULL);
    const char *broken = "{{ a";
    FAILS(gguf_chat_template_compile(broken, strlen(broken)) == NULL,
          GGUF_ERROR_CODE_TEMPLATE_SYNTAX, "line 1");
    FAILS(gguf_chat_template_render(NULL, REQUEST, strlen(REQUEST), out, sizeof out, 0) == -1,
          GGUF_ERROR_CODE_NULL_ARGUMENT, "tmpl");
}

int main(int argc, char **argv) {
    g_argc = argc;
    g_argv = argv;
    file_templates();
    given_templates();
    compiled_templates();
    puts("test_chat: ok");
    return 0;
}
