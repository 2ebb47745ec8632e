#include "ufs/s3/credentials.h"

#include "common/file_text.h"
#include "ufs/cloud/credential_cache.h"

namespace shoal::s3 {
namespace {

std::string Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return std::string(s);
}

std::optional<std::string> ReadFile(const std::string& path) {
  auto text = ReadFileText(path);
  return text ? std::optional<std::string>(std::move(*text)) : std::nullopt;
}

std::string HomeFile(const EnvLookup& env, const char* override_var, const char* name) {
  if (auto v = env(override_var)) return *v;
  auto home = env("HOME");
  return home ? *home + "/.aws/" + name : std::string();
}

Credentials FromSection(const std::map<std::string, std::string>& sec, std::string source) {
  Credentials c;
  auto get = [&](const char* k) {
    auto it = sec.find(k);
    return it == sec.end() ? std::string() : it->second;
  };
  c.access_key_id = get("aws_access_key_id");
  c.secret_access_key = get("aws_secret_access_key");
  c.session_token = get("aws_session_token");
  c.source = std::move(source);
  return c;
}

}  // namespace

EnvLookup ProcessEnv() { return cloud::ProcessEnvironment(); }

IniFile ParseAwsIni(std::string_view text) {
  IniFile out;
  std::string section, parent;  // parent: a key with an empty value opening a sub-section
  bool have_section = false;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    std::string_view raw = text.substr(pos, nl - pos);
    pos = nl + 1;
    bool indented = !raw.empty() && (raw.front() == ' ' || raw.front() == '\t');
    std::string line = Trim(raw);
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (line.front() == '[' && line.back() == ']') {
      section = Trim(std::string_view(line).substr(1, line.size() - 2));
      have_section = true;
      parent.clear();
      out[section];
      continue;
    }
    auto eq = line.find('=');
    if (!have_section || eq == std::string::npos) continue;
    std::string key = Trim(std::string_view(line).substr(0, eq));
    std::string value = Trim(std::string_view(line).substr(eq + 1));
    if (indented && !parent.empty()) {
      out[section][parent + "." + key] = value;
      continue;
    }
    parent = value.empty() ? key : std::string();
    if (!value.empty()) out[section][key] = value;
  }
  return out;
}

Profile LoadProfile(const std::string& name, const EnvLookup& env) {
  Profile p;
  std::string cred_path = HomeFile(env, "AWS_SHARED_CREDENTIALS_FILE", "credentials");
  std::string conf_path = HomeFile(env, "AWS_CONFIG_FILE", "config");
  p.files = cred_path + " and " + conf_path;

  if (auto text = conf_path.empty() ? std::nullopt : ReadFile(conf_path)) {
    auto ini = ParseAwsIni(*text);
    auto it = ini.find(name == "default" ? "default" : "profile " + name);
    if (it == ini.end() && name == "default") it = ini.find("profile default");
    if (it != ini.end()) {
      p.found = true;
      auto& sec = it->second;
      p.creds = FromSection(sec, "profile '" + name + "' in " + conf_path);
      if (auto r = sec.find("region"); r != sec.end()) p.region = r->second;
      if (auto e = sec.find("s3.endpoint_url"); e != sec.end()) p.endpoint_url = e->second;
      else if (auto e2 = sec.find("endpoint_url"); e2 != sec.end()) p.endpoint_url = e2->second;
    }
  }
  if (auto text = cred_path.empty() ? std::nullopt : ReadFile(cred_path)) {
    auto ini = ParseAwsIni(*text);
    if (auto it = ini.find(name); it != ini.end()) {
      p.found = true;
      auto c = FromSection(it->second, "profile '" + name + "' in " + cred_path);
      if (!c.access_key_id.empty()) p.creds = std::move(c);
    }
  }
  return p;
}

}  // namespace shoal::s3
