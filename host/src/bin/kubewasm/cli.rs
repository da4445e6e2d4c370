//! The command line: every subcommand and flag, in one place.

// The doc comments are the `--help` text, written for a terminal, not for rustdoc.
#![allow(clippy::doc_markdown)]

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Parser, Subcommand, ValueEnum};
use kubewasm::coordination::{self, LeaderElection, ReplicaMode, Sharding};
use kubewasm::plugin::EngineOptions;

/// Kubernetes controllers whose reconcile logic is a sandboxed WebAssembly component.
#[derive(Debug, Parser)]
#[command(name = "kubewasm", version, about)]
pub struct Cli {
    /// Log lines on stderr: `text` for people, `json` (one object per line, with the
    /// spans' `plugin` and `object`) for log collectors. Filter with RUST_LOG.
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    #[cfg(feature = "dev")]
    /// Development: an embedded API server on loopback, the plugins' CRDs installed,
    /// and a controller per plugin, each new build taking over at once. Plugin projects
    /// (given with --watch, or directories in DIR) are built from source whenever they
    /// change. Prints the `export KUBECONFIG=...` line for kubectl.
    Dev {
        /// The plugin directory: every `*.wasm` in it; plugin projects in its
        /// directories are built into it as with --watch.
        #[arg(long = "plugins", value_name = "DIR")]
        dir: PathBuf,
        /// Plugin projects to build into DIR (as PROJECT.wasm, after the directory's
        /// name) now and whenever their sources change: a Rust crate (cargo, profile
        /// plugin-dev), a Python project (app.py, componentize-py), an npm package
        /// (the JavaScript SDK's build) or a Go module (go build, then componentize).
        /// A build that fails is shown and leaves the running version in place.
        #[arg(long, value_name = "PROJECT", num_args = 1..)]
        watch: Vec<PathBuf>,
        /// Keep the cluster's objects here across restarts (and its kubeconfig).
        #[arg(long)]
        data_dir: Option<PathBuf>,
        /// Where to write the kubeconfig (default: DATA_DIR/kubeconfig, or a
        /// temporary file).
        #[arg(long)]
        kubeconfig: Option<PathBuf>,
        /// The API server's loopback port (default: any free port).
        #[arg(long)]
        port: Option<u16>,
        /// Serve /healthz and /readyz on this address (default: not served).
        #[arg(long, value_name = "ADDR")]
        health_addr: Option<SocketAddr>,
        /// Inject the faults of this YAML or JSON file into the API server (failed
        /// requests, cut or delayed watches, stale reads), to try plugins under them.
        #[arg(long, value_name = "FILE")]
        faults: Option<PathBuf>,
        /// Serve plain HTTP instead of HTTPS: no TLS and no client certificates, and a
        /// request without credentials is the administrator's (default: HTTPS, with a CA
        /// kept in DATA_DIR and a kubeconfig of the cluster administrator).
        #[arg(long)]
        insecure_http: bool,
        /// Serve the plugins' admission and conversion webhooks here, over HTTPS with a CA
        /// made at start, and register them with the embedded API server as `kubewasm run`
        /// registers them in a cluster (default: a free loopback port).
        #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:0")]
        webhook_listen: SocketAddr,
        #[command(flatten)]
        host: HostArgs,
    },
    /// Production: run a controller per plugin against the cluster of the in-cluster
    /// config or KUBECONFIG.
    Run {
        /// The plugin directory: every `*.wasm` in it.
        #[arg(long = "plugins", value_name = "DIR")]
        dir: PathBuf,
        /// Serve /healthz (liveness), /readyz (readiness) and /metrics on this address.
        #[arg(long, value_name = "ADDR", default_value = "0.0.0.0:8080")]
        health_addr: SocketAddr,
        #[command(flatten)]
        webhooks: WebhookArgs,
        #[command(flatten)]
        host: HostArgs,
        #[command(flatten)]
        leader: LeaderArgs,
        /// Each plugin reads and writes as its own ServiceAccount, kubewasm-plugin-NAME in
        /// the host's namespace, impersonated (`kubewasm rbac --plugin-identities` writes
        /// them and lets the host impersonate only them).
        #[arg(long)]
        plugin_identities: bool,
    },
    /// Create a plugin crate to start from: a reconciler with its CRD, native tests
    /// and examples, that builds to a component as it is.
    New {
        /// The plugin's name: lowercase letters, digits and dashes (`hello-world`).
        /// The crate and the parent kind (`HelloWorld`, in example.com/v1) follow it.
        name: String,
        /// Where to create the crate (default: ./NAME); must not exist.
        #[arg(long)]
        path: Option<PathBuf>,
        /// The guest SDK to depend on (default: the `guest-sdk` of the checkout this
        /// binary was built from, else the project's git repository).
        #[arg(long, value_name = "DIR")]
        sdk: Option<PathBuf>,
        /// The parent kind's API group (default: example.com).
        #[arg(long)]
        group: Option<String>,
        /// The parent kind's version (default: v1).
        #[arg(long)]
        version: Option<String>,
        /// The parent kind (default: the name in UpperCamelCase).
        #[arg(long)]
        kind: Option<String>,
        /// Whether parents live in a namespace or in the cluster.
        #[arg(long, value_enum, default_value_t = Scope::Namespaced)]
        scope: Scope,
        /// The plugin's language: a Rust crate, a Python project built with
        /// componentize-py (its SDK is the checkout's `guest-sdk/python`), an npm
        /// package in JavaScript or TypeScript built with jco (`guest-sdk/js`), or a Go
        /// module (its SDK is the checkout's `guest-sdk/go`).
        #[arg(long, value_enum, default_value_t = Lang::Rust)]
        lang: Lang,
        /// Also a defaulting and a validating webhook for the parent kind, with their
        /// tests.
        #[arg(long)]
        webhooks: bool,
    },
    /// Make a plugin component of a core module built for WASI preview 1 (Go's
    /// `GOOS=wasip1 -buildmode=c-shared`): the contract embedded, WASI adapted.
    Componentize {
        /// The core module (`.wasm`), exporting the contract's functions by their
        /// canonical ABI names and `cabi_realloc`.
        core: PathBuf,
        /// Where to write the component.
        #[arg(short, long, value_name = "FILE")]
        output: PathBuf,
    },
    /// Print a plugin's manifest: its parent, children, related kinds and limits.
    Describe {
        /// The plugin component (`.wasm`).
        plugin: PathBuf,
    },
    /// Run one reconcile offline and print the desired objects as YAML, listing on stderr
    /// the observed children the answer keeps as they are and those the host would
    /// delete; or, with --event, hand one change of an object to the plugin's event
    /// handler; or, with --admission, put one write to its defaulting and validation;
    /// or, with --convert, convert objects to another version of its kind. With --http,
    /// the plugin's HTTP requests are answered from canned responses and printed.
    Render(Box<RenderArgs>),
    /// Print the CustomResourceDefinitions the plugins define, as YAML.
    Crds {
        /// Plugin components (`.wasm`).
        plugins: Vec<PathBuf>,
        /// A plugin directory: every `*.wasm` in it.
        #[arg(long = "plugins", value_name = "DIR")]
        dir: Option<PathBuf>,
        /// Also print the host's own: the Plugin kind (kubewasm.io/v1alpha1).
        #[arg(long)]
        host: bool,
    },
    /// Print the RBAC the plugins need, as YAML: a ServiceAccount, a ClusterRole
    /// (or with --namespace a Role) granting exactly what they use, and the binding.
    Rbac {
        /// The plugin directory: every `*.wasm` in it.
        #[arg(long = "plugins", value_name = "DIR")]
        dir: PathBuf,
        /// Grant in this namespace only (a Role and RoleBinding); cluster-scoped
        /// resources still need a ClusterRole, printed too.
        #[arg(long)]
        namespace: Option<String>,
        /// Name of the ServiceAccount, role(s) and binding(s).
        #[arg(long, default_value = "kubewasm")]
        name: String,
        /// Namespace of the ServiceAccount (default: --namespace, else kubewasm-system).
        #[arg(long, value_name = "NS")]
        service_account_namespace: Option<String>,
        /// The kubernetes.io/tls Secret, in the ServiceAccount's namespace, the host reads
        /// its webhook certificate from: `get` on it by name when a plugin defaults,
        /// validates or converts.
        #[arg(long, value_name = "NAME")]
        webhook_tls_secret: Option<String>,
        /// The name the host registers its webhook configurations under: the only ones it
        /// may patch or delete.
        #[arg(long, value_name = "NAME", default_value = "kubewasm")]
        webhook_configuration: String,
        /// One ServiceAccount and role per plugin (kubewasm-plugin-NAME, beside the
        /// host's), holding only what its manifest declares; the host may only
        /// impersonate them. For `kubewasm run --plugin-identities`.
        #[arg(long)]
        plugin_identities: bool,
        /// The host follows `Plugin` objects (`kubewasm run --plugin-resources`): read
        /// them and write their status. Give their modules, pulled (`kubewasm pull`), in
        /// DIR, so that their kinds (or their own accounts) are granted too.
        #[arg(long)]
        plugin_resources: bool,
        /// A registry credentials Secret, in the host's namespace, that `Plugin` objects
        /// name (`spec.source.pullSecret`): `get` on it by name. Repeatable.
        #[arg(long = "pull-secret", value_name = "NAME", requires = "plugin_resources")]
        pull_secrets: Vec<String>,
    },
    /// Push a plugin to an OCI registry as a Wasm artifact (the CNCF layout: config
    /// application/vnd.wasm.config.v0+json, one application/wasm layer, as wkg pushes
    /// it). Prints the reference pinned by the manifest's digest.
    Push {
        /// The plugin component (`.wasm`).
        plugin: PathBuf,
        /// Where to push it: REGISTRY/REPOSITORY:TAG.
        reference: String,
        #[command(flatten)]
        registry: RegistryArgs,
    },
    /// Pull a plugin from an OCI registry, its digests checked and, with --verify-key,
    /// its cosign signature: an unsigned, wrongly signed or tampered artifact is refused.
    /// Pulled modules are kept by digest in the cache directory.
    Pull {
        /// REGISTRY/REPOSITORY:TAG or REGISTRY/REPOSITORY@sha256:DIGEST.
        reference: String,
        /// Where to write the component (default: ./NAME.wasm, NAME the repository's
        /// last segment).
        #[arg(short, long, value_name = "FILE")]
        output: Option<PathBuf>,
        /// Require a signature by this public key (PEM, as cosign.pub); repeat to accept
        /// any of several keys.
        #[arg(long = "verify-key", value_name = "PUB")]
        verify_keys: Vec<PathBuf>,
        #[command(flatten)]
        keyless: KeylessArgs,
        #[command(flatten)]
        registry: RegistryArgs,
    },
    /// Sign a pushed plugin in cosign's classic format (keyed ECDSA P-256, the signature
    /// stored at the tag sha256-DIGEST.sig), which `cosign verify --key KEY
    /// --insecure-ignore-tlog=true` accepts: the signature is not entered in Rekor.
    Sign {
        /// The artifact: by tag (resolved to its digest, which is what is signed) or digest.
        reference: String,
        /// The private key: unencrypted PKCS#8 (`PRIVATE KEY`) or SEC1 (`EC PRIVATE KEY`)
        /// PEM, P-256, as `kubewasm generate-key` writes it.
        #[arg(long, value_name = "KEY")]
        key: PathBuf,
        /// Annotations to sign with the digest (the payload's `optional`).
        #[arg(short = 'a', long = "annotation", value_name = "KEY=VALUE")]
        annotations: Vec<String>,
        #[command(flatten)]
        registry: RegistryArgs,
    },
    /// Check a pushed plugin's cosign signature against public keys or a keyless
    /// identity, without pulling it.
    Verify {
        /// The artifact, by tag or digest.
        reference: String,
        /// A public key (PEM, as cosign.pub); repeat to accept any of several keys.
        #[arg(long = "key", value_name = "PUB", required_unless_present = "certificate_oidc_issuer")]
        keys: Vec<PathBuf>,
        #[command(flatten)]
        keyless: KeylessArgs,
        #[command(flatten)]
        registry: RegistryArgs,
    },
    /// Make a signing key pair: PREFIX.key (unencrypted PKCS#8 PEM, readable by its
    /// owner only) and PREFIX.pub (the public key, as cosign.pub).
    GenerateKey {
        /// The files' path without extension.
        #[arg(default_value = "kubewasm")]
        prefix: PathBuf,
    },
    /// Print, as YAML, what points the API server at the host's webhooks for the plugins
    /// that default, validate or convert: a MutatingWebhookConfiguration and a
    /// ValidatingWebhookConfiguration (one webhook PLUGIN.kubewasm.io each, with the
    /// plugin's [webhooks] settings) and the `spec.conversion` of each converted CRD. For
    /// clusters where the host may not write them itself; apply with
    /// `kubectl apply --server-side --field-manager=kubewasm-webhooks -f -`.
    Webhooks(WebhooksArgs),
    /// How a `Plugin`'s candidate (its `spec.rollout`) fares against the active version,
    /// read from the Plugin's status in the cluster of KUBECONFIG: the reconciles compared
    /// in shadow and how many differed, the latest difference field by field, the
    /// candidate's errors, and whether it was rolled back.
    Diff {
        /// The `Plugin` object's name.
        plugin: String,
        /// `json`: the Plugin's `status.rollout` as it is.
        #[arg(long, short, value_enum, default_value_t = DiffFormat::Text)]
        output: DiffFormat,
    },
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum DiffFormat {
    Text,
    Json,
}

/// Where `kubewasm webhooks` points the API server, and for which plugins.
#[derive(Debug, clap::Args)]
pub struct WebhooksArgs {
    /// The plugin directory: every `*.wasm` in it, with its NAME.toml.
    #[arg(long = "plugins", value_name = "DIR")]
    pub dir: PathBuf,
    /// Reach the host through this Service (port 443 unless given): the API server
    /// checks the certificate for NAME.NAMESPACE.svc.
    #[arg(long, value_name = "NAMESPACE/NAME[:PORT]", required_unless_present = "url", conflicts_with = "url")]
    pub service: Option<String>,
    /// Reach the host at this https:// URL (no query or fragment); each call's path
    /// (/default/PLUGIN, /validate/PLUGIN, /convert/PLUGIN) is appended.
    #[arg(long, value_name = "URL")]
    pub url: Option<String>,
    /// The PEM certificates the API server trusts the host's certificate by: the CA of
    /// its serving certificate, the `ca.crt` of its TLS Secret (default: none, the
    /// API server's system roots).
    #[arg(long, value_name = "FILE")]
    pub ca_bundle: Option<PathBuf>,
    /// Name of the two configurations.
    #[arg(long, default_value = "kubewasm")]
    pub name: String,
}

/// What `kubewasm render` reconciles or handles, and with what.
#[derive(Debug, clap::Args)]
pub struct RenderArgs {
    /// The plugin component (`.wasm`).
    pub plugin: PathBuf,
    /// The parent object (YAML or JSON) to reconcile.
    #[arg(
        long,
        required_unless_present_any = ["event", "admission", "convert"],
        conflicts_with_all = ["event", "admission", "convert"]
    )]
    pub parent: Option<PathBuf>,
    /// Hand the event handler this change of --object (and --old for `updated`)
    /// instead of reconciling a parent.
    #[arg(long, value_enum, requires = "object", conflicts_with_all = ["admission", "convert"])]
    pub event: Option<EventChange>,
    /// Put this write of --object (for update and delete, --old is the stored object)
    /// to the plugin's defaulting, then the defaulted object to its validation, as the
    /// API server calls its webhooks (a version of the kind they do not name is asked
    /// through the plugin's conversion, unless the settings' match-policy is Exact);
    /// print the object as it would be stored and the verdict, and fail if denied.
    #[arg(long, value_enum, conflicts_with = "convert")]
    pub admission: Option<AdmissionOperation>,
    /// Convert the objects of --object (YAML stream or List) to VERSION of their kind
    /// (`v2`, or `group/v2`) through the plugin, and print them as the API server would
    /// keep them.
    #[arg(long, value_name = "VERSION", requires = "object")]
    pub convert: Option<String>,
    /// The object of the event: as it is now, or as last known when deleted; the object
    /// written, for --admission; the objects to convert, for --convert.
    #[arg(long, conflicts_with = "parent")]
    pub object: Option<PathBuf>,
    /// The object before an `updated` event; the stored object, for --admission update
    /// and delete.
    #[arg(long, conflicts_with_all = ["parent", "convert"])]
    pub old: Option<PathBuf>,
    /// The event is of an object that existed before the plugin was first loaded.
    #[arg(long, requires = "event")]
    pub initial: bool,
    /// The event is a deletion noticed by a relist or a restart.
    #[arg(long, requires = "event")]
    pub final_state_unknown: bool,
    /// Canned responses to the plugin's HTTP requests (YAML: a list of `request:
    /// {method, url}` and `response: {status, headers, body}`); the requests made are
    /// printed. Without it every request is refused.
    #[arg(long, value_name = "FILE")]
    pub http: Option<PathBuf>,
    /// The plugin's NAME.toml: its [http] grant and limits, and its [config] unless
    /// --config is given. Without it the grant is what the manifest asks for.
    #[arg(long, value_name = "FILE")]
    pub settings: Option<PathBuf>,
    /// Secret objects (YAML stream) for the secretKeyRefs of the config; their values
    /// are masked in what is printed.
    #[arg(long, value_name = "FILE")]
    pub secrets: Option<PathBuf>,
    /// Objects that exist now (YAML stream or List); only children the parent
    /// controls are passed, as the host does.
    #[arg(long)]
    pub observed: Option<PathBuf>,
    /// Objects for the plugin's related queries (YAML stream or List).
    #[arg(long)]
    pub related: Option<PathBuf>,
    /// The plugin's settings (YAML or JSON).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// The time handed to the plugin, RFC 3339 (default: now): the request's `now`
    /// and what every clock the plugin reads starts at; fix it for reproducible output.
    #[arg(long)]
    pub now: Option<jiff::Timestamp>,
}

