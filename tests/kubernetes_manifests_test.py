#!/usr/bin/python3
"""The Kubernetes manifests in deploy/kubernetes, checked offline (CTest: kubernetes_manifests_test).

  tests/kubernetes_manifests_test.py SHOAL_BINARY

1. Every document is checked against the Kubernetes 1.22 API as Debian's
   python3-kubernetes (22.6) models it, generated from that version's OpenAPI
   schema: every field must exist where it is written (a typo is an error),
   with the schema's type, and the required fields must be there (the models'
   own validation).
2. What the API server would only find at run time: selectors that match
   their pod templates, Services that select a workload and name its ports,
   probes naming declared ports, mounts naming declared volumes, ConfigMap and
   Secret keys that exist, and a kustomization listing every manifest.
3. The configs in the ConfigMap are ones `shoal worker --check-config`
   accepts, with the Secret's values in the environment as the pods get them.
"""
import glob
import os
import subprocess
import sys
import tempfile

import kubernetes.client
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
DIR = os.path.join(HERE, "..", "deploy", "kubernetes")
KUBERNETES_API = "1.22"

MODELS = {
    ("v1", "Namespace"): "V1Namespace",
    ("v1", "ConfigMap"): "V1ConfigMap",
    ("v1", "Secret"): "V1Secret",
    ("v1", "Service"): "V1Service",
    ("apps/v1", "StatefulSet"): "V1StatefulSet",
    ("apps/v1", "DaemonSet"): "V1DaemonSet",
    ("apps/v1", "Deployment"): "V1Deployment",
    ("policy/v1", "PodDisruptionBudget"): "V1PodDisruptionBudget",
}

errors = []


def error(where, what):
    errors.append("%s: %s" % (where, what))


def check_type(value, typ, where):
    """`value` against the model type name `typ` (as in the models' openapi_types)."""
    if typ == "object":  # int-or-string, quantities: free-form in the schema
        return
    if typ.startswith("list["):
        if not isinstance(value, list):
            return error(where, "expected a list, got %r" % (value,))
        for i, item in enumerate(value):
            check_type(item, typ[5:-1], "%s[%d]" % (where, i))
        return
    if typ.startswith("dict("):
        if not isinstance(value, dict):
            return error(where, "expected a mapping, got %r" % (value,))
        inner = typ[typ.index(",") + 1:-1].strip()
        for k, v in value.items():
            if not isinstance(k, str):
                error(where, "key %r is not a string" % (k,))
            check_type(v, inner, "%s.%s" % (where, k))
        return
    scalar = {"str": str, "int": int, "bool": bool, "float": (int, float), "datetime": str, "date": str}
    if typ in scalar:
        if typ in ("int", "float") and isinstance(value, bool) or not isinstance(value, scalar[typ]):
            error(where, "expected %s, got %r" % (typ, value))
        return
    model = getattr(kubernetes.client, typ, None)
    if model is None:
        return error(where, "no model %s in python3-kubernetes" % typ)
    if not isinstance(value, dict):
        return error(where, "expected a %s mapping, got %r" % (typ, value))
    by_json = {json_name: attr for attr, json_name in model.attribute_map.items()}
    for key, v in value.items():
        if key not in by_json:
            error(where, "unknown field %r in %s (known: %s)" % (key, typ, ", ".join(sorted(by_json))))
            continue
        check_type(v, model.openapi_types[by_json[key]], where + "." + key)


def check_required(doc, model, where):
    try:
        kubernetes.client.ApiClient()._ApiClient__deserialize(doc, model)
    except (ValueError, TypeError) as e:
        error(where, "the %s model refuses it: %s" % (model, e))


def pod_spec(doc):
    if doc["kind"] in ("DaemonSet", "StatefulSet", "Deployment"):
        return doc["spec"]["template"]
    return None


