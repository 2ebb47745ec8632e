#!/usr/bin/python3
"""A small WebHDFS server for Shoal's tests, backed by a local directory.

It follows the Apache WebHDFS REST API: a "namenode" port answers metadata
operations and redirects OPEN/CREATE/APPEND (307) to a "datanode" port in the
same process, which moves the bytes. Errors are RemoteException JSON.

  webhdfs_server.py --root DIR [--ls-limit N] [--deny-user NAME]

It binds port 0 on 127.0.0.1 for both ports, prints one line
  webhdfs listening: namenode=127.0.0.1:PORT datanode=127.0.0.1:PORT
and serves until killed. It logs nothing else to stdout, so the parent never
has to drain the pipe.

Test hooks (not part of WebHDFS): GET /debug/stats on the namenode returns
counters (redirects issued, datanode reads/writes, the last user.name seen).
"""

import argparse
import json
import os
import shutil
import sys
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PREFIX = "/webhdfs/v1"


class HdfsError(Exception):
    """Becomes a RemoteException response."""

    JAVA = {
        "FileNotFoundException": "java.io.FileNotFoundException",
        "FileAlreadyExistsException": "org.apache.hadoop.fs.FileAlreadyExistsException",
        "AccessControlException": "org.apache.hadoop.security.AccessControlException",
        "SecurityException": "java.lang.SecurityException",
        "IllegalArgumentException": "java.lang.IllegalArgumentException",
        "UnsupportedOperationException": "java.lang.UnsupportedOperationException",
        "IOException": "java.io.IOException",
    }

    def __init__(self, status, exception, message):
        super().__init__(message)
        self.status, self.exception, self.message = status, exception, message

    def body(self):
        return {"RemoteException": {"exception": self.exception,
                                    "javaClassName": self.JAVA.get(self.exception, self.exception),
                                    "message": self.message}}


class State:
    def __init__(self, root, ls_limit, deny_user):
        self.root = os.path.realpath(root)
        self.ls_limit = ls_limit
        self.deny_user = deny_user
        self.lock = threading.Lock()
        self.stats = {"open_redirects": 0, "create_redirects": 0, "append_redirects": 0,
                      "datanode_reads": 0, "datanode_writes": 0, "last_user": ""}
        self.datanode = ""  # host:port, set once bound

    def count(self, name):
        with self.lock:
            self.stats[name] += 1

    def local(self, hdfs_path):
        """Maps an absolute HDFS path to a path under root, refusing escapes."""
        parts = [p for p in hdfs_path.split("/") if p not in ("", ".")]
        if ".." in parts:
            raise HdfsError(400, "IllegalArgumentException", "Invalid path name " + hdfs_path)
        return os.path.join(self.root, *parts)


def parse_permission(q, default):
    """The octal "permission" parameter (0 to 1777, as HDFS takes it), else the default."""
    text = q.get("permission", "")
    if not text:
        return default
    if len(text) > 4 or any(c not in "01234567" for c in text) or int(text, 8) > 0o1777:
        raise HdfsError(400, "IllegalArgumentException", "Invalid value for webhdfs parameter \"permission\": " + text)
    return int(text, 8)


