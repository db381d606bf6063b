// chat_llama.cpp: llama.cpp's side of the chat-template benchmark (bench/chat_run.sh; figures in
// BENCHMARKS.md, "Chat templates"), built against the v0.5.0 headers (target/ggml/llama.cpp-v0.5.0)
// and linked with libllama-common.so of the same build.
//
//   chat_llama [-r ROUNDS] [-t SECONDS] [-o DIR] REQUEST TEMPLATE...
//
// For each TEMPLATE file, over the request in REQUEST (the JSON gguf_chat_render_template takes):
// the time of common_chat_templates_init (llama.cpp's compile, with the request's bos_token and
// eos_token); the time of one common_chat_templates_apply with its inputs already built (the
// messages and tools read once with common_chat_msgs_parse_oaicompat and
// common_chat_tools_parse_oaicompat, add_generation_prompt from the request, `now` pinned to
// SOURCE_DATE_EPOCH); and the time of reading the request's JSON into those inputs and applying,
// as libgguf does on every render. Each of ROUNDS rounds (default 20) repeats the call for at
// least SECONDS (default 0.02) and takes the mean; prints one tab-separated line per template:
// name, init us (min, median), apply us (min, median), parse + apply us (min, median). With -o,
// the prompt goes to DIR/NAME.llama.txt.
#include "chat.h"
#include "json.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

static std::string read_all(const char * path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) {
        std::perror(path);
        std::exit(2);
    }
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
}

// Seconds of this thread's CPU time, as bench/chat_bench.c counts it.
static double now() {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

static std::string text_or(const common_json & req, const char * key) {
    return req.contains(key) ? req.at(key).get<std::string>() : std::string();
}

static common_chat_templates_inputs read_inputs(const std::string & request) {
    common_json                  req = common_json::parse(request);
    common_chat_templates_inputs in;
    in.messages = common_chat_msgs_parse_oaicompat(req.at("messages"));
    if (req.contains("tools")) {
        in.tools = common_chat_tools_parse_oaicompat(req.at("tools"));
    }
    in.add_generation_prompt = req.contains("add_generation_prompt") && req.at("add_generation_prompt").get<bool>();
    in.use_jinja             = true;
    const char * epoch       = std::getenv("SOURCE_DATE_EPOCH");
    in.now = std::chrono::system_clock::from_time_t(epoch ? (std::time_t) std::atoll(epoch) : 1722000309);
    return in;
}

// Minimum and median over `rounds` of the mean time of one call of f, in microseconds.
static void measure(const std::function<void()> & f, int rounds, double seconds, double & min, double & median) {
    std::vector<double> t;
    f();  // warm up
    for (int r = 0; r < rounds; r++) {
        long   calls = 0;
        double t0 = now(), t1;
        do {
            f();
            calls++;
            t1 = now();
        } while (t1 - t0 < seconds);
        t.push_back((t1 - t0) / (double) calls * 1e6);
    }
    std::sort(t.begin(), t.end());
    min    = t[0];
    median = t[t.size() / 2];
}

int main(int argc, char ** argv) {
    int          rounds = 20, a = 1;
    double       seconds = 0.02;
    const char * dir     = nullptr;
    while (a + 1 < argc && argv[a][0] == '-') {
        if (!std::strcmp(argv[a], "-r")) {
            rounds = std::atoi(argv[a + 1]);
        } else if (!std::strcmp(argv[a], "-t")) {
            seconds = std::atof(argv[a + 1]);
        } else if (!std::strcmp(argv[a], "-o")) {
            dir = argv[a + 1];
        } else {
            break;
        }
        a += 2;
    }
    if (argc - a < 2 || rounds < 1) {
        std::fprintf(stderr, "usage: %s [-r ROUNDS] [-t SECONDS] [-o DIR] REQUEST TEMPLATE...\n", argv[0]);
        return 2;
    }
    try {
        const std::string request = read_all(argv[a]);
        const common_json req     = common_json::parse(request);
        const std::string bos = text_or(req, "bos_token"), eos = text_or(req, "eos_token");
        const common_chat_templates_inputs inputs = read_inputs(request);
        for (int i = a + 1; i < argc; i++) {
            const char * slash = std::strrchr(argv[i], '/');
            std::string  name  = slash ? slash + 1 : argv[i];
            std::string  tmpl  = read_all(argv[i]);
            auto         tmpls = common_chat_templates_init(nullptr, tmpl, bos, eos);
            double       c[2], r[2], p[2];
            measure([&] { common_chat_templates_init(nullptr, tmpl, bos, eos); }, rounds, seconds, c[0], c[1]);
            measure([&] { common_chat_templates_apply(tmpls.get(), inputs); }, rounds, seconds, r[0], r[1]);
            measure([&] { common_chat_templates_apply(tmpls.get(), read_inputs(request)); }, rounds, seconds, p[0],
                    p[1]);
            if (dir) {
                std::string   prompt = common_chat_templates_apply(tmpls.get(), inputs).prompt;
                std::ofstream out(std::string(dir) + "/" + name + ".llama.txt", std::ios::binary);
                out << prompt;
            }
            std::printf("%s\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\n", name.c_str(), c[0], c[1], r[0], r[1], p[0], p[1]);
            std::fflush(stdout);
        }
    } catch (const std::exception & e) {
        std::fprintf(stderr, "chat_llama: %s\n", e.what());
        return 1;
    }
    return 0;
}
