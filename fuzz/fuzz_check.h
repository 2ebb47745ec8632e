// What the harnesses share: FUZZ_CHECK, the property check whose failure is a
// finding (it aborts, so libFuzzer keeps the input as a crash and the replay
// test fails), and FuzzInput, which splits one input into typed pieces for
// the harnesses that drive an API rather than one parser.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "common/json_text.h"

#define FUZZ_CHECK(cond, ...)                                                            \
  do {                                                                                   \
    if (!(cond)) {                                                                       \
      std::fprintf(stderr, "%s:%d: FUZZ_CHECK(%s) failed: ", __FILE__, __LINE__, #cond); \
      std::fprintf(stderr, __VA_ARGS__);                                                 \
      std::fprintf(stderr, "\n");                                                        \
      std::abort();                                                                      \
    }                                                                                    \
  } while (0)

namespace shoal::fuzz {

// Consumes an input front to back; past its end every read gives zeros or "".
class FuzzInput {
 public:
  FuzzInput(const uint8_t* data, size_t size) : rest_(reinterpret_cast<const char*>(data), size) {}

  bool empty() const { return rest_.empty(); }
  std::string_view rest() const { return rest_; }

  uint8_t Byte() {
    if (rest_.empty()) return 0;
    uint8_t b = static_cast<uint8_t>(rest_.front());
    rest_.remove_prefix(1);
    return b;
  }
  template <typename T>
  T Int() {
    T v{};
    size_t n = std::min(sizeof(T), rest_.size());
    std::memcpy(&v, rest_.data(), n);
    rest_.remove_prefix(n);
    return v;
  }
  // 0..max inclusive.
  uint64_t Below(uint64_t max) { return max == 0 ? 0 : Int<uint64_t>() % (max + 1); }
  // The bytes up to the next `sep` (or the end); the separator is consumed.
  std::string_view Until(char sep) {
    auto at = rest_.find(sep);
    std::string_view out = rest_.substr(0, at);
    rest_.remove_prefix(at == std::string_view::npos ? rest_.size() : at + 1);
    return out;
  }
  // A string of at most `max` bytes, its length first.
  std::string_view Bytes(size_t max) {
    size_t n = std::min<size_t>({size_t{Byte()}, max, rest_.size()});
    std::string_view out = rest_.substr(0, n);
    rest_.remove_prefix(n);
    return out;
  }

 private:
  std::string_view rest_;
};

// `v` as a JSON string literal (JsonEscape: bytes that are not UTF-8 stay,
// so the JSON is one a parser refuses, as a store's broken answer would be).
inline std::string JsonQuote(std::string_view v) { return "\"" + JsonEscape(v) + "\""; }

}  // namespace shoal::fuzz
