//! Content negotiation: the `Accept` header read as kube-apiserver reads it
//! (`negotiation.NegotiateMediaTypeOptions` over `goautoneg.ParseAccept`), for the
//! representations the server converts objects to (`as=Table`, `as=PartialObjectMetadata`,
//! `as=PartialObjectMetadataList` of `meta.k8s.io`) and for aggregated discovery
//! (`as=APIGroupDiscoveryList` of `apidiscovery.k8s.io/v2`). Bodies are always JSON: a clause
//! that only a YAML or protobuf answer would satisfy is still answered in JSON.

use crate::present::Presentation;
use crate::status::ApiError;
use crate::table::Include;

/// One clause of an `Accept` header: `type/subtype;param=value;...`.
#[derive(Debug)]
struct Clause<'a> {
    kind: &'a str,
    subtype: &'a str,
    params: Vec<(&'a str, &'a str)>,
    q: f32,
}

impl Clause<'_> {
    fn param(&self, name: &str) -> Option<&str> {
        self.params.iter().find(|(k, _)| *k == name).map(|(_, v)| *v)
    }

    /// Whether the clause accepts the media type `kind/subtype`.
    fn accepts(&self, kind: &str, subtype: &str) -> bool {
        (self.kind == "*" || self.kind == kind) && (self.subtype == "*" || self.subtype == subtype)
    }
}

/// The clauses, best first: by `q`, then the specific before the wildcards (`goautoneg`).
fn clauses(accept: &str) -> Vec<Clause<'_>> {
    let mut clauses: Vec<Clause<'_>> = accept
        .split(',')
        .filter_map(|clause| {
            let mut parts = clause.split(';').map(str::trim);
            let (kind, subtype) = parts.next()?.split_once('/')?;
            let mut params = Vec::new();
            let mut q = 1.0;
            for part in parts {
                let (key, value) = part.split_once('=').unwrap_or((part, ""));
                if key.trim() == "q" {
                    q = value.trim().parse().unwrap_or(0.0);
                } else {
                    params.push((key.trim(), value.trim()));
                }
            }
            Some(Clause { kind: kind.trim(), subtype: subtype.trim(), params, q })
        })
        .collect();
    let rank = |c: &Clause<'_>| (c.kind == "*", c.subtype == "*");
    clauses.sort_by(|a, b| b.q.total_cmp(&a.q).then_with(|| rank(a).cmp(&rank(b))));
    clauses
}

/// The media types a resource is served in: JSON and YAML, and protobuf for built-ins.
fn served_types(builtin: bool) -> &'static [(&'static str, &'static str)] {
    if builtin {
        &[("application", "json"), ("application", "yaml"), ("application", "vnd.kubernetes.protobuf")]
    } else {
        &[("application", "json"), ("application", "yaml")]
    }
}

/// How the client asks a resource's objects to be rendered: the first clause of its
/// `Accept` the server can satisfy (`AllowsMediaTypeTransform`), or 406 when none is.
/// `include` is the request's `includeObject`, read only for a table (400 when invalid).
pub(super) fn presentation(accept: &str, builtin: bool, include: Option<&str>) -> Result<Presentation, ApiError> {
    if accept.trim().is_empty() {
        return Ok(Presentation::Full);
    }
    for clause in clauses(accept) {
        for (kind, subtype) in served_types(builtin) {
            if !clause.accepts(kind, subtype) {
                continue;
            }
            if ["as", "g", "v"].iter().all(|p| clause.param(p).is_none()) {
                return Ok(Presentation::Full);
            }
            let version = match (clause.param("g"), clause.param("v")) {
                (Some("meta.k8s.io"), Some("v1")) => "meta.k8s.io/v1",
                (Some("meta.k8s.io"), Some("v1beta1")) => "meta.k8s.io/v1beta1",
                _ => continue,
            };
            match clause.param("as") {
                Some("Table") if *subtype != "vnd.kubernetes.protobuf" => {
                    let include = Include::parse(include).map_err(|why| {
                        ApiError::bad_request(format!("Unable to convert to Table as requested: {why}"))
                    })?;
                    return Ok(Presentation::Table { include, version });
                }
                Some("PartialObjectMetadata") => return Ok(Presentation::Metadata { version }),
                Some("PartialObjectMetadataList") => return Ok(Presentation::MetadataList { version }),
                _ => {}
            }
        }
    }
    let accepted: Vec<String> = served_types(builtin).iter().map(|(k, s)| format!("{k}/{s}")).collect();
    Err(ApiError::not_acceptable(&accepted.iter().map(String::as_str).collect::<Vec<_>>()))
}

/// Whether the client asks for aggregated discovery (`DiscoveryEndpointRestrictions`): a
/// JSON clause converting to `apidiscovery.k8s.io/v2` `APIGroupDiscoveryList`. The `v2beta1`
/// form is not served by Kubernetes 1.33 (`AggregatedDiscoveryRemoveBetaType`); such a client
/// gets the legacy documents.
pub(super) fn wants_aggregated_discovery(accept: &str) -> bool {
    clauses(accept).iter().any(|c| {
        c.accepts("application", "json")
            && c.param("g") == Some("apidiscovery.k8s.io")
            && c.param("v") == Some("v2")
            && c.param("as") == Some("APIGroupDiscoveryList")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubectl_s_table_request_gets_a_table() {
        let accept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
        assert_eq!(
            presentation(accept, true, None).unwrap(),
            Presentation::Table { include: Include::Metadata, version: "meta.k8s.io/v1" }
        );
    }

    #[test]
    fn a_conversion_without_its_group_is_not_acceptable() {
        let refused = presentation("application/json;as=Table", true, None).unwrap_err();
        assert_eq!(refused.code, 406);
        assert_eq!(
            refused.message,
            "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf"
        );
        assert_eq!(presentation("application/json;as=Table, */*", false, None).unwrap(), Presentation::Full);
        assert_eq!(presentation("text/html", false, None).unwrap_err().code, 406);
    }

    #[test]
    fn aggregated_discovery_is_v2_only() {
        let client_go = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";
        assert!(wants_aggregated_discovery(client_go));
        assert!(!wants_aggregated_discovery(
            "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"
        ));
        assert!(!wants_aggregated_discovery("application/json"));
    }
}
