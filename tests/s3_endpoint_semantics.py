#!/usr/bin/python3
# What sync tools and SDKs trust of S3, with boto3 against the Shoal S3
# endpoint over a directory (run by tests/s3_endpoint_test.cc with Debian's
# /usr/bin/python3): ETags that never repeat for different bytes and are the
# MD5 where they look like one, Content-Type and x-amz-meta-* kept through
# PutObject, CopyObject and multipart uploads, an idempotent
# CompleteMultipartUpload, and S3's error codes. Environment: S3_ENDPOINT,
# AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, UFS (the directory the bucket
# "data" mounts). Exits non-zero naming the first check that failed.
import base64
import datetime
import hashlib
import os
import re

import botocore.exceptions

from s3_checks import checker, client, error_code

ufs = os.environ["UFS"]
s3 = client()
MD5 = re.compile(r"^[0-9a-f]{32}$")
check = checker("semantics")


def with_headers(call, headers, **kw):
    """call(**kw) with extra request headers (for those this botocore has no parameter for)."""
    def add(request, **_):
        for k, v in headers.items():
            request.headers[k] = v
    s3.meta.events.register_first("before-sign.s3", add)
    try:
        return call(**kw)
    finally:
        s3.meta.events.unregister("before-sign.s3", add)


def etag(d):
    return d["ETag"].strip('"')


# 1. Files put in the store directly: same size, same mtime (to the
# nanosecond), different bytes. Their ETags differ, and none passes for an
# MD5 it is not.
os.makedirs(ufs + "/same", exist_ok=True)
for i in range(16):
    p = "%s/same/%02d.bin" % (ufs, i)
    with open(p, "wb") as f:
        f.write(bytes([i]) * 4096)
    os.utime(p, ns=(1_600_000_000_123_456_789, 1_600_000_000_123_456_789))
listed = s3.list_objects_v2(Bucket="data", Prefix="same/")["Contents"]
tags = [etag(o) for o in listed]
check(len(listed) == 16 and len(set(tags)) == 16, "16 same-size same-mtime files have 16 ETags: %s" % tags)
for o in listed:
    data = open(ufs + "/" + o["Key"], "rb").read()
    t = etag(o)
    check(not MD5.match(t) or t == hashlib.md5(data).hexdigest(), "%s: ETag %s looks like an MD5 but is not" % (o["Key"], t))
    check(etag(s3.head_object(Bucket="data", Key=o["Key"])) == t, "%s: HEAD and the listing give one ETag" % o["Key"])
# (A file rewritten in place with its size and mtime put back gets a new
# ETag too: src/ufs/posix/posix_store_test.cc; here the worker's cached stat
# would hide it until the mount's revalidation.)

# 2. PutObject: the ETag is the MD5; Content-Type and metadata come back on HEAD and GET.
body = os.urandom(100_000)
r = s3.put_object(Bucket="data", Key="meta/put.bin", Body=body, ContentType="text/x-shoal",
                  Metadata={"k": "v", "Mixed-Case": "Value 2"})
check(etag(r) == hashlib.md5(body).hexdigest(), "PutObject's ETag %s is the MD5" % etag(r))
h = s3.head_object(Bucket="data", Key="meta/put.bin")
check(h["ContentType"] == "text/x-shoal", "HEAD Content-Type: %s" % h["ContentType"])
check(h["Metadata"] == {"k": "v", "mixed-case": "Value 2"}, "HEAD metadata: %s" % h["Metadata"])
check(etag(h) == hashlib.md5(body).hexdigest(), "HEAD ETag %s is the MD5" % etag(h))
g = s3.get_object(Bucket="data", Key="meta/put.bin")
check(g["Body"].read() == body and g["ContentType"] == "text/x-shoal" and g["Metadata"]["k"] == "v", "GET metadata")
# ListObjects (v1) with botocore's default encoding-type=url: botocore decodes
# Delimiter, Marker, NextMarker and the keys but not the top-level Prefix
# (ceph/s3-tests test_bucket_list_prefix_unreadable); v2 decodes Prefix too.
for fn in (s3.list_objects, s3.list_objects_v2):
    r = fn(Bucket="data", Prefix="\x0a")
    check(r["Prefix"] == "\x0a" and not r.get("Contents"), "%s Prefix '\\n' comes back as %r" % (fn.__name__, r["Prefix"]))
