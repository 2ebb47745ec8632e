# A pytest plugin that lets ceph/s3-tests run against Shoal's S3 endpoint,
# whose buckets are fixed (the top-level mounts, or s3.buckets) where the
# suite creates and deletes a bucket per test. bench/s3_tests.sh maps a pool
# of bucket names (SHOAL_S3TESTS_PREFIX + 1, 2, ...) to empty directories of
# one mount; this plugin, loaded with `-p s3_tests_adapter`, turns the
# suite's calls on those names into what Shoal can do, in botocore, below
# the suite's own code (which stays unchanged):
#   CreateBucket  -> the bucket is emptied and counted as live (200);
#   DeleteBucket  -> BucketNotEmpty when it holds objects, else no longer live (204);
#   ListBuckets   -> the pool's names that are not live are left out;
# and its cleanup between tests (nuke_bucket, which lists object versions:
# Shoal has no versioning) deletes the objects a plain listing shows.
# Every other request goes to the endpoint as the suite sent it.
import os

import botocore.client
import botocore.exceptions

PREFIX = os.environ["SHOAL_S3TESTS_PREFIX"]
_live = set()
_send = botocore.client.BaseClient._make_api_call


def _keys(client, bucket):
    out, token = [], None
    while True:
        kw = {"Bucket": bucket}
        if token:
            kw["ContinuationToken"] = token
        page = _send(client, "ListObjectsV2", kw)
        out += [o["Key"] for o in page.get("Contents", [])]
        if not page.get("IsTruncated"):
            return out
        token = page["NextContinuationToken"]


def _call(self, operation_name, api_params):
    bucket = api_params.get("Bucket", "") if isinstance(api_params, dict) else ""
    if operation_name == "CreateBucket" and bucket.startswith(PREFIX):
        keys = _keys(self, bucket)
        for i in range(0, len(keys), 1000):
            _send(self, "DeleteObjects", {"Bucket": bucket, "Delete": {"Objects": [{"Key": k} for k in keys[i:i + 1000]],
                                                                       "Quiet": True}})
        _live.add(bucket)
        return {"ResponseMetadata": {"HTTPStatusCode": 200}, "Location": "/" + bucket}
    if operation_name == "DeleteBucket" and bucket.startswith(PREFIX):
        if _keys(self, bucket):
            raise botocore.exceptions.ClientError(
                {"Error": {"Code": "BucketNotEmpty", "Message": "The bucket you tried to delete is not empty"},
                 "ResponseMetadata": {"HTTPStatusCode": 409}}, operation_name)
        _live.discard(bucket)
        return {"ResponseMetadata": {"HTTPStatusCode": 204}}
    answer = _send(self, operation_name, api_params)
    if operation_name == "ListBuckets":
        answer["Buckets"] = [b for b in answer.get("Buckets", []) if not b["Name"].startswith(PREFIX) or b["Name"] in _live]
    return answer


botocore.client.BaseClient._make_api_call = _call


def _nuke_bucket(client, bucket):
    keys = _keys(client, bucket)
    for i in range(0, len(keys), 1000):
        client.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": k} for k in keys[i:i + 1000]], "Quiet": True})
    client.delete_bucket(Bucket=bucket)


import s3tests.functional  # noqa: E402 (after botocore is patched)

s3tests.functional.nuke_bucket = _nuke_bucket
