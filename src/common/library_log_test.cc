#include "common/library_log.h"

#include <gtest/gtest.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

namespace shoal {
namespace {

// What the library's logger writes to stderr while `log` runs.
template <typename F>
std::string Stderr(F log) {
  std::fflush(stderr);
  FILE* tmp = std::tmpfile();
  const int saved = ::dup(2);
  ::dup2(::fileno(tmp), 2);
  log();
  spdlog::default_logger()->flush();
  std::fflush(stderr);
  ::dup2(saved, 2);
  ::close(saved);
  std::string out;
  std::rewind(tmp);
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, tmp)) > 0;) out.append(buf, n);
  std::fclose(tmp);
  return out;
}

TEST(LibraryLog, JsonFormatWritesOneObjectPerLineWhateverTheMessageHolds) {
  UseLibraryLogger();
  ASSERT_TRUE(SetLogFormat("json").ok());
  const std::string text = Stderr([] {
    spdlog::warn("a \"quoted\" path\nwith a newline, a tab\t, a control \x01 and a byte that is not UTF-8: \xff; é");
    spdlog::error("second");
  });
  ASSERT_TRUE(SetLogFormat("text").ok());
  std::istringstream lines(text);
  std::string line;
  ASSERT_TRUE(std::getline(lines, line)) << text;
  auto j = nlohmann::json::parse(line, nullptr, false);
  ASSERT_TRUE(j.is_object()) << line;
  EXPECT_EQ(j["level"], "warning");
  EXPECT_EQ(j["pid"], static_cast<int>(::getpid()));
  EXPECT_EQ(j["msg"].get<std::string>(),
            "a \"quoted\" path\nwith a newline, a tab\t, a control \x01 and a byte that is not UTF-8: \xef\xbf\xbd; é");
  EXPECT_EQ(j["time"].get<std::string>().size(), std::string("2026-12-06T18:50:01.123456Z").size());
  ASSERT_TRUE(std::getline(lines, line)) << text;
  auto second = nlohmann::json::parse(line, nullptr, false);
  ASSERT_TRUE(second.is_object()) << line;
  EXPECT_EQ(second["msg"], "second");
  EXPECT_FALSE(std::getline(lines, line)) << "more lines than messages: " << text;
}

TEST(LibraryLog, JsonLinesOfARequestCarryItsIdAsAField) {
  UseLibraryLogger();
  ASSERT_TRUE(SetLogFormat("json").ok());
  const std::string text = Stderr([] {
    spdlog::warn("failed GET /v1/read: HTTP 503 store down [request 9f2c01ab]");
    spdlog::warn("no request here");
  });
  ASSERT_TRUE(SetLogFormat("text").ok());
  std::istringstream lines(text);
  std::string line;
  ASSERT_TRUE(std::getline(lines, line)) << text;
  auto j = nlohmann::json::parse(line, nullptr, false);
  ASSERT_TRUE(j.is_object()) << line;
  EXPECT_EQ(j["request_id"], "9f2c01ab");
  ASSERT_TRUE(std::getline(lines, line)) << text;
  auto plain = nlohmann::json::parse(line, nullptr, false);
  ASSERT_TRUE(plain.is_object()) << line;
  EXPECT_FALSE(plain.contains("request_id"));
}

TEST(LibraryLog, AnUnknownFormatIsRefusedAndNamed) {
  auto st = SetLogFormat("xml");
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("xml"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace shoal
