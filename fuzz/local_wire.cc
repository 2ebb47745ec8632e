// The short-circuit protocol's records (common/local_wire.h), as the worker
// decodes a client's request or touch batch and the client decodes a
// worker's reply. The first byte picks the decoder; a record that decodes
// must encode back to the same bytes (the format has one spelling).
#include "common/local_wire.h"
#include "fuzz_check.h"

namespace lw = shoal::local_wire;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (in.size() > lw::kMaxMessage) return 0;  // RecvRecord never returns more
  switch (data[0] % 3) {
    case 0: {
      auto r = lw::DecodeRequest(in);
      if (!r) break;
      FUZZ_CHECK(lw::EncodeRequest(*r) == in, "a request does not encode back to its bytes");
      break;
    }
    case 1: {
      auto r = lw::DecodeReply(in);
      if (!r) break;
      FUZZ_CHECK(r->segments.size() <= lw::kMaxSegments, "%zu segments", r->segments.size());
      FUZZ_CHECK(lw::EncodeReply(*r) == in, "a reply does not encode back to its bytes");
      break;
    }
    case 2: {
      auto t = lw::DecodeTouches(in);
      if (!t) break;
      FUZZ_CHECK(t->size() <= lw::kMaxTouches, "%zu touches", t->size());
      size_t bytes = 0;
      for (const auto& e : *t) {
        FUZZ_CHECK(!e.path.empty() && e.count > 0, "an empty touch entry was accepted");
        bytes += lw::EncodedTouchBytes(e);
      }
      FUZZ_CHECK(bytes == in.size(), "touch sizes add up to %zu, not %zu", bytes, in.size());
      FUZZ_CHECK(lw::EncodeTouches(*t) == in, "a touch batch does not encode back to its bytes");
      break;
    }
  }
  return 0;
}