def check_references(docs, where_of):
    config_maps = {d["metadata"]["name"]: d for d in docs if d["kind"] == "ConfigMap"}
    secrets = {d["metadata"]["name"]: d for d in docs if d["kind"] == "Secret"}
    workloads = [d for d in docs if pod_spec(d)]
    for d in workloads:
        where = where_of(d)
        template = pod_spec(d)
        labels = template["metadata"].get("labels", {})
        selector = d["spec"]["selector"]["matchLabels"]
        if any(labels.get(k) != v for k, v in selector.items()):
            error(where, "selector %s does not match the template's labels %s" % (selector, labels))
        spec = template["spec"]
        volumes = {v["name"]: v for v in spec.get("volumes", [])}
        if d["kind"] == "StatefulSet":
            volumes.update({c["metadata"]["name"]: c for c in d["spec"].get("volumeClaimTemplates", [])})
        for v in volumes.values():
            if "configMap" in v:
                cm = config_maps.get(v["configMap"]["name"])
                if cm is None:
                    error(where, "volume %s: no ConfigMap %s" % (v["name"], v["configMap"]["name"]))
                for item in v["configMap"].get("items", []):
                    if cm and item["key"] not in cm.get("data", {}):
                        error(where, "volume %s: ConfigMap has no key %s" % (v["name"], item["key"]))
            if "secret" in v:
                s = secrets.get(v["secret"]["secretName"])
                if s is None:
                    error(where, "volume %s: no Secret %s" % (v["name"], v["secret"]["secretName"]))
                for item in v["secret"].get("items", []):
                    if s and item["key"] not in s.get("stringData", {}) and item["key"] not in s.get("data", {}):
                        error(where, "volume %s: Secret has no key %s" % (v["name"], item["key"]))
        for c in spec.get("initContainers", []) + spec["containers"]:
            ports = {p["name"] for p in c.get("ports", []) if "name" in p}
            for m in c.get("volumeMounts", []):
                if m["name"] not in volumes:
                    error(where, "container %s mounts %s, which is not a volume" % (c["name"], m["name"]))
            for probe in ("readinessProbe", "livenessProbe", "startupProbe"):
                port = c.get(probe, {}).get("httpGet", {}).get("port")
                if isinstance(port, str) and port not in ports:
                    error(where, "%s of %s names port %s, not declared" % (probe, c["name"], port))
            for e in c.get("env", []):
                ref = e.get("valueFrom", {}).get("secretKeyRef")
                if ref:
                    s = secrets.get(ref["name"])
                    if s is None or ref["key"] not in s.get("stringData", {}):
                        error(where, "env %s: no key %s in Secret %s" % (e["name"], ref["key"], ref["name"]))
    for svc in (d for d in docs if d["kind"] == "Service"):
        selected = [w for w in workloads
                    if all(pod_spec(w)["metadata"]["labels"].get(k) == v for k, v in svc["spec"]["selector"].items())]
        if not selected:
            error(where_of(svc), "selects no workload")
            continue
        names = {p.get("name") for w in selected for c in pod_spec(w)["spec"]["containers"] for p in c.get("ports", [])}
        for p in svc["spec"]["ports"]:
            if isinstance(p.get("targetPort"), str) and p["targetPort"] not in names:
                error(where_of(svc), "targetPort %s is no container port of %s" % (p["targetPort"],
                                                                                  [w["metadata"]["name"] for w in selected]))
    for pdb in (d for d in docs if d["kind"] == "PodDisruptionBudget"):
        sel = pdb["spec"]["selector"]["matchLabels"]
        if not any(all(pod_spec(w)["metadata"]["labels"].get(k) == v for k, v in sel.items()) for w in workloads):
            error(where_of(pdb), "selects no workload")


def check_configs(shoal, docs):
    cm = next(d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"] == "shoal-config")
    secret = next(d for d in docs if d["kind"] == "Secret")
    env = dict(os.environ)
    env.update({k: v for k, v in secret["stringData"].items() if k.isupper()})
    with tempfile.TemporaryDirectory(prefix="shoal-k8s-") as tmp:
        for name, extra in (("worker.yaml", []), ("client.yaml", ["--cache-dir", os.path.join(tmp, "cache")])):
            path = os.path.join(tmp, name)
            with open(path, "w") as f:
                f.write(cm["data"][name])
            r = subprocess.run([shoal, "worker", "--config", path, "--check-config"] + extra, env=env,
                               capture_output=True, text=True, timeout=60)
            if r.returncode != 0 or not r.stdout.startswith("config ok: "):
                error("ConfigMap shoal-config " + name, "shoal worker --check-config: %s%s" % (r.stdout, r.stderr))
            else:
                print(name + ": " + r.stdout.strip())


def main():
    shoal = os.path.abspath(sys.argv[1])
    kustomization = yaml.safe_load(open(os.path.join(DIR, "kustomization.yaml")))
    listed = set(kustomization["resources"])
    files = {os.path.basename(p) for p in glob.glob(os.path.join(DIR, "*.yaml"))} - {"kustomization.yaml"}
    if listed != files:
        error("kustomization.yaml", "resources %s, files %s" % (sorted(listed), sorted(files)))
    docs, where = [], {}
    for name in sorted(files & listed):
        for i, doc in enumerate(yaml.safe_load_all(open(os.path.join(DIR, name)))):
            if doc is None:
                continue
            at = "%s#%d %s/%s" % (name, i, doc.get("kind"), doc.get("metadata", {}).get("name"))
            model = MODELS.get((doc.get("apiVersion"), doc.get("kind")))
            if model is None:
                error(at, "apiVersion/kind %s/%s is not one this test knows" % (doc.get("apiVersion"), doc.get("kind")))
                continue
            check_type(doc, model, at)
            check_required(doc, model, at)
            docs.append(doc)
            where[id(doc)] = at
    if not errors:
        check_references(docs, lambda d: where[id(d)])
        check_configs(shoal, docs)
    if errors:
        print("\n".join(errors), file=sys.stderr)
        sys.exit(1)
    print("%d manifests valid for the Kubernetes %s API (python3-kubernetes %s)" %
          (len(docs), KUBERNETES_API, kubernetes.__version__))


if __name__ == "__main__":
    import kubernetes
    main()
