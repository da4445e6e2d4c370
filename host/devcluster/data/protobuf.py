#!/usr/bin/env python3
"""Writes protobuf.json: the field numbers and types of every Kubernetes protobuf message,
which the embedded API server uses to read `application/vnd.kubernetes.protobuf` bodies.

    cargo fetch    # brings the k8s-pb crate (a dev-dependency of kubewasm-devcluster)
    python3 host/devcluster/data/protobuf.py

Input: the `k8s-pb` crate from crates.io (prost's code generated from the Kubernetes
`generated.proto` files), read from cargo's registry. Each message becomes a list of fields
`[number, json name, type, repeated]` (an empty json name: a struct embedded inline), where type is a scalar (`string`, `int32`, ...),
`map:KEY:VALUE`, or the OpenAPI name of a message (`io.k8s.api.core.v1.PodSpec`). JSON names
come from the OpenAPI definitions (definitions.json, beside this file): prost snake-cases the
proto names (`podIPs` -> `pod_i_ps`), so each field is matched to a property of the same
letters.
"""

import glob
import json
import os
import re
import sys

K8S_PB = "0.9.0"
HERE = os.path.dirname(os.path.abspath(__file__))

# The first module of a k8s-pb path and the OpenAPI prefix it stands for.
ROOTS = {
    "api": "io.k8s.api",
    "apimachinery": "io.k8s.apimachinery",
    "apiextensions_apiserver": "io.k8s.apiextensions-apiserver",
    "kube_aggregator": "io.k8s.kube-aggregator",
}

# A field's type may span lines (rustfmt splits long generics); it ends at the next item.
FIELD = re.compile(
    r"#\[prost\((?P<attrs>[^\]]*)\)\]\s*pub (?P<name>(?:r#)?\w+):\s*(?P<type>.+?),\s*\n\s*(?=///|#\[|\}|pub )",
    re.S,
)
# A struct's body, up to its closing brace (`{}` for a message without fields).
STRUCT = re.compile(r"pub struct (\w+) \{(\}|.*?\n\})", re.S)


def source_dir():
    if len(sys.argv) > 1:
        return sys.argv[1]
    home = os.environ.get("CARGO_HOME", os.path.expanduser("~/.cargo"))
    found = glob.glob(os.path.join(home, "registry", "src", "*", f"k8s-pb-{K8S_PB}", "src"))
    if not found:
        raise SystemExit(f"k8s-pb {K8S_PB} not in cargo's registry: run `cargo fetch` first")
    return found[0]


def module_name(path, src):
    parts = os.path.relpath(os.path.dirname(path), src).split(os.sep)
    if parts[0] not in ROOTS:
        return None, None
    return parts, ".".join([ROOTS[parts[0]]] + parts[1:])


def resolve(rust_type, module):
    """The OpenAPI name of a Rust type path relative to `module` (a list of module names)."""
    rust_type = rust_type.strip().rstrip(",").strip()
    for wrapper in ("::core::option::Option<", "::prost::alloc::vec::Vec<", "::prost::alloc::boxed::Box<"):
        if rust_type.startswith(wrapper):
            return resolve(rust_type[len(wrapper):].removesuffix(">"), module)
    parts = rust_type.split("::")
    base = list(module)
    while parts and parts[0] == "super":
        base.pop()
        parts.pop(0)
    full = base + parts
    return ".".join([ROOTS[full[0]]] + full[1:])


def normalize(name):
    # `$schema`, `$ref` and `x-kubernetes-list-type` are `schema`, `ref` and
    # `x_kubernetes_list_type` in Rust.
    return re.sub(r"[_$-]", "", name).lower()


def main():
    src = source_dir()
    with open(os.path.join(HERE, "definitions.json")) as f:
        definitions = json.load(f)
    # prost renames acronyms (JSONSchemaProps -> JsonSchemaProps, HostIP -> HostIp): names are
    # matched to the definitions' without case.
    canonical = {name.lower(): name for name in definitions}

    def named(name):
        return canonical.get(name.lower(), name)

    messages = {}
    for path in sorted(glob.glob(os.path.join(src, "**", "mod.rs"), recursive=True)):
        module, prefix = module_name(path, src)
        if module is None:
            continue
        text = open(path).read()
        for struct, body in STRUCT.findall(text):
            name = named(f"{prefix}.{struct}")
            props = definitions.get(name, {}).get("properties", {})
            by_letters = {normalize(p): p for p in props}
            fields = []
            for m in FIELD.finditer(body):
                attrs = m.group("attrs")
                tag = int(re.search(r'tag = "(\d+)"', attrs).group(1))
                rust_name = m.group("name").removeprefix("r#")
                json_name = by_letters.get(normalize(rust_name))
                repeated = "repeated" in attrs
                kind = attrs.split(",")[0].strip()
                if kind.startswith("btree_map") or kind.startswith("map"):
                    key, value = [t.strip() for t in re.search(r'"([^"]+)"', attrs).group(1).split(",")]
                    if value == "message":
                        text = " ".join(m.group("type").split()).rstrip(", ")
                        inner = re.search(r"BTreeMap<[^,]+,\s*(.+?),?\s*>$", text).group(1)
                        value = named(resolve(inner, module))
                    kind = f"map:{key}:{value}"
                elif kind == "message":
                    kind = named(resolve(" ".join(m.group("type").split()).rstrip(","), module))
                elif kind.startswith("bytes"):
                    kind = "bytes"
                fields.append([tag, json_name, kind, repeated, rust_name])
            messages[name] = (fields, set(props))
    def own_names(name):
        """The normalized names of a message's fields, with the fields of the structs it embeds
        inline (those of its fields that match none of its own properties) spliced in, as Go
        promotes them: RuleWithOperations = operations + the fields of Rule."""
        fields, props = messages.get(name, ([], set()))
        known = {normalize(p) for p in props}
        names = set()
        for _, _, kind, repeated, rust_name in fields:
            if normalize(rust_name) in known or not props:
                names.add(normalize(rust_name))
            elif not repeated and kind in messages:
                names |= own_names(kind)
        return names

    out = {}
    for name, (fields, props) in messages.items():
        kept = []
        for tag, json_name, kind, repeated, rust_name in fields:
            if json_name is None:
                child_names = own_names(kind) if kind in messages else set()
                shared = child_names & {normalize(p) for p in props}
                # Most of an embedded struct's fields are its parent's (it may have fields newer
                # than the definitions); a newer field of its own shares none.
                if props and child_names and not repeated and len(shared) * 5 >= len(child_names) * 4:
                    # A Go struct embedded inline (`json:",inline"`: IngressRuleValue in
                    # IngressRule, VolumeSource in Volume): its fields are the parent's.
                    json_name = ""
                elif props:
                    # A field newer than the definitions' Kubernetes version: a server of that
                    # version does not know it either.
                    continue
                else:
                    # No JSON form to match (wrappers like ExtraValue, Time's seconds): the
                    # lower camel case of the proto name.
                    head, *rest = rust_name.split("_")
                    json_name = head + "".join(w[:1].upper() + w[1:] for w in rest)
            kept.append([tag, json_name, kind, repeated])
        out[name] = kept
    messages = out
    with open(os.path.join(HERE, "protobuf.json"), "w") as f:
        json.dump({"k8s-pb": K8S_PB, "messages": messages}, f, separators=(",", ":"), sort_keys=True)
        f.write("\n")
    print(f"{len(messages)} messages from k8s-pb {K8S_PB}")


if __name__ == "__main__":
    main()
