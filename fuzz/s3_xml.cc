// The XML documents clients send the S3 endpoint (s3/s3_request_parse.h):
// CompleteMultipartUpload and DeleteObjects, on the tag scanner of
// ufs/http/xml.h. The first byte picks a mode:
//   0, 1: the rest as a CompleteMultipartUpload / Delete document;
//   2: the rest split at NULs into keys, sent as a <Delete> document the way
//      SDKs write it (escaped with XmlEscape): exactly those keys come back;
//   3: the same for the ETags of a CompleteMultipartUpload.
#include "fuzz_check.h"
#include "s3/s3_request_parse.h"
#include "ufs/http/xml.h"

namespace {

using namespace shoal;

std::vector<std::string> Split(std::string_view rest, size_t max) {
  std::vector<std::string> out;
  while (!rest.empty() && out.size() < max) {
    auto nul = rest.find('\0');
    out.emplace_back(rest.substr(0, nul));
    rest.remove_prefix(nul == std::string_view::npos ? rest.size() : nul + 1);
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0 || size > 64 * 1024) return 0;
  std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 4) {
    case 0: {
      auto parts = s3::ParseCompleteMultipart(rest);
      if (!parts) break;
      FUZZ_CHECK(!parts->empty() && parts->size() <= static_cast<size_t>(s3::kMaxParts), "%zu parts", parts->size());
      for (size_t i = 0; i < parts->size(); ++i) {
        const auto& p = (*parts)[i];
        FUZZ_CHECK(p.number >= 1 && p.number <= s3::kMaxParts, "part number %d", p.number);
        FUZZ_CHECK(i == 0 || p.number > (*parts)[i - 1].number, "parts out of order");
        FUZZ_CHECK(p.etag.find('"') == std::string::npos, "a quoted ETag");
      }
      break;
    }
    case 1: {
      auto del = s3::ParseDeleteObjects(rest);
      if (!del) break;
      FUZZ_CHECK(del->keys.size() <= s3::kMaxDeleteKeys, "%zu keys", del->keys.size());
      for (const auto& k : del->keys) FUZZ_CHECK(!k.empty(), "an empty key");
      break;
    }
    case 2: {
      auto keys = Split(rest, s3::kMaxDeleteKeys);
      std::string xml = "<Delete><Quiet>true</Quiet>";
      for (const auto& k : keys) xml += "<Object><Key>" + XmlEscape(k) + "</Key></Object>";
      xml += "</Delete>";
      auto del = s3::ParseDeleteObjects(xml);
      bool any_empty = false;
      for (const auto& k : keys) any_empty = any_empty || k.empty();
      if (any_empty) {
        FUZZ_CHECK(!del, "a <Delete> with an empty key was accepted");
        break;
      }
      FUZZ_CHECK(del.has_value(), "a well-formed <Delete> was refused: %s", del ? "" : del.error().message.c_str());
      FUZZ_CHECK(del->quiet, "<Quiet>true</Quiet> was missed");
      FUZZ_CHECK(del->keys == keys, "the keys of a <Delete> did not come back as sent (%zu of %zu)", del->keys.size(),
                 keys.size());
      break;
    }
    case 3: {
      auto etags = Split(rest, 64);
      std::string xml = "<CompleteMultipartUpload>";
      for (size_t i = 0; i < etags.size(); ++i) {
        xml += "<Part><PartNumber>" + std::to_string(i + 1) + "</PartNumber><ETag>\"" + XmlEscape(etags[i]) +
               "\"</ETag></Part>";
      }
      xml += "</CompleteMultipartUpload>";
      auto parts = s3::ParseCompleteMultipart(xml);
      if (etags.empty()) {
        FUZZ_CHECK(!parts, "a CompleteMultipartUpload without parts was accepted");
        break;
      }
      FUZZ_CHECK(parts.has_value(), "a well-formed CompleteMultipartUpload was refused: %s",
                 parts ? "" : parts.error().message.c_str());
      FUZZ_CHECK(parts->size() == etags.size(), "%zu parts of %zu", parts->size(), etags.size());
      for (size_t i = 0; i < etags.size(); ++i) {
        FUZZ_CHECK((*parts)[i].etag == s3::Unquote(etags[i]), "ETag %zu did not come back as sent", i);
      }
      break;
    }
  }
  return 0;
}
