// regex_shim.cpp: libstdc++'s std::regex (ECMAScript, as llama-quantize builds its
// --tensor-type patterns) searched over names, for tests/requantize_pattern.rs.
// Input on stdin: u32 pattern count, each pattern (u32 length, bytes); u32 name count, each
// name (u32 length, bytes); all little-endian. Output: one line per pattern, "E" when the
// constructor throws, else one character per name: '1' when std::regex_search finds it, '0'
// when not, 'X' when the search throws or is not done within two seconds (std::regex
// backtracks without bound: such a search is left running, and the process ends with _exit).
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <unistd.h>
#include <condition_variable>
#include <mutex>
#include <memory>
#include <regex>
#include <thread>
#include <string>
#include <vector>

static bool read_u32(uint32_t &v) {
  unsigned char b[4];
  if (fread(b, 1, 4, stdin) != 4) return false;
  v = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
  return true;
}

static bool read_string(std::string &s) {
  uint32_t n;
  if (!read_u32(n)) return false;
  s.assign(n, '\0');
  return n == 0 || fread(&s[0], 1, n, stdin) == n;
}

int main() {
  uint32_t np, nn;
  if (!read_u32(np)) return 1;
  std::vector<std::string> patterns(np), names;
  for (auto &p : patterns)
    if (!read_string(p)) return 1;
  if (!read_u32(nn)) return 1;
  names.resize(nn);
  for (auto &n : names)
    if (!read_string(n)) return 1;
  for (const auto &p : patterns) {
    std::shared_ptr<std::regex> re;
    try {
      re = std::make_shared<std::regex>(p);
    } catch (...) {
      fputs("E\n", stdout);
      continue;
    }
    // The names are searched on a thread of their own; those it has not answered within two
    // seconds are 'X' (std::regex backtracks without bound), the thread left running.
    struct Work {
      std::mutex m;
      std::condition_variable cv;
      std::string line;
      bool done = false;
    };
    auto w = std::make_shared<Work>();
    std::thread([w, re, &names] {
      for (const auto &n : names) {
        char c;
        try {
          c = std::regex_search(n, *re) ? '1' : '0';
        } catch (...) {
          c = 'X';
        }
        std::lock_guard<std::mutex> g(w->m);
        w->line += c;
      }
      std::lock_guard<std::mutex> g(w->m);
      w->done = true;
      w->cv.notify_all();
    }).detach();
    std::string line;
    {
      std::unique_lock<std::mutex> g(w->m);
      w->cv.wait_for(g, std::chrono::seconds(2), [&] { return w->done; });
      line = w->line;
    }
    line.resize(names.size(), 'X');
    line += '\n';
    fwrite(line.data(), 1, line.size(), stdout);
  }
  fflush(stdout);
  _exit(0);
}
