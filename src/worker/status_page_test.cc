#include "worker/status_page.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace shoal {
namespace {

nlohmann::json Doc() {
  nlohmann::json workers = nlohmann::json::array();
  for (int port : {7001, 7002, 7003}) {
    workers.push_back({{"address", "127.0.0.1:" + std::to_string(port)},
                       {"up", port != 7003},
                       {"error", port == 7003 ? "connection refused </script><script>alert(1)</script>" : ""}});
  }
  return {{"ring", {{"membership", "static"}, {"version", 3}, {"members", nlohmann::json::array()}}},
          {"summary", {{"up", 2}, {"down", 1}}},
          {"workers", workers}};
}

// The embedded document, as the page's script reads it.
std::string Embedded(const std::string& page) {
  const std::string open = "<script type=\"application/json\" id=\"doc\">";
  auto b = page.find(open);
  if (b == std::string::npos) return "";
  b += open.size();
  return page.substr(b, page.find("</script>", b) - b);
}

TEST(StatusPageTest, ThePageCarriesTheDocumentItWasRenderedWith) {
  const auto doc = Doc();
  const std::string page = StatusPageHtml(doc, "127.0.0.1:7001");
  EXPECT_EQ(page.rfind("<!DOCTYPE html>", 0), 0u);
  for (const char* port : {"127.0.0.1:7001", "127.0.0.1:7002", "127.0.0.1:7003"}) {
    EXPECT_NE(page.find(port), std::string::npos) << port;
  }
  const std::string json = Embedded(page);
  ASSERT_FALSE(json.empty());
  EXPECT_EQ(nlohmann::json::parse(json), doc) << "the page's data must be the document itself";
  EXPECT_NE(page.find("/v1/cluster/status"), std::string::npos) << "the page refreshes from the JSON route";
}

TEST(StatusPageTest, TextFromTheNetworkCannotEndTheScriptOrAddMarkup) {
  const std::string page = StatusPageHtml(Doc(), "127.0.0.1:7001\"><b>x</b>");
  EXPECT_EQ(page.find("<script>alert"), std::string::npos);
  EXPECT_EQ(page.find("<b>x</b>"), std::string::npos);
  // Exactly the page's own two scripts close.
  size_t closes = 0;
  for (size_t at = page.find("</script>"); at != std::string::npos; at = page.find("</script>", at + 1)) ++closes;
  EXPECT_EQ(closes, 2u);
}

TEST(StatusPageTest, InvalidUtf8InAWorkerErrorIsReplacedNotThrown) {
  auto doc = Doc();
  doc["workers"][2]["error"] = std::string("bad \xff\xfe bytes");
  std::string json;
  ASSERT_NO_THROW(json = JsonForScript(doc));
  EXPECT_TRUE(nlohmann::json::accept(json));
}

}  // namespace
}  // namespace shoal