listed = s3.list_objects_v2(Bucket="data", Prefix="meta/put.bin")["Contents"]
check(etag(listed[0]) == etag(h), "the listing gives the ETag HEAD gives")
check(s3.get_object(Bucket="data", Key="meta/put.bin", ResponseContentType="a/b")["ContentType"] == "a/b",
      "response-content-type overrides the kept one")

# The standard headers an object keeps: Cache-Control, Content-Disposition,
# Content-Encoding, Content-Language, Expires (PutObject, CopyObject, multipart).
STD = {"CacheControl": "max-age=600, public", "ContentDisposition": 'attachment; filename="w.bin"',
       "ContentEncoding": "identity", "ContentLanguage": "en-GB"}
EXPIRES = datetime.datetime(2094, 12, 1, 16, 0, tzinfo=datetime.timezone.utc)


def std_of(h):
    return {k: h.get(k) for k in STD}


s3.put_object(Bucket="data", Key="meta/std.bin", Body=body, Expires=EXPIRES, **STD)
for fn in (s3.head_object, s3.get_object):
    h = fn(Bucket="data", Key="meta/std.bin")
    check(std_of(h) == STD and h.get("Expires") == EXPIRES, "%s standard headers: %s %s" %
          (fn.__name__, std_of(h), h.get("Expires")))
g = s3.get_object(Bucket="data", Key="meta/std.bin", ResponseCacheControl="no-cache")
check(g["CacheControl"] == "no-cache" and g["ResponseMetadata"]["HTTPHeaders"]["cache-control"] == "no-cache",
      "response-cache-control replaces the kept one: %s" % g["ResponseMetadata"]["HTTPHeaders"].get("cache-control"))
check(g["Body"].read() == body, "Content-Encoding is kept, never applied to the bytes")
s3.copy_object(Bucket="data", Key="meta/std-copy.bin", CopySource={"Bucket": "data", "Key": "meta/std.bin"})
check(std_of(s3.head_object(Bucket="data", Key="meta/std-copy.bin")) == STD, "COPY keeps the standard headers")
s3.copy_object(Bucket="data", Key="meta/std-copy.bin", CopySource={"Bucket": "data", "Key": "meta/std.bin"},
               MetadataDirective="REPLACE", CacheControl="no-store")
h = s3.head_object(Bucket="data", Key="meta/std-copy.bin")
check(h.get("CacheControl") == "no-store" and h.get("ContentDisposition") is None and h.get("Expires") is None,
      "REPLACE takes the request's standard headers only: %s" % std_of(h))

# Conditional PutObject.
put = s3.put_object
check(with_headers(error_code, {"If-None-Match": "*"}, fn=put, Bucket="data", Key="meta/put.bin", Body=b"x") ==
      ("PreconditionFailed", 412), "If-None-Match: * on an existing key")
check(with_headers(error_code, {"If-Match": '"0123"'}, fn=put, Bucket="data", Key="meta/put.bin", Body=b"x") ==
      ("PreconditionFailed", 412), "If-Match with another ETag")
check(with_headers(error_code, {"If-Match": '"0123"'}, fn=put, Bucket="data", Key="meta/nothing.bin", Body=b"x")[1] ==
      404, "If-Match on no object")
check(s3.get_object(Bucket="data", Key="meta/put.bin")["Body"].read() == body, "a refused PUT changed the object")

# 3. CopyObject: COPY keeps the source's metadata, REPLACE takes the request's.
r = s3.copy_object(Bucket="data", Key="meta/copy.bin", CopySource={"Bucket": "data", "Key": "meta/put.bin"})
check(etag(r["CopyObjectResult"]) == hashlib.md5(body).hexdigest(), "CopyObject's ETag is the MD5")
h = s3.head_object(Bucket="data", Key="meta/copy.bin")
check(h["ContentType"] == "text/x-shoal" and h["Metadata"] == {"k": "v", "mixed-case": "Value 2"},
      "COPY directive: %s %s" % (h["ContentType"], h["Metadata"]))
