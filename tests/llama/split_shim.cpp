// llama.cpp's Unicode functions (exported by libllama) behind a request/response protocol on
// stdin/stdout, for tests/tokenizer_split.rs. Integers are little-endian u32; byte strings are a
// u32 length then the bytes. Requests:
//   'S' n_regexes, regexes..., byte_encode (u8), text  -> status (u8: 0 ok, 1 exception), n, words...
//   'D' text                                          -> n, code points (u32 each)
//   'T' first, count                                  -> per code point: flags (u16), tolower, nfd, is_han (u8)
//   'B'                                               -> for each byte 0..255: its text; then len_utf8 of each byte (u8)
//   'Q'                                               -> exit
#include <cstdint>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

// The declarations of llama.cpp's src/unicode.h (libllama exports them); the flags are returned
// as a two-byte trivially copyable struct, as llama.cpp's bit-field struct is.
struct unicode_cpt_flags {
    uint16_t bits;
};
unicode_cpt_flags unicode_cpt_flags_from_cpt(uint32_t cpt);
std::vector<uint32_t> unicode_cpts_from_utf8(const std::string & utf8);
std::vector<uint32_t> unicode_cpts_normalize_nfd(const std::vector<uint32_t> & cpts);
uint32_t unicode_tolower(uint32_t cpt);
bool unicode_cpt_is_han(uint32_t cpt);
std::string unicode_byte_to_utf8(uint8_t byte);
size_t unicode_len_utf8(char src);
std::vector<std::string> unicode_regex_split(const std::string & text, const std::vector<std::string> & regex_exprs,
                                             bool byte_encode);

static bool read_all(void * p, size_t n) { return fread(p, 1, n, stdin) == n; }

static uint32_t read_u32() {
    unsigned char b[4];
    if (!read_all(b, 4)) {
        std::exit(2);
    }
    return (uint32_t) b[0] | (uint32_t) b[1] << 8 | (uint32_t) b[2] << 16 | (uint32_t) b[3] << 24;
}

static std::string read_str() {
    std::string s(read_u32(), '\0');
    if (!s.empty() && !read_all(&s[0], s.size())) {
        std::exit(2);
    }
    return s;
}

static void put_u32(std::string & out, uint32_t v) {
    for (int i = 0; i < 4; ++i) {
        out.push_back((char) (v >> (8 * i)));
    }
}

static void put_str(std::string & out, const std::string & s) {
    put_u32(out, (uint32_t) s.size());
    out += s;
}

int main() {
    for (;;) {
        int cmd = getchar();
        std::string out;
        if (cmd == 'S') {
            std::vector<std::string> regexes(read_u32());
            for (auto & r : regexes) {
                r = read_str();
            }
            int byte_encode = getchar();
            std::string text = read_str();
            try {
                auto words = unicode_regex_split(text, regexes, byte_encode != 0);
                out.push_back(0);
                put_u32(out, (uint32_t) words.size());
                for (auto & w : words) {
                    put_str(out, w);
                }
            } catch (const std::exception &) {
                out.push_back(1);
            }
        } else if (cmd == 'D') {
            auto cpts = unicode_cpts_from_utf8(read_str());
            put_u32(out, (uint32_t) cpts.size());
            for (auto c : cpts) {
                put_u32(out, c);
            }
        } else if (cmd == 'T') {
            uint32_t first = read_u32();
            uint32_t count = read_u32();
            std::vector<uint32_t> cpts;
            for (uint32_t i = 0; i < count; ++i) {
                cpts.push_back(first + i);
            }
            auto nfd = unicode_cpts_normalize_nfd(cpts);
            for (uint32_t i = 0; i < count; ++i) {
                uint16_t f = unicode_cpt_flags_from_cpt(cpts[i]).bits;
                out.push_back((char) (f & 0xFF));
                out.push_back((char) (f >> 8));
                put_u32(out, unicode_tolower(cpts[i]));
                put_u32(out, nfd[i]);
                out.push_back(unicode_cpt_is_han(cpts[i]) ? 1 : 0);
            }
        } else if (cmd == 'B') {
            for (int b = 0; b < 256; ++b) {
                put_str(out, unicode_byte_to_utf8((uint8_t) b));
            }
            for (int b = 0; b < 256; ++b) {
                out.push_back((char) unicode_len_utf8((char) b));
            }
        } else {
            return 0;
        }
        fwrite(out.data(), 1, out.size(), stdout);
        fflush(stdout);
    }
}
