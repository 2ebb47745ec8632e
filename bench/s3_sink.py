#!/usr/bin/python3
# bench/s3_sink.py: the client's own limit for bench/s3_upload_bench.sh. An
# S3 endpoint that reads every request body and keeps none of it: PutObject,
# CreateMultipartUpload, UploadPart and CompleteMultipartUpload answer as S3
# does (an ETag, an UploadId), with no signature check, no hashing and no
# disk. boto3 against it costs what the client itself costs (signing the
# payload, Content-MD5, the loopback), so an endpoint cannot upload faster
# than this row on the same machine.
#
# --hash adds what S3 semantics ask of any endpoint before it may answer: the
# body's SHA-256 (against x-amz-content-sha256, which the signature covers)
# and its MD5 (the ETag, and Content-MD5's check), the MD5 on a second thread
# as the reads go on. Still no disk: the gap between this row and an endpoint
# is its disk and its own plumbing.
#
#   /usr/bin/python3 bench/s3_sink.py [--hash]   # prints "sink: port=PORT", serves until killed
import hashlib
import itertools
import queue
import sys
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HASH = "--hash" in sys.argv[1:]

_ids = itertools.count(1)
_CHUNK = 4 << 20


class Sink(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def drain(self):
        """Reads the body (Content-Length or aws-chunked framing alike: every byte) and drops it."""
        left = int(self.headers.get("Content-Length") or 0)
        sha, md5, pieces, md5_thread = None, None, None, None
        if HASH and left > 0:
            sha, md5, pieces = hashlib.sha256(), hashlib.md5(), queue.Queue(maxsize=4)

            def md5_loop():  # hashlib lets go of the GIL on large updates
                while (piece := pieces.get()) is not None:
                    md5.update(piece)

            md5_thread = threading.Thread(target=md5_loop)
            md5_thread.start()
        while left > 0:
            got = self.rfile.read(min(left, _CHUNK))
            if not got:
                break
            left -= len(got)
            if sha:
                sha.update(got)
                pieces.put(got)
        if md5_thread:
            pieces.put(None)
            md5_thread.join()
            self.digests = (sha.hexdigest(), md5.hexdigest())

    def answer(self, status, body=b"", headers=()):
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if body and self.command != "HEAD":
            self.wfile.write(body)

    def do_PUT(self):
        self.drain()
        # Not the body's MD5 (the sink hashes nothing): a fixed, well-formed ETag.
        self.answer(200, headers=[("ETag", '"%s"' % hashlib.md5(self.path.encode()).hexdigest())])

    def do_POST(self):
        self.drain()
        q = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query, keep_blank_values=True)
        key = urllib.parse.urlsplit(self.path).path.split("/", 2)[-1]
        if "uploads" in q:
            body = ("<InitiateMultipartUploadResult><Bucket>sink</Bucket><Key>%s</Key><UploadId>u%d</UploadId>"
                    "</InitiateMultipartUploadResult>" % (key, next(_ids))).encode()
        else:
            body = ("<CompleteMultipartUploadResult><Bucket>sink</Bucket><Key>%s</Key>"
                    "<ETag>\"00000000000000000000000000000000-1\"</ETag></CompleteMultipartUploadResult>" % key).encode()
        self.answer(200, body, headers=[("Content-Type", "application/xml")])

    def do_HEAD(self):
        self.answer(404)

    def do_GET(self):
        self.answer(404)


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Sink)
    server.daemon_threads = True
    print("sink: port=%d" % server.server_address[1], flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
