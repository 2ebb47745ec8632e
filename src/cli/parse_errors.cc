// Where every command-line error of every subcommand ends. CLI11 reports them
// as ParseErrors with exit codes of its own (104 to 109) and messages in its
// own words; the README promises exit 2 and one line, `shoal: error: ...`.
#include <cctype>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "cli/build_info.h"
#include "cli/commands.h"
#include "common/nearest_name.h"
#include "shoal/version.h"

namespace shoal::cli {
namespace {

// The subcommand the parser had reached: the last one named on the command line.
CLI::App* Reached(CLI::App& root) {
  CLI::App* app = &root;
  while (!app->get_subcommands().empty()) app = app->get_subcommands().back();
  return app;
}

// "shoal", "shoal mount list": how a user names `app` (CLI11 names the root after argv[0]).
std::string CommandPath(const CLI::App* app) {
  std::string path;
  for (; app->get_parent() != nullptr; app = app->get_parent()) path = " " + app->get_name() + path;
  return "shoal" + path;
}

// " (did you mean 'ls'?)" for a likely typo, else " (the nearest is 'free')"
// unless `typos_only`.
std::string Nearest(const std::string& word, const std::vector<std::string>& names, bool typos_only) {
  auto nearest = FindNearestName(word, names);
  if (nearest.name.empty() || (typos_only && !nearest.likely_typo)) return "";
  return nearest.likely_typo ? " (did you mean '" + nearest.name + "'?)" : " (the nearest is '" + nearest.name + "')";
}

// When `app` takes subcommands and the first word it did not use names none of them.
std::optional<std::string> UnknownCommand(CLI::App& app) {
  std::vector<std::string> names;
  for (const auto* sub : app.get_subcommands([](CLI::App*) { return true; })) names.push_back(sub->get_name());
  if (names.empty()) return std::nullopt;
  for (const auto& word : app.remaining()) {
    if (!word.starts_with('-')) return "unknown command '" + word + "'" + Nearest(word, names, /*typos_only=*/false);
  }
  return std::nullopt;
}

// Arguments `app` did not use: an unknown option (with the nearest real one), or stray words.
std::optional<std::string> Unexpected(CLI::App& app) {
  auto rest = app.remaining();
  if (rest.empty()) return std::nullopt;
  if (rest[0].starts_with("--")) {  // what follows it is most likely its value
    std::vector<std::string> names;
    for (const auto* opt : app.get_options()) {
      for (const auto& l : opt->get_lnames()) names.push_back("--" + l);
    }
    return "unknown option " + rest[0] + Nearest(rest[0].substr(0, rest[0].find('=')), names, /*typos_only=*/true);
  }
  std::string words;
  for (const auto& w : rest) words += (words.empty() ? "'" : ", '") + w + "'";
  return (rest.size() == 1 ? "unexpected argument " : "unexpected arguments ") + words;
}

// CLI11's "Could not convert: --workers = abc" as "--workers takes INT, not 'abc'".
std::optional<std::string> NotConvertible(CLI::App& app, const std::string& what) {
  constexpr std::string_view kPrefix = "Could not convert: ";
  auto eq = what.find(" = ");
  if (!what.starts_with(kPrefix) || eq == std::string::npos) return std::nullopt;
  std::string name = what.substr(kPrefix.size(), eq - kPrefix.size());
  const CLI::Option* opt = app.get_option_no_throw(name);
  std::string type = opt ? opt->get_type_name() : "";
  if (type.empty()) return std::nullopt;
  return name + " takes " + type + ", not '" + what.substr(eq + 3) + "'";
}

std::string Describe(CLI::App& app, const CLI::ParseError& e) {
  if (auto unknown = UnknownCommand(app)) return *unknown;
  std::string what = e.what();
  // By exit code: CLI11 names some errors after the app that raised them.
  const auto code = static_cast<CLI::ExitCodes>(e.get_exit_code());
  if (code == CLI::ExitCodes::ExtrasError) return Unexpected(app).value_or(what);
  if (code == CLI::ExitCodes::ConversionError) return NotConvertible(app, what).value_or(what);
  // "A subcommand is required" reads as the rest of the line: "a subcommand is required".
  if (what.size() > 1 && std::isupper(static_cast<unsigned char>(what[0])) &&
      !std::isupper(static_cast<unsigned char>(what[1]))) {
    what[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(what[0])));
  }
  return what;
}

}  // namespace

int ReportParseError(CLI::App& app, const CLI::ParseError& e) {
  if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) return app.exit(e);  // --help, --version
  CLI::App* reached = Reached(app);
  std::fprintf(stderr, "shoal: error: %s; see '%s --help'\n", Describe(*reached, e).c_str(),
               CommandPath(reached).c_str());
  return 2;
}

std::string VersionText() {
  return std::string("shoal ") + SHOAL_VERSION + " (commit " + SHOAL_GIT_COMMIT + ", " + SHOAL_BUILD_TYPE + " build)";
}

}  // namespace shoal::cli
