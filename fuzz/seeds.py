#!/usr/bin/python3
"""Writes the seed corpora of fuzz/corpus/<harness>/ (run from the repository root).

The seeds are the inputs the unit and end-to-end tests send (src/*_test.cc,
tests/), in each harness's input format (see the comment at the top of each
fuzz/<harness>.cc). Run again after changing a format; libFuzzer's own finds
are merged next to them by `make fuzz MERGE=1`.
"""
import hashlib
import os
import struct
import sys

import xxhash


def put(harness, name, data):
    d = os.path.join("fuzz", "corpus", harness)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, "seed-" + name), "wb") as f:
        f.write(data)


# http_request: requests from src/net/http_server_test.cc and tests/worker_input_test.cc.
HTTP = {
    "get": "GET /v1/read?path=%2Fdata%2Fx&offset=0&length=10 HTTP/1.1\r\nHost: x\r\n\r\n",
    "head": "HEAD /a HTTP/1.1\r\nHost: x\r\n\r\n",
    "post-empty": "POST /v1/refresh?path=/data/f150m&data=1 HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n",
    "put-body": "PUT /up HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n0123456789",
    "chunked": "PUT /up HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n3;ext=1\r\nabc\r\n0\r\nTrailer: t\r\n\r\n",
    "expect": "PUT /up HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\nabc",
    "pipelined": "GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\nGET /v1/stat?path=/a HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    "http10": "GET /v1/health HTTP/1.0\r\n\r\n",
    "delete": "DELETE /v1/stat?path=/data/f HTTP/1.1\r\nHost: x\r\n\r\n",
    "big-length": "PUT /up HTTP/1.1\r\nHost: x\r\nContent-Length: 2000000\r\n\r\n",
}
for k, v in HTTP.items():
    put("http_request", k, v)

# worker_query: query strings the worker tests send.
for i, q in enumerate([
    "path=%2Fdata%2Fx&offset=0&length=10",
    "path=/data/f150m&data=1",
    "path=/a&version=wb-0123&size=5&offset=0",
    "path=%2Fd&recursive=1&cache_only=1",
    "id=0123456789abcdef0123456789abcdef&holders=w1@127.0.0.1:7001,w2@127.0.0.1:7002",
    "offset=18446744073709551615&length=18446744073709551616",
    "path=%zz",
    "a&&b=&=c&spread=true",
]):
    put("worker_query", str(i), q)

# local_wire: first byte 0 request, 1 reply, 2 touches (common/local_wire_test.cc's records).
MAGIC = 0x53484C36


def request(kind, path, version, size, offset, length, on_behalf=""):
    p, v, b = path.encode(), version.encode(), on_behalf.encode()
    return struct.pack("<IIIIIIQQQ", MAGIC, kind, len(p), len(v), len(b), 0, size, offset, length) + p + v + b


def reply(code, segments, message, epoch=0, lease=0):
    m = message.encode()
    out = struct.pack("<iIIQQ", code, len(segments), len(m), epoch, lease)
    out = struct.pack("<I", MAGIC) + out
    for s in segments:
        out += struct.pack("<QQIIQQQQqQ", *s)
    return out + m


put("local_wire", "hello", b"\0" + request(1, "token-0123", "", 0, 0, 0))
put("local_wire", "read", b"\0" + request(2, "/data/x", "v1-1048576", 1048576, 4096, 65536))
put("local_wire", "open-cached", b"\0" + request(4, "/data/x", "", 0, 0, 1 << 20))
put("local_wire", "open-for-carol", b"\0" + request(3, "/data/x", "", 0, 0, 1 << 20, "carol;groups=ml,vision"))
put("local_wire", "reply", b"\1" + reply(0, [(4096, 65536, 560, 1048576, 0, 7, 1, 2, 3, 1048576)], '{"size":1}', 5, 10**9))
put("local_wire", "reply-error", b"\1" + reply(14, [], "not cached"))
put("local_wire", "touches",
    b"\2" + struct.pack("<IIQ", 7, 3, 4096) + b"/data/x" + struct.pack("<IIQ", 2, 1, 0) + b"/y")

