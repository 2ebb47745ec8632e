#include "client/worker_caller.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>

#include "common/end_user.h"
#include "worker/http_status.h"

namespace shoal {
namespace {

using Clock = std::chrono::steady_clock;
using Failure = WorkerConnection::Failure;

constexpr uint64_t kMaxBodyString = 256ull << 20;  // an answer read into a string (JSON, lists): at most this

std::string Seconds(Clock::duration d) {
  double s = std::chrono::duration<double>(d).count();
  char buf[32];
  std::snprintf(buf, sizeof buf, s < 10 ? "%.1fs" : "%.0fs", s);
  return buf;
}

std::string WorkerLabel(const WorkerEntry& w) { return w.id == w.address ? w.address : w.id + " at " + w.address; }

}  // namespace

WorkerCaller::Options WorkerCaller::OptionsFor(const Config& config) {
  Options o;
  o.connect_timeout = config.client.connect_timeout;
  o.response_timeout = config.client.response_timeout;
  o.secret = config.cluster.secret;
  TlsConfig files = config.client.tls;
  std::string what = "client.tls";
  if (!files.enabled && files.ca_file.empty() && !config.tls.cert_file.empty()) {
    files = config.tls;  // a worker's config: its peers share its CA
    files.enabled = true;
    what = "tls";
  }
  if (!files.enabled && files.ca_file.empty()) return o;
  o.client_certificate = !files.cert_file.empty();
  static std::mutex mu;
  static std::map<std::string, std::weak_ptr<security::TlsContext>> contexts;
  const std::string key = files.ca_file + "|" + files.cert_file + "|" + files.key_file;
  std::lock_guard lock(mu);
  if (auto ctx = contexts[key].lock()) {
    o.tls = std::move(ctx);
    return o;
  }
  auto ctx = security::TlsContext::Create(security::TlsContext::Side::kClient, files, what);
  if (!ctx) {
    o.setup_error = ctx.error();
    return o;
  }
  contexts[key] = *ctx;
  o.tls = std::move(*ctx);
  return o;
}

Result<std::unique_ptr<WorkerConnection>> WorkerCaller::Connect(const WorkerEntry& worker, Deadline deadline) const {
  if (!options_.setup_error.ok()) return Err(options_.setup_error);
  auto conn = WorkerConnection::Connect(worker.address, std::min(deadline, Clock::now() + options_.connect_timeout),
                                        options_.tls.get());
  if (!conn) return conn;
  // A config entry without an id names the worker by its address: any Shoal worker may answer there.
  (*conn)->ExpectHandshake(worker.id == worker.address ? std::string() : worker.id);
  return conn;
}

WorkerReply WorkerCaller::Failed(const WorkerEntry& worker, Status why) {
  failures_.fetch_add(1, std::memory_order_relaxed);
  pool_.Forget(worker.address);  // its other idle connections are as suspect
  WorkerReply r;
  r.status = std::move(why);
  r.worker_failed = true;
  return r;
}

void WorkerCaller::Heard(const std::string& address) {
  const auto now = Clock::now();
  std::lock_guard lock(heard_mu_);
  if (heard_.size() > 4096 && !heard_.contains(address)) heard_.clear();  // bounded: a cache of recent answers
  heard_[address] = now;
}

bool WorkerCaller::Alive(const WorkerEntry& worker, Clock::time_point silent_since) {
  {
    std::lock_guard lock(heard_mu_);
    auto it = heard_.find(worker.address);
    if (it != heard_.end() && it->second > silent_since) return true;
  }
  return Probe(worker, std::max(options_.response_timeout / 2, std::chrono::milliseconds(1))).ok();
}

bool WorkerCaller::WaitLonger(const WorkerConnection& conn, const WorkerEntry& worker, Deadline deadline,
                              Clock::time_point* since) {
  if (conn.last_failure() != Failure::kSilent || Clock::now() >= deadline || !Alive(worker, *since)) return false;
  *since = Clock::now();
  slow_waits_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

std::string WorkerCaller::OnBehalf() const {
  const auto& user = CurrentEndUser();
  if (!user || !presents_credential()) return {};
  return OnBehalfValue(*user);
}

WorkerReply WorkerCaller::Call(const WorkerEntry& worker, std::string_view method, const std::string& target,
                               Deadline deadline, std::string_view path, std::span<char> body_out,
                               std::string_view request_body) {
  const auto started = Clock::now();
  const Limits limits(deadline, options_.response_timeout);
  // What a failed step means: out of time (final), or a failed worker.
  auto judge = [&](const WorkerConnection& conn, const Status& err) {
    if (conn.last_failure() != Failure::kDeadline) return Failed(worker, err);
    WorkerReply r;
    if (conn.interim_seen() > 0) {
      r.status = Status(Code::kTimeout, "worker " + WorkerLabel(worker) + " was still waiting on the under-store for " +
                                            std::string(path) + " after " + Seconds(Clock::now() - started) +
                                            "; the store may be slow or stalled (or raise client.timeout)");
    } else {
      r.status = Status(Code::kTimeout, "worker " + WorkerLabel(worker) + " did not answer for " + std::string(path) +
                                            " before the call's deadline (client.timeout)");
    }
    return r;
  };
  for (int attempt = 0; attempt < 2; ++attempt) {
    // A pooled connection may have been closed by the worker while idle: one retry on a new one.
    std::unique_ptr<WorkerConnection> conn = attempt == 0 ? pool_.TakeIdle(worker.address) : nullptr;
    const bool reused = conn != nullptr;
    if (!conn) {
      auto c = Connect(worker, deadline);
      if (!c) {
        if (Clock::now() >= deadline) {
          return WorkerReply{Status(Code::kTimeout, "no time left to reach worker " + WorkerLabel(worker) + " for " +
                                                        std::string(path) + " (client.timeout)"),
                             false, {}, {}, 0};
        }
        return Failed(worker, c.error());
      }
      conn = std::move(*c);
    }
    conn->set_secret(options_.token.empty() ? options_.secret : options_.token);
    conn->set_on_behalf(OnBehalf());
    // When the silence began: an answer of the worker after it is a sign of life.
    Clock::time_point since = Clock::now();
    Status st = conn->SendRequest(method, target, limits, request_body);
    Result<ResponseHead> head = st.ok() ? conn->ReadHead(limits) : Result<ResponseHead>(Err(st));
    while (st.ok() && !head && WaitLonger(*conn, worker, deadline, &since)) head = conn->ReadHead(limits);
    if (!head) {
      if (reused && conn->last_failure() == Failure::kClosed && conn->interim_seen() == 0) continue;
      return judge(*conn, head.error());
    }
    Heard(worker.address);
    since = Clock::now();  // the head is here: only what comes after it counts for the body
    WorkerReply r;
    const bool ok = head->status >= 200 && head->status < 300;
    std::span<char> into = body_out;
    if (ok && !body_out.empty()) {
      if (head->content_length != body_out.size()) {
        return Failed(worker, Status(Code::kIo, "worker " + worker.address + " sent " +
                                                    std::to_string(head->content_length) + " bytes where " +
                                                    std::to_string(body_out.size()) + " were asked"));
      }
    } else {
      if (head->content_length > kMaxBodyString) {
        return Failed(worker, Status(Code::kIo, "worker " + worker.address + " announced a " +
                                                    std::to_string(head->content_length) + "-byte answer"));
      }
      r.body.resize(head->content_length);
      into = std::span<char>(r.body.data(), r.body.size());
    }
    for (size_t done = 0;;) {
      st = conn->ReadBody(into.subspan(done), limits);
      if (st.ok() || !WaitLonger(*conn, worker, deadline, &since)) break;
      done += conn->body_received();
    }
    if (!st.ok()) return judge(*conn, st);
    r.shoal_stat = std::move(head->shoal_stat);
    r.hot = head->shoal_hot;
    const std::string request_id = conn->request_id();
    if (head->keep_alive) pool_.Release(std::move(conn));
    if (!ok) {
      std::string code, msg = r.body;
      try {
        auto j = nlohmann::json::parse(r.body);
        code = j.value("code", "");
        msg = j.value("message", r.body);
      } catch (...) {
      }
      while (!msg.empty() && (msg.back() == '\n' || msg.back() == '\r')) msg.pop_back();
      // A worker's failure is in its log under this id (refusals name it already).
      if (head->status >= 500 && msg.find("[request ") == std::string::npos) msg += " [request " + request_id + "]";
      r.status = Status(CodeFromWire(code, head->status), msg);
    }
    return r;
  }
  return Failed(worker, Status(Code::kUnavailable, "worker " + worker.address + " closed two connections in a row"));
}

Status WorkerCaller::Probe(const WorkerEntry& worker, std::optional<std::chrono::milliseconds> limit) {
  auto conn = Connect(worker, Clock::now() + limit.value_or(options_.connect_timeout));
  if (!conn) return conn.error();
  Limits limits(Clock::now() + limit.value_or(options_.response_timeout));
  SHOAL_RETURN_IF_ERROR((*conn)->SendRequest("GET", "/v1/health", limits));
  auto head = (*conn)->ReadHead(limits);
  if (!head) return head.error();
  auto body = (*conn)->ReadBodyString(head->content_length, limits);
  if (!body) return body.error();
  if (head->status != 200) {
    return Status(Code::kUnavailable, "worker " + worker.address + " answered its health check with HTTP " +
                                          std::to_string(head->status));
  }
  Heard(worker.address);
  return {};
}

}  // namespace shoal
