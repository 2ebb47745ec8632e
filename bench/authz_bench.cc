// authz_bench: the cost of one authorization decision (issue 28: <= 1 us p99
// with 1,000 policies of mixed wildcards), as PolicyEngine::Evaluate makes it
// for every request a worker serves.
//
//   authz_bench [--policies N] [--decisions N] [--threads N]
//
// The policies mix what data-lake teams write: recursive project paths,
// file-type globs under them, `?` patterns, {USER} homes, deny items for
// single users, a few override and excludes policies. Requests hit matching
// and non-matching paths of every kind. Each decision is timed alone
// (steady_clock around the call); the table gives p50/p99/max in ns, one
// thread and N threads at once (each its own sample), and the decisions/s.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "authz/policies.h"
#include "authz/policy_engine.h"
#include "bench/percentile.h"

namespace {

using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;
using shoal::authz::AccessType;

Json Item(std::initializer_list<const char*> acc, std::vector<std::string> users, std::vector<std::string> groups) {
  Json a = Json::array();
  for (const char* t : acc) a.push_back({{"type", t}, {"isAllowed", true}});
  return {{"accesses", a}, {"users", users}, {"groups", groups}};
}

std::string Policies(int n) {
  Json ps = Json::array();
  for (int i = 0; i < n; ++i) {
    std::string proj = "/proj" + std::to_string(i);
    Json p = {{"id", i}, {"name", "p" + std::to_string(i)}, {"policyPriority", i % 97 == 0 ? 1 : 0}};
    std::vector<std::string> values;
    bool recursive = true;
    switch (i % 6) {
      case 0: values = {proj}; break;
      case 1: values = {proj + "/*.rec", proj + "/*.idx"}; break;
      case 2:
        values = {proj + "/shard-\?\?\?\?/*"};
        recursive = false;
        break;
      case 3: values = {"/home/{USER}/" + std::to_string(i)}; break;
      case 4: values = {proj + "/tmp", proj + "/scratch/"}; break;
      case 5: values = {proj + "/data*"}; break;
    }
    p["resources"] = {{"path", {{"values", values}, {"isRecursive", recursive}, {"isExcludes", i % 251 == 7}}}};
    p["policyItems"] = {Item({"read", "execute"}, {}, {"g" + std::to_string(i % 40)}),
                        Item({"write"}, {"u" + std::to_string(i % 300)}, {})};
    if (i % 3 == 0) p["denyPolicyItems"] = {Item({"read"}, {"u" + std::to_string((i * 7) % 300)}, {})};
    if (i % 10 == 0) p["allowExceptions"] = {Item({"read"}, {"u1"}, {})};
    ps.push_back(p);
  }
  return Json({{"serviceName", "bench"}, {"policyVersion", 1}, {"policies", ps}}).dump();
}

struct Req {
  std::string user;
  std::vector<std::string> groups;
  std::string path;
  AccessType access;
};

std::vector<Req> Requests(int n, int policies, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<Req> out;
  const char* tails[] = {"/a.rec", "/x/y/z.idx", "/shard-0001/part", "/tmp/f", "/scratch/g/h", "/data-1/k", "/other"};
  for (int i = 0; i < n; ++i) {
    int p = static_cast<int>(rng() % static_cast<uint64_t>(policies));
    Req r;
    r.user = "u" + std::to_string(rng() % 300);
    r.groups = {"g" + std::to_string(rng() % 40), "g" + std::to_string(rng() % 40)};
    if (rng() % 8 == 0) {
      r.path = "/home/" + r.user + "/" + std::to_string(p) + "/f";
    } else {
      r.path = "/proj" + std::to_string(p) + tails[rng() % 7];
    }
    r.access = rng() % 4 == 0 ? AccessType::kWrite : AccessType::kRead;
    out.push_back(std::move(r));
  }
  return out;
}

struct Sample {
  std::vector<double> ns;
  double seconds = 0;
  size_t allowed = 0;
};

Sample Run(const shoal::authz::PolicyEngine& e, const std::vector<Req>& reqs) {
  Sample s;
  s.ns.reserve(reqs.size());
  auto start = Clock::now();
  for (const Req& r : reqs) {
    auto t0 = Clock::now();
    auto d = e.Evaluate({r.user, r.groups, r.path, r.access});
    auto t1 = Clock::now();
    s.allowed += d.allowed();
    s.ns.push_back(static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count()));
  }
  s.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  int policies = 1000, decisions = 200000, threads = 8;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i];
    int v = std::atoi(argv[i + 1]);
    if (k == "--policies") policies = v;
    else if (k == "--decisions") decisions = v;
    else if (k == "--threads") threads = v;
    else {
      std::fprintf(stderr, "usage: authz_bench [--policies N] [--decisions N] [--threads N]\n");
      return 2;
    }
  }
  auto set = shoal::authz::ParseServicePolicies(Policies(policies), "generated");
  if (!set) {
    std::fprintf(stderr, "authz_bench: %s\n", set.error().message().c_str());
    return 1;
  }
  shoal::authz::PolicyEngine engine(std::move(*set));
  auto reqs = Requests(decisions, policies, 42);
  Run(engine, Requests(20000, policies, 7));  // warm up caches and the allocator
  Sample one = Run(engine, reqs);
  std::vector<Sample> many(static_cast<size_t>(threads));
  std::vector<std::thread> ts;
  auto start = Clock::now();
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back(
        [&, t] { many[static_cast<size_t>(t)] = Run(engine, Requests(decisions / threads, policies, 100 + t)); });
  }
  for (auto& t : ts) t.join();
  double wall = std::chrono::duration<double>(Clock::now() - start).count();
  std::vector<double> all;
  for (auto& s : many) all.insert(all.end(), s.ns.begin(), s.ns.end());
  using shoal::bench::Percentile;
  std::printf("| decisions | policies | threads | p50 ns | p99 ns | max ns | decisions/s | allowed |\n");
  std::printf("|---|---|---|---|---|---|---|---|\n");
  std::printf("| %d | %d | 1 | %.0f | %.0f | %.0f | %.0f | %.1f%% |\n", decisions, policies, Percentile(one.ns, 0.5),
              Percentile(one.ns, 0.99), Percentile(one.ns, 1.0), static_cast<double>(decisions) / one.seconds,
              100.0 * static_cast<double>(one.allowed) / decisions);
  size_t allowed = 0;
  for (auto& s : many) allowed += s.allowed;
  std::printf("| %zu | %d | %d | %.0f | %.0f | %.0f | %.0f | %.1f%% |\n", all.size(), policies, threads,
              Percentile(all, 0.5), Percentile(all, 0.99), Percentile(all, 1.0), static_cast<double>(all.size()) / wall,
              100.0 * static_cast<double>(allowed) / static_cast<double>(all.size()));
  return Percentile(one.ns, 0.99) <= 1000 ? 0 : 1;
}