/// The change of `render --event`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum EventChange {
    Added,
    Updated,
    Deleted,
}

/// The write of `render --admission`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum AdmissionOperation {
    Create,
    Update,
    Delete,
}

/// The scope of a new plugin's parent kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Scope {
    #[value(name = "Namespaced")]
    Namespaced,
    #[value(name = "Cluster")]
    Cluster,
}

/// The language of a new plugin.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Lang {
    Rust,
    Python,
    Js,
    Ts,
    Go,
}

/// How the host runs plugins, for `dev` and `run`.
#[derive(Debug, clap::Args)]
pub struct HostArgs {
    /// Keep compiled plugins here so restarts load them without compiling
    /// (default: $XDG_CACHE_HOME/kubewasm or ~/.cache/kubewasm).
    #[arg(long, env = "KUBEWASM_CACHE_DIR")]
    pub cache_dir: Option<PathBuf>,
    /// Compile every time; keep nothing on disk.
    #[arg(long, conflicts_with = "cache_dir")]
    pub no_cache: bool,
    /// The host's own namespace (in a Pod: its own, from POD_NAMESPACE): the Secrets that
    /// plugins' settings name are read there, and the event handlers' ledgers
    /// (ConfigMaps kubewasm-ledger-PLUGIN) kept there.
    #[arg(long = "namespace", env = "POD_NAMESPACE", default_value = "default", value_name = "NS")]
    pub host_namespace: String,
    /// Also run the cluster's Plugin objects (kubewasm.io/v1alpha1, CRD from `kubewasm
    /// crds --host`; `dev` installs it): each pulled from its OCI registry, its signature
    /// checked, loaded as a file of DIR is; a failure at any step leaves the running
    /// version in place and is written to the object's status.
    #[arg(long)]
    pub plugin_resources: bool,
    /// The Sigstore trusted root (trusted_root.json, as `cosign verify --trusted-root`
    /// reads it) that Plugin objects' keyless signatures are checked against (default:
    /// the Sigstore public-good instance's, built in).
    #[arg(long, value_name = "FILE", requires = "plugin_resources")]
    pub trusted_root: Option<PathBuf>,
}