s3.copy_object(Bucket="data", Key="meta/copy.bin", CopySource={"Bucket": "data", "Key": "meta/put.bin"},
               MetadataDirective="REPLACE", ContentType="image/png", Metadata={"new": "1"})
h = s3.head_object(Bucket="data", Key="meta/copy.bin")
check(h["ContentType"] == "image/png" and h["Metadata"] == {"new": "1"}, "REPLACE directive: %s %s" %
      (h["ContentType"], h["Metadata"]))
check(error_code(s3.copy_object, Bucket="data", Key="meta/copy.bin",
                 CopySource={"Bucket": "data", "Key": "meta/copy.bin"}) == ("InvalidRequest", 400),
      "a copy onto itself without REPLACE")
s3.copy_object(Bucket="data", Key="meta/copy.bin", CopySource={"Bucket": "data", "Key": "meta/copy.bin"},
               MetadataDirective="REPLACE", Metadata={"again": "2"})
h = s3.head_object(Bucket="data", Key="meta/copy.bin")
check(h["Metadata"] == {"again": "2"} and s3.get_object(Bucket="data", Key="meta/copy.bin")["Body"].read() == body,
      "a copy onto itself with REPLACE keeps the bytes and takes the metadata")
src_etag = '"%s"' % hashlib.md5(body).hexdigest()
check(error_code(s3.copy_object, Bucket="data", Key="meta/c2.bin", CopySource={"Bucket": "data", "Key": "meta/put.bin"},
                 CopySourceIfNoneMatch=src_etag) == ("PreconditionFailed", 412), "x-amz-copy-source-if-none-match")
check(error_code(s3.copy_object, Bucket="data", Key="meta/c2.bin", CopySource={"Bucket": "data", "Key": "meta/put.bin"},
                 CopySourceIfMatch='"0123"') == ("PreconditionFailed", 412), "x-amz-copy-source-if-match")

# 4. Multipart: metadata from Create, the ETag of S3 ("md5 of the part md5s"-N), Complete twice.
parts = [os.urandom(5 << 20), os.urandom(1000)]
up = s3.create_multipart_upload(Bucket="data", Key="meta/mp.bin", ContentType="application/x-mp",
                                Metadata={"m": "p"}, CacheControl="max-age=1")["UploadId"]
done = []
for n, p in enumerate(parts, 1):
    done.append({"PartNumber": n, "ETag": s3.upload_part(Bucket="data", Key="meta/mp.bin", UploadId=up, PartNumber=n,
                                                          Body=p)["ETag"]})
want = hashlib.md5(b"".join(hashlib.md5(p).digest() for p in parts)).hexdigest() + "-2"
first = s3.complete_multipart_upload(Bucket="data", Key="meta/mp.bin", UploadId=up, MultipartUpload={"Parts": done})
check(etag(first) == want, "the multipart ETag %s is %s" % (etag(first), want))
again = s3.complete_multipart_upload(Bucket="data", Key="meta/mp.bin", UploadId=up, MultipartUpload={"Parts": done})
check(etag(again) == want, "a retried Complete answers %s, not %s" % (etag(again), want))
h = s3.head_object(Bucket="data", Key="meta/mp.bin")
check(etag(h) == want and h["ContentType"] == "application/x-mp" and h["Metadata"] == {"m": "p"} and
      h.get("CacheControl") == "max-age=1",
      "multipart HEAD: %s %s %s %s" % (etag(h), h["ContentType"], h["Metadata"], h.get("CacheControl")))
check(s3.get_object(Bucket="data", Key="meta/mp.bin")["Body"].read() == b"".join(parts), "multipart bytes")
# GET and HEAD ?partNumber=N: each part's bytes, and the count of parts.
for n, p in enumerate(parts, 1):
    g = s3.get_object(Bucket="data", Key="meta/mp.bin", PartNumber=n)
    got = g["Body"].read()
    check(got == p and g["PartsCount"] == 2 and g["ContentLength"] == len(p) and
          g["ResponseMetadata"]["HTTPStatusCode"] == 206,
          "GET partNumber=%d: %d bytes, PartsCount %s" % (n, len(got), g.get("PartsCount")))
    h = s3.head_object(Bucket="data", Key="meta/mp.bin", PartNumber=n)
    check(h["ContentLength"] == len(p) and h["PartsCount"] == 2 and h["Metadata"] == {"m": "p"},
          "HEAD partNumber=%d: %s" % (n, h))