# sigv4: mode byte, then the request (fuzz/sigv4.cc); from src/s3/s3_auth_test.cc.
AUTHS = ["AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20240517/us-east-1/s3/aws4_request, "
         "SignedHeaders=host;x-amz-content-sha256;x-amz-date, "
         "Signature=0000000000000000000000000000000000000000000000000000000000000000",
         "AWS AKTEST:sig",
         "AWS4-HMAC-SHA256 Credential=AKTEST/2024/us/s3/aws4_request, SignedHeaders=host, Signature=x",
         "AWS4-HMAC-SHA256 Credential=/////, SignedHeaders=;;;, Signature="]
for i, a in enumerate(AUTHS):
    put("sigv4", "header-%d" % i, "\0GET /data/x\nHost: 127.0.0.1:9001\nAuthorization: %s\n"
        "x-amz-date: 20240517T120000Z\nx-amz-content-sha256: UNSIGNED-PAYLOAD\n\n" % a)
put("sigv4", "presigned",
    "\0GET /data/x?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20240517%2Fus-east-1%2Fs3%2F"
    "aws4_request&X-Amz-Date=20240517T115000Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host&X-Amz-Signature="
    "0000000000000000000000000000000000000000000000000000000000000000\nHost: 127.0.0.1:9001\n\n")
put("sigv4", "sigv2", "\0GET /data/x?AWSAccessKeyId=AK&Signature=x&Expires=1\nHost: h\n\n")
put("sigv4", "sign-put", "\1PUT /bucket/a%20b?uploads=&partNumber=3\nContent-Type: text/plain\nX-Amz-Meta-A:  x  y \n\nbody\1")
put("sigv4", "sign-get", "\1GET /bucket/key\nRange: bytes=0-9\n\n\0")
put("sigv4", "presign", "\2GET /bucket/dir/a b+c\n\n\7")

# aws_chunked: mode, streamed, stream sizes, buffer sizes, then body or chunk description.
put("aws_chunked", "raw", b"\0\0\0\0" + b"5;chunk-signature=" + b"0" * 64 + b"\r\nhello\r\n0;chunk-signature=" +
    b"0" * 64 + b"\r\n\r\n")
put("aws_chunked", "signed", b"\1\0\0\0" + b"\x10" + b"\x05hello" + b"\x03\x02\x00")
put("aws_chunked", "signed-streamed", b"\1\1\2\3\7\2\1\2" + b"\x40" + b"\x08abcdefgh" + b"\xff\x01\x10\x00")
put("aws_chunked", "changed", b"\2\1\1\5\1\9" + b"\x01" + b"\x03xyz" + b"\x09\x00" + b"\x00\x00\x00\x00\x00\x00\x00\x30\x01")

# s3_xml: mode, then the document (s3_endpoint_raw.cc, s3_endpoint_boto3.py).
put("s3_xml", "complete", "\0<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
    "<Part><ETag>\"0cc175b9c0f1b6a831c399e269772661\"</ETag><PartNumber>1</PartNumber></Part>"
    "<Part><ETag>&quot;92eb5ffee6ae2fec3ad71c777531578f&quot;</ETag><PartNumber>2</PartNumber></Part>"
    "</CompleteMultipartUpload>")
put("s3_xml", "delete", "\1<?xml version=\"1.0\" encoding=\"UTF-8\"?><Delete><Quiet>true</Quiet>"
    "<Object><Key>a&amp;b &#x41;&#66;</Key></Object><Object><Key>dir/c</Key><VersionId>1</VersionId></Object>"
    "</Delete>")
put("s3_xml", "delete-empty-key", "\1<Delete><Object><Key/></Object></Delete>")
put("s3_xml", "keys", b"\2a\0b/c\0&lt;\0<Key>\0\xc3\xa9")
put("s3_xml", "etags", b"\3abc\0\"q\"\0&x")

# page_header: mode 0/1 raw files (1: the harness reseals the header), 2/3 pages it writes.
def page(path, version, offset, data, chunk=16384, generation=0):
    n = (len(data) + chunk - 1) // chunk
    p, v = path.encode(), version.encode()
    h = bytearray(48 + 8 * n + len(p) + len(v))
    h[0:8] = b"SHOALPG2"
    struct.pack_into("<IIQIHHQ", h, 8, len(h), len(data), offset, chunk, len(p), len(v), generation)
    for i in range(n):
        struct.pack_into("<Q", h, 48 + 8 * i, xxhash.xxh3_64_intdigest(data[i * chunk:(i + 1) * chunk]))
    h[48 + 8 * n:] = p + v
    s = xxhash.xxh3_64(bytes(h[0:40]))
    s.update(bytes(h[48:]))
    struct.pack_into("<Q", h, 40, s.intdigest())
    return bytes(h) + data


