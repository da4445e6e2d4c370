#!/usr/bin/env python3
"""Writes the built-in API data the embedded API server embeds, from upstream packages.

    python3 host/devcluster/data/generate.py            # Kubernetes 1.33, the k8s-openapi feature in use

Inputs, both from PyPI (downloaded, not installed):
  - kubernetes-validate: the OpenAPI definitions of each Kubernetes release as JSON schema
    (`_definitions.json`), with descriptions, list types and keys, patch strategies, formats
    and group-version-kinds;
  - lightkube-models: for each served resource its plural, scope, verbs and subresources,
    generated from the same release's OpenAPI paths.
Short names and categories are in no package; SHORT_NAMES and CATEGORIES below are those of a
real server's discovery (`kubectl api-resources` on a 1.33 cluster).

Outputs, beside this script:
  - resources.json: the served resources (stable API versions only, as a 1.33 server enables
    by default), each with group, version, kind, plural, scope, verbs, subresources;
  - definitions.json: the OpenAPI v2 definitions those resources reach, as the real
    `/openapi/v2` serves them.

To move to another Kubernetes version: change KUBERNETES and LIGHTKUBE_MODELS (and the
`k8s-openapi` feature in Cargo.toml), run this script, and commit what changed.
"""

import ast
import glob
import json
import os
import re
import subprocess
import sys
import tempfile
import zipfile

KUBERNETES = "1.33.0"
KUBERNETES_VALIDATE = "kubernetes-validate==1.37.0"
LIGHTKUBE_MODELS = "lightkube-models==1.33.1.8"

HERE = os.path.dirname(os.path.abspath(__file__))

SHORT_NAMES = {
    ("", "componentstatuses"): ["cs"],
    ("", "configmaps"): ["cm"],
    ("", "endpoints"): ["ep"],
    ("", "events"): ["ev"],
    ("", "limitranges"): ["limits"],
    ("", "namespaces"): ["ns"],
    ("", "nodes"): ["no"],
    ("", "persistentvolumeclaims"): ["pvc"],
    ("", "persistentvolumes"): ["pv"],
    ("", "pods"): ["po"],
    ("", "replicationcontrollers"): ["rc"],
    ("", "resourcequotas"): ["quota"],
    ("", "serviceaccounts"): ["sa"],
    ("", "services"): ["svc"],
    ("apiextensions.k8s.io", "customresourcedefinitions"): ["crd", "crds"],
    ("apps", "daemonsets"): ["ds"],
    ("apps", "deployments"): ["deploy"],
    ("apps", "replicasets"): ["rs"],
    ("apps", "statefulsets"): ["sts"],
    ("autoscaling", "horizontalpodautoscalers"): ["hpa"],
    ("batch", "cronjobs"): ["cj"],
    ("certificates.k8s.io", "certificatesigningrequests"): ["csr"],
    ("events.k8s.io", "events"): ["ev"],
    ("networking.k8s.io", "ingresses"): ["ing"],
    ("networking.k8s.io", "networkpolicies"): ["netpol"],
    ("policy", "poddisruptionbudgets"): ["pdb"],
    ("scheduling.k8s.io", "priorityclasses"): ["pc"],
    ("storage.k8s.io", "storageclasses"): ["sc"],
}

CATEGORIES = {
    ("", "pods"): ["all"],
    ("", "replicationcontrollers"): ["all"],
    ("", "services"): ["all"],
    ("apps", "daemonsets"): ["all"],
    ("apps", "deployments"): ["all"],
    ("apps", "replicasets"): ["all"],
    ("apps", "statefulsets"): ["all"],
    ("autoscaling", "horizontalpodautoscalers"): ["all"],
    ("batch", "cronjobs"): ["all"],
    ("batch", "jobs"): ["all"],
    ("apiextensions.k8s.io", "customresourcedefinitions"): ["api-extensions"],
    ("apiregistration.k8s.io", "apiservices"): ["api-extensions"],
    ("admissionregistration.k8s.io", "mutatingwebhookconfigurations"): ["api-extensions"],
    ("admissionregistration.k8s.io", "validatingwebhookconfigurations"): ["api-extensions"],
    ("admissionregistration.k8s.io", "validatingadmissionpolicies"): ["api-extensions"],
    ("admissionregistration.k8s.io", "validatingadmissionpolicybindings"): ["api-extensions"],
}

