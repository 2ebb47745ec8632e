// The YAML config (common/config.h): ParseConfig on any text, Validate on
// what it accepts, and ToYaml's promise: its output reads back to an equal
// config (compared as ToYaml of both).
#include "common/config.h"
#include "fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 64 * 1024) return 0;
  std::string text(reinterpret_cast<const char*>(data), size);
  auto c = shoal::ParseConfig(text, "fuzz.yaml");
  if (!c) return 0;
  (void)shoal::Validate(*c);
  std::string yaml = shoal::ToYaml(*c);
  auto again = shoal::ParseConfig(yaml, "ToYaml");
  FUZZ_CHECK(again.has_value(), "ToYaml wrote a config ParseConfig refuses: %s\n---\n%s",
             again ? "" : again.error().message().c_str(), yaml.c_str());
  std::string yaml2 = shoal::ToYaml(*again);
  FUZZ_CHECK(yaml2 == yaml, "ToYaml's config did not read back equal:\n---\n%s---\n%s", yaml.c_str(), yaml2.c_str());
  return 0;
}
