// CallWorkers (client_internal.h): one admin request to every worker of the ring, in parallel.
#include <future>

#include "client/client_impl.h"
#include "client/client_internal.h"

namespace shoal::detail {

std::vector<std::string> ClientImpl::RingMembers() const {
  auto [ring, members] = router_.Members();
  std::vector<std::string> out;
  for (const auto& m : members) out.push_back(m.entry->id);
  return out;
}

std::vector<WorkerAnswer> ClientImpl::CallWorkers(std::string_view method,
                                                  const std::function<std::string(const std::string&)>& target_for) {
  const Deadline deadline = NewDeadline();
  auto [ring, members] = router_.Members();
  std::vector<std::future<WorkerAnswer>> results;
  for (const auto& m : members) {
    WorkerAnswer a;
    a.member = m.entry->id;
    a.address = m.entry->address;
    if (m.down) {  // being probed; asking it again would only wait for it
      a.status = Status(Code::kUnavailable, "worker " + WorkerName(*m.entry) + " is down: " + m.down->message());
      std::promise<WorkerAnswer> p;
      p.set_value(std::move(a));
      results.push_back(p.get_future());
      continue;
    }
    std::string target = target_for(a.member);
    results.push_back(fanout_pool_.Submit([this, w = m.entry, a = std::move(a), target = std::move(target),
                                           method = std::string(method), deadline]() mutable {
      auto r = caller_.Call(*w, method, target, deadline, "worker " + WorkerName(*w));
      if (r.worker_failed) router_.ReportFailure(*w, r.status);
      a.status = r.status;
      if (r.status.ok()) a.body = std::move(r.body);
      return a;
    }));
  }
  std::vector<WorkerAnswer> out;
  for (auto& f : results) out.push_back(f.get());
  return out;
}

}  // namespace shoal::detail

namespace shoal {

std::vector<WorkerAnswer> CallWorkers(Client& client, std::string_view method,
                                      const std::function<std::string(const std::string&)>& target_for) {
  return detail::ClientAccess::Impl(client).CallWorkers(method, target_for);
}

std::vector<WorkerStatus> ClusterStatusWithBodies(Client& client, std::vector<std::string>* bodies) {
  auto out = detail::ClientAccess::Impl(client).ClusterStatus(bodies);
  RingInfo ring = client.Ring();
  for (auto& w : out) {
    w.ring_version = ring.version;
    for (const auto& m : ring.members) {
      if (m.id == w.id) {
        w.ring_weight = m.weight;
        w.ring_share = m.share;
      }
    }
  }
  return out;
}

std::vector<std::string> RingMembers(const Client& client) { return detail::ClientAccess::Impl(client).RingMembers(); }

}  // namespace shoal