# The connect subresources (streams to a pod or node, proxies), which have no model in
# lightkube: as a real 1.33 server's discovery lists them (`kubectl get --raw /api/v1`).
PROXY_VERBS = ["create", "delete", "get", "patch", "update"]
CONNECT = {
    ("", "pods"): [
        ("attach", "PodAttachOptions", ["create", "get"]),
        ("exec", "PodExecOptions", ["create", "get"]),
        ("portforward", "PodPortForwardOptions", ["create", "get"]),
        ("proxy", "PodProxyOptions", PROXY_VERBS),
    ],
    ("", "nodes"): [("proxy", "NodeProxyOptions", PROXY_VERBS)],
    ("", "services"): [("proxy", "ServiceProxyOptions", PROXY_VERBS)],
}

# Resources whose REST storage serves fewer verbs than their OpenAPI paths suggest:
# `componentstatus.REST` is a getter and a lister, never watched.
VERBS = {("", "componentstatuses"): ["get", "list"]}

VERB_NAMES = {"post": "create", "put": "update"}
DISCOVERY_VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]


def download(spec, into):
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--dest", into, spec],
        check=True,
    )
    (wheel,) = glob.glob(os.path.join(into, "*.whl"))
    return zipfile.ZipFile(wheel)


def stable(version):
    return re.fullmatch(r"v\d+", version) is not None


def api_infos(source):
    """Every `_api_info = res.ApiInfo(...)` of a lightkube resources module, with its class bases."""
    for node in ast.parse(source).body:
        if not isinstance(node, ast.ClassDef):
            continue
        base = ast.unparse(node.bases[0])
        for stmt in node.body:
            if isinstance(stmt, ast.Assign) and ast.unparse(stmt.targets[0]) == "_api_info":
                args = {kw.arg: ast.literal_eval(kw.value) if kw.arg != "resource" and kw.arg != "parent"
                        else [ast.literal_eval(a) for a in kw.value.args] for kw in stmt.value.keywords}
                yield base, args


def resources(models):
    out = {}
    subresources = []
    for name in sorted(models.namelist()):
        if not re.fullmatch(r"lightkube/resources/\w+\.py", name) or name.endswith("__init__.py"):
            continue
        for base, info in api_infos(models.read(name).decode()):
            group, version, kind = info["resource"]
            if "parent" in info:
                subresources.append((info["parent"], info["plural"], info["action"], (group, version, kind), info["verbs"]))
                continue
            if not stable(version):
                continue
            verbs = sorted({VERB_NAMES.get(v, v) for v in info["verbs"]} & set(DISCOVERY_VERBS))
            key = (group, info["plural"])
            verbs = VERBS.get(key, verbs)
            out[(group, version, info["plural"])] = {
                "group": group,
                "version": version,
                "kind": kind,
                "plural": info["plural"],
                "singular": kind.lower(),
                "namespaced": base.startswith("res.Namespaced"),
                "verbs": verbs,
                "shortNames": SHORT_NAMES.get(key, []),
                "categories": CATEGORIES.get(key, []),
                "subresources": [],
            }
    for (group, version, kind), plural, action, response, verbs in subresources:
        parent = out.get((group, version, plural))
        if parent is None:
            continue
        verbs = sorted({VERB_NAMES.get(v, v) for v in verbs} & set(DISCOVERY_VERBS))
        rg, rv, rk = response
        parent["subresources"].append({"name": action, "group": rg, "version": rv, "kind": rk, "verbs": verbs})
    for r in out.values():
        for name, kind, verbs in CONNECT.get((r["group"], r["plural"]), []):
            r["subresources"].append({"name": name, "group": "", "version": "v1", "kind": kind, "verbs": verbs})
        r["subresources"].sort(key=lambda s: s["name"])
    return sorted(out.values(), key=lambda r: (r["group"], r["version"], r["plural"]))