put("page_header", "page", b"\0" + page("/data/x", "v1-100", 0, b"x" * 100))
put("page_header", "page-2chunks", b"\0" + page("/d", "e", 1 << 20, bytes(range(256)) * 12, chunk=1024, generation=3))
put("page_header", "old-format", b"\0SHOALPG1" + b"\0" * 60)
put("page_header", "reseal", b"\1" + page("/a", "b", 0, b"y" * 2000, chunk=1024)[:-10])
put("page_header", "write", b"\3\7/data/x\6v1-100" + struct.pack("<Q", 0) + b"\4\0" + struct.pack("<H", 40000) +
    struct.pack("<I", 5) + b"\1\3abc" + b"\0" * 20)
put("page_header", "write-changed", b"\2\2/a\1v" + struct.pack("<Q", 1 << 20) + b"\1\0" + struct.pack("<H", 3000) +
    struct.pack("<I", 77) + b"\x10\2zz" + b"\1\5\7" * 4)

# journal_record: mode 0 raw journal.log, mode 1 histories (worker/writeback_journal.cc's records).
def record(payload):
    if isinstance(payload, str):
        payload = payload.encode()
    return struct.pack("<IQ", len(payload), xxhash.xxh3_64_intdigest(payload)) + payload


ID = "0123456789abcdef0123456789abcdef"
commit = ('{"holders":["w1@127.0.0.1:7001","w2@127.0.0.1:7002"],"id":"%s","mtime_ns":1715947200000000000,'
          '"path":"/data/out/a","size":5,"t":"commit","xxh3":123}' % ID)
put_rec = ('{"holders":["w1@127.0.0.1:7001"],"id":"%s","inline":3,"mtime_ns":1,"path":"/p","size":3,"t":"commit",'
           '"xxh3":9}' % ID.replace("0", "f")).encode() + b"\0abc"
done = '{"id":"%s","t":"done"}' % ID
put("journal_record", "commit", b"\0" + record(commit))
put("journal_record", "commit-done", b"\0" + record(commit) + record(done))
put("journal_record", "put", b"\0" + record(put_rec) + record(commit))
put("journal_record", "torn", b"\0" + record(commit) + record(done)[:-3])
put("journal_record", "history", b"\1" + b"\x01\x04/a/b\x03abc" + b"\0" * 16 + b"\x21\x02/c\x01z" + b"\0" * 16 +
    b"\x00\x09\x02/e\x00" + b"\0" * 16 + b"\x02\x05")

# config: the YAML of src/common/config_test.cc.
put("config", "full", """cluster:
  shard_size: 8MiB
  workers: [127.0.0.1:7001, 127.0.0.1:7002]
mounts:
  - path: /data/
    ufs: file:///srv/datasets/
    consistency: immutable
  - path: /s3
    ufs: s3://bucket/prefix/
    consistency: ttl=30s
    options:
      endpoint: http://127.0.0.1:4568
worker:
  page_size: 256KiB
  cache_dirs:
    - path: /tmp/c1
      capacity: 1GiB
  verify_checksums: false
client:
  timeout: 3s
  ufs_fallback: false
  verify_checksums: false
""")
put("config", "writeback", "mounts:\n  - {path: /a, ufs: 'file:///a/', write_mode: write-back, write_back_replicas: 2}\n")
put("config", "secret", "cluster:\n  secret: 0123456789abcdef0123\n")
put("config", "watermarks", "worker:\n  eviction_high_watermark: 80\n  eviction_low_watermark: 60\n")
put("config", "empty", "")

# page_store: layout byte, then ops (fuzz/page_store.cc).
put("page_store", "files", b"\0" + b"\0\1\2\1\0\7\2\7\6\0\2\1\2\7")
put("page_store", "blocks", b"\1" + b"\0\1\0\2\0\3\0\4\0\5\0\6\0\7\2\1\6\0\3\1")
put("page_store", "damage", b"\0" + b"\0\1\5\0\0\0\0\2\1\3\1\6\0\2\1")
put("page_store", "copy-over", b"\0" + b"\0\1\0\2\5\0\3\0\0\1\2\1\2\2")
put("page_store", "evict", b"\1" + bytes(x for i in range(12) for x in (0, i)) + b"\2\0\2\5\2\11")

