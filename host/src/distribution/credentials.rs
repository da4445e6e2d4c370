//! Registry credentials from a docker config: the `~/.docker/config.json` that
//! `docker login` writes, or the `.dockerconfigjson` of a `kubernetes.io/dockerconfigjson`
//! Secret (the same JSON).
//!
//! Only credentials stored in the file are read (`auths.REGISTRY.auth`, or its `username`
//! and `password`); credential helpers (`credsStore`, `credHelpers`) and identity tokens
//! are not run or exchanged: such a registry is reached anonymously, with a warning.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use oci_client::secrets::RegistryAuth;
use serde::Deserialize;

/// The registries' credentials of one docker config.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct DockerConfig {
    #[serde(default)]
    auths: BTreeMap<String, AuthEntry>,
}

#[derive(Clone, Deserialize)]
struct AuthEntry {
    /// base64 of `username:password`.
    #[serde(default)]
    auth: Option<String>,
    #[serde(default)]
    username: Option<String>,
    #[serde(default)]
    password: Option<String>,
    #[serde(default, rename = "identitytoken")]
    identity_token: Option<String>,
}

// Never print the secrets.
impl std::fmt::Debug for AuthEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthEntry").field("username", &self.username).finish_non_exhaustive()
    }
}

/// A docker config that cannot be read or understood.
#[derive(Debug, thiserror::Error)]
pub enum CredentialsError {
    #[error("cannot read the docker config {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("{origin} is not a docker config: {source}")]
    Parse { origin: String, source: serde_json::Error },
    #[error("{origin}: auths.{registry}.auth is not base64 of USER:PASSWORD")]
    BadAuth { origin: String, registry: String },
    #[error("Secret {secret} has no key .dockerconfigjson (make it with kubectl create secret docker-registry)")]
    NotDockerConfig { secret: String },
}

impl DockerConfig {
    /// Reads the docker config at `path`.
    ///
    /// # Errors
    ///
    /// When the file cannot be read or is not a docker config.
    pub fn read(path: &Path) -> Result<Self, CredentialsError> {
        let bytes = std::fs::read(path).map_err(|source| CredentialsError::Read { path: path.to_owned(), source })?;
        Self::from_json(&bytes, &path.display().to_string())
    }

    /// The docker config of `DOCKER_CONFIG/config.json`, else `~/.docker/config.json`;
    /// no credentials when neither exists.
    ///
    /// # Errors
    ///
    /// When the file exists but cannot be read or understood.
    pub fn default_location() -> Result<Self, CredentialsError> {
        let dir = std::env::var_os("DOCKER_CONFIG")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".docker")));
        match dir.map(|d| d.join("config.json")) {
            Some(path) if path.is_file() => Self::read(&path),
            _ => Ok(Self::default()),
        }
    }

    /// The docker config of a `kubernetes.io/dockerconfigjson` Secret (`namespace/name`
    /// in errors), its key `.dockerconfigjson`.
    ///
    /// # Errors
    ///
    /// When the Secret has no such key or it is not a docker config.
    pub fn from_secret(secret: &k8s_openapi::api::core::v1::Secret) -> Result<Self, CredentialsError> {
        let name = format!(
            "{}/{}",
            secret.metadata.namespace.as_deref().unwrap_or_default(),
            secret.metadata.name.as_deref().unwrap_or_default()
        );
        let bytes = secret
            .data
            .as_ref()
            .and_then(|data| data.get(".dockerconfigjson"))
            .ok_or_else(|| CredentialsError::NotDockerConfig { secret: name.clone() })?;
        Self::from_json(&bytes.0, &format!("Secret {name}"))
    }

    /// Parses a docker config (`origin` names it in errors: a file, a Secret).
    ///
    /// # Errors
    ///
    /// When `bytes` are not a docker config's JSON, or an `auth` is not base64 of
    /// `USER:PASSWORD`.
    pub fn from_json(bytes: &[u8], origin: &str) -> Result<Self, CredentialsError> {
        let config: Self = serde_json::from_slice(bytes)
            .map_err(|source| CredentialsError::Parse { origin: origin.to_owned(), source })?;
        for (registry, entry) in &config.auths {
            if let Some(auth) = &entry.auth
                && decode_auth(auth).is_none()
            {
                return Err(CredentialsError::BadAuth { origin: origin.to_owned(), registry: registry.clone() });
            }
        }
        Ok(config)
    }

    /// The credentials for `registry` (`host[:port]`, as in a reference): the entry
    /// keyed by it, by `https://` or `http://` and it, or, for Docker Hub, by its legacy
    /// key. Anonymous when there is none.
    pub fn auth_for(&self, registry: &str) -> RegistryAuth {
        let mut keys = vec![
            registry.to_owned(),
            format!("https://{registry}"),
            format!("http://{registry}"),
            format!("https://{registry}/v1/"),
        ];
        if registry == "docker.io" || registry == "index.docker.io" || registry == "registry-1.docker.io" {
            keys.push("https://index.docker.io/v1/".into());
        }
        let Some(entry) = keys.iter().find_map(|key| self.auths.get(key)) else {
            return RegistryAuth::Anonymous;
        };
        if let Some((user, password)) = entry.auth.as_deref().and_then(decode_auth) {
            return RegistryAuth::Basic(user, password);
        }
        if let (Some(user), Some(password)) = (&entry.username, &entry.password) {
            return RegistryAuth::Basic(user.clone(), password.clone());
        }
        if entry.identity_token.is_some() {
            tracing::warn!(registry, "identity tokens are not supported; pulling anonymously");
        }
        RegistryAuth::Anonymous
    }
}