/// A keyless signer to accept, as cosign's flags of the same names name one: a signature
/// whose Fulcio certificate names this subject and issuer, logged in Rekor.
#[derive(Debug, clap::Args)]
pub struct KeylessArgs {
    /// The certificate's subject: an e-mail address or URI, exactly.
    #[arg(long, value_name = "SUBJECT", requires = "certificate_oidc_issuer")]
    pub certificate_identity: Option<String>,
    /// Or any URI subject under this prefix, which ends at a `/` (a CI workflow's
    /// identity names its ref: `...release.yaml@refs/tags/` trusts every tag).
    #[arg(long, value_name = "URL", requires = "certificate_oidc_issuer", conflicts_with = "certificate_identity")]
    pub certificate_identity_prefix: Option<String>,
    /// The OIDC issuer that vouched for the subject, exactly.
    #[arg(long, value_name = "URL")]
    pub certificate_oidc_issuer: Option<String>,
    /// The Sigstore trusted root (trusted_root.json) the certificate and the Rekor entry
    /// are checked against (default: the Sigstore public-good instance's, built in).
    #[arg(long, value_name = "FILE", requires = "certificate_oidc_issuer")]
    pub trusted_root: Option<PathBuf>,
}

/// How `kubewasm run` serves the admission and conversion webhooks of the plugins that
/// declare any (the server starts once such a plugin is loaded).
#[derive(Debug, clap::Args)]
pub struct WebhookArgs {
    /// Serve the webhooks here, over HTTPS.
    #[arg(long = "webhook-listen", value_name = "ADDR", default_value = "0.0.0.0:9443")]
    pub listen: SocketAddr,
    /// The Service in front of the host the API server calls, NAME or NAME:PORT in the
    /// host's namespace (port 443 unless given).
    #[arg(long = "webhook-service", value_name = "NAME[:PORT]", default_value = "kubewasm-webhooks")]
    pub service: String,
    /// The `kubernetes.io/tls` Secret, in the host's namespace, whose certificate the server
    /// presents and whose `ca.crt` is registered (default: a CA and a certificate made at
    /// start for the Service's names; fine for one replica).
    #[arg(long = "webhook-tls-secret", value_name = "NAME")]
    pub tls_secret: Option<String>,
}

