#include "authz/policies.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "common/file_text.h"

namespace shoal::authz {
namespace {

using nlohmann::json;

// Errors name the document and the field: "policies.json: policies[3].resources.path: ...".
struct Where {
  std::string_view source;
  std::string field;
  Status Fail(std::string_view what) const {
    return Status(Code::kInvalidArgument, fmt::format("{}: {}: {}", source, field, what));
  }
  Where At(std::string_view key) const {
    return {source, field.empty() ? std::string(key) : field + "." + std::string(key)};
  }
  Where At(size_t i) const { return {source, fmt::format("{}[{}]", field, i)}; }
};

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// A list of strings; absent or null is empty.
Status Strings(const json& obj, std::string_view key, const Where& w, std::vector<std::string>* out) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return {};
  if (!it->is_array()) return w.At(key).Fail("expected a list of strings");
  for (size_t i = 0; i < it->size(); ++i) {
    const json& v = (*it)[i];
    if (!v.is_string()) return w.At(key).At(i).Fail("expected a string");
    out->push_back(v.get<std::string>());
  }
  return {};
}

Status Bool(const json& obj, std::string_view key, const Where& w, bool* out) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return {};
  if (!it->is_boolean()) return w.At(key).Fail("expected true or false");
  *out = it->get<bool>();
  return {};
}

Status Int(const json& obj, std::string_view key, const Where& w, int64_t* out) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return {};
  if (!it->is_number_integer()) return w.At(key).Fail("expected an integer");
  *out = it->get<int64_t>();
  return {};
}

Status ParseItem(const json& j, const Where& w, PolicyItem* item) {
  if (!j.is_object()) return w.Fail("expected a policy item object");
  auto acc = j.find("accesses");
  if (acc != j.end() && !acc->is_null()) {
    if (!acc->is_array()) return w.At("accesses").Fail("expected a list of {type, isAllowed}");
    for (size_t i = 0; i < acc->size(); ++i) {
      const json& a = (*acc)[i];
      Where aw = w.At("accesses").At(i);
      if (!a.is_object() || !a.contains("type") || !a["type"].is_string()) return aw.Fail("expected {type, isAllowed}");
      auto type = ParseAccessType(a["type"].get<std::string>());
      if (!type) return aw.At("type").Fail(type.error().message());
      bool allowed = true;
      SHOAL_RETURN_IF_ERROR(Bool(a, "isAllowed", aw, &allowed));
      if (allowed) item->accesses |= static_cast<uint8_t>(*type);
    }
  }
  SHOAL_RETURN_IF_ERROR(Strings(j, "users", w, &item->users));
  SHOAL_RETURN_IF_ERROR(Strings(j, "groups", w, &item->groups));
  SHOAL_RETURN_IF_ERROR(Strings(j, "roles", w, &item->roles));
  item->any_user = std::find(item->users.begin(), item->users.end(), "{USER}") != item->users.end();
  item->public_group = std::find(item->groups.begin(), item->groups.end(), "public") != item->groups.end();
  auto cond = j.find("conditions");
  item->has_conditions = cond != j.end() && cond->is_array() && !cond->empty();
  return {};
}

Status ParseItems(const json& policy, std::string_view key, const Where& w, std::vector<PolicyItem>* out) {
  auto it = policy.find(key);
  if (it == policy.end() || it->is_null()) return {};
  if (!it->is_array()) return w.At(key).Fail("expected a list of policy items");
  for (size_t i = 0; i < it->size(); ++i) {
    PolicyItem item;
    SHOAL_RETURN_IF_ERROR(ParseItem((*it)[i], w.At(key).At(i), &item));
    out->push_back(std::move(item));
  }
  return {};
}