# token: mode 0 bearer credentials, mode 1 (user, groups, changed byte), mode 2 On-Behalf-Of values (fuzz/token.cc).
import base64
import hmac
import json


def b64url(b):
    return base64.urlsafe_b64encode(b).rstrip(b"=")


def jwt(header, payload, key):
    signing = b64url(json.dumps(header).encode()) + b"." + b64url(json.dumps(payload).encode())
    return signing + b"." + b64url(hmac.new(key, signing, hashlib.sha256).digest())


other = jwt({"alg": "HS256", "typ": "JWT", "kid": "0123456789abcdef"},
            {"sub": "alice", "groups": ["ml"], "iss": "shoal", "iat": 1, "exp": 4000000000}, b"other-cluster-key")
put("token", "other-cluster", b"\0" + other)
put("token", "alg-none", b"\0" + b64url(b'{"alg":"none"}') + b"." + b64url(b'{"sub":"root"}') + b".")
put("token", "two-parts", b"\0a.b")
put("token", "not-base64", b"\0a$.b.c")
put("token", "padded", b"\0" + other.replace(b".", b"=.", 1))
put("token", "too-large", b"\0" + b"A" * 5000 + b".b.c")
put("token", "empty", b"\0")
put("token", "issued-changed", b"\1" + b"\5alice" + b"\2" + b"\2ml" + b"\6vision" + struct.pack("<Q", 40) + b"X")
put("token", "issued-unchanged", b"\1" + b"\3bob" + b"\0" + struct.pack("<Q", 0) + b"e")
put("token", "on-behalf", b"\2alice;groups=ml,vision")
put("token", "on-behalf-user", b"\2carol")
put("token", "on-behalf-bad", b"\2al ice;groups=a\r\nX-Other: 1")
put("token", "on-behalf-empty-groups", b"\2bob;groups=,,")
put("token", "on-behalf-roles", b"\2bob;roles=admin")

# ranger_policies: "USER GROUPS PATH ACCESS\n" then a ServicePolicies document (fuzz/ranger_policies.cc).
import json as _json
_doc = {"serviceName": "s", "policyVersion": 3, "serviceConfig": {"ranger.plugin.super.users": "hdfs"},
        "policies": [
            {"id": 1, "name": "ml", "resources": {"path": {"values": ["/data", "/home/{USER}/", "/x/*.rec", "*"],
                                                             "isRecursive": True}},
             "policyItems": [{"accesses": [{"type": "read", "isAllowed": True}], "groups": ["ml", "public"],
                              "users": ["{USER}"], "roles": ["r"]}],
             "denyPolicyItems": [{"accesses": [{"type": "read"}], "users": ["eve"],
                                  "conditions": [{"type": "ip", "values": ["1"]}]}],
             "allowExceptions": [{"accesses": [{"type": "read"}], "users": ["eve"]}],
             "denyExceptions": [{"accesses": [{"type": "read"}], "users": ["boss"]}]},
            {"id": 2, "isEnabled": False, "policyPriority": 1, "isDenyAllElse": True,
             "resources": {"path": {"values": ["/data/p?"], "isExcludes": True}}},
            {"id": 3, "policyType": 1, "resources": {"path": {"values": ["/m"]}}}],
        "rangerRoles": [{"name": "r", "users": [{"name": "carol"}], "roles": [{"name": "r"}]}]}
put("ranger_policies", "mixed", b"eve ml,x /data/a read\n" + _json.dumps(_doc).encode())
put("ranger_policies", "truncated", b"bob  /home/bob/x write\n" + _json.dumps(_doc).encode()[:200])
put("ranger_policies", "roles", b"carol  /r execute\n" + _json.dumps({"roleVersion": 2, "rangerRoles": _doc["rangerRoles"]}).encode())
put("ranger_policies", "empty", b"")


