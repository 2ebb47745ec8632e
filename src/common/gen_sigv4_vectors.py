#!/usr/bin/python3
# Regenerates the expected signatures hard-coded in sigv4_test.cc with
# botocore's S3 SigV4 signer (Debian: python3-botocore). Run it with Debian's
# /usr/bin/python3 and paste its output into the test when the cases change.
# Nothing here touches the network.
import datetime
from unittest import mock

import botocore.auth
import botocore.awsrequest
import botocore.config
import botocore.credentials

NOW = datetime.datetime(2024, 5, 17, 12, 34, 56)
CASES = [
    # name, method, url, headers, body, credentials (key, secret, token), region, sign_payload
    ("GetWithQuery", "GET",
     "https://examplebucket.s3.us-east-1.amazonaws.com/?continuation-token=abc%2Fdef%3D&delimiter=%2F&list-type=2&max-keys=3&prefix=photos%2F2024%20summer%2F",
     {}, b"", ("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", None), "us-east-1", True),
    ("PutSignedPayload", "PUT",
     "http://127.0.0.1:9000/bucket/dir/hello%20world.txt",
     {"Content-Type": "application/octet-stream"}, b"Hello, Shoal!\n",
     ("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", None), "eu-west-2", True),
    ("GetRangeUnsignedPayload", "GET",
     "https://s3.eu-central-1.amazonaws.com/bucket/train/0001.jpg",
     {"Range": "bytes=100-199", "If-Match": '"9b2cf535f27731c974343645a3985328"'}, b"",
     ("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", None), "eu-central-1", False),
    ("HeadWithSessionToken", "HEAD",
     "https://bucket.s3.us-west-2.amazonaws.com/a/b%2Bc~d",
     {}, b"",
     ("ASIAEXAMPLE", "secret/with+chars", "FwoGZXIvYXdzEExampleSessionToken//////////wEaDA=="), "us-west-2", True),
    ("PostUploads", "POST",
     "https://storage.googleapis.com/bucket/big/object?uploads=",
     {}, b"", ("GOOGEXAMPLE", "gcs-hmac-secret", None), "auto", True),
]

for name, method, url, headers, body, (key, secret, token), region, sign in CASES:
    creds = botocore.credentials.Credentials(key, secret, token)
    req = botocore.awsrequest.AWSRequest(method=method, url=url, headers=dict(headers), data=body)
    req.context["client_config"] = botocore.config.Config(s3={"payload_signing_enabled": sign})
    with mock.patch("botocore.auth.datetime") as dt:
        dt.datetime.utcnow.return_value = NOW
        botocore.auth.S3SigV4Auth(creds, "s3", region).add_auth(req)
    print(name)
    for k in ("X-Amz-Content-SHA256", "X-Amz-Date", "Authorization"):
        print(f"  {k}: {req.headers[k]}")