// One policy; `skip` is set (with the reason) for one this engine must leave out.
Status ParsePolicy(const json& j, const Where& w, Policy* p, std::string* skip) {
  if (!j.is_object()) return w.Fail("expected a policy object");
  SHOAL_RETURN_IF_ERROR(Int(j, "id", w, &p->id));
  if (auto n = j.find("name"); n != j.end() && n->is_string()) p->name = n->get<std::string>();
  SHOAL_RETURN_IF_ERROR(Bool(j, "isEnabled", w, &p->enabled));
  int64_t priority = 0;
  SHOAL_RETURN_IF_ERROR(Int(j, "policyPriority", w, &priority));
  if (priority != 0 && priority != 1) return w.At("policyPriority").Fail("expected 0 (normal) or 1 (override)");
  p->priority = static_cast<int>(priority);
  SHOAL_RETURN_IF_ERROR(Bool(j, "isDenyAllElse", w, &p->deny_all_else));
  int64_t type = 0;
  SHOAL_RETURN_IF_ERROR(Int(j, "policyType", w, &type));
  auto res = j.find("resources");
  if (res == j.end() || !res->is_object()) return w.At("resources").Fail("missing: a policy needs a path resource");
  for (auto it = res->begin(); it != res->end(); ++it) {
    if (it.key() != "path") {
      *skip = fmt::format("resource '{}' is not in the HDFS service definition (only path is)", it.key());
      return {};
    }
  }
  auto path = res->find("path");
  if (path == res->end() || !path->is_object()) return w.At("resources.path").Fail("missing: a policy needs a path");
  Where pw = w.At("resources").At("path");
  SHOAL_RETURN_IF_ERROR(Strings(*path, "values", pw, &p->path.values));
  if (p->path.values.empty()) return pw.At("values").Fail("empty: a path resource needs at least one value");
  for (const std::string& v : p->path.values) {
    if (v.empty()) return pw.At("values").Fail("an empty path value");
  }
  SHOAL_RETURN_IF_ERROR(Bool(*path, "isExcludes", pw, &p->path.excludes));
  SHOAL_RETURN_IF_ERROR(Bool(*path, "isRecursive", pw, &p->path.recursive));
  SHOAL_RETURN_IF_ERROR(ParseItems(j, "policyItems", w, &p->allow));
  SHOAL_RETURN_IF_ERROR(ParseItems(j, "denyPolicyItems", w, &p->deny));
  SHOAL_RETURN_IF_ERROR(ParseItems(j, "allowExceptions", w, &p->allow_exceptions));
  SHOAL_RETURN_IF_ERROR(ParseItems(j, "denyExceptions", w, &p->deny_exceptions));
  if (type != 0) {
    *skip = fmt::format("policyType {} (data masking or row filtering) does not apply to files", type);
  }
  // Conditions and validity schedules cannot be evaluated here: such a policy
  // (or item) may only deny (authz/policy_engine.h says how).
  auto nonempty = [&j](const char* key) {
    auto it = j.find(key);
    return it != j.end() && it->is_array() && !it->empty();
  };
  p->deny_only = nonempty("conditions") || nonempty("validitySchedules");
  return {};
}

Status ParseRoles(const json& doc, std::string_view source, std::vector<Role>* out) {
  auto it = doc.find("rangerRoles");
  if (it == doc.end() || it->is_null()) return {};
  Where w{source, "rangerRoles"};
  if (!it->is_array()) return w.Fail("expected a list of roles");
  for (size_t i = 0; i < it->size(); ++i) {
    const json& r = (*it)[i];
    Where rw = w.At(i);
    if (!r.is_object() || !r.contains("name") || !r["name"].is_string()) return rw.Fail("expected {name, users, ...}");
    Role role;
    role.name = r["name"].get<std::string>();
    // Members are {"name": ..., "isAdmin": ...} objects.
    for (auto [key, list] :
         {std::pair{"users", &role.users}, std::pair{"groups", &role.groups}, std::pair{"roles", &role.roles}}) {
      auto m = r.find(key);
      if (m == r.end() || m->is_null()) continue;
      if (!m->is_array()) return rw.At(key).Fail("expected a list of {name}");
      for (size_t k = 0; k < m->size(); ++k) {
        const json& e = (*m)[k];
        if (e.is_string()) {
          list->push_back(e.get<std::string>());
        } else if (e.is_object() && e.contains("name") && e["name"].is_string()) {
          list->push_back(e["name"].get<std::string>());
        } else {
          return rw.At(key).At(k).Fail("expected {name}");
        }
      }
    }
    out->push_back(std::move(role));
  }
  return {};
}

}  // namespace