# cloud_answers: mode byte, then an answer (fuzz/cloud_answers.cc), from src/ufs/cloud/*_test.cc.
OAUTH = {
    "google": '{"access_token":"ya29.c.b0Aaek","expires_in":3599,"token_type":"Bearer"}',
    "entra": '{"token_type":"Bearer","expires_in":"3599","ext_expires_in":3599,"access_token":"eyJ0eXAi.eyJhdWQi.sig"}',
    "imds-azure": '{"access_token":"eyJ0eXAi","expires_on":"4102444800","resource":"https://storage.azure.com/"}',
    "float": '{"access_token":"t","expires_in":3599.5}',
    "huge": '{"access_token":"t","expires_in":1e300}',
    "crlf": '{"access_token":"t\\r\\nX-Evil: 1","expires_in":60}',
    "no-expiry": '{"access_token":"t"}',
    "expired": '{"access_token":"t","expires_on":1}',
}
for k, v in OAUTH.items():
    put("cloud_answers", "oauth-" + k, b"\0" + v.encode())
AWS = {
    "imds": '{"Code":"Success","LastUpdated":"2026-12-07T00:00:00Z","Type":"AWS-HMAC","AccessKeyId":"ASIAIMDS",'
            '"SecretAccessKey":"imds-secret","Token":"imds-token","Expiration":"2030-01-01T00:00:00Z"}',
    "failure": '{"Code":"AssumeRoleUnauthorizedAccess","Message":"denied"}',
    "no-expiry": '{"AccessKeyId":"A","SecretAccessKey":"S"}',
    "bad-expiry": '{"AccessKeyId":"A","SecretAccessKey":"S","Expiration":"1012-01-01T00:00:00Z"}',
}
for k, v in AWS.items():
    put("cloud_answers", "aws-" + k, b"\1" + v.encode())
put("cloud_answers", "process", b"\2" + b'{"Version":1,"AccessKeyId":"AKIDPROC","SecretAccessKey":"s",'
                                       b'"SessionToken":"t","Expiration":"2030-01-01T00:00:00+00:00"}')
put("cloud_answers", "process-v2", b'\2{"Version":2,"AccessKeyId":"A","SecretAccessKey":"S"}')
STS = ('<AssumeRoleWithWebIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">'
       '<AssumeRoleWithWebIdentityResult><Credentials><AccessKeyId>ASIASTS</AccessKeyId>'
       '<SecretAccessKey>sts-secret</SecretAccessKey><SessionToken>sts-token</SessionToken>'
       '<Expiration>2030-01-01T00:00:00.000Z</Expiration></Credentials></AssumeRoleWithWebIdentityResult>'
       '</AssumeRoleWithWebIdentityResponse>')
put("cloud_answers", "sts", b"\3" + STS.encode())
put("cloud_answers", "sts-expired", b"\3" + STS.replace("2030", "2020").encode())
put("cloud_answers", "sts-error", b"\3<ErrorResponse><Error><Code>AccessDenied</Code></Error></ErrorResponse>")
put("cloud_answers", "written", b"\4" + struct.pack("<i", 3600) + b"ya29.token")

# webhdfs_json: mode byte, then a namenode answer (fuzz/webhdfs_json.cc), as tests/webhdfs_server.py answers.
def hdfs_status(name, kind="FILE", length=5, perm="644"):
    return {"accessTime": 0, "blockSize": 134217728, "childrenNum": 0, "fileId": 16390, "group": "supergroup",
            "length": length, "modificationTime": 1700000000000, "owner": "hdfs", "pathSuffix": name,
            "permission": perm, "replication": 1, "storagePolicy": 0, "type": kind}
put("webhdfs_json", "filestatus", b"\0" + _json.dumps({"FileStatus": hdfs_status("")}).encode())
put("webhdfs_json", "liststatus", b"\0" + _json.dumps({"FileStatuses": {"FileStatus": [
    hdfs_status("a"), hdfs_status("d", "DIRECTORY", 0, "1777"), hdfs_status("z", length=-1)]}}).encode())
put("webhdfs_json", "batch", b"\0" + _json.dumps({"DirectoryListing": {"partialListing": {"FileStatuses": {
    "FileStatus": [hdfs_status("a"), hdfs_status("m")]}}, "remainingEntries": 2}}).encode())
