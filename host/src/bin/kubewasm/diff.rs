//! `kubewasm diff PLUGIN`: how a `Plugin`'s candidate fares against its active version,
//! as the host reports it in the object's `status.rollout`.

use std::fmt::Write as _;

use anyhow::{Context, Result};
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind};
use kubewasm::resource::crd::{GROUP, KIND, VERSION};
use serde_json::Value;

use crate::cli::DiffFormat;

/// Prints the rollout of the `Plugin` named `name`.
pub async fn command(name: &str, output: DiffFormat) -> Result<()> {
    let client = kube::Client::try_default().await.context("no cluster: set KUBECONFIG or run in a Pod")?;
    let resource = ApiResource::from_gvk(&GroupVersionKind::gvk(GROUP, VERSION, KIND));
    let plugins: Api<DynamicObject> = Api::all_with(client, &resource);
    let plugin = plugins.get(name).await.with_context(|| format!("cannot read Plugin {name}"))?;
    let rollout = &plugin.data["status"]["rollout"];
    if plugin.data["spec"]["rollout"].is_null() {
        anyhow::bail!("Plugin {name} rolls out no candidate: its spec.rollout is empty");
    }
    if rollout.is_null() {
        anyhow::bail!(
            "Plugin {name}: the host has not reported on its candidate yet (is it running with --plugin-resources?)"
        );
    }
    match output {
        DiffFormat::Json => println!("{}", serde_json::to_string_pretty(rollout)?),
        DiffFormat::Text => print!("{}", describe(name, rollout)),
    }
    Ok(())
}

/// The report for people: what runs, the counts, the latest difference line by line.
fn describe(name: &str, rollout: &Value) -> String {
    let text = |key: &str| rollout[key].as_str().unwrap_or_default();
    let count = |key: &str| rollout[key].as_u64().unwrap_or_default();
    let mut out = String::new();
    let digest = match text("candidateDigest") {
        "" => String::new(),
        digest => format!(" {digest}"),
    };
    let _ = writeln!(out, "Plugin {name}: candidate{digest}, {} ({})", text("phase"), text("message"));
    if text("mode") == "Shadow" {
        let _ =
            writeln!(out, "{} reconciles compared, {} with a different answer", count("compared"), count("differing"));
    }
    let _ = writeln!(
        out,
        "{} reconciles by the candidate, {} failed",
        count("candidateReconciles"),
        count("candidateErrors")
    );
    if let Some(error) = rollout["lastCandidateError"].as_str() {
        let _ = writeln!(out, "its latest error: {error}");
    }
    let difference = &rollout["lastDifference"];
    if let Some(lines) = difference["lines"].as_array() {
        let (parent, at) =
            (difference["parent"].as_str().unwrap_or_default(), difference["at"].as_str().unwrap_or_default());
        let _ = writeln!(out, "latest difference, on {parent} at {at} (active → candidate):");
        for line in lines.iter().filter_map(Value::as_str) {
            let _ = writeln!(out, "  {line}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shadow_report_reads_as_counts_and_the_latest_difference() {
        let rollout = serde_json::json!({
            "phase": "Shadow", "mode": "Shadow", "candidateDigest": "sha256:ab",
            "message": "the candidate answers every reconcile after the active and writes nothing",
            "compared": 12, "differing": 3, "candidateReconciles": 12, "candidateErrors": 0,
            "lastDifference": {"parent": "default/web", "at": "2026-11-24T20:00:00Z",
                               "lines": ["status.ready: true → false"]}
        });
        assert_eq!(
            describe("demo", &rollout),
            "Plugin demo: candidate sha256:ab, Shadow (the candidate answers every reconcile after the active and \
             writes nothing)\n12 reconciles compared, 3 with a different answer\n12 reconciles by the candidate, 0 \
             failed\nlatest difference, on default/web at 2026-11-24T20:00:00Z (active → candidate):\n  \
             status.ready: true → false\n"
        );
    }
}
