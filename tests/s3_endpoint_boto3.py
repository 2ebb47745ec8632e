#!/usr/bin/python3
# boto3 against the Shoal S3 endpoint (run by tests/s3_endpoint_test.cc with
# Debian's /usr/bin/python3). Environment: S3_ENDPOINT, AWS_ACCESS_KEY_ID,
# AWS_SECRET_ACCESS_KEY, UFS (the directory the bucket "data" mounts),
# MANY (how many keys many/ holds). Exits non-zero naming the first check
# that failed.
import os
import subprocess
import time

import boto3
import botocore.config
import botocore.exceptions

from s3_checks import checker, client, error_code

endpoint = os.environ["S3_ENDPOINT"]
ufs = os.environ["UFS"]
many = int(os.environ["MANY"])
s3 = client()


check = checker("boto3")


def curl(url, *args):
    r = subprocess.run(["curl", "-s", "-o", "-", "-w", "\n%{http_code}", *args, url], capture_output=True, timeout=60)
    body, _, code = r.stdout.rpartition(b"\n")
    return int(code), body


# Pagination: 2,500 keys in pages of 1000, then 700, then with start-after.
want = sorted("many/%05d.txt" % i for i in range(many))
for page_size in (1000, 700):
    got, pages = [], 0
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket="data", Prefix="many/",
                                                             PaginationConfig={"PageSize": page_size}):
        pages += 1
        got += [o["Key"] for o in page.get("Contents", [])]
    check(got == want, "list_objects_v2 with pages of %d returned %d keys, not the %d in the store" %
          (page_size, len(got), len(want)))
    check(pages == -(-many // page_size), "expected %d pages of %d, got %d" % (-(-many // page_size), page_size, pages))
r = s3.list_objects_v2(Bucket="data", Prefix="many/", StartAfter=want[-3])
check([o["Key"] for o in r["Contents"]] == want[-2:], "start-after")
for bad in ("../", "many/../many/", "./many/", "//"):
    r = s3.list_objects_v2(Bucket="data", Prefix=bad)
    check(r["KeyCount"] == 0 and not r.get("Contents"), "prefix %r lists nothing, not %s" % (bad, r.get("Contents")))
# v1 with markers.
got, marker = [], ""
while True:
    r = s3.list_objects(Bucket="data", Prefix="many/", Marker=marker, MaxKeys=900)
    got += [o["Key"] for o in r.get("Contents", [])]
    if not r["IsTruncated"]:
        break
    marker = r.get("NextMarker") or got[-1]
check(got == want, "list_objects (v1) with markers")

# Delimiter: one level, directories as common prefixes; sizes from the store.
r = s3.list_objects_v2(Bucket="data", Delimiter="/")
prefixes = sorted(p["Prefix"] for p in r.get("CommonPrefixes", []))
top_dirs = sorted(d + "/" for d in os.listdir(ufs) if os.path.isdir(os.path.join(ufs, d)))
top_files = sorted(f for f in os.listdir(ufs) if os.path.isfile(os.path.join(ufs, f)))
check(prefixes == top_dirs, "common prefixes %s != directories %s" % (prefixes, top_dirs))
check(sorted(o["Key"] for o in r.get("Contents", [])) == top_files, "top-level objects")
for o in r.get("Contents", []):
    check(o["Size"] == os.path.getsize(os.path.join(ufs, o["Key"])), "size of " + o["Key"])
# An odd key: botocore asks for encoding-type=url on its own and decodes the
# answer; asked for explicitly, the answer stays encoded.
odd = "odd dir/a b+c&d.txt"
r = s3.list_objects_v2(Bucket="data", Prefix="odd dir/")
check([o["Key"] for o in r["Contents"]] == [odd], "odd key listed as %s" % r["Contents"])
r = s3.list_objects_v2(Bucket="data", Prefix="odd dir/", EncodingType="url")
check([o["Key"] for o in r["Contents"]] == ["odd%20dir/a%20b%2Bc%26d.txt"], "encoding-type=url: %s" % r["Contents"])

# Objects: whole, ranges, conditions.
data = open(os.path.join(ufs, odd), "rb").read()
obj = s3.get_object(Bucket="data", Key=odd)
check(obj["Body"].read() == data, "get_object bytes of an odd key")
etag = obj["ETag"]
big = open(os.path.join(ufs, "big.bin"), "rb").read()
for rng, want_bytes in (("bytes=5-9", big[5:10]), ("bytes=%d-" % (len(big) - 7), big[-7:]), ("bytes=-3", big[-3:]),
                        ("bytes=3000000-3999999", big[3000000:4000000])):
    r = s3.get_object(Bucket="data", Key="big.bin", Range=rng)
    check(r["Body"].read() == want_bytes, "range " + rng)
    check(r["ResponseMetadata"]["HTTPStatusCode"] == 206, "range %s answered 206" % rng)
check(error_code(s3.get_object, Bucket="data", Key="big.bin", Range="bytes=%d-" % len(big)) == ("InvalidRange", 416),
      "a range past the end is InvalidRange")
head = s3.head_object(Bucket="data", Key="big.bin")
check(head["ContentLength"] == len(big), "head_object ContentLength")
big_etag = head["ETag"]
check(error_code(s3.get_object, Bucket="data", Key="big.bin", IfNoneMatch=big_etag)[1] == 304, "If-None-Match -> 304")
check(error_code(s3.get_object, Bucket="data", Key="big.bin", IfMatch='"other"') == ("PreconditionFailed", 412),
      "If-Match mismatch -> 412")
check(s3.get_object(Bucket="data", Key="big.bin", IfMatch=big_etag, Range="bytes=0-0")["Body"].read() == big[:1],
      "If-Match match")
r = s3.get_object(Bucket="data", Key=odd, ResponseContentType="text/plain", ResponseContentDisposition="inline")
check(r["ContentType"] == "text/plain" and r["ContentDisposition"] == "inline", "response-content-* overrides")
check(error_code(s3.get_object, Bucket="data", Key="no/such/key") == ("NoSuchKey", 404), "NoSuchKey")
check(error_code(s3.get_object, Bucket="nosuchbucket", Key="x") == ("NoSuchBucket", 404), "NoSuchBucket")
check(error_code(s3.head_bucket, Bucket="data")[1] == 200, "head_bucket")
check(error_code(s3.head_bucket, Bucket="nosuchbucket")[1] == 404, "head_bucket of a missing bucket")
check([b["Name"] for b in s3.list_buckets()["Buckets"]] == ["data"], "list_buckets")
check(s3.get_bucket_location(Bucket="data")["LocationConstraint"] is None, "get_bucket_location")

# Presigned GET through curl: works, and is refused once expired.
url = s3.generate_presigned_url("get_object", Params={"Bucket": "data", "Key": odd}, ExpiresIn=3600)
code, body = curl(url)
check(code == 200 and body == data, "presigned GET answered %d" % code)
code, body = curl(url.replace("X-Amz-Signature=", "X-Amz-Signature=0"))
check(code == 403 and b"SignatureDoesNotMatch" in body, "a tampered presigned URL is refused")
short = s3.generate_presigned_url("get_object", Params={"Bucket": "data", "Key": odd}, ExpiresIn=1)
deadline = time.monotonic() + 30
while True:
    code, body = curl(short)
    if code == 403:
        break
    check(code == 200 and time.monotonic() < deadline, "an expired presigned URL was never refused")
    time.sleep(0.2)
check(b"<Code>AccessDenied</Code>" in body and b"expired" in body, "expired presigned URL: " + body.decode())
# Virtual-hosted style: the bucket in the Host name (curl resolves it to loopback).
port = endpoint.rsplit(":", 1)[1]
vs3 = boto3.client("s3", endpoint_url="http://localhost:" + port, region_name="us-east-1",
                   config=botocore.config.Config(signature_version="s3v4", s3={"addressing_style": "virtual"}))
vurl = vs3.generate_presigned_url("get_object", Params={"Bucket": "data", "Key": odd}, ExpiresIn=600)
check(vurl.startswith("http://data.localhost:" + port + "/"), "virtual-hosted URL: " + vurl)
code, body = curl(vurl, "--resolve", "data.localhost:%s:127.0.0.1" % port)
check(code == 200 and body == data, "virtual-hosted presigned GET answered %d" % code)
# Without a signature at all: refused (the bucket is not public).
code, body = curl(endpoint + "/data/big.bin")
check(code == 403 and b"<Code>AccessDenied</Code>" in body, "anonymous GET refused")
# Writes: through the client's writer, visible in the store (the bucket's directory) at once.
import hashlib
import random
import tempfile

import boto3.s3.transfer

s3.put_object(Bucket="data", Key="written/small.txt", Body=b"written through shoal\n")
check(open(os.path.join(ufs, "written/small.txt"), "rb").read() == b"written through shoal\n", "put_object landed in the store")
check(s3.get_object(Bucket="data", Key="written/small.txt")["Body"].read() == b"written through shoal\n",
      "put_object readable at once")
s3.copy_object(Bucket="data", Key="written/copy.bin", CopySource={"Bucket": "data", "Key": "big.bin"})
check(s3.get_object(Bucket="data", Key="written/copy.bin")["Body"].read() == big, "copy_object bytes")
s3.delete_object(Bucket="data", Key="written/copy.bin")
check(error_code(s3.head_object, Bucket="data", Key="written/copy.bin")[1] == 404, "deleted object is gone")
check(not os.path.exists(os.path.join(ufs, "written/copy.bin")), "deleted from the store")
s3.delete_object(Bucket="data", Key="written/never-there")  # S3: deleting nothing succeeds

# 100 MiB in 8 MiB parts, then downloaded and compared.
rng = random.Random(7)
with tempfile.TemporaryDirectory() as tmp:
    src = os.path.join(tmp, "big-upload.bin")
    with open(src, "wb") as f:
        for _ in range(100):
            f.write(rng.randbytes(1 << 20))
    cfg = boto3.s3.transfer.TransferConfig(multipart_threshold=8 << 20, multipart_chunksize=8 << 20, max_concurrency=4)
    s3.upload_file(src, "data", "written/big-upload.bin", Config=cfg)
    dst = os.path.join(tmp, "big-download.bin")
    s3.download_file("data", "written/big-upload.bin", dst, Config=cfg)
    want_hash = hashlib.sha256(open(src, "rb").read()).hexdigest()
    check(hashlib.sha256(open(dst, "rb").read()).hexdigest() == want_hash, "100 MiB multipart round trip")
    check(hashlib.sha256(open(os.path.join(ufs, "written/big-upload.bin"), "rb").read()).hexdigest() == want_hash,
          "100 MiB multipart upload in the store")

# An aborted upload leaves nothing; a wrong part is InvalidPart.
up = s3.create_multipart_upload(Bucket="data", Key="written/aborted.bin")["UploadId"]
etag = s3.upload_part(Bucket="data", Key="written/aborted.bin", UploadId=up, PartNumber=1, Body=b"x" * 100)["ETag"]
parts = s3.list_parts(Bucket="data", Key="written/aborted.bin", UploadId=up)["Parts"]
check([(p["PartNumber"], p["ETag"], p["Size"]) for p in parts] == [(1, etag, 100)], "list_parts: %s" % parts)
check([u["UploadId"] for u in s3.list_multipart_uploads(Bucket="data").get("Uploads", [])] == [up],
      "list_multipart_uploads")
check(error_code(s3.complete_multipart_upload, Bucket="data", Key="written/aborted.bin", UploadId=up,
                 MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": '"0000"'}]})[0] == "InvalidPart", "InvalidPart")
s3.abort_multipart_upload(Bucket="data", Key="written/aborted.bin", UploadId=up)
check(error_code(s3.list_parts, Bucket="data", Key="written/aborted.bin", UploadId=up)[0] == "NoSuchUpload",
      "aborted upload is gone")
check(error_code(s3.head_object, Bucket="data", Key="written/aborted.bin")[1] == 404, "aborted upload stored nothing")

# DeleteObjects, including a key that was never there.
r = s3.delete_objects(Bucket="data", Delete={"Objects": [{"Key": "written/small.txt"}, {"Key": "written/big-upload.bin"},
                                                         {"Key": "written/none"}]})
check(sorted(d["Key"] for d in r.get("Deleted", [])) == ["written/big-upload.bin", "written/none", "written/small.txt"]
      and not r.get("Errors"), "delete_objects: %s" % r)
check(s3.list_objects_v2(Bucket="data", Prefix="written/")["KeyCount"] == 0, "nothing left under written/")
print("boto3: ok")
