//! A pod's streams (`log`, `exec`, `attach`, `portforward`), which kube-apiserver proxies to
//! the kubelet of the pod's node, answered as it answers them when there is none to reach
//! (`pod.LogLocation`, `streamLocation`, `PortForwardLocation`): the pod and container are
//! checked, then a pod on no node has no log yet (204) and no stream to open (400); a node
//! that does not exist is 404, and one that does is out of reach: no kubelet runs beside
//! this server.

use serde_json::Value;

use crate::object;
use crate::printers::text;
use crate::status::{ApiError, Cause, go_quote, parse_int64};
use crate::strategy::{Action, Objects};

/// Where nodes are stored.
const NODES: (&str, &str) = ("", "nodes");

/// The answer of a stream of `pod`; `Ok` when there is nothing to stream.
pub(super) fn connect(stream: &Action<'_>, pod: &Value, objects: &dyn Objects) -> Result<(), ApiError> {
    let name = object::name(pod);
    let param = |key: &str| stream.query.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str());
    let log = stream.subresource == "log";
    if log {
        log_options(name, &param)?;
    } else if stream.dry_run {
        // The connect handler refuses a dry run of any stream but a log's.
        return Err(ApiError::bad_request("dryRun is not supported"));
    }
    if stream.subresource == "portforward" {
        ports(stream.query)?;
    } else {
        container(pod, param("container").unwrap_or(""))?;
    }
    let node = text(pod, "/spec/nodeName");
    if node.is_empty() {
        // A pod not on a node has no log yet: an empty location, answered 204.
        return if log {
            Ok(())
        } else {
            Err(ApiError::bad_request(format!("pod {name} does not have a host assigned")))
        };
    }
    let gr = (NODES.0.to_string(), NODES.1.to_string());
    let node_object = objects.get(&gr, "", node).ok_or_else(|| ApiError::not_found(NODES.0, NODES.1, node))?;
    let addresses = node_object.pointer("/status/addresses").and_then(Value::as_array).cloned().unwrap_or_default();
    // `--kubelet-preferred-address-types`' default order.
    let preferred = ["Hostname", "InternalDNS", "InternalIP", "ExternalDNS", "ExternalIP"]
        .iter()
        .find_map(|kind| addresses.iter().find(|a| text(a, "/type") == *kind).map(|a| text(a, "/address").to_string()));
    let Some(address) = preferred else {
        let known: Vec<String> =
            addresses.iter().map(|a| format!("{{{} {}}}", text(a, "/type"), text(a, "/address"))).collect();
        return Err(ApiError::new(
            500,
            "",
            format!("no preferred addresses found; known addresses: [{}]", known.join(" ")),
        ));
    };
    Err(ApiError::new(
        500,
        "",
        format!(
            "error dialing backend: no kubelet of node {node} ({address}:10250) is reachable from the embedded API server"
        ),
    ))
}

/// `validateContainer`: the container named, or the pod's only one.
fn container(pod: &Value, named: &str) -> Result<(), ApiError> {
    let name = object::name(pod);
    let listed = |list: &str| -> Vec<&str> {
        pod.pointer(&format!("/spec/{list}"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|c| text(c, "/name"))
            .collect()
    };
    let regular = listed("containers");
    // `VisitContainers`: init containers, containers, ephemeral containers.
    let all: Vec<&str> = listed("initContainers")
        .into_iter()
        .chain(regular.iter().copied())
        .chain(listed("ephemeralContainers"))
        .collect();
    if named.is_empty() {
        return match regular.len() {
            1 => Ok(()),
            0 => Err(ApiError::bad_request(format!("a container name must be specified for pod {name}"))),
            _ => Err(ApiError::bad_request(format!(
                "a container name must be specified for pod {name}, choose one of: [{}]",
                all.join(" ")
            ))),
        };
    }
    if all.contains(&named) {
        Ok(())
    } else {
        Err(ApiError::bad_request(format!("container {named} is not valid for pod {name}")))
    }
}

/// `PodLogOptions` as they convert (integers) and validate (`ValidatePodLogOptions`).
fn log_options<'a>(pod: &str, param: &impl Fn(&str) -> Option<&'a str>) -> Result<(), ApiError> {
    let int = |key: &str| param(key).map(parse_int64).transpose();
    let (tail, limit, since) = (int("tailLines")?, int("limitBytes")?, int("sinceSeconds")?);
    let mut causes = Vec::new();
    if let Some(tail) = tail.filter(|t| *t < 0) {
        causes.push(invalid("tailLines", tail, "must be greater than or equal to 0"));
    }
    if let Some(limit) = limit.filter(|l| *l < 1) {
        causes.push(invalid("limitBytes", limit, "must be greater than 0"));
    }
    match (since, param("sinceTime")) {
        (Some(_), Some(_)) => causes.push(Cause::new(
            "FieldValueForbidden",
            "",
            "Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified",
        )),
        (Some(seconds), None) if seconds < 1 => causes.push(invalid("sinceSeconds", seconds, "must be greater than 0")),
        _ => {}
    }
    if causes.is_empty() { Ok(()) } else { Err(ApiError::invalid_kind("", "PodLogOptions", pod, &causes)) }
}

fn invalid(field: &str, value: i64, detail: &str) -> Cause {
    Cause::new("FieldValueInvalid", field, format!("Invalid value: {value}: {detail}"))
}

/// The ports of a port forward: each value a comma-separated list of port numbers.
fn ports(query: &[(String, String)]) -> Result<(), ApiError> {
    for value in query.iter().filter(|(k, _)| k == "ports").map(|(_, v)| v) {
        for port in value.split(',') {
            if port.trim().parse::<u16>().is_err() {
                return Err(ApiError::bad_request(format!(
                    "cannot convert to []int32: strconv.ParseUint: parsing {}: invalid syntax",
                    go_quote(port.trim())
                )));
            }
        }
    }
    Ok(())
}
