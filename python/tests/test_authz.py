"""Ranger policies seen from Python (issue 28): a `shoal up --policies` cluster,
clients with tokens from `shoal token issue`. The allowed user reads the bytes,
also through fsspec; the denied one gets PermissionError (or FileNotFoundError
where it may not even list the directory), also for bytes another user's read
cached, and the workers' audit files under the state dir name it."""

import json
import os
import shutil
import subprocess
import tempfile

import pytest

import shoal

SHOAL_BIN = os.environ.get("SHOAL_BIN", "shoal")

POLICIES = {
    "serviceName": "shoal-hdfs",
    "policyVersion": 5,
    "policies": [
        {
            "id": 1, "name": "ml reads data",
            "resources": {"path": {"values": ["/data"], "isRecursive": True}},
            "policyItems": [{"accesses": [{"type": "read", "isAllowed": True},
                                          {"type": "execute", "isAllowed": True}], "groups": ["ml"]}],
            "denyPolicyItems": [{"accesses": [{"type": "read", "isAllowed": True}], "users": ["eve"]}],
        },
        {
            "id": 2, "name": "no secrets",
            "resources": {"path": {"values": ["/data/train/secret*"], "isRecursive": False}},
            "denyPolicyItems": [{"accesses": [{"type": "read", "isAllowed": True}], "groups": ["public"]}],
        },
    ],
}


@pytest.fixture(scope="module")
def up():
    tmp = tempfile.mkdtemp(prefix="shoal-authz-py-")
    train = os.path.join(tmp, "ufs", "train")
    os.makedirs(train)
    data = os.urandom(200_000)
    for name in ("a.bin", "secret-1.bin"):
        with open(os.path.join(train, name), "wb") as f:
            f.write(data)
    policies = os.path.join(tmp, "policies.json")
    with open(policies, "w") as f:
        json.dump(POLICIES, f)
    err = open(os.path.join(tmp, "up.err"), "w")
    proc = subprocess.Popen(
        [SHOAL_BIN, "up", "--ufs", os.path.join(tmp, "ufs"), "--workers", "1", "--state-dir",
         os.path.join(tmp, "state"), "--policies", policies],
        stdout=subprocess.PIPE, stderr=err, text=True)
    config = None
    lines = []
    while config is None:
        line = proc.stdout.readline()
        if not line:
            proc.kill()
            raise AssertionError("shoal up ended: %s%s" % ("".join(lines), open(err.name).read()))
        lines.append(line)
        if line.startswith("ready: config="):
            config = line.strip().split("=", 1)[1]
    assert any(l.startswith("authz: policies=") for l in lines), lines

    def token(user, groups):
        out = subprocess.run([SHOAL_BIN, "token", "issue", "--config", config, "--user", user, "--groups", groups],
                             capture_output=True, text=True, check=True)
        return out.stdout.strip().splitlines()[-1]

    yield {"config": config, "data": data, "token": token, "state": os.path.join(tmp, "state")}
    proc.terminate()
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    shutil.rmtree(tmp, ignore_errors=True)


def audit_lines(state):
    out = []
    audit = os.path.join(state, "audit")
    for name in os.listdir(audit):
        with open(os.path.join(audit, name)) as f:
            out += [json.loads(line) for line in f if line.strip()]
    return out


def test_the_allowed_user_reads_and_the_denied_one_gets_a_python_error(up):
    alice = shoal.Client(up["config"], token=up["token"]("alice", "ml"))
    eve = shoal.Client(up["config"], token=up["token"]("eve", "ml"))
    for _ in range(2):  # cold, then warm: alice's read cached the pages eve asks for
        assert alice.read("/data/train/a.bin") == up["data"]
        # eve may not list /data/train either (her deny covers read there): not found.
        with pytest.raises(FileNotFoundError):
            eve.read("/data/train/a.bin")
    # alice may list /data/train: she is told it is a policy, and which.
    with pytest.raises(PermissionError) as denied:
        alice.read("/data/train/secret-1.bin")
    assert "denied by policy 2 (no secrets)" in str(denied.value)
    assert "/data/train/secret-1.bin" in str(denied.value)
    lines = audit_lines(up["state"])
    assert any(l["reqUser"] == "eve" and l["result"] == 0 and l["resource"] == "/data/train/a.bin"
               and l["door"] in ("python", "short-circuit") for l in lines), lines
    assert any(l["reqUser"] == "alice" and l["policy"] == 2 for l in lines), lines


def test_fsspec_goes_through_the_same_check(up):
    import fsspec

    fs = fsspec.filesystem("shoal", client=shoal.Client(up["config"], token=up["token"]("alice", "ml")))
    with fs.open("/data/train/a.bin", "rb") as f:
        assert f.read() == up["data"]
    with pytest.raises(PermissionError):
        fs.cat_file("/data/train/secret-1.bin")