check(error_code(s3.get_object, Bucket="data", Key="meta/mp.bin", PartNumber=3) == ("InvalidPart", 400),
      "partNumber past the parts")
check(error_code(s3.get_object, Bucket="data", Key="meta/mp.bin", PartNumber=1, Range="bytes=0-1")[1] == 400,
      "partNumber with a Range")
# An object uploaded whole is its own part 1 (ceph/s3-tests test_non_multipart_get_part).
g = s3.get_object(Bucket="data", Key="meta/put.bin", PartNumber=1)
check(g["Body"].read() == body and "PartsCount" not in g, "partNumber=1 of an object uploaded whole")
check(error_code(s3.get_object, Bucket="data", Key="meta/put.bin", PartNumber=2) == ("InvalidPart", 400),
      "partNumber=2 of an object uploaded whole")
check(error_code(s3.put_object, Bucket="data", Key="meta/spoof.bin", Body=b"x",
                 Metadata={"shoal-part-sizes": "1"})[1] == 400, "the reserved metadata name is refused")
attrs = s3.get_object_attributes(Bucket="data", Key="meta/mp.bin", ObjectAttributes=["ObjectParts", "ObjectSize"])
check(attrs["ObjectParts"]["TotalPartsCount"] == 2 and attrs["ObjectSize"] == sum(map(len, parts)),
      "GetObjectAttributes ObjectParts: %s" % attrs)
check(error_code(s3.upload_part, Bucket="data", Key="meta/mp.bin", UploadId=up, PartNumber=3, Body=b"x")[0] ==
      "NoSuchUpload", "UploadPart to a completed upload")
check(all(u["UploadId"] != up for u in s3.list_multipart_uploads(Bucket="data").get("Uploads", [])),
      "a completed upload is not listed")
# UploadPartCopy: a range of one object and the whole of another as parts.
src = os.urandom(6 << 20)
s3.put_object(Bucket="data", Key="meta/src.bin", Body=src)
up = s3.create_multipart_upload(Bucket="data", Key="meta/pc.bin")["UploadId"]
p1 = s3.upload_part_copy(Bucket="data", Key="meta/pc.bin", UploadId=up, PartNumber=1,
                         CopySource={"Bucket": "data", "Key": "meta/src.bin"}, CopySourceRange="bytes=0-5242879")
check(etag(p1["CopyPartResult"]) == hashlib.md5(src[:5 << 20]).hexdigest(), "UploadPartCopy's ETag is the part's MD5")
p2 = s3.upload_part_copy(Bucket="data", Key="meta/pc.bin", UploadId=up, PartNumber=2,
                         CopySource={"Bucket": "data", "Key": "meta/put.bin"})
check(error_code(s3.upload_part_copy, Bucket="data", Key="meta/pc.bin", UploadId=up, PartNumber=3,
                 CopySource={"Bucket": "data", "Key": "meta/put.bin"},
                 CopySourceRange="bytes=0-%d" % (len(body) + 20))[0] == "InvalidRange",
      "a copy range past the source's end is InvalidRange (ceph/s3-tests test_multipart_copy_invalid_range)")
s3.complete_multipart_upload(Bucket="data", Key="meta/pc.bin", UploadId=up, MultipartUpload={"Parts": [
    {"PartNumber": 1, "ETag": p1["CopyPartResult"]["ETag"]}, {"PartNumber": 2, "ETag": p2["CopyPartResult"]["ETag"]}]})
check(s3.get_object(Bucket="data", Key="meta/pc.bin")["Body"].read() == src[:5 << 20] + body, "UploadPartCopy bytes")
check(error_code(s3.upload_part_copy, Bucket="data", Key="meta/pc.bin", UploadId=up, PartNumber=3,
                 CopySource={"Bucket": "data", "Key": "meta/src.bin"})[0] == "NoSuchUpload", "copy to a completed upload")
