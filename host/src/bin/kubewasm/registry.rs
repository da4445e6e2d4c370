//! `kubewasm push`, `pull`, `sign`, `verify` and `generate-key`: plugins in OCI
//! registries and their cosign signatures, on the library's `distribution` module.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result};
use kubewasm::distribution::{
    self, BlobCache, DockerConfig, Identity, Registry, RegistryOptions, SignedBy, SigningKey, Trust, TrustedRoot,
    Verified, VerifyingKey,
};

use crate::cli::{self, Command, KeylessArgs, RegistryArgs};

/// Runs one of this module's commands.
pub fn command(command: Command) -> Result<()> {
    let runtime = || crate::tokio_runtime();
    match command {
        Command::Push { plugin, reference, registry } => runtime()?.block_on(push(&plugin, &reference, &registry)),
        Command::Pull { reference, output, verify_keys, keyless, registry } => {
            runtime()?.block_on(pull(&reference, output, &verify_keys, &keyless, &registry))
        }
        Command::Sign { reference, key, annotations, registry } => {
            runtime()?.block_on(sign(&reference, &key, &annotations, &registry))
        }
        Command::Verify { reference, keys, keyless, registry } => {
            runtime()?.block_on(verify(&reference, &keys, &keyless, &registry))
        }
        Command::GenerateKey { prefix } => generate_key(&prefix),
        _ => unreachable!("not a registry command"),
    }
}

/// The registry options of the command's flags.
fn options(args: &RegistryArgs) -> Result<RegistryOptions> {
    let credentials = match &args.registry_config {
        Some(path) => DockerConfig::read(path)?,
        None => DockerConfig::default_location()?,
    };
    Ok(RegistryOptions { credentials, insecure: args.insecure })
}

fn read_text(path: &Path, what: &str) -> Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("cannot read the {what} {}", path.display()))
}

/// Who the command's flags trust: the public keys of `paths`, and the keyless signer.
fn trust(paths: &[PathBuf], keyless: &KeylessArgs) -> Result<Trust> {
    let keys = paths
        .iter()
        .map(|path| Ok(VerifyingKey::from_pem(&read_text(path, "public key")?, &path.display().to_string())?))
        .collect::<Result<_>>()?;
    let identities = match &keyless.certificate_oidc_issuer {
        Some(issuer) => {
            let identity = Identity {
                issuer: issuer.clone(),
                subject: keyless.certificate_identity.clone().unwrap_or_default(),
                subject_prefix: keyless.certificate_identity_prefix.clone(),
            };
            identity.check().map_err(|why| {
                anyhow::anyhow!(
                    "--certificate-identity or --certificate-identity-prefix, and --certificate-oidc-issuer: {why}"
                )
            })?;
            vec![identity]
        }
        None => Vec::new(),
    };
    Ok(Trust { keys, identities, root: trusted_root(keyless.trusted_root.as_deref())? })
}

/// The Sigstore trusted root of `path`, or the public-good instance's.
pub fn trusted_root(path: Option<&Path>) -> Result<Arc<TrustedRoot>> {
    match path {
        None => Ok(TrustedRoot::public_good()),
        Some(path) => {
            let json =
                std::fs::read(path).with_context(|| format!("cannot read the trusted root {}", path.display()))?;
            Ok(Arc::new(TrustedRoot::from_json(&json, &path.display().to_string())?))
        }
    }
}

/// Who made the signature, in the terms of the command's flags.
fn signer(verified: &Verified, key_paths: &[PathBuf]) -> String {
    match &verified.by {
        SignedBy::Key(i) => key_paths[*i].display().to_string(),
        SignedBy::Identity(signer) => format!("{signer}, Rekor entry {}", signer.log_index),
    }
}

/// `kubewasm push PLUGIN REF`.
async fn push(plugin: &Path, reference: &str, args: &RegistryArgs) -> Result<()> {
    let reference = distribution::parse_reference(reference)?;
    let bytes = std::fs::read(plugin).with_context(|| format!("cannot read {}", plugin.display()))?;
    let title = plugin.file_name().map_or_else(|| "plugin.wasm".into(), |n| n.to_string_lossy().into_owned());
    let registry = Registry::for_reference(&reference, &options(args)?)?;
    let digest = registry
        .push_component(&reference, &bytes, &title, jiff::Timestamp::now().to_string())
        .await
        .with_context(|| format!("cannot push {}", plugin.display()))?;
    eprintln!("pushed {} ({} bytes)", reference.whole(), bytes.len());
    println!("{}/{}@{digest}", reference.registry(), reference.repository());
    Ok(())
}

