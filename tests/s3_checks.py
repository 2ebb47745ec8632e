# What the boto3 scripts of the S3 endpoint tests share (tests/s3_endpoint_boto3.py,
# tests/s3_endpoint_semantics.py): the client, a check that exits naming what
# failed, and the S3 error code of a call.
import os
import sys

import boto3
import botocore.config
import botocore.exceptions


def client():
    return boto3.client("s3", endpoint_url=os.environ["S3_ENDPOINT"], region_name="us-east-1",
                        config=botocore.config.Config(signature_version="s3v4", retries={"max_attempts": 1}))


def checker(name):
    def check(cond, what):
        if not cond:
            sys.exit(name + " check failed: " + what)
    return check


def error_code(fn, **kw):
    """(code, HTTP status) of fn(**kw): (None, 200) when it succeeds."""
    try:
        fn(**kw)
    except botocore.exceptions.ClientError as e:
        return e.response["Error"]["Code"], e.response["ResponseMetadata"]["HTTPStatusCode"]
    return None, 200