a = s3.get_object_attributes(Bucket="data", Key="meta/src.bin", ObjectAttributes=["ETag", "ObjectSize", "StorageClass"])
check(a["ETag"].strip('"') == hashlib.md5(src).hexdigest() and a["ObjectSize"] == len(src), "GetObjectAttributes: %s" % a)
for k in ("meta/src.bin", "meta/pc.bin"):
    s3.delete_object(Bucket="data", Key=k)

# A part sent twice (a resend raced the first send) and listed twice in a row:
# the last listing names the bytes that count (ceph/s3-tests
# test_multipart_resend_first_finishes_last); out of order is still refused.
dup = s3.create_multipart_upload(Bucket="data", Key="meta/dup.bin")["UploadId"]
first = s3.upload_part(Bucket="data", Key="meta/dup.bin", UploadId=dup, PartNumber=1, Body=b"B" * 8)["ETag"]
second = s3.upload_part(Bucket="data", Key="meta/dup.bin", UploadId=dup, PartNumber=1, Body=b"A" * 8)["ETag"]
check(error_code(s3.complete_multipart_upload, Bucket="data", Key="meta/dup.bin", UploadId=dup, MultipartUpload={
    "Parts": [{"PartNumber": 2, "ETag": second}, {"PartNumber": 1, "ETag": second}]})[0] == "InvalidPartOrder",
      "parts out of order are InvalidPartOrder")
s3.complete_multipart_upload(Bucket="data", Key="meta/dup.bin", UploadId=dup, MultipartUpload={
    "Parts": [{"PartNumber": 1, "ETag": first}, {"PartNumber": 1, "ETag": second}]})
check(s3.get_object(Bucket="data", Key="meta/dup.bin")["Body"].read() == b"A" * 8, "a part listed twice: the last wins")
s3.delete_object(Bucket="data", Key="meta/dup.bin")

small = s3.create_multipart_upload(Bucket="data", Key="meta/small.bin")["UploadId"]
done = [{"PartNumber": n, "ETag": s3.upload_part(Bucket="data", Key="meta/small.bin", UploadId=small, PartNumber=n,
                                                 Body=b"y" * 100)["ETag"]} for n in (1, 2)]
check(error_code(s3.complete_multipart_upload, Bucket="data", Key="meta/small.bin", UploadId=small,
                 MultipartUpload={"Parts": done}) == ("EntityTooSmall", 400), "a first part of 100 bytes")
s3.abort_multipart_upload(Bucket="data", Key="meta/small.bin", UploadId=small)

# 4b. Complete composes the object from the staged parts (inside the kernel
# on a file store): parts uploaded out of order, one sent twice, a short last
# one, and Complete naming only some of them give exactly those bytes and
# S3's ETag. A wrong Content-MD5 stores nothing, a PutObject with a right one
# has it as its ETag, and a failed or aborted upload leaves no file behind.
def stray_files():
    return [n for _, _, files in os.walk(ufs) for n in files if n.startswith(".shoal-tmp-")]


parts = [os.urandom(5 << 20) + bytes([n]) for n in range(3)] + [os.urandom(1234)]
key = "meta/compose.bin"
up = s3.create_multipart_upload(Bucket="data", Key=key)["UploadId"]
tags = {}
for n in (4, 2, 1, 3, 2):
    tags[n] = s3.upload_part(Bucket="data", Key=key, UploadId=up, PartNumber=n, Body=parts[n - 1])["ETag"]
chosen = (1, 3, 4)
r = s3.complete_multipart_upload(Bucket="data", Key=key, UploadId=up,
                                 MultipartUpload={"Parts": [{"PartNumber": n, "ETag": tags[n]} for n in chosen]})