impl HostArgs {
    /// A long-running host's engine: pooled instances, the cache, and a new plugin
    /// version running on baseline code while its optimised code is compiled.
    pub fn engine_options(&self) -> EngineOptions {
        let cache_dir = if self.no_cache { None } else { self.cache_dir.clone().or_else(default_cache_dir) };
        EngineOptions { pooling: true, cache_dir, tiered: true }
    }
}

/// Where compiled plugins are kept unless `--cache-dir` says otherwise: `KUBEWASM_CACHE_DIR`,
/// else `$XDG_CACHE_HOME/kubewasm`, else `~/.cache/kubewasm`. The one-shot commands use it
/// too: compiling a large component (an interpreter and its script) takes seconds.
pub fn default_cache_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("KUBEWASM_CACHE_DIR").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(dir));
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(base.join("kubewasm"))
}

/// Leader election or sharding, for `run` with more than one replica.
#[derive(Debug, clap::Args)]
pub struct LeaderArgs {
    /// Reconcile only while holding the Lease; standbys wait and take over.
    #[arg(long)]
    pub leader_elect: bool,
    /// Split the parents between the replicas: each holds its own Lease, named
    /// LEASE_NAME-IDENTITY, and reconciles the parents a hash of their uid assigns it.
    #[arg(long, conflicts_with = "leader_elect")]
    pub shard: bool,
    /// The Lease's name (with --shard: the group's, which starts each member's Lease name).
    #[arg(long, default_value = "kubewasm")]
    pub lease_name: String,
    /// The Lease's namespace (in a Pod: its own, from POD_NAMESPACE).
    #[arg(long, env = "POD_NAMESPACE", default_value = "default")]
    pub lease_namespace: String,
    /// How long a Lease holds without renewal; a standby (with --shard: the other
    /// replicas) takes over after it.
    #[arg(long, value_name = "SECONDS", default_value_t = 15)]
    pub lease_duration: u64,
    /// This replica's name in the Lease (in a Pod: its name, from POD_NAME).
    #[arg(long, env = "POD_NAME")]
    pub identity: Option<String>,
}

