//! `kubewasm push`, `pull`, `sign` and `verify` against a real OCI registry: Debian's
//! `docker-registry` (the CNCF distribution server), started by each test on a free
//! loopback port with its own storage. The plugins are built by `make plugins`.
//!
//! The registry must be installed (`apt-get install docker-registry`, as `.ci/run`
//! does); without it these tests fail, naming the package.

// Only its target_dir: the rest serves the tests that run hosts.
#[allow(dead_code)]
mod common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use kubewasm::distribution::{self, DockerConfig, Registry, RegistryOptions, artifact, signature};
use kubewasm::resource::{self, PluginSpec, Step};

/// `s3cret`, hashed with bcrypt (the only scheme distribution's htpasswd accepts).
const HTPASSWD: &str = "kw:$2b$04$mcERlzatEJxbpM/D5SWWk.U/hRuDa/jNnzZwzE5ya.IzmwY/N8v86\n";

/// A `docker-registry serve` process and its directory, both gone when dropped.
struct TestRegistry {
    child: Child,
    dir: PathBuf,
    /// `127.0.0.1:PORT`.
    addr: String,
}

impl TestRegistry {
    /// A registry on a free loopback port; with `htpasswd`, one that requires its users.
    fn start(name: &str, htpasswd: Option<&str>) -> Self {
        let bin = std::env::var_os("KUBEWASM_TEST_REGISTRY_BIN")
            .map_or_else(|| PathBuf::from("/usr/bin/docker-registry"), PathBuf::from);
        assert!(
            bin.is_file(),
            "{} is missing: install Debian's `docker-registry` package (apt-get install docker-registry, \
             as .ci/run does) or set KUBEWASM_TEST_REGISTRY_BIN",
            bin.display()
        );
        let dir = common::target_dir().join(format!("registry-test-{name}"));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let auth = match htpasswd {
            Some(users) => {
                std::fs::write(dir.join("htpasswd"), users).unwrap();
                format!("auth:\n  htpasswd:\n    realm: kubewasm-test\n    path: {}\n", dir.join("htpasswd").display())
            }
            None => String::new(),
        };
        let config = format!(
            "version: 0.1\nlog:\n  level: info\n  accesslog:\n    disabled: true\nstorage:\n  filesystem:\n    \
             rootdirectory: {}\n  delete:\n    enabled: true\nhttp:\n  addr: 127.0.0.1:0\n  secret: kubewasm-test\n{auth}",
            dir.join("data").display()
        );
        std::fs::write(dir.join("config.yml"), config).unwrap();
        let mut child = Command::new(&bin)
            .arg("serve")
            .arg(dir.join("config.yml"))
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", bin.display()));
        // It logs the port it was given on stderr; the rest of its log is drained.
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(rest) = line.split("listening on ").nth(1) {
                    let _ = tx.send(rest.split(['"', ' ']).next().unwrap_or_default().to_owned());
                }
            }
        });
        let addr = rx.recv_timeout(Duration::from_secs(30)).expect("docker-registry says where it listens");
        Self { child, dir, addr }
    }

    fn reference(&self, repository_and_tag: &str) -> String {
        format!("{}/{repository_and_tag}", self.addr)
    }

    /// The file the registry keeps a blob in.
    fn blob_path(&self, digest: &str) -> PathBuf {
        let hex = digest.strip_prefix("sha256:").unwrap();
        self.dir.join("data/docker/registry/v2/blobs/sha256").join(&hex[..2]).join(hex).join("data")
    }
}

impl Drop for TestRegistry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn plugin(name: &str) -> PathBuf {
    let path = common::target_dir().join("plugins").join(format!("{name}.wasm"));
    assert!(path.exists(), "{} is missing: run `make plugins` first", path.display());
    path
}

