//! Where a `service` reference of a webhook's client configuration leads, in a server without
//! cluster networking. kube-apiserver dials the Service's cluster IP (or, with
//! `--enable-aggregator-routing`, one of its endpoints); here no cluster IP routes anywhere, so:
//!
//! 1. the Service must exist (`service "NAME" not found`), and have a port whose `port` is the
//!    reference's (`no service port 443 found for service "NAME"`); an `ExternalName` Service
//!    leads to its external name at that port;
//! 2. with endpoints (`EndpointSlices` labelled with the Service's name, or the Endpoints object of
//!    its name), the first ready address whose port has the service port's name, as
//!    aggregator routing picks one (`no endpoints available for service "NAME"` when none has
//!    it);
//! 3. without endpoints, `127.0.0.1` at the service port's numeric `targetPort` (its `port`
//!    when the target is unset or named): the Service stands for a process on this machine,
//!    which is what `kubewasm dev` registers.
//!
//! TLS always checks the name `<name>.<namespace>.svc`, as kube-apiserver does.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use serde_json::Value;

use crate::admission::Lookup;
use crate::webhook::ServiceRef;

const SERVICES: (&str, &str) = ("", "services");
const ENDPOINTS: (&str, &str) = ("", "endpoints");
const SLICES: (&str, &str) = ("discovery.k8s.io", "endpointslices");
/// The label that ties an `EndpointSlice` to its Service.
const SERVICE_NAME: &str = "kubernetes.io/service-name";

/// The address a call to `service` is sent to, by the rule of this module.
pub(crate) fn service_address(lookup: &dyn Lookup, service: &ServiceRef) -> Result<SocketAddr, String> {
    let gr = |r: (&str, &str)| (r.0.to_string(), r.1.to_string());
    let svc = lookup
        .object(&gr(SERVICES), &service.namespace, &service.name)
        .ok_or_else(|| format!("service {:?} not found", service.name))?;
    let ports = svc.pointer("/spec/ports").and_then(Value::as_array).cloned().unwrap_or_default();
    let port = ports
        .iter()
        .find(|p| p.get("port").and_then(Value::as_u64) == Some(u64::from(service.port)))
        .ok_or_else(|| format!("no service port {} found for service {:?}", service.port, service.name))?;
    if svc.pointer("/spec/type").and_then(Value::as_str) == Some("ExternalName") {
        let external = svc.pointer("/spec/externalName").and_then(Value::as_str).unwrap_or_default();
        return lookup_ip(external).map(|ip| SocketAddr::new(ip, service.port));
    }
    let port_name = port.get("name").and_then(Value::as_str).unwrap_or_default();
    let slices: Vec<_> = lookup
        .objects(&gr(SLICES), Some(&service.namespace))
        .into_iter()
        .filter(|s| {
            s.pointer(&format!("/metadata/labels/{}", SERVICE_NAME.replace('/', "~1"))).and_then(Value::as_str)
                == Some(service.name.as_str())
        })
        .collect();
    let endpoints = lookup.object(&gr(ENDPOINTS), &service.namespace, &service.name);
    let mut candidates = slices
        .iter()
        .flat_map(|s| from_slice(s, port_name))
        .chain(endpoints.as_deref().into_iter().flat_map(|e| from_endpoints(e, port_name)));
    if let Some(address) = candidates.next() {
        return Ok(address);
    }
    let any_endpoint = slices
        .iter()
        .any(|s| s.get("endpoints").and_then(Value::as_array).is_some_and(|e| !e.is_empty()))
        || endpoints.as_deref().and_then(|e| e.get("subsets")).and_then(Value::as_array).is_some_and(|s| !s.is_empty());
    if any_endpoint {
        return Err(format!("no endpoints available for service {:?}", service.name));
    }
    let target = port.get("targetPort").and_then(Value::as_u64).and_then(|p| u16::try_from(p).ok());
    Ok(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), target.unwrap_or(service.port)))
}

/// The ready addresses of an `EndpointSlice` at its port named `port_name`.
fn from_slice(slice: &Value, port_name: &str) -> Vec<SocketAddr> {
    let Some(port) = named_port(slice.get("ports"), port_name) else {
        return Vec::new();
    };
    slice
        .get("endpoints")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|e| e.pointer("/conditions/ready").and_then(Value::as_bool) != Some(false))
        .flat_map(|e| e.get("addresses").and_then(Value::as_array).cloned().unwrap_or_default())
        .filter_map(|a| a.as_str().and_then(|a| a.parse::<IpAddr>().ok()))
        .map(|ip| SocketAddr::new(ip, port))
        .collect()
}

/// The (ready) addresses of an Endpoints object at its port named `port_name`.
fn from_endpoints(endpoints: &Value, port_name: &str) -> Vec<SocketAddr> {
    let mut found = Vec::new();
    for subset in endpoints.get("subsets").and_then(Value::as_array).into_iter().flatten() {
        let Some(port) = named_port(subset.get("ports"), port_name) else {
            continue;
        };
        let ips = subset.get("addresses").and_then(Value::as_array).into_iter().flatten();
        found.extend(
            ips.filter_map(|a| a.get("ip").and_then(Value::as_str)?.parse::<IpAddr>().ok())
                .map(|ip| SocketAddr::new(ip, port)),
        );
    }
    found
}

/// The number of the port named `name` (`""` for an unnamed one) in a list of ports.
fn named_port(ports: Option<&Value>, name: &str) -> Option<u16> {
    ports
        .and_then(Value::as_array)?
        .iter()
        .find(|p| p.get("name").and_then(Value::as_str).unwrap_or_default() == name)
        .and_then(|p| p.get("port").and_then(Value::as_u64))
        .and_then(|p| u16::try_from(p).ok())
}

/// An external name as an address: an IP, or `localhost`.
fn lookup_ip(name: &str) -> Result<IpAddr, String> {
    if name == "localhost" {
        return Ok(IpAddr::V4(Ipv4Addr::LOCALHOST));
    }
    name.parse().map_err(|_| format!("cannot route to the external name {name:?}: this server resolves no DNS names"))
}