def file_status(local, name):
    st = os.stat(local)
    is_dir = os.path.isdir(local)
    return {"accessTime": int(st.st_atime * 1000), "blockSize": 134217728,
            "childrenNum": len(os.listdir(local)) if is_dir else 0, "fileId": st.st_ino,
            "group": "supergroup", "length": 0 if is_dir else st.st_size,
            "modificationTime": st.st_mtime_ns // 1_000_000, "owner": "shoal",
            "pathSuffix": name, "permission": "%o" % (st.st_mode & 0o1777),
            "replication": 0 if is_dir else 1, "storagePolicy": 0,
            "type": "DIRECTORY" if is_dir else "FILE"}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as real clients expect
    state = None  # set per server class
    role = ""

    def log_message(self, fmt, *args):  # stdout must stay quiet; access logs are noise in tests
        pass

    # ---- plumbing ----
    def read_body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            out = bytearray()
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return bytes(out)
                out += self.rfile.read(size)
                self.rfile.readline()
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def send(self, status, body=b"", ctype="application/json", headers=()):
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def dispatch(self):
        body = self.read_body()
        url = urllib.parse.urlsplit(self.path)
        q = {k.lower(): v for k, v in urllib.parse.parse_qsl(url.query, keep_blank_values=True)}
        try:
            if self.role == "namenode" and url.path == "/debug/stats":
                with self.state.lock:
                    return self.send(200, dict(self.state.stats))
            if not url.path.startswith(PREFIX):
                raise HdfsError(404, "FileNotFoundException", "not a WebHDFS path: " + url.path)
            hdfs_path = urllib.parse.unquote(url.path[len(PREFIX):]) or "/"
            op = q.get("op", "").upper()
            if self.role == "namenode":
                self.namenode(op, hdfs_path, q, body)
            else:
                self.datanode(op, hdfs_path, q, body)
        except HdfsError as e:
            self.send(e.status, e.body())
        except FileNotFoundError as e:
            self.send(404, HdfsError(404, "FileNotFoundException", "File does not exist: " + str(e)).body())
        except (NotADirectoryError, IsADirectoryError, FileExistsError, OSError) as e:
            self.send(403, HdfsError(403, "IOException", str(e)).body())

    do_GET = do_PUT = do_POST = do_DELETE = dispatch

    # ---- namenode ----
    def namenode(self, op, path, q, body):
        user = q.get("user.name", "")
        if not user:
            raise HdfsError(401, "SecurityException", "Failed to obtain user group information: user.name missing")
        with self.state.lock:
            self.state.stats["last_user"] = user
        if self.state.deny_user and user == self.state.deny_user:
            raise HdfsError(403, "AccessControlException", "Permission denied: user=" + user + ", path=" + path)
        local = self.state.local(path)
        method = self.command
        if method == "GET" and op == "GETFILESTATUS":
            return self.send(200, {"FileStatus": file_status(local, "")})
        if method == "GET" and op == "LISTSTATUS":
            return self.send(200, {"FileStatuses": {"FileStatus": self.children(local, path, "", None)}})
        if method == "GET" and op == "LISTSTATUS_BATCH":
            limit = self.state.ls_limit
            page = self.children(local, path, q.get("startafter", ""), limit + 1)
            remaining = 0
            if len(page) > limit:
                # Count what follows this batch, as the namenode reports it.
                rest = self.children(local, path, page[limit - 1]["pathSuffix"], None)
                page, remaining = page[:limit], len(rest)
            return self.send(200, {"DirectoryListing": {"partialListing": {"FileStatuses": {"FileStatus": page}},
                                                        "remainingEntries": remaining}})
        if method == "GET" and op == "GETHOMEDIRECTORY":
            return self.send(200, {"Path": "/user/" + user})
        if method == "GET" and op == "OPEN":
            if not os.path.isfile(local):
                raise FileNotFoundError(path)
            self.state.count("open_redirects")
            return self.redirect(path, q)
        if method == "PUT" and op == "CREATE":
            if os.path.isdir(local):
                raise HdfsError(403, "FileAlreadyExistsException", path + " already exists as a directory")
            if os.path.exists(local) and q.get("overwrite", "false").lower() != "true":
                raise HdfsError(403, "FileAlreadyExistsException", path + " for client already exists")
            self.state.count("create_redirects")
            return self.redirect(path, q)
        if method == "POST" and op == "APPEND":
            if not os.path.isfile(local):
                raise FileNotFoundError(path)
            self.state.count("append_redirects")
            return self.redirect(path, q)
        if method == "PUT" and op == "MKDIRS":
            existed = os.path.isdir(local)
            os.makedirs(local, exist_ok=True)
            if not existed:
                os.chmod(local, parse_permission(q, 0o755))
            return self.send(200, {"boolean": True})
        if method == "PUT" and op == "SETPERMISSION":
            if not os.path.lexists(local):
                raise FileNotFoundError(path)
            os.chmod(local, parse_permission(q, 0o755 if os.path.isdir(local) else 0o644))
            return self.send(200, b"", ctype="application/octet-stream")
        if method == "PUT" and op == "SETTIMES":
            if not os.path.lexists(local):
                raise FileNotFoundError(path)
            st = os.stat(local)
            mtime = int(q.get("modificationtime", "-1"))
            atime = int(q.get("accesstime", "-1"))
            os.utime(local, ns=(st.st_atime_ns if atime == -1 else atime * 1_000_000,
                                st.st_mtime_ns if mtime == -1 else mtime * 1_000_000))
            return self.send(200, b"", ctype="application/octet-stream")
        if method == "PUT" and op == "RENAME":
            return self.rename(local, q)
        if method == "DELETE" and op == "DELETE":
            if not os.path.lexists(local) or local == self.state.root:
                return self.send(200, {"boolean": False})
            if os.path.isdir(local):
                if os.listdir(local) and q.get("recursive", "false").lower() != "true":
                    raise HdfsError(403, "PathIsNotEmptyDirectoryException", path + " is non empty")
                shutil.rmtree(local)
            else:
                os.unlink(local)
            return self.send(200, {"boolean": True})
        raise HdfsError(400, "IllegalArgumentException", "Invalid value for webhdfs parameter \"op\": " + op +
                        " (method " + method + ")")

    def children(self, local, path, start_after, limit):
        if os.path.isfile(local):
            return [file_status(local, "")]
        names = sorted(os.listdir(local))  # raises FileNotFoundError for a missing dir
        out = []
        for name in names:
            if start_after and name <= start_after:
                continue
            try:
                out.append(file_status(os.path.join(local, name), name))
            except FileNotFoundError:
                continue  # deleted while listing
            if limit is not None and len(out) >= limit:
                break
        return out

    def rename(self, local, q):
        dest = q.get("destination", "")
        if not dest.startswith("/"):
            raise HdfsError(400, "IllegalArgumentException", "Invalid value for webhdfs parameter \"destination\"")
        dest_local = self.state.local(dest)
        overwrite = "OVERWRITE" in q.get("renameoptions", "").upper()
        if not os.path.exists(local) or not os.path.isdir(os.path.dirname(dest_local)):
            if overwrite:
                raise FileNotFoundError(dest if os.path.exists(local) else local)
            return self.send(200, {"boolean": False})
        if os.path.exists(dest_local):
            if not overwrite:
                return self.send(200, {"boolean": False})
            if os.path.isdir(dest_local) and os.listdir(dest_local):
                raise HdfsError(403, "IOException", "rename destination directory is not empty: " + dest)
        os.replace(local, dest_local)
        if overwrite:  # rename2 answers with an empty body
            return self.send(200, b"", ctype="application/octet-stream")
        return self.send(200, {"boolean": True})

    def redirect(self, path, q):
        query = dict(q)
        query["namenoderpcaddress"] = "127.0.0.1:8020"
        loc = "http://" + self.state.datanode + PREFIX + urllib.parse.quote(path) + "?" + urllib.parse.urlencode(query)
        self.send(307, b"", headers=[("Location", loc)])

    # ---- datanode ----
    def datanode(self, op, path, q, body):
        local = self.state.local(path)
        method = self.command
        if method == "GET" and op == "OPEN":
            self.state.count("datanode_reads")
            size = os.path.getsize(local)
            offset = int(q.get("offset") or 0)
            if offset < 0 or offset > size:
                raise HdfsError(403, "IOException", "Offset=%d out of the range [0, %d]" % (offset, size))
            length = int(q["length"]) if q.get("length") else size - offset
            with open(local, "rb") as f:
                f.seek(offset)
                data = f.read(max(0, length))
            return self.send(200, data, ctype="application/octet-stream")
        if method == "PUT" and op == "CREATE":
            self.state.count("datanode_writes")
            os.makedirs(os.path.dirname(local), exist_ok=True)
            tmp = local + ".__dn_tmp__"
            with open(tmp, "wb") as f:
                f.write(body)
            os.chmod(tmp, parse_permission(q, 0o644))
            os.replace(tmp, local)
            return self.send(201, b"", headers=[("Location", "hdfs://127.0.0.1:8020" + urllib.parse.quote(path))])
        if method == "POST" and op == "APPEND":
            self.state.count("datanode_writes")
            with open(local, "ab") as f:
                f.write(body)
            return self.send(200, b"")
        raise HdfsError(400, "IllegalArgumentException", "datanode cannot serve op " + op)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", required=True, help="local directory that holds the file system")
    ap.add_argument("--ls-limit", type=int, default=1000, help="entries per LISTSTATUS_BATCH (dfs.ls.limit)")
    ap.add_argument("--deny-user", default="", help="answer this user.name with AccessControlException")
    args = ap.parse_args()
    os.makedirs(args.root, exist_ok=True)
    state = State(args.root, max(1, args.ls_limit), args.deny_user)

    servers = []
    for role in ("namenode", "datanode"):
        handler = type(role.capitalize() + "Handler", (Handler,), {"state": state, "role": role})
        srv = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        srv.daemon_threads = True
        servers.append(srv)
    nn, dn = ("127.0.0.1:%d" % s.server_address[1] for s in servers)
    state.datanode = dn
    threading.Thread(target=servers[1].serve_forever, daemon=True).start()
    print("webhdfs listening: namenode=%s datanode=%s" % (nn, dn), flush=True)
    try:
        servers[0].serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())
