// A write's options for the store as the write-back holders receive them
// (ufs/write_options_codec.h: the `attrs` query parameter of begin, put and
// commit, and the "attrs" of a journal record and of a pending stat): any
// text is refused or read, and what is read writes back to a text that
// reads back equal, within the bounds the decoder promises.
#include "fuzz_check.h"
#include "ufs/write_options_codec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > shoal::kMaxWriteOptionsText + 16) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto o = shoal::DecodeWriteOptions(text);
  if (!o) return 0;
  FUZZ_CHECK(o->mode <= 07777, "decoded mode %o is over 07777", o->mode);
  for (const auto& [k, v] : o->metadata.user) {
    FUZZ_CHECK(
        !k.empty() && k.find_first_of("=\r\n") == std::string::npos && v.find_first_of("\r\n") == std::string::npos,
        "decoded a metadata name or value a store cannot keep");
  }
  auto again = shoal::EncodeWriteOptions(*o);
  FUZZ_CHECK(again.has_value(), "decoded options do not encode: %s", again ? "" : again.error().message().c_str());
  auto back = shoal::DecodeWriteOptions(*again);
  FUZZ_CHECK(back.has_value(), "the encoder wrote text the decoder refuses: %s\n%s",
             back ? "" : back.error().message().c_str(), again->c_str());
  FUZZ_CHECK(back->metadata.content_type == o->metadata.content_type && back->metadata.user == o->metadata.user &&
                 back->metadata.headers == o->metadata.headers && back->etag == o->etag && back->mode == o->mode,
             "options do not read back equal:\n%s", again->c_str());
  FUZZ_CHECK(*shoal::EncodeWriteOptions(*back) == *again, "encoding is not canonical:\n%s", again->c_str());
  return 0;
}