/// `USER:PASSWORD` from base64.
fn decode_auth(auth: &str) -> Option<(String, String)> {
    let bytes = base64::engine::general_purpose::STANDARD.decode(auth.trim()).ok()?;
    let text = String::from_utf8(bytes).ok()?;
    let (user, password) = text.split_once(':')?;
    Some((user.to_owned(), password.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn basic(auth: &RegistryAuth) -> Option<(&str, &str)> {
        match auth {
            RegistryAuth::Basic(user, password) => Some((user, password)),
            _ => None,
        }
    }

    #[test]
    fn auth_and_username_password_forms_are_read_and_looked_up_by_host() {
        let config = DockerConfig::from_json(
            br#"{"auths": {
                "127.0.0.1:5000": {"auth": "a3c6czNjcmV0"},
                "https://registry.example": {"username": "u", "password": "p:w"}
            }}"#,
            "test",
        )
        .unwrap();
        assert_eq!(basic(&config.auth_for("127.0.0.1:5000")), Some(("kw", "s3cret")));
        assert_eq!(basic(&config.auth_for("registry.example")), Some(("u", "p:w")));
        assert!(matches!(config.auth_for("other.example"), RegistryAuth::Anonymous));
    }

    #[test]
    fn a_docker_config_secret_is_read_from_its_key() {
        let secret: k8s_openapi::api::core::v1::Secret = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "registry", "namespace": "kubewasm-system"},
            "type": "kubernetes.io/dockerconfigjson",
            // {"auths":{"r.example":{"username":"kw","password":"s3cret"}}}
            "data": {".dockerconfigjson": "eyJhdXRocyI6eyJyLmV4YW1wbGUiOnsidXNlcm5hbWUiOiJrdyIsInBhc3N3b3JkIjoiczNjcmV0In19fQ=="}
        }))
        .unwrap();
        let config = DockerConfig::from_secret(&secret).unwrap();
        assert_eq!(basic(&config.auth_for("r.example")), Some(("kw", "s3cret")));
        let opaque: k8s_openapi::api::core::v1::Secret =
            serde_json::from_value(serde_json::json!({"metadata": {"name": "x", "namespace": "ns"}})).unwrap();
        assert_eq!(
            DockerConfig::from_secret(&opaque).unwrap_err().to_string(),
            "Secret ns/x has no key .dockerconfigjson (make it with kubectl create secret docker-registry)"
        );
    }

    #[test]
    fn a_bad_auth_is_refused_naming_the_registry() {
        let err = DockerConfig::from_json(br#"{"auths": {"r.example": {"auth": "not base64!"}}}"#, "config.json")
            .unwrap_err();
        assert_eq!(err.to_string(), "config.json: auths.r.example.auth is not base64 of USER:PASSWORD");
    }
}