impl LeaderArgs {
    /// How these flags have the replica share the work.
    pub fn mode(&self) -> ReplicaMode {
        let lease_duration = Duration::from_secs(self.lease_duration.max(1));
        let identity = self.identity.clone().unwrap_or_else(coordination::default_identity);
        let lease_namespace = self.lease_namespace.clone();
        if self.leader_elect {
            ReplicaMode::LeaderElected(LeaderElection {
                lease_namespace,
                lease_name: self.lease_name.clone(),
                lease_duration,
                identity,
            })
        } else if self.shard {
            ReplicaMode::Sharded(Sharding { lease_namespace, group: self.lease_name.clone(), lease_duration, identity })
        } else {
            ReplicaMode::Single
        }
    }
}

/// How `push`, `pull`, `sign` and `verify` reach a registry.
#[derive(Debug, clap::Args)]
pub struct RegistryArgs {
    /// The registries' credentials: a docker config (`auths`, as `docker login` writes
    /// it or a Secret's .dockerconfigjson holds it); default: $DOCKER_CONFIG/config.json,
    /// else ~/.docker/config.json.
    #[arg(long, value_name = "FILE")]
    pub registry_config: Option<PathBuf>,
    /// Plain HTTP instead of HTTPS, for a registry on loopback only (a local or test
    /// registry).
    #[arg(long)]
    pub insecure: bool,
}