/// A directory for one test's files (keys, pulled modules, the module cache).
fn work_dir(name: &str) -> PathBuf {
    let dir = common::target_dir().join(format!("registry-test-{name}-files"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `kubewasm ARGS` with its own module cache and no docker config of the user's.
fn kubewasm(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kubewasm"))
        .args(args)
        .current_dir(dir)
        .env("KUBEWASM_CACHE_DIR", dir.join("cache"))
        .env("DOCKER_CONFIG", dir.join("no-docker-config"))
        .env("RUST_LOG", "warn")
        .output()
        .expect("kubewasm runs")
}

fn succeeds(out: &Output) -> (String, String) {
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "kubewasm failed:\n{stderr}");
    (stdout.into_owned(), stderr.into_owned())
}

fn fails_with(out: &Output, needle: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "kubewasm succeeded, expected {needle:?}");
    assert!(stderr.contains(needle), "expected {needle:?} in:\n{stderr}");
}

/// `kubewasm push` of the plugin `name` to `reference` (plain HTTP, and `extra` flags):
/// the pinned reference it prints, and its digest.
fn push(dir: &Path, name: &str, reference: &str, extra: &[&str]) -> (String, String) {
    push_file(dir, &plugin(name), reference, extra)
}

/// `kubewasm push` of the component `wasm`, as [`push`].
fn push_file(dir: &Path, wasm: &Path, reference: &str, extra: &[&str]) -> (String, String) {
    let args = [&["push", path(wasm), reference, "--insecure"][..], extra].concat();
    let (stdout, _) = succeeds(&kubewasm(dir, &args));
    let pinned = stdout.trim().to_owned();
    let digest = pinned.rsplit('@').next().unwrap().to_owned();
    (pinned, digest)
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}

#[test]
fn a_pushed_plugin_is_a_wasm_artifact_and_pulls_back_byte_for_byte_by_tag_and_by_digest() {
    let registry = TestRegistry::start("round-trip", None);
    let dir = work_dir("round-trip");
    let wasm = plugin("demo-application");
    let tagged = registry.reference("plugins/demo:0.1.0");

    let (stdout, _) = succeeds(&kubewasm(&dir, &["push", path(&wasm), &tagged, "--insecure"]));
    let pinned = stdout.trim().to_owned();
    assert!(pinned.starts_with(&format!("{}/plugins/demo@sha256:", registry.addr)), "{pinned}");

    // The layout wkg and oci-wasm read.
    let reference = distribution::parse_reference(&tagged).unwrap();
    let options = RegistryOptions { insecure: true, ..RegistryOptions::default() };
    let client = Registry::for_reference(&reference, &options).unwrap();
    let manifest = runtime().block_on(client.manifest(&reference)).unwrap().expect("the tag exists");
    assert_eq!(format!("{}/plugins/demo@{}", registry.addr, manifest.digest), pinned);
    assert_eq!(manifest.manifest.media_type.as_deref(), Some(artifact::MANIFEST_MEDIA_TYPE));
    assert_eq!(manifest.manifest.config.media_type, "application/vnd.wasm.config.v0+json");
    let [layer] = manifest.manifest.layers.as_slice() else { panic!("one layer") };
    assert_eq!(layer.media_type, "application/wasm");
    let bytes = std::fs::read(&wasm).unwrap();
    assert_eq!(layer.digest, format!("sha256:{}", kubewasm::plugin::digest(&bytes)));
    assert_eq!(layer.annotations.as_ref().unwrap()[artifact::TITLE_ANNOTATION], "demo-application.wasm");
    let config = runtime().block_on(client.blob(&reference, &manifest.manifest.config)).unwrap();
    let config = artifact::check(&manifest.manifest, &config).unwrap();
    assert_eq!((config.architecture.as_str(), config.os.as_str()), ("wasm", "wasip2"));
    let component = config.component.unwrap();
    assert!(component.exports.iter().any(|e| e.starts_with("kubewasm:reconciler/reconciler@")), "{component:?}");
    assert!(component.imports.iter().any(|i| i.starts_with("wasi:")), "{component:?}");

    let (_, stderr) = succeeds(&kubewasm(&dir, &["pull", &tagged, "--insecure", "-o", "by-tag.wasm"]));
    assert!(stderr.contains(&format!("pulled {pinned}")), "{stderr}");
    assert!(!stderr.contains("from the cache"), "{stderr}");
    assert_eq!(std::fs::read(dir.join("by-tag.wasm")).unwrap(), bytes);
    // Kept by digest where compiled plugins are kept, and taken from there next time.
    assert_eq!(std::fs::read(dir.join("cache/blobs").join(layer.digest.replace(':', "/"))).unwrap(), bytes);
    let (_, stderr) = succeeds(&kubewasm(&dir, &["pull", &pinned, "--insecure"]));
    assert!(stderr.contains("from the cache"), "{stderr}");
    assert_eq!(std::fs::read(dir.join("demo.wasm")).unwrap(), bytes);

    fails_with(
        &kubewasm(&dir, &["pull", &registry.reference("plugins/demo:0.2.0"), "--insecure"]),
        "plugins/demo:0.2.0: not found in the registry",
    );
}

#[test]
fn credentials_come_from_the_docker_config_given() {
    let registry = TestRegistry::start("credentials", Some(HTPASSWD));
    let dir = work_dir("credentials");
    let wasm = plugin("demo-application");
    let reference = registry.reference("plugins/demo:1");
    let config = |name: &str, auth: &str| {
        let file = dir.join(format!("{name}.json"));
        std::fs::write(&file, format!(r#"{{"auths": {{"{}": {{"auth": "{auth}"}}}}}}"#, registry.addr)).unwrap();
        file
    };
    // base64 of kw:s3cret and of kw:wrong.
    let (good, bad) = (config("good", "a3c6czNjcmV0"), config("bad", "a3c6d3Jvbmcx"));

    let refused = format!("the registry {} wants credentials, or refused those given (HTTP 401)", registry.addr);
    fails_with(&kubewasm(&dir, &["push", path(&wasm), &reference, "--insecure"]), &refused);
    fails_with(
        &kubewasm(&dir, &["push", path(&wasm), &reference, "--insecure", "--registry-config", path(&bad)]),
        &refused,
    );

    succeeds(&kubewasm(&dir, &["push", path(&wasm), &reference, "--insecure", "--registry-config", path(&good)]));
    succeeds(&kubewasm(&dir, &["pull", &reference, "--insecure", "--registry-config", path(&good), "-o", "p.wasm"]));
    assert_eq!(std::fs::read(dir.join("p.wasm")).unwrap(), std::fs::read(&wasm).unwrap());
    fails_with(&kubewasm(&dir, &["pull", &reference, "--insecure", "-o", "q.wasm"]), &refused);

    fails_with(
        &kubewasm(&dir, &["pull", &reference, "--registry-config", path(&dir.join("missing.json"))]),
        "cannot read the docker config",
    );
}

#[test]
fn only_an_artifact_signed_by_a_trusted_key_over_its_own_digest_is_pulled() {
    let registry = TestRegistry::start("signatures", None);
    let dir = work_dir("signatures");
    let tagged = registry.reference("plugins/demo:1");
    succeeds(&kubewasm(&dir, &["generate-key", "release"]));
    succeeds(&kubewasm(&dir, &["generate-key", "other"]));
    fails_with(&kubewasm(&dir, &["generate-key", "release"]), "release.key exists; not overwriting a key");
    let (pinned, digest) = push(&dir, "demo-application", &tagged, &[]);
    let tag = signature::signature_tag(&digest);
    let pull = |key: &str| kubewasm(&dir, &["pull", &tagged, "--insecure", "-o", "p.wasm", "--verify-key", key]);

    fails_with(
        &pull("release.pub"),
        &format!(
            "{pinned} is not signed: the registry has no signature at the tag {tag} and no Sigstore bundle of a \
             signature referring to it"
        ),
    );
    assert!(!dir.join("p.wasm").exists(), "an unsigned module was written");

    let (_, stderr) = succeeds(&kubewasm(&dir, &["sign", &tagged, "--key", "release.key", "--insecure"]));
    assert!(stderr.contains(&format!("signed {pinned} (signature at the tag {tag})")), "{stderr}");
    let (_, stderr) = succeeds(&pull("release.pub"));
    assert!(stderr.contains("verified: signed by release.pub"), "{stderr}");
    let (stdout, _) =
        succeeds(&kubewasm(&dir, &["verify", &tagged, "--insecure", "--key", "other.pub", "--key", "release.pub"]));
    assert_eq!(stdout.trim(), format!("{pinned}: signed by release.pub"));
    std::fs::remove_file(dir.join("p.wasm")).unwrap();

    // Signed, but not by the key trusted.
    fails_with(&pull("other.pub"), &format!("{pinned} is not signed by a trusted key: none of its 1 signature(s)"));
    assert!(!dir.join("p.wasm").exists(), "a module signed by another key was written");

    // A second signer is added beside the first, as cosign does; both then verify.
    succeeds(&kubewasm(&dir, &["sign", &pinned, "--key", "other.key", "--insecure", "-a", "team=platform"]));
    succeeds(&pull("other.pub"));
    succeeds(&pull("release.pub"));
}

#[test]
fn a_tampered_artifact_is_refused_saying_how() {
    let registry = TestRegistry::start("tamper", None);
    let dir = work_dir("tamper");
    let tagged = registry.reference("plugins/demo:1");
    succeeds(&kubewasm(&dir, &["generate-key", "release"]));
    let (signed, signed_digest) = push(&dir, "demo-application", &tagged, &[]);
    succeeds(&kubewasm(&dir, &["sign", &tagged, "--key", "release.key", "--insecure"]));
    let pull = |reference: &str| {
        let _ = std::fs::remove_dir_all(dir.join("cache"));
        kubewasm(&dir, &["pull", reference, "--insecure", "-o", "p.wasm", "--verify-key", "release.pub"])
    };

    // The module's bytes changed in the registry's storage: the layer's digest catches it.
    let reference = distribution::parse_reference(&tagged).unwrap();
    let client =
        Registry::for_reference(&reference, &RegistryOptions { insecure: true, ..Default::default() }).unwrap();
    let manifest = runtime().block_on(client.manifest(&reference)).unwrap().unwrap();
    let blob = registry.blob_path(&manifest.manifest.layers[0].digest);
    let original = std::fs::read(&blob).unwrap();
    let mut altered = original.clone();
    let last = altered.len() - 1;
    altered[last] ^= 0xff;
    std::fs::write(&blob, &altered).unwrap();
    let layer_digest = &manifest.manifest.layers[0].digest;
    let altered_digest = format!("sha256:{}", kubewasm::plugin::digest(&altered));
    fails_with(
        &pull(&tagged),
        &format!(
            "the registry served a blob of digest {altered_digest}, expected {layer_digest} (tampered or corrupt)"
        ),
    );
    assert!(!dir.join("p.wasm").exists(), "a tampered module was written");
    std::fs::write(&blob, &original).unwrap();
    succeeds(&pull(&tagged));

    // Another module under the signed tag: its digest has no signature.
    let (replaced, replaced_digest) = push(&dir, "foo", &tagged, &[]);
    fails_with(&pull(&tagged), &format!("{replaced} is not signed"));

    // The first module's signature copied to the second's signature tag: it verifies, but
    // names the first digest.
    let rt = runtime();
    let signature_of = |digest: &str| {
        distribution::parse_reference(
            &registry.reference(&format!("plugins/demo:{}", signature::signature_tag(digest))),
        )
        .unwrap()
    };
    let copied = rt.block_on(client.manifest(&signature_of(&signed_digest))).unwrap().unwrap();
    rt.block_on(client.push_manifest(&signature_of(&replaced_digest), &copied.manifest)).unwrap();
    fails_with(
        &pull(&tagged),
        &format!("a signature by a trusted key signs {signed_digest}, not this artifact's {replaced_digest}"),
    );

    // Pinned by digest, the signed module still pulls.
    succeeds(&pull(&signed));
    assert_eq!(std::fs::read(dir.join("p.wasm")).unwrap(), original);
}

#[test]
fn a_plugin_resources_module_is_pulled_verified_and_loaded_or_the_failed_step_says_why() {
    let registry = TestRegistry::start("resource", None);
    let dir = work_dir("resource");
    let demo = registry.reference("plugins/demo:1");
    succeeds(&kubewasm(&dir, &["generate-key", "release"]));
    succeeds(&kubewasm(&dir, &["generate-key", "other"]));
    let (_, demo_digest) = push(&dir, "demo-application", &demo, &[]);
    succeeds(&kubewasm(&dir, &["sign", &demo, "--key", "release.key", "--insecure"]));
    let unsigned = registry.reference("plugins/demo:2");
    let (_, foo_digest) = push(&dir, "foo", &unsigned, &[]);

    let key = |name: &str| std::fs::read_to_string(dir.join(format!("{name}.pub"))).unwrap();
    let spec = |oci: &str, keys: Vec<String>| {
        let mut spec = PluginSpec { enabled: true, ..PluginSpec::default() };
        spec.source.oci = oci.to_owned();
        spec.source.insecure = true;
        spec.verification.keys = keys;
        spec
    };
    let engine = kubewasm::plugin::Engine::new().expect("engine");
    let rt = runtime();
    let fetch = |spec: &PluginSpec| {
        let context = resource::Context {
            engine: &engine,
            credentials: DockerConfig::default(),
            cache: None,
            trusted_root: distribution::TrustedRoot::public_good(),
            loaded: Vec::new(),
        };
        rt.block_on(resource::fetch("demo", spec, context))
    };
    let failure = |spec: &PluginSpec| match fetch(spec) {
        Ok(_) => panic!("{} was taken", spec.source.oci),
        Err(failure) => failure,
    };

    let fetched = fetch(&spec(&demo, vec![key("other"), key("release")])).expect("signed by a trusted key");
    assert_eq!(fetched.plugin.manifest().name, "demo-application");
    assert_eq!(fetched.digest, demo_digest);
    assert_eq!(fetched.signed_by.as_deref(), Some("the key spec.verification.keys[1]"));
    let fetched = fetch(&spec(&demo, Vec::new())).expect("no keys, no signature required");
    assert_eq!(fetched.signed_by, None);

    let untrusted = failure(&spec(&demo, vec![key("other")]));
    assert_eq!((untrusted.step, untrusted.reason), (Step::Verified, "UntrustedSigner"));
    let unsigned = failure(&spec(&unsigned, vec![key("release")]));
    assert_eq!((unsigned.step, unsigned.reason), (Step::Verified, "NoSignatures"));
    assert!(unsigned.message.contains(&format!("@{foo_digest} is not signed")), "{}", unsigned.message);
    let missing = failure(&spec(&registry.reference("plugins/none:1"), Vec::new()));
    assert_eq!((missing.step, missing.reason), (Step::Pulled, "PullFailed"));
    let bad_key = failure(&spec(&demo, vec!["not a key".into()]));
    assert_eq!((bad_key.step, bad_key.reason), (Step::Verified, "KeyInvalid"));
    assert!(bad_key.message.starts_with("spec.verification.keys[0]: not a P-256 public key"), "{}", bad_key.message);

    // A digest pins what runs, whatever the tag names.
    let mut pinned = spec(&demo, Vec::new());
    pinned.source.digest = Some(foo_digest.clone());
    let fetched = fetch(&pinned).expect("the pinned manifest");
    assert_eq!((fetched.plugin.manifest().name.as_str(), fetched.digest.as_str()), ("foo", foo_digest.as_str()));

    let mut bad_settings = spec(&demo, Vec::new());
    bad_settings.settings = Some(serde_json::json!({"limits": {"memory-mib": 0}}));
    let refused = failure(&bad_settings);
    assert_eq!((refused.step, refused.reason), (Step::Loaded, "SettingsInvalid"));
    assert_eq!(refused.message, "spec.settings: limits.memory-mib must be positive");
}

/// What a keyless signature needs from Sigstore, made by the test: a Fulcio (a root and
/// an intermediate, ECDSA P-384 as Fulcio's), a Rekor log key and a CT log key (P-256),
/// and the `trusted_root.json` naming them, as `cosign verify --trusted-root` reads it.
struct TestSigstore {
    intermediate: rcgen::CertifiedIssuer<'static, rcgen::KeyPair>,
    chain_pem: String,
    rekor: p256::ecdsa::SigningKey,
    ct_log: p256::ecdsa::SigningKey,
    root_json: String,
}

const TEST_ISSUER: &str = "https://issuer.example.com";

impl TestSigstore {
    fn new() -> Self {
        use base64::Engine as _;
        use p256::pkcs8::EncodePublicKey as _;
        let b64 = base64::engine::general_purpose::STANDARD;
        let ca = |name: &str| {
            let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
            params.distinguished_name.push(rcgen::DnType::CommonName, name);
            params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
            params.key_usages = vec![rcgen::KeyUsagePurpose::KeyCertSign];
            params.not_before = rcgen::date_time_ymd(2026, 1, 1);
            params.not_after = rcgen::date_time_ymd(2036, 1, 1);
            params
        };
        let p384 = || rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P384_SHA384).unwrap();
        let root = rcgen::CertifiedIssuer::self_signed(ca("test fulcio root"), p384()).unwrap();
        // As Fulcio's intermediate, it is for code signing only.
        let mut intermediate = ca("test fulcio");
        intermediate.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::CodeSigning];
        let intermediate = rcgen::CertifiedIssuer::signed_by(intermediate, p384(), &root).unwrap();
        let rekor = p256::ecdsa::SigningKey::random(&mut rand_core::OsRng);
        let rekor_der = rekor.verifying_key().to_public_key_der().unwrap();
        let ct_log = p256::ecdsa::SigningKey::random(&mut rand_core::OsRng);
        let ct_der = ct_log.verifying_key().to_public_key_der().unwrap();
        // A log entry of the trusted root: a P-256 key and its ID, the key's SHA-256.
        let log = |url: &str, der: &[u8]| {
            serde_json::json!({
                "baseUrl": url,
                "hashAlgorithm": "SHA2_256",
                "publicKey": {
                    "rawBytes": b64.encode(der),
                    "keyDetails": "PKIX_ECDSA_P256_SHA_256",
                    "validFor": {"start": "2026-01-01T00:00:00Z"}
                },
                "logId": {"keyId": b64.encode(sha256(der))}
            })
        };
        let root_json = serde_json::json!({
            "mediaType": "application/vnd.dev.sigstore.trustedroot+json;version=0.1",
            "tlogs": [log("https://rekor.example.com", rekor_der.as_bytes())],
            "ctlogs": [log("https://ct.example.com", ct_der.as_bytes())],
            "certificateAuthorities": [{
                "uri": "https://fulcio.example.com",
                "certChain": {"certificates": [
                    {"rawBytes": b64.encode(intermediate.der())},
                    {"rawBytes": b64.encode(root.der())}
                ]},
                "validFor": {"start": "2026-01-01T00:00:00Z"}
            }]
        })
        .to_string();
        let chain_pem = format!("{}{}", intermediate.pem(), root.pem());
        Self { intermediate, chain_pem, rekor, ct_log, root_json }
    }

    /// A certificate for `subject`, valid ten minutes from 2026-06-01T00:00Z, with the CT
    /// log's SCT embedded when `ct_logged`, and its key.
    fn certificate(&self, subject: &str, ct_logged: bool) -> (rcgen::Certificate, p256::ecdsa::SigningKey) {
        use p256::pkcs8::DecodePrivateKey as _;
        let leaf_key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name = rcgen::DistinguishedName::new();
        params.subject_alt_names = vec![rcgen::SanType::Rfc822Name(subject.try_into().unwrap())];
        params.key_usages = vec![rcgen::KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::CodeSigning];
        // Fulcio's issuer extension (1.3.6.1.4.1.57264.1.8), a DER UTF8String.
        let issuer = [&[0x0c, u8::try_from(TEST_ISSUER.len()).unwrap()][..], TEST_ISSUER.as_bytes()].concat();
        params.custom_extensions =
            vec![rcgen::CustomExtension::from_oid_content(&[1, 3, 6, 1, 4, 1, 57264, 1, 8], issuer)];
        params.not_before = rcgen::date_time_ymd(2026, 6, 1);
        params.not_after = rcgen::date_time_ymd(2026, 6, 1) + Duration::from_secs(600);
        params.serial_number = Some(rcgen::SerialNumber::from(vec![0x2a; 16]));
        if ct_logged {
            // As Fulcio does: the CT log signs the certificate as it will be without the
            // SCT list (the precertificate), which is then added.
            let precertificate = params.signed_by(&leaf_key, &self.intermediate).unwrap();
            let sct = self.sct(precertificate.der());
            params
                .custom_extensions
                .push(rcgen::CustomExtension::from_oid_content(&[1, 3, 6, 1, 4, 1, 11129, 2, 4, 2], sct));
        }
        let certificate = params.signed_by(&leaf_key, &self.intermediate).unwrap();
        (certificate, p256::ecdsa::SigningKey::from_pkcs8_der(&leaf_key.serialize_der()).unwrap())
    }

    /// Enters `body` in the test's Rekor, as entry 42, `logged_after` seconds into
    /// 2026-06-01: the entry's canonical JSON and Rekor's signed entry timestamp over it.
    fn log(&self, body: &serde_json::Value, logged_after: i64) -> (TestEntry, String) {
        use base64::Engine as _;
        use p256::ecdsa::signature::Signer as _;
        let b64 = base64::engine::general_purpose::STANDARD;
        let rekor_der = p256::pkcs8::EncodePublicKey::to_public_key_der(self.rekor.verifying_key()).unwrap();
        let entry = TestEntry {
            body: b64.encode(body.to_string()),
            integrated_time: "2026-06-01T00:00:00Z".parse::<jiff::Timestamp>().unwrap().as_second() + logged_after,
            log_id: sha256(rekor_der.as_bytes()),
        };
        // Rekor signs the entry's canonical JSON: these keys, sorted, no spaces.
        let set: p256::ecdsa::Signature = self.rekor.sign(entry.canonical().as_bytes());
        (entry, b64.encode(set.to_der().as_bytes()))
    }

    /// Signs `reference`'s artifact as `cosign sign` does keylessly: a certificate for
    /// `subject` (see [`Self::certificate`]), the signature logged in Rekor `logged_after`
    /// seconds into that day, the layer stored beside the artifact.
    fn sign(&self, registry: &Registry, reference: &str, subject: &str, logged_after: i64, ct_logged: bool) {
        use base64::Engine as _;
        use p256::ecdsa::signature::Signer as _;
        let b64 = base64::engine::general_purpose::STANDARD;
        let (certificate, key) = self.certificate(subject, ct_logged);
        let reference = distribution::parse_reference(reference).unwrap();
        let rt = runtime();
        let manifest = rt.block_on(registry.manifest(&reference)).unwrap().unwrap();
        let payload = signature::payload(&reference, &manifest.digest, Default::default());
        let signed: p256::ecdsa::Signature = key.sign(&payload);
        let signed = b64.encode(signed.to_der().as_bytes());
        let body = serde_json::json!({
            "apiVersion": "0.0.1",
            "kind": "hashedrekord",
            "spec": {
                "data": {"hash": {"algorithm": "sha256", "value": kubewasm::plugin::digest(&payload)}},
                "signature": {"content": signed, "publicKey": {"content": b64.encode(certificate.pem())}}
            }
        });
        let (entry, set) = self.log(&body, logged_after);
        let bundle = format!(r#"{{"SignedEntryTimestamp":"{set}","Payload":{}}}"#, entry.canonical());
        let annotations = [
            (signature::SIGNATURE_ANNOTATION, signed),
            (distribution::keyless::CERTIFICATE_ANNOTATION, certificate.pem()),
            (distribution::keyless::CHAIN_ANNOTATION, self.chain_pem.clone()),
            (distribution::keyless::BUNDLE_ANNOTATION, bundle),
        ];
        let annotations = annotations.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
        rt.block_on(signature::attach(registry, &reference, &manifest.digest, &payload, annotations)).unwrap();
    }

    /// Signs `digest` keylessly as cosign 3 does by default: a Sigstore bundle whose DSSE
    /// envelope is logged in Rekor as a `dsse` entry, five minutes into the certificate's life.
    fn bundle(&self, digest: &str, subject: &str) -> Vec<u8> {
        use base64::Engine as _;
        let b64 = base64::engine::general_purpose::STANDARD;
        let (certificate, key) = self.certificate(subject, true);
        let (envelope, payload, signed) = dsse(&key, &statement(digest, SIGN_PREDICATE));
        let body = serde_json::json!({
            "apiVersion": "0.0.1",
            "kind": "dsse",
            "spec": {
                "envelopeHash": {"algorithm": "sha256", "value": kubewasm::plugin::digest(envelope.to_string().as_bytes())},
                "payloadHash": {"algorithm": "sha256", "value": kubewasm::plugin::digest(&payload)},
                "signatures": [{"signature": signed, "verifier": b64.encode(certificate.pem())}]
            }
        });
        let (entry, set) = self.log(&body, 300);
        serde_json::to_vec(&serde_json::json!({
            "mediaType": BUNDLE_MEDIA_TYPE,
            "verificationMaterial": {
                "certificate": {"rawBytes": b64.encode(certificate.der())},
                "tlogEntries": [{
                    "logIndex": "42",
                    "logId": {"keyId": b64.encode(&entry.log_id)},
                    "kindVersion": {"kind": "dsse", "version": "0.0.1"},
                    "integratedTime": entry.integrated_time.to_string(),
                    "inclusionPromise": {"signedEntryTimestamp": set},
                    "canonicalizedBody": entry.body
                }]
            },
            "dsseEnvelope": envelope
        }))
        .unwrap()
    }
}

/// A Rekor entry as it is signed.
struct TestEntry {
    /// The body's JSON, base64.
    body: String,
    integrated_time: i64,
    log_id: Vec<u8>,
}

impl TestEntry {
    fn canonical(&self) -> String {
        format!(
            r#"{{"body":"{}","integratedTime":{},"logID":"{}","logIndex":42}}"#,
            self.body,
            self.integrated_time,
            self.log_id.iter().map(|b| format!("{b:02x}")).collect::<String>()
        )
    }
}

/// The media type and artifact type of a Sigstore bundle (cosign `specs/BUNDLE_SPEC.md`).
const BUNDLE_MEDIA_TYPE: &str = "application/vnd.dev.sigstore.bundle.v0.3+json";
/// What `cosign sign` states of an image's digest when it writes a bundle.
const SIGN_PREDICATE: &str = "https://sigstore.dev/cosign/sign/v1";

/// The in-toto statement cosign 3 signs: `predicate_type` of the manifest `digest`.
fn statement(digest: &str, predicate_type: &str) -> serde_json::Value {
    let hex = digest.strip_prefix("sha256:").unwrap();
    serde_json::json!({
        "_type": "https://in-toto.io/Statement/v1",
        "subject": [{"digest": {"sha256": hex}, "annotations": {"team": "platform"}}],
        "predicateType": predicate_type,
        "predicate": {}
    })
}

/// A DSSE envelope of `statement` signed by `key` over its pre-authentication encoding:
/// the envelope, its payload, and the signature (base64 DER).
fn dsse(key: &p256::ecdsa::SigningKey, statement: &serde_json::Value) -> (serde_json::Value, Vec<u8>, String) {
    use base64::Engine as _;
    use p256::ecdsa::signature::Signer as _;
    let b64 = base64::engine::general_purpose::STANDARD;
    let payload = statement.to_string().into_bytes();
    let payload_type = "application/vnd.in-toto+json";
    let mut pae = format!("DSSEv1 {} {payload_type} {} ", payload_type.len(), payload.len()).into_bytes();
    pae.extend_from_slice(&payload);
    let signed: p256::ecdsa::Signature = key.sign(&pae);
    let signed = b64.encode(signed.to_der().as_bytes());
    let envelope = serde_json::json!({
        "payload": b64.encode(&payload),
        "payloadType": payload_type,
        "signatures": [{"sig": signed, "keyid": ""}]
    });
    (envelope, payload, signed)
}

/// A keyed bundle as `cosign sign --key` writes it (the key's hint, no Rekor entry read).
fn keyed_bundle(key: &p256::ecdsa::SigningKey, digest: &str, predicate_type: &str) -> Vec<u8> {
    let (envelope, _, _) = dsse(key, &statement(digest, predicate_type));
    serde_json::to_vec(&serde_json::json!({
        "mediaType": BUNDLE_MEDIA_TYPE,
        "verificationMaterial": {"publicKey": {"hint": "release"}},
        "dsseEnvelope": envelope
    }))
    .unwrap()
}

/// Stores `bundle` beside the manifest `digest` of `reference` as cosign 3 does on a
/// registry without the referrers API (distribution 2.8): a manifest whose subject is
/// that digest, added to the index under the tag `sha256-HEX`.
fn attach_bundle(registry: &Registry, reference: &str, digest: &str, bundle: &[u8]) {
    use oci_client::manifest::{ImageIndexEntry, OciDescriptor, OciImageIndex, OciImageManifest, OciManifest};
    let reference = distribution::parse_reference(reference).unwrap();
    let at = |tag_or_digest: &str| {
        let (registry, repository) = (reference.registry().to_owned(), reference.repository().to_owned());
        if tag_or_digest.starts_with("sha256:") {
            oci_client::Reference::with_digest(registry, repository, tag_or_digest.to_owned())
        } else {
            oci_client::Reference::with_tag(registry, repository, tag_or_digest.to_owned())
        }
    };
    let describe = |media_type: &str, bytes: &[u8]| OciDescriptor {
        media_type: media_type.to_owned(),
        digest: format!("sha256:{}", kubewasm::plugin::digest(bytes)),
        size: i64::try_from(bytes.len()).unwrap(),
        ..OciDescriptor::default()
    };
    let rt = runtime();
    let subject = rt.block_on(registry.manifest(&reference)).unwrap().unwrap();
    assert_eq!(subject.digest, digest);
    rt.block_on(registry.push_blob(&reference, bundle)).unwrap();
    rt.block_on(registry.push_blob(&reference, b"{}")).unwrap();
    let manifest = OciImageManifest {
        schema_version: 2,
        media_type: Some(artifact::MANIFEST_MEDIA_TYPE.into()),
        artifact_type: Some(BUNDLE_MEDIA_TYPE.into()),
        config: describe("application/vnd.oci.empty.v1+json", b"{}"),
        layers: vec![describe(BUNDLE_MEDIA_TYPE, bundle)],
        subject: Some(describe(artifact::MANIFEST_MEDIA_TYPE, &subject.bytes)),
        annotations: Some([("dev.sigstore.bundle.content".to_owned(), "dsse-envelope".to_owned())].into()),
    };
    let bytes = serde_json::to_vec(&manifest).unwrap();
    let manifest_digest = format!("sha256:{}", kubewasm::plugin::digest(&bytes));
    rt.block_on(registry.push_manifest(&at(&manifest_digest), &manifest)).unwrap();
    let client = oci_client::Client::new(oci_client::client::ClientConfig {
        protocol: oci_client::client::ClientProtocol::Http,
        ..Default::default()
    });
    let tag = at(&digest.replace(':', "-"));
    let listed = rt.block_on(client.pull_manifest(&tag, &oci_client::secrets::RegistryAuth::Anonymous));
    let mut index = match listed {
        Ok((OciManifest::ImageIndex(index), _)) => index,
        _ => OciImageIndex {
            schema_version: 2,
            media_type: Some("application/vnd.oci.image.index.v1+json".into()),
            manifests: Vec::new(),
            artifact_type: None,
            annotations: None,
        },
    };
    index.manifests.push(ImageIndexEntry {
        media_type: artifact::MANIFEST_MEDIA_TYPE.into(),
        digest: manifest_digest,
        size: i64::try_from(bytes.len()).unwrap(),
        platform: None,
        annotations: None,
        artifact_type: Some(BUNDLE_MEDIA_TYPE.into()),
    });
    rt.block_on(client.push_manifest(&tag, &OciManifest::ImageIndex(index))).unwrap();
}

impl TestSigstore {
    /// The extension value of an SCT list (RFC 6962 3.3) with the CT log's one SCT over
    /// `precertificate`, issued by the test's intermediate.
    fn sct(&self, precertificate: &[u8]) -> Vec<u8> {
        use p256::ecdsa::signature::Signer as _;
        use p256::pkcs8::EncodePublicKey as _;
        use x509_cert::der::{Decode as _, Encode as _};
        let tbs = x509_cert::Certificate::from_der(precertificate).unwrap().tbs_certificate.to_der().unwrap();
        let issuer = x509_cert::Certificate::from_der(self.intermediate.der()).unwrap();
        let issuer_key = issuer.tbs_certificate.subject_public_key_info.to_der().unwrap();
        let timestamp: u64 = 1_780_272_000_000; // 2026-06-01T00:00:00Z, in milliseconds
        let mut signed = vec![0, 0];
        signed.extend_from_slice(&timestamp.to_be_bytes());
        signed.extend_from_slice(&[0, 1]);
        signed.extend_from_slice(&sha256(&issuer_key));
        signed.extend_from_slice(&u32::try_from(tbs.len()).unwrap().to_be_bytes()[1..]);
        signed.extend_from_slice(&tbs);
        signed.extend_from_slice(&[0, 0]);
        let signature: p256::ecdsa::Signature = self.ct_log.sign(&signed);
        let signature = signature.to_der();
        let log_id = sha256(self.ct_log.verifying_key().to_public_key_der().unwrap().as_bytes());
        let mut sct = vec![0];
        sct.extend_from_slice(&log_id);
        sct.extend_from_slice(&timestamp.to_be_bytes());
        sct.extend_from_slice(&[0, 0, 4, 3]);
        sct.extend_from_slice(&u16::try_from(signature.as_bytes().len()).unwrap().to_be_bytes());
        sct.extend_from_slice(signature.as_bytes());
        let mut list = u16::try_from(sct.len() + 2).unwrap().to_be_bytes().to_vec();
        list.extend_from_slice(&u16::try_from(sct.len()).unwrap().to_be_bytes());
        list.extend_from_slice(&sct);
        x509_cert::der::asn1::OctetString::new(list).unwrap().to_der().unwrap()
    }
}

fn sha256(bytes: &[u8]) -> Vec<u8> {
    use sha2::Digest as _;
    sha2::Sha256::digest(bytes).to_vec()
}

#[test]
fn a_keyless_signature_is_trusted_for_the_identity_its_certificate_names_while_it_was_valid() {
    let registry = TestRegistry::start("keyless", None);
    let dir = work_dir("keyless");
    let sigstore = TestSigstore::new();
    std::fs::write(dir.join("trusted_root.json"), &sigstore.root_json).unwrap();
    let client = Registry::for_reference(
        &distribution::parse_reference(&registry.reference("plugins/demo:1")).unwrap(),
        &RegistryOptions { credentials: DockerConfig::default(), insecure: true },
    )
    .unwrap();
    let signed = registry.reference("plugins/demo:1");
    let (pinned, _) = push(&dir, "demo-application", &signed, &[]);
    sigstore.sign(&client, &signed, "release@example.com", 300, true);
    let expired = registry.reference("plugins/demo:2");
    let (expired_pinned, _) = push(&dir, "foo", &expired, &[]);
    // Logged eleven minutes in: after its ten-minute certificate had expired.
    sigstore.sign(&client, &expired, "release@example.com", 660, true);
    // Signed in time, but by a certificate no CT log saw.
    let unlogged = registry.reference("plugins/demo:3");
    push(&dir, "foo", &unlogged, &[]);
    sigstore.sign(&client, &unlogged, "release@example.com", 300, false);

    let verify = |reference: &str, subject: &str, issuer: &str, extra: &[&str]| {
        let args = [
            &[
                "verify",
                reference,
                "--insecure",
                "--certificate-identity",
                subject,
                "--certificate-oidc-issuer",
                issuer,
            ][..],
            extra,
        ]
        .concat();
        kubewasm(&dir, &args)
    };
    let with_root = ["--trusted-root", "trusted_root.json"];
    let (stdout, _) = succeeds(&verify(&signed, "release@example.com", TEST_ISSUER, &with_root));
    assert_eq!(
        stdout.trim(),
        format!("{pinned}: signed by release@example.com (issuer {TEST_ISSUER}), Rekor entry 42")
    );
    fails_with(
        &verify(&signed, "someone@example.com", TEST_ISSUER, &with_root),
        &format!(
            "{pinned} is not signed by a trusted identity: none of its 1 signature(s) verifies: one is signed by \
             release@example.com (issuer {TEST_ISSUER}), not a trusted identity"
        ),
    );
    fails_with(
        &verify(&signed, "release@example.com", "https://other-issuer.example.com", &with_root),
        "not a trusted identity",
    );
    // Against the public-good root, neither the test's Fulcio nor its Rekor is trusted.
    fails_with(
        &verify(&signed, "release@example.com", TEST_ISSUER, &[]),
        "a keyless one is refused: its Rekor entry is from log",
    );
    fails_with(
        &verify(&expired, "release@example.com", TEST_ISSUER, &with_root),
        &format!(
            "{expired_pinned} is not signed by a trusted identity: none of its 1 signature(s) verifies: a keyless one \
             is refused: its certificate is not a code-signing certificate of a trusted Fulcio, valid when logged at \
             2026-06-01T00:11:00Z (https://fulcio.example.com: CertExpired"
        ),
    );
    let loose_prefix = kubewasm(
        &dir,
        &[
            "verify",
            &signed,
            "--insecure",
            "--certificate-identity-prefix",
            "https://github.com/team",
            "--certificate-oidc-issuer",
            TEST_ISSUER,
        ],
    );
    fails_with(&loose_prefix, "the subject prefix \"https://github.com/team\" must be an https:// URL ending at a `/`");
    fails_with(
        &verify(&unlogged, "release@example.com", TEST_ISSUER, &with_root),
        "a keyless one is refused: its certificate has no SCT: Fulcio did not log it in a CT log",
    );
    std::fs::write(dir.join("bad_root.json"), "{}").unwrap();
    fails_with(
        &verify(&signed, "release@example.com", TEST_ISSUER, &["--trusted-root", "bad_root.json"]),
        "bad_root.json: not a Sigstore trusted root: it names no certificate authority or no Rekor log",
    );
    let (_, stderr) = succeeds(&kubewasm(
        &dir,
        &[
            &["pull", &signed, "--insecure", "-o", "p.wasm"][..],
            &["--certificate-identity", "release@example.com", "--certificate-oidc-issuer", TEST_ISSUER],
            &with_root,
        ]
        .concat(),
    ));
    assert!(stderr.contains(&format!("verified: signed by release@example.com (issuer {TEST_ISSUER})")), "{stderr}");

    // A Plugin object names the identity; the host's trusted root is the test's.
    let engine = kubewasm::plugin::Engine::new().expect("engine");
    let root = std::sync::Arc::new(
        distribution::TrustedRoot::from_json(sigstore.root_json.as_bytes(), "trusted_root.json").unwrap(),
    );
    let rt = runtime();
    let fetch = |oci: &str, issuer: &str| {
        let mut spec = PluginSpec { enabled: true, ..PluginSpec::default() };
        spec.source.oci = oci.to_owned();
        spec.source.insecure = true;
        spec.verification.keyless = vec![distribution::Identity {
            issuer: issuer.into(),
            subject: "release@example.com".into(),
            subject_prefix: None,
        }];
        let context = resource::Context {
            engine: &engine,
            credentials: DockerConfig::default(),
            cache: None,
            trusted_root: root.clone(),
            loaded: Vec::new(),
        };
        rt.block_on(resource::fetch("demo", &spec, context))
    };
    let fetched = fetch(&signed, TEST_ISSUER).expect("signed by the identity named");
    assert_eq!(fetched.plugin.manifest().name, "demo-application");
    assert_eq!(
        fetched.signed_by.as_deref(),
        Some(format!("release@example.com (issuer {TEST_ISSUER}), Rekor entry 42").as_str())
    );
    for (oci, issuer) in [(&signed, "https://other-issuer.example.com"), (&expired, TEST_ISSUER)] {
        let Err(refused) = fetch(oci, issuer) else { panic!("{oci} was taken for issuer {issuer}") };
        assert_eq!((refused.step, refused.reason), (Step::Verified, "UntrustedSigner"), "{}", refused.message);
    }
    let Err(incomplete) = fetch(&signed, "") else { panic!("an identity without issuer was taken") };
    assert_eq!((incomplete.step, incomplete.reason), (Step::Verified, "IdentityInvalid"));
    assert_eq!(incomplete.message, "spec.verification.keyless[0]: the issuer is required");
}

#[test]
fn a_sigstore_bundle_referring_to_the_artifact_as_cosign_3_stores_it_is_verified_by_key_or_identity() {
    use p256::pkcs8::DecodePrivateKey as _;
    let registry = TestRegistry::start("bundles", None);
    let dir = work_dir("bundles");
    let sigstore = TestSigstore::new();
    std::fs::write(dir.join("trusted_root.json"), &sigstore.root_json).unwrap();
    succeeds(&kubewasm(&dir, &["generate-key", "release"]));
    succeeds(&kubewasm(&dir, &["generate-key", "other"]));
    let key =
        p256::ecdsa::SigningKey::from_pkcs8_pem(&std::fs::read_to_string(dir.join("release.key")).unwrap()).unwrap();
    let reference = |tag: &str| registry.reference(&format!("plugins/demo:{tag}"));
    let client = Registry::for_reference(
        &distribution::parse_reference(&reference("1")).unwrap(),
        &RegistryOptions { credentials: DockerConfig::default(), insecure: true },
    )
    .unwrap();
    let verify_key = |tag: &str, key: &str| kubewasm(&dir, &["verify", &reference(tag), "--insecure", "--key", key]);

    // Signed with a key.
    let (pinned, digest) = push(&dir, "demo-application", &reference("1"), &[]);
    attach_bundle(&client, &reference("1"), &digest, &keyed_bundle(&key, &digest, SIGN_PREDICATE));
    // `cosign attest` refers to the artifact too; an attestation is not counted as a signature.
    attach_bundle(&client, &reference("1"), &digest, &keyed_bundle(&key, &digest, "https://slsa.dev/provenance/v1"));
    let (stdout, _) = succeeds(&verify_key("1", "release.pub"));
    assert_eq!(stdout.trim(), format!("{pinned}: signed by release.pub"));
    fails_with(
        &verify_key("1", "other.pub"),
        &format!(
            "{pinned} is not signed by a trusted key: none of its 1 signature(s) verifies with the given key(s) \
             (signed with another key, or the signature or payload altered)"
        ),
    );
    let (_, stderr) = succeeds(&kubewasm(
        &dir,
        &["pull", &reference("1"), "--insecure", "-o", "p.wasm", "--verify-key", "release.pub"],
    ));
    assert!(stderr.contains("verified: signed by release.pub"), "{stderr}");
    assert_eq!(std::fs::read(dir.join("p.wasm")).unwrap(), std::fs::read(plugin("demo-application")).unwrap());

    // Signed keylessly, the envelope logged in Rekor.
    let (keyless_pinned, keyless_digest) = push(&dir, "foo", &reference("2"), &[]);
    attach_bundle(&client, &reference("2"), &keyless_digest, &sigstore.bundle(&keyless_digest, "release@example.com"));
    let verify_identity = |subject: &str| {
        kubewasm(
            &dir,
            &[
                "verify",
                &reference("2"),
                "--insecure",
                "--certificate-identity",
                subject,
                "--certificate-oidc-issuer",
                TEST_ISSUER,
                "--trusted-root",
                "trusted_root.json",
            ],
        )
    };
    let (stdout, _) = succeeds(&verify_identity("release@example.com"));
    assert_eq!(
        stdout.trim(),
        format!("{keyless_pinned}: signed by release@example.com (issuer {TEST_ISSUER}), Rekor entry 42")
    );
    fails_with(
        &verify_identity("someone@example.com"),
        &format!("one is signed by release@example.com (issuer {TEST_ISSUER}), not a trusted identity"),
    );

    // An attestation by the trusted key is not a signature of the artifact.
    let (attested_pinned, attested) = push(&dir, "pod-services", &reference("3"), &[]);
    attach_bundle(
        &client,
        &reference("3"),
        &attested,
        &keyed_bundle(&key, &attested, "https://slsa.dev/provenance/v1"),
    );
    fails_with(
        &verify_key("3", "release.pub"),
        &format!(
            "{attested_pinned} is not signed: the registry has no signature at the tag {} and no Sigstore bundle of \
             a signature referring to it, only 1 attestation(s)",
            signature::signature_tag(&attested)
        ),
    );
    // A bundle moved from another artifact names that artifact's digest.
    let (moved_pinned, moved) = push_file(&dir, &fixture("keep-jobs"), &reference("4"), &[]);
    attach_bundle(&client, &reference("4"), &moved, &keyed_bundle(&key, &digest, SIGN_PREDICATE));
    fails_with(
        &verify_key("4", "release.pub"),
        &format!("{moved_pinned}: a signature by a trusted key signs {digest}, not this artifact's {moved}"),
    );
}

/// Polls `check` every 100 ms until it returns something, for at most two minutes: the
/// tests of this binary run at once, each compiling its plugins, on two shared cores.
async fn eventually<T, F: std::future::Future<Output = Option<T>>>(what: &str, mut check: impl FnMut() -> F) -> T {
    let deadline = tokio::time::Instant::now() + Duration::from_mins(2);
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(tokio::time::Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// `kubewasm run --plugin-resources` in-process on the embedded API server, with an empty
/// plugin directory; what it runs and its table recorded after each change.
struct Host {
    cluster: kubewasm_devcluster::DevCluster,
    plugins: kube::Api<kube::api::DynamicObject>,
    /// The names of the running plugins and the host's table.
    shown: std::sync::Arc<std::sync::Mutex<(Vec<String>, String)>>,
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<Result<(), kubewasm::run::Error>>,
}

impl Host {
    async fn start(dir: &Path) -> Self {
        Self::start_with(dir, false).await
    }

    /// Like [`Host::start`]; with `identities`, each plugin acts as its own
    /// `ServiceAccount` in `default` (`kubewasm run --plugin-identities`).
    async fn start_with(dir: &Path, identities: bool) -> Self {
        use kube::api::{ApiResource, GroupVersionKind};
        use kubewasm::run;

        let cluster = kubewasm_devcluster::DevCluster::start(kubewasm_devcluster::Options::default())
            .await
            .expect("the embedded API server starts");
        std::fs::create_dir_all(dir.join("plugins")).unwrap();
        let options = run::Options {
            install_crds: true,
            plugin_resources: true,
            plugin_identities: identities,
            ..run::Options::new(dir.join("plugins"))
        };
        let engine = kubewasm::plugin::Engine::new().expect("engine");
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let client = cluster.client();
        let shown = std::sync::Arc::new(std::sync::Mutex::new((Vec::new(), String::new())));
        let record = shown.clone();
        let task = tokio::spawn(async move {
            let on_change = move |runtime: &kubewasm::Runtime| {
                *record.lock().unwrap() = (runtime.plugins().map(str::to_owned).collect(), run::plugin_table(runtime));
            };
            run::run(&engine, &client, &options, async move { drop(stopped.await) }, on_change).await
        });
        let gvk = GroupVersionKind::gvk("kubewasm.io", "v1alpha1", "Plugin");
        let plugins = kube::Api::all_with(cluster.client(), &ApiResource::from_gvk(&gvk));
        eventually("the Plugin CRD", || async { plugins.list(&Default::default()).await.ok() }).await;
        Self { cluster, plugins, shown, stop, task }
    }

    /// Creates the Plugin `demo` with this spec.
    async fn create_plugin(&self, spec: serde_json::Value) {
        let object = serde_json::json!({
            "apiVersion": "kubewasm.io/v1alpha1", "kind": "Plugin", "metadata": {"name": "demo"}, "spec": spec
        });
        self.plugins.create(&Default::default(), &serde_json::from_value(object).unwrap()).await.expect("a Plugin");
    }

    /// The status of the Plugin `demo` once it has observed `generation`.
    async fn status_at(&self, generation: i64) -> serde_json::Value {
        eventually(&format!("the status of generation {generation}"), || async {
            let status = self.plugins.get("demo").await.ok()?.data["status"].clone();
            (status["observedGeneration"] == generation).then_some(status)
        })
        .await
    }

    async fn stop(self) {
        self.stop.send(()).unwrap();
        self.task.await.unwrap().expect("the host stops cleanly");
        self.cluster.shutdown().await;
    }
}

/// The status and reason of the condition `kind` of a Plugin's status.
fn condition(status: &serde_json::Value, kind: &str) -> Option<(String, String)> {
    let found = status["conditions"].as_array()?.iter().find(|c| c["type"] == kind)?;
    Some((found["status"].as_str()?.to_owned(), found["reason"].as_str()?.to_owned()))
}

#[tokio::test(flavor = "multi_thread")]
async fn the_host_runs_a_plugin_object_and_keeps_its_version_when_a_new_generation_is_refused() {
    use k8s_openapi::api::apps::v1::Deployment;
    use kube::api::{Api, Patch, PatchParams};

    let registry = TestRegistry::start("host", None);
    let dir = work_dir("host");
    let (demo, unsigned) = (registry.reference("plugins/demo:1"), registry.reference("plugins/demo:2"));
    let demo_digest = tokio::task::block_in_place(|| {
        succeeds(&kubewasm(&dir, &["generate-key", "release"]));
        let (_, digest) = push(&dir, "demo-application", &demo, &[]);
        succeeds(&kubewasm(&dir, &["sign", &demo, "--key", "release.key", "--insecure"]));
        push(&dir, "foo", &unsigned, &[]);
        digest
    });
    let key = std::fs::read_to_string(dir.join("release.pub")).unwrap();

    let host = Host::start(&dir).await;
    host.create_plugin(serde_json::json!({"source": {"oci": demo, "insecure": true}, "verification": {"keys": [key]}}))
        .await;
    let status = host.status_at(1).await;
    let expected = |status: &str, reason: &str| Some((status.to_owned(), reason.to_owned()));
    assert_eq!(condition(&status, "Pulled"), expected("True", "Pulled"), "{status}");
    assert_eq!(condition(&status, "Verified"), expected("True", "SignatureVerified"), "{status}");
    assert_eq!(condition(&status, "Loaded"), expected("True", "Loaded"), "{status}");
    let ready = eventually("Ready", || async {
        let status = host.status_at(1).await;
        condition(&status, "Ready").filter(|(s, _)| s == "True")
    })
    .await;
    assert_eq!(Some(ready), expected("True", "Running"));
    assert_eq!(status["digest"], demo_digest.as_str());
    assert_eq!(status["plugin"], "demo-application");
    // What the running version declares reads from the object.
    let manifest = &status["manifest"];
    assert_eq!(manifest["parent"], "paas.cmft.com/v1beta1 DemoApplication", "{status}");
    assert_eq!(manifest["children"], serde_json::json!(["apps/v1 Deployment", "v1 Service"]), "{status}");
    assert_eq!(manifest["contract"], "0.2.0", "{status}");

    // It reconciles: a parent gets its Deployment.
    let parent = |name: &str| {
        format!(
            "apiVersion: paas.cmft.com/v1beta1\nkind: DemoApplication\nmetadata:\n  name: {name}\n  namespace: default\n\
             spec:\n  image: nginx:1.27\n  replica: 1\n  ports:\n  - port: 80\n"
        )
    };
    let deployments: Api<Deployment> = Api::namespaced(host.cluster.client(), "default");
    eventually("the DemoApplication CRD", || async { host.cluster.apply(&parent("web")).ok() }).await;
    eventually("web's Deployment", || async { deployments.get_opt("web").await.ok().flatten() }).await;

    // A generation naming an unsigned module is refused, and says so; what ran runs on.
    let spec = serde_json::json!({"spec": {"source": {"oci": unsigned, "insecure": true}}});
    host.plugins.patch("demo", &PatchParams::default(), &Patch::Merge(&spec)).await.expect("the Plugin patched");
    let status = host.status_at(2).await;
    assert_eq!(condition(&status, "Verified"), expected("False", "NoSignatures"), "{status}");
    assert_eq!(condition(&status, "Loaded"), expected("Unknown", "NotAttempted"), "{status}");
    assert_eq!(condition(&status, "Ready"), expected("False", "GenerationRefused"), "{status}");
    let message = |status: &serde_json::Value, kind: &str| {
        status["conditions"].as_array().unwrap().iter().find(|c| c["type"] == kind).unwrap()["message"].clone()
    };
    assert_eq!(message(&status, "Ready"), format!("generation 2 was refused; {demo_digest} keeps running").as_str());
    assert!(status["lastError"].as_str().unwrap().contains("is not signed"), "{status}");
    assert_eq!(status["digest"], demo_digest.as_str(), "status.digest names what still runs");
    host.cluster.apply(&parent("web2")).expect("a second parent");
    eventually("web2's Deployment, by the version that stayed", || async {
        deployments.get_opt("web2").await.ok().flatten()
    })
    .await;
    let table = host.shown.lock().unwrap().1.clone();
    let line = table.lines().find(|l| l.contains("demo-application")).unwrap_or_else(|| panic!("{table}"));
    assert!(line.contains("running") && line.contains("ERROR Verified failed (NoSignatures)"), "{table}");

    // A deleted Plugin's plugin stops.
    host.plugins.delete("demo", &Default::default()).await.expect("the Plugin deleted");
    eventually("the plugin stopped", || async { host.shown.lock().unwrap().0.is_empty().then_some(()) }).await;
    host.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_plugin_objects_credentials_come_from_its_pull_secret_and_a_failed_pull_is_attempted_again() {
    use k8s_openapi::api::core::v1::Secret;
    use kube::api::{Api, Patch, PatchParams, PostParams};

    let registry = TestRegistry::start("pull-secret", Some(HTPASSWD));
    let dir = work_dir("pull-secret");
    let reference = registry.reference("plugins/demo:1");
    let docker_config = format!(r#"{{"auths": {{"{}": {{"auth": "a3c6czNjcmV0"}}}}}}"#, registry.addr);
    let config = dir.join("config.json");
    std::fs::write(&config, &docker_config).unwrap();
    let credentials = ["--registry-config", path(&config)];
    tokio::task::block_in_place(|| push(&dir, "demo-application", &reference, &credentials));

    let host = Host::start(&dir).await;
    host.create_plugin(serde_json::json!({"source": {"oci": reference, "insecure": true, "pullSecret": "registry"}}))
        .await;
    let pulled = |status: serde_json::Value| condition(&status, "Pulled").unwrap();
    // The Secret is not there yet.
    assert_eq!(pulled(host.status_at(1).await), ("False".into(), "PullSecretUnreadable".into()));

    let secret: Secret = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "registry", "namespace": "default"},
        "type": "kubernetes.io/dockerconfigjson",
        "stringData": {".dockerconfigjson": docker_config}
    }))
    .unwrap();
    Api::<Secret>::namespaced(host.cluster.client(), "default").create(&PostParams::default(), &secret).await.unwrap();
    // The failed generation is attempted again, now with the Secret.
    eventually("the retried generation pulled", || async {
        (pulled(host.status_at(1).await).0 == "True").then_some(())
    })
    .await;

    // A generation whose registry refuses it (no such tag) is attempted again too, and
    // taken once it is pushed.
    let later = registry.reference("plugins/demo:2");
    let spec = serde_json::json!({"spec": {"source": {"oci": later}}});
    host.plugins.patch("demo", &PatchParams::default(), &Patch::Merge(&spec)).await.unwrap();
    assert_eq!(pulled(host.status_at(2).await), ("False".into(), "PullFailed".into()));
    tokio::task::block_in_place(|| push(&dir, "demo-application", &later, &credentials));
    eventually("the second generation pulled", || async {
        (pulled(host.status_at(2).await).0 == "True").then_some(())
    })
    .await;
    host.stop().await;
}

/// A test fixture as `make plugins` builds it.
fn fixture(name: &str) -> PathBuf {
    let path = common::target_dir().join("fixtures").join(format!("{name}.wasm"));
    assert!(path.exists(), "{} is missing: run `make plugins` first", path.display());
    path
}

/// The DemoApplication `name` in `default`, with one replica and one port.
fn demo_application(name: &str) -> String {
    format!(
        "apiVersion: paas.cmft.com/v1beta1\nkind: DemoApplication\nmetadata:\n  name: {name}\n  namespace: default\n\
         spec:\n  image: nginx:1.27\n  replica: 1\n  ports:\n  - port: 80\n"
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn a_candidate_shadows_writing_nothing_then_canaries_a_stable_share_and_is_rolled_back_or_promoted() {
    use std::collections::{BTreeMap, BTreeSet};

    use k8s_openapi::api::apps::v1::Deployment;
    use kube::ResourceExt;
    use kube::api::{Api, ListParams, Patch, PatchParams};

    let registry = TestRegistry::start("rollout", None);
    let dir = work_dir("rollout");
    let (v1, v2) = (registry.reference("plugins/demo:1"), registry.reference("plugins/demo:2"));
    let unsigned = registry.reference("plugins/demo:unsigned");
    // v2 is demo-application with one change: every child carries kubewasm.io/version: v2.
    let v2_digest = tokio::task::block_in_place(|| {
        succeeds(&kubewasm(&dir, &["generate-key", "release"]));
        push(&dir, "demo-application", &v1, &[]);
        let (_, v2_digest) = push_file(&dir, &fixture("demo-relabel"), &v2, &[]);
        push_file(&dir, &fixture("demo-relabel"), &unsigned, &[]);
        for reference in [&v1, &v2] {
            succeeds(&kubewasm(&dir, &["sign", reference, "--key", "release.key", "--insecure"]));
        }
        v2_digest
    });
    let key = std::fs::read_to_string(dir.join("release.pub")).unwrap();
    let host = Host::start(&dir).await;
    host.create_plugin(serde_json::json!({"source": {"oci": v1, "insecure": true}, "verification": {"keys": [key]}}))
        .await;
    host.status_at(1).await;

    let parents: Vec<String> = (0..30).map(|i| format!("app-{i:02}")).collect();
    eventually("the DemoApplication CRD", || async { host.cluster.apply(&demo_application("app-00")).ok() }).await;
    for name in &parents {
        host.cluster.apply(&demo_application(name)).expect("a DemoApplication");
    }
    let deployments: Api<Deployment> = Api::namespaced(host.cluster.client(), "default");
    // Each Deployment's resourceVersion and version label.
    let observed = || async {
        let list = deployments.list(&ListParams::default()).await.ok()?;
        let seen: BTreeMap<String, (String, Option<String>)> = list
            .items
            .iter()
            .map(|d| {
                let version = d.labels().get("kubewasm.io/version").cloned();
                (d.name_any(), (d.resource_version().unwrap_or_default(), version))
            })
            .collect();
        (seen.len() == parents.len()).then_some(seen)
    };
    let labelled = |seen: &BTreeMap<String, (String, Option<String>)>| -> BTreeSet<String> {
        seen.iter().filter(|(_, (_, v))| v.as_deref() == Some("v2")).map(|(n, _)| n.clone()).collect()
    };
    let before = eventually("every parent's Deployment", observed).await;
    assert!(labelled(&before).is_empty());
    let patch = |spec: serde_json::Value| {
        let plugins = host.plugins.clone();
        async move {
            let body = serde_json::json!({"spec": spec});
            plugins.patch("demo", &PatchParams::default(), &Patch::Merge(&body)).await.expect("the Plugin patched");
        }
    };
    let rollout_at = |generation: i64, phase: &'static str| {
        let host = &host;
        async move {
            eventually(&format!("the rollout {phase} at generation {generation}"), || async {
                let status = host.status_at(generation).await;
                (status["rollout"]["phase"] == phase).then_some(status["rollout"].clone())
            })
            .await
        }
    };

    // Shadow: every parent is answered by both, the answers differ by the label, and
    // the candidate writes nothing.
    patch(serde_json::json!({"rollout": {"candidate": {"oci": v2, "insecure": true}, "mode": "Shadow"}})).await;
    rollout_at(2, "Shadow").await;
    let rollout = eventually("every parent compared", || async {
        let rollout = host.status_at(2).await["rollout"].clone();
        (rollout["compared"].as_u64()? >= 30).then_some(rollout)
    })
    .await;
    assert_eq!(rollout["differing"], rollout["compared"], "{rollout}");
    assert_eq!(rollout["candidateErrors"], 0, "{rollout}");
    let lines = rollout["lastDifference"]["lines"].to_string();
    assert!(lines.contains("kubewasm.io/version") && lines.contains("only the candidate"), "{rollout}");
    assert_eq!(eventually("the Deployments", observed).await, before, "shadow wrote nothing");
    let diff = tokio::task::block_in_place(|| {
        Command::new(env!("CARGO_BIN_EXE_kubewasm"))
            .args(["diff", "demo"])
            .env("KUBECONFIG", host.cluster.kubeconfig_path())
            .output()
            .expect("kubewasm diff runs")
    });
    let (printed, _) = succeeds(&diff);
    assert!(printed.contains("reconciles compared") && printed.contains("kubewasm.io/version"), "{printed}");

    // Canary 30 %: exactly the parents the uid hash puts in the share are reconciled by
    // the candidate, and only they.
    let uids: BTreeMap<String, String> = Api::<kube::api::DynamicObject>::namespaced_with(
        host.cluster.client(),
        "default",
        &kube::api::ApiResource::from_gvk(&kube::api::GroupVersionKind::gvk(
            "paas.cmft.com",
            "v1beta1",
            "DemoApplication",
        )),
    )
    .list(&ListParams::default())
    .await
    .unwrap()
    .items
    .iter()
    .map(|o| (o.name_any(), o.uid().unwrap()))
    .collect();
    let share: BTreeSet<String> = parents
        .iter()
        .filter(|name| kubewasm::controller::in_canary("demo-application", &uids[*name], 30))
        .cloned()
        .collect();
    assert!(!share.is_empty() && share.len() < parents.len(), "30 % of 30 parents: {share:?}");
    patch(serde_json::json!({"rollout": {"mode": "Canary", "percent": 30}})).await;
    rollout_at(3, "Canary").await;
    eventually("the canary's share labelled by the candidate", || async {
        (labelled(&observed().await?) == share).then_some(())
    })
    .await;

    // Rolled back by removing the rollout: every parent returns to the active version.
    patch(serde_json::json!({"rollout": null})).await;
    eventually("the rollout gone from the status", || async {
        host.status_at(4).await["rollout"].is_null().then_some(())
    })
    .await;
    eventually("every parent back on the active", || async { labelled(&observed().await?).is_empty().then_some(()) })
        .await;

    // An unsigned candidate never runs; the status says why.
    patch(serde_json::json!({"rollout": {"candidate": {"oci": unsigned, "insecure": true}, "mode": "Canary", "percent": 100}}))
        .await;
    let failed = rollout_at(5, "Failed").await;
    assert!(failed["message"].as_str().unwrap().contains("NoSignatures"), "{failed}");
    assert!(labelled(&eventually("the Deployments", observed).await).is_empty());

    // Promoted by moving the candidate to spec.source: every parent runs it.
    patch(serde_json::json!({"source": {"oci": v2, "insecure": true}, "rollout": null})).await;
    assert_eq!(host.status_at(6).await["digest"], v2_digest.as_str());
    eventually("every parent on the promoted version", || async {
        (labelled(&observed().await?).len() == parents.len()).then_some(())
    })
    .await;
    host.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_canary_that_fails_too_often_is_rolled_back_and_its_parents_return_to_the_active() {
    use k8s_openapi::api::apps::v1::Deployment;
    use kube::ResourceExt;
    use kube::api::{Api, ListParams};

    let registry = TestRegistry::start("rollback", None);
    let dir = work_dir("rollback");
    let (v1, v2) = (registry.reference("plugins/demo:1"), registry.reference("plugins/demo:2"));
    tokio::task::block_in_place(|| {
        push(&dir, "demo-application", &v1, &[]);
        push_file(&dir, &fixture("demo-relabel"), &v2, &[]);
    });
    let host = Host::start(&dir).await;
    // The candidate fails every reconcile (the active ignores the key).
    host.create_plugin(serde_json::json!({
        "source": {"oci": v1, "insecure": true},
        "settings": {"config": {"relabelFails": true}},
        "rollout": {
            "candidate": {"oci": v2, "insecure": true}, "mode": "Canary", "percent": 50,
            "rollback": {"errorPercent": 50, "minReconciles": 3, "windowSeconds": 120}
        }
    }))
    .await;
    eventually("the canary running", || async {
        (host.status_at(1).await["rollout"]["phase"] == "Canary").then_some(())
    })
    .await;
    let parents: Vec<String> = (0..10).map(|i| format!("app-{i}")).collect();
    eventually("the DemoApplication CRD", || async { host.cluster.apply(&demo_application("app-0")).ok() }).await;
    for name in &parents {
        host.cluster.apply(&demo_application(name)).expect("a DemoApplication");
    }
    let rollout = eventually("the candidate rolled back", || async {
        let rollout = host.status_at(1).await["rollout"].clone();
        (rollout["phase"] == "RolledBack").then_some(rollout)
    })
    .await;
    let message = rollout["message"].as_str().unwrap();
    assert!(message.contains("more than 50%") && message.contains("relabelFails is set"), "{rollout}");
    assert!(rollout["candidateErrors"].as_u64().unwrap() >= 3, "{rollout}");
    // Every parent, the canary's share included, is reconciled by the active.
    let deployments: Api<Deployment> = Api::namespaced(host.cluster.client(), "default");
    let list = eventually("every parent's Deployment, by the active", || async {
        let list = deployments.list(&ListParams::default()).await.ok()?;
        (list.items.len() == parents.len()).then_some(list)
    })
    .await;
    assert!(list.items.iter().all(|d| !d.labels().contains_key("kubewasm.io/version")));
    host.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_plugin_acts_as_the_service_account_its_spec_names_and_gets_403_for_what_that_account_may_not_do() {
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::Event;
    use kube::api::{Api, ListParams};

    let registry = TestRegistry::start("identity", None);
    let dir = work_dir("identity");
    let reference = registry.reference("plugins/demo:1");
    tokio::task::block_in_place(|| push(&dir, "demo-application", &reference, &[]));
    let host = Host::start_with(&dir, true).await;
    // team-a may read everything and record events, but write nothing else.
    host.cluster
        .apply(
            "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: team-a\n  namespace: default\n---\n\
             apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: team-a\nrules:\n\
             - apiGroups: [\"*\"]\n  resources: [\"*\"]\n  verbs: [get, list, watch]\n\
             - apiGroups: [\"\", events.k8s.io]\n  resources: [events]\n  verbs: [create, patch, update]\n---\n\
             apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: team-a\n\
             roleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n  name: team-a\n\
             subjects:\n- kind: ServiceAccount\n  name: team-a\n  namespace: default\n",
        )
        .expect("team-a's RBAC");
    host.create_plugin(serde_json::json!({
        "source": {"oci": reference, "insecure": true},
        "identity": {"serviceAccountName": "team-a"}
    }))
    .await;
    host.status_at(1).await;
    eventually("the DemoApplication CRD", || async { host.cluster.apply(&demo_application("web")).ok() }).await;
    let events: Api<Event> = Api::namespaced(host.cluster.client(), "default");
    let refused = eventually("the API server's refusal, recorded on the parent", || async {
        let list = events.list(&ListParams::default()).await.ok()?;
        list.items.into_iter().find_map(|e| e.message.filter(|m| m.contains("forbidden")))
    })
    .await;
    assert!(
        refused.contains(r#"User "system:serviceaccount:default:team-a" cannot"#) && refused.contains("deployments"),
        "{refused}"
    );
    let deployments: Api<Deployment> = Api::namespaced(host.cluster.client(), "default");
    assert!(deployments.get_opt("web").await.unwrap().is_none());
    host.stop().await;
}

/// Waits (a minute at most) until `check` gives a value, failing with what `kubewasm dev`
/// printed.
fn until<T>(what: &str, stderr: &std::sync::Mutex<String>, mut check: impl FnMut() -> Option<T>) -> T {
    let started = std::time::Instant::now();
    loop {
        if let Some(value) = check() {
            return value;
        }
        let said = stderr.lock().unwrap().clone();
        assert!(started.elapsed() < Duration::from_mins(1), "gave up waiting for {what}; kubewasm dev said:\n{said}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn through_kubewasm_dev_and_kubectl_a_pushed_and_signed_plugin_runs_and_its_next_version_shadows_then_canaries() {
    let registry = TestRegistry::start("dev", None);
    let dir = work_dir("dev");
    let (v1, v2) = (registry.reference("team-a/demo:1.0.0"), registry.reference("team-a/demo:1.1.0"));
    succeeds(&kubewasm(&dir, &["generate-key", "release"]));
    push(&dir, "demo-application", &v1, &[]);
    push_file(&dir, &fixture("demo-relabel"), &v2, &[]);
    // 1.0.0 is signed keylessly (the host is given the signer's trusted root), 1.1.0 with the key.
    let sigstore = TestSigstore::new();
    std::fs::write(dir.join("trusted_root.json"), &sigstore.root_json).unwrap();
    let client = Registry::for_reference(
        &distribution::parse_reference(&v1).unwrap(),
        &RegistryOptions { credentials: DockerConfig::default(), insecure: true },
    )
    .unwrap();
    sigstore.sign(&client, &v1, "release@example.com", 300, true);
    succeeds(&kubewasm(&dir, &["sign", &v2, "--key", "release.key", "--insecure"]));
    let key = std::fs::read_to_string(dir.join("release.pub")).unwrap();
    let plugins = dir.join("plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    let kubeconfig = dir.join("kubeconfig");
    let (child, stderr) = common::spawn_collecting_stderr(
        common::kubewasm_dev(&plugins, &kubeconfig)
            .arg("--plugin-resources")
            .arg("--trusted-root")
            .arg(dir.join("trusted_root.json")),
    );
    struct Stop(Child);
    impl Drop for Stop {
        fn drop(&mut self) {
            let _ = Command::new("kill").args(["-TERM", &self.0.id().to_string()]).status();
            let _ = self.0.wait();
        }
    }
    let _dev = Stop(child);
    let ok = |out: Output| out.status.success().then(|| String::from_utf8_lossy(&out.stdout).into_owned());
    until("the Plugin kind served", &stderr, || ok(common::kubectl(&kubeconfig, &["get", "plugins"], "")));

    let key_lines: String = key.lines().map(|l| format!("        {l}\n")).collect();
    let plugin = format!(
        "apiVersion: kubewasm.io/v1alpha1\nkind: Plugin\nmetadata:\n  name: demo\nspec:\n  source:\n    oci: {v1}\n    \
         insecure: true\n  verification:\n    keyless:\n      - issuer: {TEST_ISSUER}\n        subject: \
         release@example.com\n    keys:\n      - |\n{key_lines}"
    );
    ok(common::kubectl(&kubeconfig, &["apply", "-f", "-"], &plugin)).expect("the Plugin applied");
    let ready = "jsonpath={.status.conditions[?(@.type==\"Ready\")].status}";
    until("the Plugin ready", &stderr, || {
        ok(common::kubectl(&kubeconfig, &["get", "plugin", "demo", "-o", ready], "")).filter(|s| s == "True")
    });
    let table = ok(common::kubectl(&kubeconfig, &["get", "plugins"], "")).unwrap();
    assert!(table.contains("VERIFIED") && table.lines().nth(1).is_some_and(|l| l.contains("True")), "{table}");
    let verified = "jsonpath={.status.conditions[?(@.type==\"Verified\")].message}";
    let signer = ok(common::kubectl(&kubeconfig, &["get", "plugin", "demo", "-o", verified], "")).unwrap();
    assert_eq!(signer, format!("signed by release@example.com (issuer {TEST_ISSUER}), Rekor entry 42"));

    until("the DemoApplication kind", &stderr, || {
        ok(common::kubectl(&kubeconfig, &["apply", "-f", "-"], &demo_application("web")))
    });
    let label = "jsonpath={.metadata.labels.kubewasm\\.io/version}";
    until("web's Deployment", &stderr, || {
        ok(common::kubectl(&kubeconfig, &["get", "deployment", "web", "-o", label], ""))
    });

    let shadow =
        format!(r#"{{"spec": {{"rollout": {{"candidate": {{"oci": "{v2}", "insecure": true}}, "mode": "Shadow"}}}}}}"#);
    ok(common::kubectl(&kubeconfig, &["patch", "plugin", "demo", "--type", "merge", "-p", &shadow], ""))
        .expect("patched");
    let diff = until("a difference reported", &stderr, || {
        let out = Command::new(env!("CARGO_BIN_EXE_kubewasm"))
            .args(["diff", "demo"])
            .env("KUBECONFIG", &kubeconfig)
            .output()
            .expect("kubewasm diff runs");
        ok(out).filter(|printed| printed.contains("latest difference"))
    });
    assert!(diff.contains("Shadow") && diff.contains("kubewasm.io/version"), "{diff}");
    let version = ok(common::kubectl(&kubeconfig, &["get", "deployment", "web", "-o", label], "")).unwrap();
    assert_eq!(version, "", "the candidate in shadow wrote nothing");

    let canary = r#"{"spec": {"rollout": {"mode": "Canary", "percent": 100}}}"#;
    ok(common::kubectl(&kubeconfig, &["patch", "plugin", "demo", "--type", "merge", "-p", canary], ""))
        .expect("patched");
    until("web reconciled by the candidate", &stderr, || {
        ok(common::kubectl(&kubeconfig, &["get", "deployment", "web", "-o", label], "")).filter(|v| v == "v2")
    });
    let phase =
        ok(common::kubectl(&kubeconfig, &["get", "plugin", "demo", "-o", "jsonpath={.status.rollout.phase}"], ""));
    assert_eq!(phase.as_deref(), Some("Canary"));
}
