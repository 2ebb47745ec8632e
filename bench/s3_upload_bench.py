#!/usr/bin/python3
# Uploads through an S3 endpoint with boto3 (run by bench/s3_upload_bench.sh,
# once per endpoint): one PutObject of 40 MiB, five UploadPart of 8 MiB into
# one upload, and upload_file of 100 MiB in 8 MiB parts (4 threads). Prints
# one line per row: "ROW SECONDS MBPS" (the best of --rounds), and checks
# every object's bytes by reading them back once.
import argparse
import hashlib
import os
import sys
import time

import boto3
import boto3.s3.transfer
import botocore.config

ap = argparse.ArgumentParser()
ap.add_argument("--endpoint", required=True)
ap.add_argument("--bucket", required=True)
ap.add_argument("--work", required=True)
ap.add_argument("--rounds", type=int, default=3)
ap.add_argument("--no-verify", action="store_true", help="skip the read-back (bench/s3_sink.py keeps no bytes)")
a = ap.parse_args()
s3 = boto3.client("s3", endpoint_url=a.endpoint, region_name="us-east-1",
                  config=botocore.config.Config(signature_version="s3v4", retries={"max_attempts": 1}))
MiB = 1 << 20
put_body = os.urandom(40 * MiB)
parts = [os.urandom(8 * MiB) for _ in range(5)]
big = os.path.join(a.work, "upload_100MiB.bin")
with open(big, "wb") as f:
    f.write(os.urandom(100 * MiB))


def best(fn, nbytes):
    times = []
    for r in range(a.rounds):
        t = time.perf_counter()
        fn(r)
        times.append(time.perf_counter() - t)
    return min(times), nbytes / min(times) / 1e6


def put(r):
    s3.put_object(Bucket=a.bucket, Key="up/put-%d.bin" % r, Body=put_body)


def multipart(r):
    key = "up/mp-%d.bin" % r
    up = s3.create_multipart_upload(Bucket=a.bucket, Key=key)["UploadId"]
    done = [{"PartNumber": n, "ETag": s3.upload_part(Bucket=a.bucket, Key=key, UploadId=up, PartNumber=n,
                                                     Body=p)["ETag"]} for n, p in enumerate(parts, 1)]
    s3.complete_multipart_upload(Bucket=a.bucket, Key=key, UploadId=up, MultipartUpload={"Parts": done})


cfg = boto3.s3.transfer.TransferConfig(multipart_threshold=8 * MiB, multipart_chunksize=8 * MiB, max_concurrency=4)


def upload_file(r):
    s3.upload_file(big, a.bucket, "up/file-%d.bin" % r, Config=cfg)


rows = [("put_object_40MiB", put, len(put_body)), ("upload_part_5x8MiB", multipart, sum(map(len, parts))),
        ("upload_file_100MiB", upload_file, os.path.getsize(big))]
for name, fn, n in rows:
    sec, mbps = best(fn, n)
    print("%s %.3f %.1f" % (name, sec, mbps), flush=True)
if a.no_verify:
    sys.exit(0)
want = {"up/put-0.bin": hashlib.md5(put_body).hexdigest(), "up/mp-0.bin": hashlib.md5(b"".join(parts)).hexdigest(),
        "up/file-0.bin": hashlib.md5(open(big, "rb").read()).hexdigest()}
for key, md5 in want.items():
    got = hashlib.md5(s3.get_object(Bucket=a.bucket, Key=key)["Body"].read()).hexdigest()
    if got != md5:
        sys.exit("%s read back other bytes than were uploaded" % key)
