#include "authz/policy_engine.h"

#include <algorithm>

namespace shoal::authz {
namespace {

enum class Verdict : uint8_t { kNone, kAllow, kDeny };

bool HasWildcardOrMacro(std::string_view v) { return v.find_first_of("*?{") != std::string_view::npos; }

// Glob match of `text` against `pattern` (`*` any run, `?` one character,
// both crossing '/', as Ranger's path matcher does), linear in the usual case:
// on a mismatch it backtracks only to the last `*`.
bool WildcardMatch(std::string_view pattern, std::string_view text) {
  size_t p = 0, t = 0, star = std::string_view::npos, mark = 0;
  while (t < text.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == text[t])) {
      ++p;
      ++t;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = t;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      t = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

// The complete components a value starts with before any wildcard or macro:
// every path it can match starts with them. "/data/x" -> "/data/x",
// "/data/tr*" -> "/data", "/*" -> "".
std::string_view IndexKey(std::string_view value, bool plain) {
  if (plain) {
    if (value.size() > 1 && value.back() == '/') value.remove_suffix(1);
    return value == "/" ? std::string_view() : value;
  }
  std::string_view literal = value.substr(0, value.find_first_of("*?{"));
  size_t slash = literal.rfind('/');
  return slash == std::string_view::npos ? std::string_view() : literal.substr(0, slash);
}

// Whether `path` is already in NormalizePath's form.
bool IsNormal(std::string_view path) {
  if (path.empty() || path[0] != '/' || (path.size() > 1 && path.back() == '/')) return false;
  return path.find("//") == std::string_view::npos;
}

bool Contains(const std::vector<std::string>& list, std::string_view name) {
  return std::find(list.begin(), list.end(), name) != list.end();
}

}  // namespace

std::string NormalizePath(std::string_view path) {
  std::string out;
  out.reserve(path.size() + 1);
  out.push_back('/');
  for (char c : path) {
    if (c == '/' && out.back() == '/') continue;
    out.push_back(c);
  }
  if (out.size() > 1 && out.back() == '/') out.pop_back();
  return out;
}

struct PolicyEngine::CompiledValue {
  std::string value;
  bool match_any = false;  // "*": every path
  bool plain = false;      // no wildcard, no macro: compared as a string
  size_t literal = 0;      // the length before the first wildcard (without a macro)
  bool user_macro = false;
};

struct PolicyEngine::Compiled {
  const Policy* policy = nullptr;
  std::vector<CompiledValue> values;
  bool has_deny = false;  // deny items or isDenyAllElse: may deny
  bool uses_roles = false;
};

PolicyEngine::PolicyEngine(PolicySet set) : set_(std::move(set)) {
  for (const Policy& p : set_.policies) {
    if (!p.enabled) continue;  // a disabled policy takes no part at all
    auto c = std::make_unique<Compiled>();
    c->policy = &p;
    c->has_deny = !p.deny.empty() || p.deny_all_else;
    for (const auto* items : {&p.allow, &p.deny, &p.allow_exceptions, &p.deny_exceptions}) {
      for (const PolicyItem& i : *items) c->uses_roles |= !i.roles.empty();
    }
    for (const std::string& raw : p.path.values) {
      if (raw.empty()) continue;  // Ranger ignores empty values
      CompiledValue cv;
      cv.value = raw;
      cv.match_any = raw == "*";
      // Recursive "/data/" means "/data/*" (everything below, not /data
      // itself); recursive "/data" means /data and everything below.
      if (p.path.recursive && raw.size() > 1 && raw.back() == '/') cv.value.push_back('*');
      cv.plain = !HasWildcardOrMacro(cv.value);
      cv.user_macro = cv.value.find("{USER}") != std::string::npos;
      cv.literal = std::min(cv.value.find_first_of("*?"), cv.value.size());
      c->values.push_back(std::move(cv));
    }
    compiled_.push_back(std::move(c));
  }
  // Evaluation order: override before normal; within a priority, policies
  // that may deny first; then by id (which allow is reported when several do).
  std::stable_sort(compiled_.begin(), compiled_.end(), [](const auto& a, const auto& b) {
    if (a->policy->priority != b->policy->priority) return a->policy->priority > b->policy->priority;
    if (a->has_deny != b->has_deny) return a->has_deny;
    return a->policy->id < b->policy->id;
  });
  for (uint32_t i = 0; i < compiled_.size(); ++i) {
    const Compiled& c = *compiled_[i];
    if (c.policy->path.excludes) {
      everywhere_.push_back(i);
      continue;
    }
    for (const CompiledValue& v : c.values) {
      std::string_view value = v.value;
      PrefixIndex* index = &by_prefix_;
      // A value with {USER} in its first components ("/home/{USER}/x/*") is
      // indexed under the text before the macro, then by what follows it: a
      // request looks there with its own user's name in place.
      if (size_t macro = value.find("{USER}");
          v.user_macro && macro != std::string_view::npos && value.find_first_of("*?") > macro &&
          (macro == 0 || value[macro - 1] == '/') && (macro + 6 == value.size() || value[macro + 6] == '/')) {
        index = &by_user_prefix_[std::string(value.substr(0, macro))];
        value = value.substr(macro + 6);
      }
      std::string_view key = IndexKey(value, v.plain || !HasWildcardOrMacro(value));
      auto& list = (*index)[std::string(key)];
      if (list.empty() || list.back() != i) list.push_back(i);
      index->depth = std::max(index->depth, static_cast<size_t>(std::count(key.begin(), key.end(), '/')));
    }
  }
  for (const Role& r : set_.roles) {
    for (const auto& u : r.users) roles_of_user_[u].push_back(r.name);
    for (const auto& g : r.groups) roles_of_group_[g].push_back(r.name);
    for (const auto& m : r.roles) roles_of_role_[m].push_back(r.name);
  }
}

PolicyEngine::~PolicyEngine() = default;

void PolicyEngine::Candidates(std::string_view path, std::string_view user, std::vector<uint32_t>* found) const {
  found->assign(everywhere_.begin(), everywhere_.end());
  // Every path this one can be matched under: "", "/a", "/a/b", ... itself.
  // Keys have at most index.depth components: deeper prefixes are not looked up.
  auto add_all = [found](const PrefixIndex& index, std::string_view rest) {
    if (index.empty()) return;
    auto add = [&](std::string_view key) {
      auto it = index.find(key);
      if (it != index.end()) found->insert(found->end(), it->second.begin(), it->second.end());
    };
    add("");
    size_t components = 0;
    for (size_t i = 1; i < rest.size() && components < index.depth; ++i) {
      if (rest[i] == '/') {
        add(rest.substr(0, i));
        ++components;
      }
    }
    if (rest.size() > 1 && components < index.depth) add(rest);
  };
  add_all(by_prefix_, path);
  if (!user.empty()) {
    for (const auto& [before, index] : by_user_prefix_) {
      // The path continues with the user's name, then ends or goes on with '/'.
      if (path.size() < before.size() + user.size() || !path.starts_with(before) ||
          path.substr(before.size(), user.size()) != user) {
        continue;
      }
      std::string_view rest = path.substr(before.size() + user.size());
      if (!rest.empty() && rest[0] != '/') continue;
      add_all(index, rest);
    }
  }
  std::sort(found->begin(), found->end());
  found->erase(std::unique(found->begin(), found->end()), found->end());
}

bool PolicyEngine::PathMatches(const Compiled& c, std::string_view path, std::string_view user) const {
  const bool recursive = c.policy->path.recursive;
  bool any = false;
  for (const CompiledValue& v : c.values) {
    if (v.match_any) {
      any = true;
      break;
    }
    std::string_view pattern = v.value;
    std::string expanded;
    if (v.user_macro) {
      if (user.empty()) continue;  // {USER} names no one for an anonymous request
      expanded = v.value;
      for (size_t at = expanded.find("{USER}"); at != std::string::npos; at = expanded.find("{USER}", at)) {
        expanded.replace(at, 6, user);
        at += user.size();
      }
      pattern = expanded;
    }
    if (v.plain || (v.user_macro && !HasWildcardOrMacro(pattern))) {
      // Recursive: the value itself (one trailing '/' aside) and every path below it.
      std::string_view base = pattern;
      if (recursive && base.size() > 1 && base.back() == '/') base.remove_suffix(1);
      any = path == pattern ||
            (recursive &&
             (base == "/" || (path.size() > base.size() && path.starts_with(base) && path[base.size()] == '/')));
    } else {
      // Whatever the glob matches (the path, or with isRecursive one of its
      // ancestors, which are prefixes of it) starts with the text before its
      // first wildcard: most values are told apart by that alone.
      size_t literal = v.literal;
      if (v.user_macro) {
        literal = 0;
        while (literal < pattern.size() && pattern[literal] != '*' && pattern[literal] != '?') ++literal;
      }
      if (!path.starts_with(pattern.substr(0, literal))) continue;
      any = WildcardMatch(pattern, path);
      // Recursive: a path also matches when one of its ancestors does.
      for (size_t i = path.size(); recursive && !any && i > 1;) {
        i = path.rfind('/', i - 1);
        if (i == std::string_view::npos || i == 0 || i < literal) break;
        any = WildcardMatch(pattern, path.substr(0, i));
      }
    }
    if (any) break;
  }
  return c.policy->path.excludes ? !any : any;
}

std::vector<std::string_view> PolicyEngine::RolesOf(std::string_view user, std::span<const std::string> groups) const {
  std::vector<std::string_view> out;
  auto add_all = [&out](const std::vector<std::string>& names) {
    for (const auto& n : names) {
      if (std::find(out.begin(), out.end(), n) == out.end()) out.push_back(n);
    }
  };
  if (auto it = roles_of_user_.find(std::string(user)); it != roles_of_user_.end()) add_all(it->second);
  for (const auto& g : groups) {
    if (auto it = roles_of_group_.find(g); it != roles_of_group_.end()) add_all(it->second);
  }
  // Roles that hold a role of the user, transitively (bounded by the role count).
  for (size_t i = 0; i < out.size() && out.size() <= set_.roles.size(); ++i) {
    if (auto it = roles_of_role_.find(std::string(out[i])); it != roles_of_role_.end()) add_all(it->second);
  }
  return out;
}

Decision PolicyEngine::Evaluate(const AccessRequest& req) const {
  std::string normalized;
  std::string_view path = req.path;
  if (!IsNormal(path)) {
    normalized = NormalizePath(path);
    path = normalized;
  }
  const auto access = static_cast<uint8_t>(req.access);
  std::vector<std::string_view> roles;
  bool roles_known = false;
  // An item matches when it names the access and the user, one of its groups
  // (or public) or one of its roles. `conservative`: what an item with
  // conditions counts as (true for denials, false for grants).
  auto item_matches = [&](const PolicyItem& item, bool conservative) {
    if ((item.accesses & access) == 0) return false;
    bool who = item.public_group || (!req.user.empty() && (item.any_user || Contains(item.users, req.user)));
    for (size_t i = 0; !who && i < req.groups.size(); ++i) who = Contains(item.groups, req.groups[i]);
    if (!who && !item.roles.empty()) {
      if (!roles_known) {
        roles = RolesOf(req.user, req.groups);
        roles_known = true;
      }
      for (size_t i = 0; !who && i < roles.size(); ++i) who = Contains(item.roles, roles[i]);
    }
    return who && (!item.has_conditions || conservative);
  };
  auto any_matches = [&](const std::vector<PolicyItem>& items, bool conservative) {
    return std::any_of(items.begin(), items.end(), [&](const PolicyItem& i) { return item_matches(i, conservative); });
  };
  auto verdict_of = [&](const Policy& p) {
    if (any_matches(p.deny, true) && !any_matches(p.deny_exceptions, false)) return Verdict::kDeny;
    if (!p.deny_only && any_matches(p.allow, false) && !any_matches(p.allow_exceptions, true)) {
      return Verdict::kAllow;
    }
    return p.deny_all_else ? Verdict::kDeny : Verdict::kNone;
  };

  if ((!req.user.empty() && Contains(set_.super_users, req.user)) ||
      std::any_of(req.groups.begin(), req.groups.end(),
                  [this](const std::string& g) { return Contains(set_.super_groups, g); })) {
    return {Decision::Outcome::kAllowed, nullptr, true};
  }
  Decision d;
  thread_local std::vector<uint32_t> candidates;
  Candidates(path, req.user, &candidates);
  for (uint32_t index : candidates) {
    const Compiled* c = compiled_[index].get();
    if (d.allowed() && (c->policy->priority < d.policy->priority || !c->has_deny)) break;
    if (!PathMatches(*c, path, req.user)) continue;
    switch (verdict_of(*c->policy)) {
      case Verdict::kDeny: return {Decision::Outcome::kDenied, c->policy};
      case Verdict::kAllow:
        if (!d.allowed()) d = {Decision::Outcome::kAllowed, c->policy};
        break;
      case Verdict::kNone: break;
    }
  }
  return d;
}

}  // namespace shoal::authz
