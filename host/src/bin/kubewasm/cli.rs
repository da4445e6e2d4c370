//! The command line: every subcommand and flag, in one place.

// The doc comments are the `--help` text, written for a terminal, not for rustdoc.
#![allow(clippy::doc_markdown)]

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Parser, Subcommand, ValueEnum};
use kubewasm::coordination::{self, LeaderElection, ReplicaMode, Sharding};

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
    /// and a controller per plugin. Prints the `export KUBECONFIG=...` line for kubectl.
    Dev {
        /// The plugin directory: every `*.wasm` in it.
        #[arg(long = "plugins", value_name = "DIR")]
        dir: PathBuf,
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
        host: HostArgs,
        #[command(flatten)]
        leader: LeaderArgs,
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
    /// Run one reconcile offline and print the desired objects as YAML.
    Render {
        /// The plugin component (`.wasm`).
        plugin: PathBuf,
        /// The parent object (YAML or JSON).
        #[arg(long)]
        parent: PathBuf,
        /// Objects that exist now (YAML stream or List); only children the parent
        /// controls are passed, as the host does.
        #[arg(long)]
        observed: Option<PathBuf>,
        /// Objects for the plugin's related queries (YAML stream or List).
        #[arg(long)]
        related: Option<PathBuf>,
        /// The plugin's settings (YAML or JSON).
        #[arg(long)]
        config: Option<PathBuf>,
        /// The time handed to the plugin, RFC 3339 (default: now); fix it for
        /// reproducible output.
        #[arg(long)]
        now: Option<String>,
    },
    /// Print the CustomResourceDefinitions the plugins define, as YAML.
    Crds {
        /// Plugin components (`.wasm`).
        plugins: Vec<PathBuf>,
        /// A plugin directory: every `*.wasm` in it.
        #[arg(long = "plugins", value_name = "DIR")]
        dir: Option<PathBuf>,
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
    },
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
}

impl HostArgs {
    pub fn cache_dir(&self) -> Option<PathBuf> {
        if self.no_cache {
            return None;
        }
        self.cache_dir.clone().or_else(default_cache_dir)
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