def to_openapi_v2(schema):
    """The JSON-schema form of kubernetes-validate back in the OpenAPI v2 form of `/openapi/v2`."""
    if isinstance(schema, list):
        return [to_openapi_v2(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {}
    for key, value in schema.items():
        if key == "$ref":
            out[key] = value.replace("#/$defs/", "#/definitions/")
        elif key == "type" and isinstance(value, list):
            kinds = [t for t in value if t != "null"]
            out[key] = kinds[0] if len(kinds) == 1 else kinds
        elif key == "properties":
            out[key] = {name: to_openapi_v2(prop) for name, prop in value.items()}
        else:
            out[key] = to_openapi_v2(value)
    if "oneOf" in out:
        kinds = sorted(alt.get("type") for alt in out.pop("oneOf"))
        if kinds == ["integer", "string"]:
            out.update(type="string", format="int-or-string")
        elif kinds == ["number", "string"]:
            out["type"] = "string"
        else:
            raise SystemExit(f"unexpected oneOf {kinds}")
    return out


def definitions(validate, served):
    path = f"kubernetes_validate/kubernetes-json-schema/v{KUBERNETES}-local/_definitions.json"
    defs = json.loads(validate.read(path))["$defs"]
    out = {}
    for name, schema in defs.items():
        schema = to_openapi_v2(schema)
        for field in ("apiVersion", "kind"):
            # The JSON-schema conversion pins these to one value; the real schema does not.
            schema.get("properties", {}).get(field, {}).pop("enum", None)
        out[name] = schema
    wanted = set()
    roots = [n for n, s in out.items()
             if any((g["group"], g["version"], g["kind"]) in served for g in s.get("x-kubernetes-group-version-kind", []))]
    roots += [n for n in out if n.startswith("io.k8s.apimachinery.pkg.apis.meta.v1.")]
    roots += ["io.k8s.api.autoscaling.v1.Scale"]
    stack = list(roots)
    while stack:
        name = stack.pop()
        if name in wanted:
            continue
        wanted.add(name)
        stack += [ref.split("/")[-1] for ref in re.findall(r'"\$ref": "([^"]+)"', json.dumps(out[name]))]
    return {name: out[name] for name in sorted(wanted)}


def main():
    with tempfile.TemporaryDirectory() as tmp:
        os.mkdir(os.path.join(tmp, "v"))
        os.mkdir(os.path.join(tmp, "m"))
        validate = download(KUBERNETES_VALIDATE, os.path.join(tmp, "v"))
        models = download(LIGHTKUBE_MODELS, os.path.join(tmp, "m"))
        served = resources(models)
        keys = {(r["group"], r["version"], r["kind"]) for r in served}
        defs = definitions(validate, keys)
    missing = [k for k in keys if not any(
        (g["group"], g["version"], g["kind"]) == k
        for d in defs.values() for g in d.get("x-kubernetes-group-version-kind", []))]
    if missing:
        raise SystemExit(f"no definition for {missing}")
    with open(os.path.join(HERE, "resources.json"), "w") as f:
        json.dump({"kubernetes": KUBERNETES, "resources": served}, f, indent=1, sort_keys=True)
        f.write("\n")
    with open(os.path.join(HERE, "definitions.json"), "w") as f:
        json.dump(defs, f, separators=(",", ":"), sort_keys=True)
        f.write("\n")
    print(f"{len(served)} resources, {len(defs)} definitions (Kubernetes {KUBERNETES})")


if __name__ == "__main__":
    main()
