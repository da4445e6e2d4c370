//! The layout of a plugin in an OCI registry: the CNCF Wasm OCI artifact (TAG Runtime's
//! "Wasm OCI Artifact layout", as `wkg oci push` and oci-wasm write it), so that a plugin
//! pushed by kubewasm is pulled by those tools and the other way round.
//!
//! An OCI image manifest whose config has the media type
//! `application/vnd.wasm.config.v0+json` and whose one layer is the component itself,
//! `application/wasm`. The config's shape follows oci-wasm 0.6's `WasmConfig` (Apache-2.0).

use oci_client::manifest::OciImageManifest;
use serde::{Deserialize, Serialize};

/// The manifest's media type: a plain OCI image manifest, for registries without OCI 1.1.
pub const MANIFEST_MEDIA_TYPE: &str = "application/vnd.oci.image.manifest.v1+json";
/// The config's media type, by which the artifact is recognised.
pub const CONFIG_MEDIA_TYPE: &str = "application/vnd.wasm.config.v0+json";
/// The one layer's media type: the component's bytes as they are.
pub const LAYER_MEDIA_TYPE: &str = "application/wasm";
/// The layer annotation naming the file on disk (`wkg` sets it too).
pub const TITLE_ANNOTATION: &str = "org.opencontainers.image.title";
/// The manifest annotation saying when the artifact was made.
pub const CREATED_ANNOTATION: &str = "org.opencontainers.image.created";

/// The config blob of a Wasm artifact.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WasmConfig {
    /// When the artifact was made (RFC 3339).
    pub created: String,
    pub author: Option<String>,
    /// Always `wasm`.
    pub architecture: String,
    /// `wasip2` for a component (every plugin), `wasip1` for a core module.
    pub os: String,
    /// The layers' digests, so that the config's own digest differs between artifacts.
    pub layer_digests: Vec<String>,
    /// What the component imports and exports; required for `wasip2`.
    pub component: Option<ComponentSummary>,
}

/// A component's world, as its top-level import and export names.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ComponentSummary {
    pub exports: Vec<String>,
    pub imports: Vec<String>,
    #[serde(default)]
    pub target: Option<String>,
}

/// Why bytes cannot be pushed as, or a manifest pulled is not, a Wasm artifact.
#[derive(Debug, thiserror::Error)]
pub enum ArtifactError {
    #[error("not a WebAssembly component: {0}")]
    NotAComponent(String),
    #[error("not a Wasm artifact: {0}")]
    Layout(String),
    #[error("the artifact's config (application/vnd.wasm.config.v0+json) is not valid: {0}")]
    Config(#[source] serde_json::Error),
}

impl WasmConfig {
    /// The config of a component whose layer digest is `layer_digest`, made at `created`.
    ///
    /// # Errors
    ///
    /// When `bytes` are not a component wasmparser can read.
    pub fn of_component(bytes: &[u8], layer_digest: &str, created: String) -> Result<Self, ArtifactError> {
        Ok(Self {
            created,
            author: None,
            architecture: "wasm".into(),
            os: "wasip2".into(),
            layer_digests: vec![layer_digest.to_owned()],
            component: Some(summary(bytes)?),
        })
    }
}

/// The top-level imports and exports of a component (nested components and modules
/// are its implementation, not its world).
fn summary(bytes: &[u8]) -> Result<ComponentSummary, ArtifactError> {
    let not_a_component = |e: wasmparser::BinaryReaderError| ArtifactError::NotAComponent(e.to_string());
    let mut summary = ComponentSummary { exports: Vec::new(), imports: Vec::new(), target: None };
    let mut depth = 0usize;
    for payload in wasmparser::Parser::new(0).parse_all(bytes) {
        match payload.map_err(not_a_component)? {
            wasmparser::Payload::Version { encoding, .. } => {
                if depth == 0 && encoding != wasmparser::Encoding::Component {
                    return Err(ArtifactError::NotAComponent(
                        "a core module: build the plugin for the wasm32-wasip2 target".into(),
                    ));
                }
                depth += 1;
            }
            wasmparser::Payload::End(_) => depth = depth.saturating_sub(1),
            wasmparser::Payload::ComponentImportSection(section) if depth == 1 => {
                for import in section {
                    summary.imports.push(import.map_err(not_a_component)?.name.name.to_owned());
                }
            }
            wasmparser::Payload::ComponentExportSection(section) if depth == 1 => {
                for export in section {
                    summary.exports.push(export.map_err(not_a_component)?.name.name.to_owned());
                }
            }
            _ => {}
        }
    }
    Ok(summary)
}

/// Checks that `manifest` (with its config blob `config`) is a Wasm artifact as the
/// layout says: the config's media type, exactly one `application/wasm` layer, a
/// component's config whose layer digest is that layer's. Returns the parsed config.
///
/// # Errors
///
/// What is not as the layout says, naming the field.
pub fn check(manifest: &OciImageManifest, config: &[u8]) -> Result<WasmConfig, ArtifactError> {
    if manifest.config.media_type != CONFIG_MEDIA_TYPE {
        return Err(ArtifactError::Layout(format!(
            "config.mediaType is {:?}, expected {CONFIG_MEDIA_TYPE:?}",
            manifest.config.media_type
        )));
    }
    let [layer] = manifest.layers.as_slice() else {
        return Err(ArtifactError::Layout(format!(
            "{} layers, expected exactly one {LAYER_MEDIA_TYPE:?} layer",
            manifest.layers.len()
        )));
    };
    if layer.media_type != LAYER_MEDIA_TYPE {
        return Err(ArtifactError::Layout(format!(
            "layers[0].mediaType is {:?}, expected {LAYER_MEDIA_TYPE:?}",
            layer.media_type
        )));
    }
    let parsed: WasmConfig = serde_json::from_slice(config).map_err(ArtifactError::Config)?;
    if parsed.os != "wasip2" || parsed.component.is_none() {
        return Err(ArtifactError::Layout(format!(
            "config.os is {:?} (component: {}), expected a component (wasip2)",
            parsed.os,
            if parsed.component.is_some() { "present" } else { "absent" }
        )));
    }
    if parsed.layer_digests.first() != Some(&layer.digest) {
        return Err(ArtifactError::Layout(format!(
            "config.layerDigests {:?} does not name the layer {}",
            parsed.layer_digests, layer.digest
        )));
    }
    Ok(parsed)
}

#[cfg(test)]
mod tests {
    use oci_client::manifest::OciDescriptor;

