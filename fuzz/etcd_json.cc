// What etcd's JSON gateway answers, read by etcd membership
// (src/cluster/etcd_client.cc, etcd_membership.cc): kv/range answers, lease
// grant and keepalive answers, watch stream lines, error bodies, the base64
// of keys and values, and the member records workers put. None may throw,
// an error text is one line of at most 200 bytes, and a member record read
// back names a worker of its key's id. The first byte picks a mode:
//   0: the rest is an answer (or a member record) as sent;
//   1: a range answer and a watch line the harness writes from fuzz-chosen
//      keys and values (any bytes, base64 as etcd sends them): every key,
//      value and revision reads back exactly;
//   2: the rest is base64 as sent: it decodes to at most 3/4 of its size,
//      and the bytes themselves encode and decode back exactly.
#include <string>
#include <vector>

#include "cluster/etcd_client.h"
#include "cluster/etcd_membership.h"
#include "fuzz_check.h"

namespace {

using namespace shoal;

void CheckText(const std::string& t) {
  FUZZ_CHECK(t.size() <= 200, "an error text of %zu bytes", t.size());
  for (unsigned char c : t) FUZZ_CHECK(c >= 0x20, "an error text with a control byte");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0 || size > 256 * 1024) return 0;
  fuzz::FuzzInput in(data, size);
  const uint8_t mode = in.Byte() % 3;
  if (mode == 0) {
    const std::string_view body = in.rest();
    if (auto r = EtcdClient::ParseRange(body)) {
      for (const auto& kv : r->kvs) (void)kv.key.size();
    }
    if (auto id = EtcdClient::ParseLeaseGrant(body)) FUZZ_CHECK(*id != 0, "a lease id of 0");
    if (auto ttl = EtcdClient::ParseKeepAlive(body)) FUZZ_CHECK(*ttl >= 0, "a negative TTL");
    auto m = EtcdClient::ParseWatchLine(body, 7);
    FUZZ_CHECK(m.stop.ok() || m.events.empty(), "a stopped watch line with events");
    CheckText(EtcdClient::ErrorText(body));
    if (auto member = ParseEtcdMember("w1", body)) {
      FUZZ_CHECK(member->entry.id == "w1", "a member record of id '%s' under w1's key", member->entry.id.c_str());
    }
    return 0;
  }
  if (mode == 2) {
    const std::string_view text = in.rest();
    if (auto d = EtcdClient::Base64Decode(text)) FUZZ_CHECK(d->size() <= text.size() / 4 * 3, "decoded too much");
    auto back = EtcdClient::Base64Decode(EtcdClient::Base64Encode(text));
    FUZZ_CHECK(back && *back == text, "bytes do not survive base64");
    return 0;
  }
  std::vector<EtcdClient::KeyValue> kvs;
  const int64_t revision = in.Int<uint32_t>() + 1;
  for (int i = 0; i < 16 && in.rest().size() > 2; ++i) {
    kvs.push_back({std::string(in.Bytes(64)), std::string(in.Bytes(255)), in.Int<uint32_t>()});
  }
  std::string range = "{\"header\":{\"cluster_id\":\"1\",\"member_id\":\"2\",\"revision\":\"" +
                      std::to_string(revision) + "\",\"raft_term\":\"3\"},\"kvs\":[";
  std::string watch = "{\"result\":{\"header\":{\"revision\":\"" + std::to_string(revision) + "\"},\"events\":[";
  for (size_t i = 0; i < kvs.size(); ++i) {
    std::string kv = "{\"key\":\"" + EtcdClient::Base64Encode(kvs[i].key) + "\",\"create_revision\":\"1\"," +
                     "\"mod_revision\":\"" + std::to_string(kvs[i].mod_revision) + "\",\"version\":\"1\"," +
                     "\"value\":\"" + EtcdClient::Base64Encode(kvs[i].value) + "\",\"lease\":\"9\"}";
    range += (i ? "," : "") + kv;
    watch += std::string(i ? "," : "") + (i % 2 ? "{\"type\":\"DELETE\",\"kv\":" : "{\"kv\":") + kv + "}";
  }
  range += "],\"count\":\"" + std::to_string(kvs.size()) + "\"}";
  watch += "]}}";
  auto r = EtcdClient::ParseRange(range);
  FUZZ_CHECK(r.has_value(), "a written range answer was refused: %s", r.error().message().c_str());
  auto m = EtcdClient::ParseWatchLine(watch, 1);
  FUZZ_CHECK(m.stop.ok(), "a written watch line stopped the watch: %s", m.stop.message().c_str());
  FUZZ_CHECK(r->revision == revision && m.revision == revision, "the revision does not read back");
  FUZZ_CHECK(r->kvs.size() == kvs.size() && m.events.size() == kvs.size(), "%zu/%zu key-values read back, %zu written",
             r->kvs.size(), m.events.size(), kvs.size());
  for (size_t i = 0; i < kvs.size(); ++i) {
    for (const auto* got : {&r->kvs[i], &m.events[i].kv}) {
      FUZZ_CHECK(got->key == kvs[i].key && got->value == kvs[i].value && got->mod_revision == kvs[i].mod_revision,
                 "key-value %zu does not read back as written", i);
    }
    FUZZ_CHECK(m.events[i].deleted == (i % 2 == 1), "event %zu is not of its type", i);
  }
  return 0;
}