put("webhdfs_json", "batch-dotdot", b"\0" + _json.dumps({"DirectoryListing": {"partialListing": {"FileStatuses": {
    "FileStatus": [hdfs_status("..", "DIRECTORY")]}}, "remainingEntries": 0}}).encode())
put("webhdfs_json", "remote-exception", b"\0" + _json.dumps({"RemoteException": {
    "exception": "FileNotFoundException", "javaClassName": "java.io.FileNotFoundException",
    "message": "File does not exist: /x"}}).encode())
put("webhdfs_json", "remote-exception-types", b'\0{"RemoteException":{"exception":1,"message":[]}}')
put("webhdfs_json", "boolean", b'\0{"boolean":true}')
put("webhdfs_json", "written", b"\1\1a" + struct.pack("<qH", 5, 0o644) + b"\0\3dir" + struct.pack("<qH", 0, 0o755) + b"\1\1")

# etcd_json: mode byte, then an etcd gateway answer (fuzz/etcd_json.cc), as etcd 3.4 answers them.
import base64 as _b64
def b64s(s):
    return _b64.b64encode(s.encode()).decode()
_kv = {"key": b64s("/shoal/members/w1"), "create_revision": "5", "mod_revision": "7", "version": "1",
       "value": b64s('{"address":"127.0.0.1:7001","id":"w1","weight":1073741824}'), "lease": "694d7"}
put("etcd_json", "range", b"\0" + _json.dumps({"header": {"cluster_id": "1", "member_id": "2", "revision": "7",
                                                          "raft_term": "2"}, "kvs": [_kv], "count": "1"}).encode())
put("etcd_json", "range-empty", b'\0{"header":{"revision":"3"}}')
put("etcd_json", "grant", b'\0{"header":{"revision":"3"},"ID":"7587862072907351557","TTL":"10"}')
put("etcd_json", "keepalive", b'\0{"result":{"header":{"revision":"3"},"ID":"7587862072907351557","TTL":"10"}}\n')
put("etcd_json", "keepalive-gone", b'\0{"result":{"header":{"revision":"3"},"ID":"1"}}\n')
put("etcd_json", "watch-created", b'\0{"result":{"header":{"revision":"8"},"created":true}}')
put("etcd_json", "watch-events", b"\0" + _json.dumps({"result": {"header": {"revision": "9"}, "events": [
    {"kv": _kv}, {"type": "DELETE", "kv": {"key": b64s("/shoal/members/w2"), "mod_revision": "9"}}]}}).encode())
put("etcd_json", "watch-compacted", b'\0{"result":{"header":{"revision":"9"},"compact_revision":"8","canceled":true}}')
put("etcd_json", "watch-canceled-types", b'\0{"result":{"canceled":"yes","created":1,"cancel_reason":7}}')
put("etcd_json", "error", b'\0{"error":"etcdserver: requested lease not found","code":5,"message":"etcdserver: requested lease not found"}')
put("etcd_json", "member", b'\0{"address":"127.0.0.1:7001","id":"w1","weight":1073741824}')
put("etcd_json", "member-types", b'\0{"address":7001,"id":["w1"],"weight":-1}')
put("etcd_json", "written", b"\1\7\0\0\0\3key\5value\7\0\0\0\2k2\0\1\0\0\0")
put("etcd_json", "base64", b"\2L3Nob2FsL21lbWJlcnMvdzE=")
put("etcd_json", "base64-spaces", b"\2 \t==")

# cert_name: mode byte, then a DER certificate (mode 0) or a certificate's shape (mode 1, fuzz/cert_name.cc).
# The DER seeds (seed-cn, -uri-san, -two-cn, -utf8-cn, -no-cn, -dup-san) were made once with
# `openssl req -new -x509 -key <P-256 key> -outform DER -subj ... [-addext subjectAltName=...]`;
# they are kept as they are, since a key and a date differ on every run.
put("cert_name", "built-cn", b"\1\1\5alice")
put("cert_name", "built-bmp-cn", b"\1\5\5alice")
put("cert_name", "built-two-cn", b"\1\2\5alice\5admin")
put("cert_name", "built-uri", b"\1\x19\5node1\7spiffe:" + b"\x0bdns.example\x26spiffe://cluster.local/ns/ml/sa/trainer")
put("cert_name", "built-newline", b"\1\1\7alice\nx")
put("cert_name", "built-second-uri", b"\1\x20")