body = b"".join(parts[n - 1] for n in chosen)
want = hashlib.md5(b"".join(hashlib.md5(parts[n - 1]).digest() for n in chosen)).hexdigest() + "-3"
check(etag(r) == want, "composed multipart ETag %s is %s" % (etag(r), want))
check(s3.get_object(Bucket="data", Key=key)["Body"].read() == body, "the composed object holds parts 1, 3, 4")
check(open(ufs + "/" + key, "rb").read() == body, "the composed file in the store holds parts 1, 3, 4")
r = s3.put_object(Bucket="data", Key="meta/md5.bin", Body=parts[3], ContentMD5=base64.b64encode(
    hashlib.md5(parts[3]).digest()).decode())
check(etag(r) == hashlib.md5(parts[3]).hexdigest(), "a PutObject with Content-MD5 has it as ETag: %s" % etag(r))
check(etag(s3.head_object(Bucket="data", Key="meta/md5.bin")) == hashlib.md5(parts[3]).hexdigest(),
      "HEAD gives the Content-MD5 ETag")
check(error_code(s3.put_object, Bucket="data", Key="meta/bad-md5.bin", Body=parts[3],
                 ContentMD5=base64.b64encode(hashlib.md5(b"other").digest()).decode()) == ("BadDigest", 400),
      "a wrong Content-MD5 is BadDigest")
check(error_code(s3.head_object, Bucket="data", Key="meta/bad-md5.bin")[1] == 404, "a BadDigest body is not stored")
aborted = s3.create_multipart_upload(Bucket="data", Key="meta/aborted.bin")["UploadId"]
s3.upload_part(Bucket="data", Key="meta/aborted.bin", UploadId=aborted, PartNumber=1, Body=parts[0])
s3.abort_multipart_upload(Bucket="data", Key="meta/aborted.bin", UploadId=aborted)
check(error_code(s3.head_object, Bucket="data", Key="meta/aborted.bin")[1] == 404, "an aborted upload stores nothing")
check(stray_files() == [], "no temporary file is left in the store: %s" % stray_files())
for k in (key, "meta/md5.bin"):
    s3.delete_object(Bucket="data", Key=k)

# 5. Codes.
os.makedirs(ufs + "/adir/sub", exist_ok=True)
check(error_code(s3.get_object, Bucket="data", Key="adir") == ("NoSuchKey", 404), "GET of a directory key")
check(error_code(s3.head_object, Bucket="data", Key="adir")[1] == 404, "HEAD of a directory key")
r = s3.list_objects_v2(Bucket="data", MaxKeys=0)
check(r["IsTruncated"] is False and r["KeyCount"] == 0, "max-keys=0: %s" % r)
r = s3.list_objects_v2(Bucket="data", Prefix="same/", ContinuationToken="")
check(len(r["Contents"]) == 16, "an empty continuation token starts the listing")
check(error_code(s3.create_bucket, Bucket="data") == ("BucketAlreadyOwnedByYou", 409), "CreateBucket of a mount")
check(error_code(s3.create_bucket, Bucket="newbucket") == ("NotImplemented", 501), "CreateBucket of a new name")

# 6. Keys on a file store: an object cannot also hold keys under it, and the error names the conflict.
s3.put_object(Bucket="data", Key="conf/a", Body=b"a")
try:
    s3.put_object(Bucket="data", Key="conf/a/b", Body=b"b")
    check(False, "conf/a/b was written under the object conf/a")
except botocore.exceptions.ClientError as e:
    check(e.response["Error"]["Code"] == "OperationAborted" and "'conf/a'" in e.response["Error"]["Message"],
          "conf/a/b under the object conf/a: %s" % e.response["Error"])
s3.put_object(Bucket="data", Key="conf/d/x", Body=b"x")
check(error_code(s3.put_object, Bucket="data", Key="conf/d", Body=b"d") == ("OperationAborted", 409),
      "the object conf/d over keys under conf/d/")
check(error_code(s3.put_object, Bucket="data", Key="conf/dir/", Body=b"bytes") == ("InvalidArgument", 400),
      "a key ending in '/' with bytes")
for k in ("conf/a", "conf/d/x"):
    s3.delete_object(Bucket="data", Key=k)

for k in ("meta/put.bin", "meta/copy.bin", "meta/mp.bin"):
    s3.delete_object(Bucket="data", Key=k)
print("semantics: ok")