    use super::*;

    fn manifest(config_type: &str, layers: &[(&str, &str)]) -> OciImageManifest {
        let descriptor = |media_type: &str, digest: &str| OciDescriptor {
            media_type: media_type.into(),
            digest: digest.into(),
            ..OciDescriptor::default()
        };
        OciImageManifest {
            config: descriptor(config_type, "sha256:c"),
            layers: layers.iter().map(|(t, d)| descriptor(t, d)).collect(),
            ..OciImageManifest::default()
        }
    }

    fn config(os: &str, layer: &str) -> Vec<u8> {
        let summary = ComponentSummary { exports: vec![], imports: vec![], target: None };
        let config = WasmConfig {
            created: "2026-01-01T00:00:00Z".into(),
            author: None,
            architecture: "wasm".into(),
            os: os.into(),
            layer_digests: vec![layer.into()],
            component: Some(summary),
        };
        serde_json::to_vec(&config).unwrap()
    }

    #[test]
    fn only_the_cncf_layout_with_one_component_layer_is_accepted() {
        let good = manifest(CONFIG_MEDIA_TYPE, &[(LAYER_MEDIA_TYPE, "sha256:l")]);
        assert_eq!(check(&good, &config("wasip2", "sha256:l")).unwrap().os, "wasip2");

        let refused = |manifest: &OciImageManifest, config: &[u8]| check(manifest, config).unwrap_err().to_string();
        // Kubewarden's (wasm-to-oci's) older layout.
        let kubewarden = manifest(
            "application/vnd.wasm.config.v1+json",
            &[("application/vnd.wasm.content.layer.v1+wasm", "sha256:l")],
        );
        assert!(refused(&kubewarden, b"{}").contains("config.mediaType is \"application/vnd.wasm.config.v1+json\""));
        let two = manifest(CONFIG_MEDIA_TYPE, &[(LAYER_MEDIA_TYPE, "sha256:l"), (LAYER_MEDIA_TYPE, "sha256:m")]);
        assert!(refused(&two, &config("wasip2", "sha256:l")).contains("2 layers, expected exactly one"));
        assert!(refused(&good, &config("wasip1", "sha256:l")).contains("expected a component (wasip2)"));
        assert!(refused(&good, &config("wasip2", "sha256:x")).contains("does not name the layer sha256:l"));
        assert!(refused(&good, b"[]").starts_with("the artifact's config"));
    }

    #[test]
    fn a_core_module_is_not_pushed_as_a_component() {
        let core_module = b"\0asm\x01\0\0\0";
        let err = WasmConfig::of_component(core_module, "sha256:l", String::new()).unwrap_err();
        assert!(err.to_string().contains("a core module"), "{err}");
        assert!(WasmConfig::of_component(b"text", "sha256:l", String::new()).is_err());
    }
}