/// `kubewasm pull REF`.
async fn pull(
    reference: &str,
    output: Option<PathBuf>,
    key_paths: &[PathBuf],
    keyless: &KeylessArgs,
    args: &RegistryArgs,
) -> Result<()> {
    let reference = distribution::parse_reference(reference)?;
    let trust = trust(key_paths, keyless)?;
    let cache = cli::default_cache_dir().map(|dir| BlobCache::new(&dir));
    let pulled = distribution::pull(&reference, &options(args)?, &trust, cache.as_ref()).await?;
    let output = output.unwrap_or_else(|| {
        let name = reference.repository().rsplit('/').next().unwrap_or("plugin");
        PathBuf::from(format!("{name}.wasm"))
    });
    std::fs::write(&output, &pulled.bytes).with_context(|| format!("cannot write {}", output.display()))?;
    if let Some(verified) = &pulled.verified {
        eprintln!("verified: signed by {}", signer(verified, key_paths));
    }
    eprintln!(
        "pulled {}/{}@{} ({} bytes{}) to {}",
        reference.registry(),
        reference.repository(),
        pulled.manifest_digest,
        pulled.bytes.len(),
        if pulled.cached { ", from the cache" } else { "" },
        output.display()
    );
    Ok(())
}

/// `kubewasm sign REF --key KEY`.
async fn sign(reference: &str, key: &Path, annotations: &[String], args: &RegistryArgs) -> Result<()> {
    let reference = distribution::parse_reference(reference)?;
    let key = SigningKey::from_pem(&read_text(key, "private key")?, &key.display().to_string())?;
    let annotations = annotations
        .iter()
        .map(|a| {
            a.split_once('=')
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .with_context(|| format!("--annotation {a:?} is not KEY=VALUE"))
        })
        .collect::<Result<BTreeMap<_, _>>>()?;
    let registry = Registry::for_reference(&reference, &options(args)?)?;
    let signed = distribution::signature::sign(&registry, &reference, &key, annotations).await?;
    eprintln!(
        "{} {}/{}@{} (signature at the tag {})",
        if signed.already { "already signed with this key:" } else { "signed" },
        reference.registry(),
        reference.repository(),
        signed.digest,
        signed.tag
    );
    Ok(())
}

/// `kubewasm verify REF --key PUB` or `--certificate-identity ... --certificate-oidc-issuer ...`.
async fn verify(reference: &str, key_paths: &[PathBuf], keyless: &KeylessArgs, args: &RegistryArgs) -> Result<()> {
    let reference = distribution::parse_reference(reference)?;
    let trust = trust(key_paths, keyless)?;
    let registry = Registry::for_reference(&reference, &options(args)?)?;
    let manifest = registry
        .manifest(&reference)
        .await?
        .ok_or_else(|| distribution::OciError::NotFound { reference: reference.whole() })?;
    let verified = distribution::signature::verify(&registry, &reference, &manifest.digest, &trust).await?;
    println!(
        "{}/{}@{}: signed by {}",
        reference.registry(),
        reference.repository(),
        manifest.digest,
        signer(&verified, key_paths)
    );
    Ok(())
}

/// `kubewasm generate-key PREFIX`: PREFIX.key and PREFIX.pub, never over existing files.
fn generate_key(prefix: &Path) -> Result<()> {
    let with = |extension: &str| {
        let mut path = prefix.as_os_str().to_owned();
        path.push(extension);
        PathBuf::from(path)
    };
    let (private, public) = (with(".key"), with(".pub"));
    for path in [&private, &public] {
        anyhow::ensure!(!path.exists(), "{} exists; not overwriting a key", path.display());
    }
    let key = SigningKey::generate();
    write_secret(&private, key.to_pem()?.as_bytes())?;
    std::fs::write(&public, key.verifying_key().to_pem()?)
        .with_context(|| format!("cannot write {}", public.display()))?;
    eprintln!("wrote {} (private, unencrypted: keep it secret) and {}", private.display(), public.display());
    Ok(())
}

/// Writes `bytes` to a new file only its owner can read.
fn write_secret(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("cannot create {}", path.display()))?;
    file.write_all(bytes).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}