std::string_view AccessTypeName(AccessType a) {
  switch (a) {
    case AccessType::kRead: return "read";
    case AccessType::kWrite: return "write";
    case AccessType::kExecute: return "execute";
  }
  return "?";
}

Result<AccessType> ParseAccessType(std::string_view name) {
  std::string n = Lower(name);
  if (n == "read") return AccessType::kRead;
  if (n == "write") return AccessType::kWrite;
  if (n == "execute") return AccessType::kExecute;
  return Err(Code::kInvalidArgument,
             fmt::format("unknown access type '{}': the HDFS service definition has read, write and execute", name));
}

Result<PolicySet> ParseServicePolicies(std::string_view text, std::string_view source) {
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) {
    return Err(Code::kInvalidArgument,
               fmt::format("{}: not JSON (truncated or garbled): expected Ranger's ServicePolicies document", source));
  }
  if (!doc.is_object()) return Err(Code::kInvalidArgument, fmt::format("{}: expected a JSON object", source));
  PolicySet set;
  Where w{source, ""};
  if (auto s = doc.find("serviceName"); s != doc.end() && s->is_string()) set.service = s->get<std::string>();
  SHOAL_RETURN_IF_ERROR(Int(doc, "policyVersion", w, &set.version));
  auto policies = doc.find("policies");
  if (policies == doc.end() || !policies->is_array()) {
    return Err(Code::kInvalidArgument,
               fmt::format("{}: no `policies` list: not a ServicePolicies document (a partial download?)", source));
  }
  for (size_t i = 0; i < policies->size(); ++i) {
    Policy p;
    std::string skip;
    SHOAL_RETURN_IF_ERROR(ParsePolicy((*policies)[i], w.At("policies").At(i), &p, &skip));
    if (!skip.empty()) {
      set.notes.push_back(fmt::format("policy {} ({}): {}", p.id, p.name, skip));
      continue;
    }
    if (p.deny_only) {
      set.notes.push_back(
          fmt::format("policy {} ({}): its conditions or validity schedules cannot be evaluated "
                      "here, so it may deny but never allows",
                      p.id, p.name));
    }
    set.policies.push_back(std::move(p));
  }
  SHOAL_RETURN_IF_ERROR(ParseRoles(doc, source, &set.roles));
  if (auto cfg = doc.find("serviceConfig"); cfg != doc.end() && cfg->is_object()) {
    for (auto [key, list] : {std::pair{"ranger.plugin.super.users", &set.super_users},
                             std::pair{"ranger.plugin.super.groups", &set.super_groups}}) {
      auto v = cfg->find(key);
      if (v == cfg->end() || !v->is_string()) continue;
      std::string text = v->get<std::string>();
      for (size_t at = 0; at <= text.size();) {
        size_t comma = std::min(text.find(',', at), text.size());
        std::string name = text.substr(at, comma - at);
        name.erase(0, name.find_first_not_of(' '));
        name.erase(name.find_last_not_of(' ') + 1);
        if (!name.empty()) list->push_back(name);
        at = comma + 1;
      }
    }
  }
  return set;
}

Result<std::pair<int64_t, std::vector<Role>>> ParseRangerRoles(std::string_view text, std::string_view source) {
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    return Err(Code::kInvalidArgument,
               fmt::format("{}: not JSON (truncated or garbled): expected Ranger's RangerRoles document", source));
  }
  int64_t version = -1;
  SHOAL_RETURN_IF_ERROR(Int(doc, "roleVersion", Where{source, ""}, &version));
  std::vector<Role> roles;
  SHOAL_RETURN_IF_ERROR(ParseRoles(doc, source, &roles));
  return std::make_pair(version, std::move(roles));
}

Result<PolicySet> LoadServicePolicies(const std::string& path) {
  auto text = ReadFileText(path);
  if (!text) return Err(text.error().WithContext("the policy file"));
  return ParseServicePolicies(*text, path);
}

}  // namespace shoal::authz
