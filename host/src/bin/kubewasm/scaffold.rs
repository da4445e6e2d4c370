//! `kubewasm new`: a plugin to start from, that builds, passes its tests and reconciles
//! as it is: a Rust crate (templates in `host/templates/plugin`), a Python project
//! (`host/templates/plugin-python`), an npm package in JavaScript or TypeScript
//! (`host/templates/plugin-js`, `plugin-ts`) or a Go module (`host/templates/plugin-go`),
//! all sharing the CRD and examples. With `--webhooks`, each adds the plugin's defaulting
//! and validating webhooks and their tests. The templates are compiled into the binary so
//! that it needs no checkout to run.

use std::path::{Path, PathBuf};

/// Why the crate was not created. A bad name or an existing directory writes nothing.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{name:?} cannot name a plugin: {why}")]
    BadName { name: String, why: &'static str },
    #[error("{}: already exists; choose another --path, or remove it", .0.display())]
    Exists(PathBuf),
    #[error("{}: {source}", path.display())]
    Write { path: PathBuf, source: std::io::Error },
    #[error("{}: not the guest SDK (no {manifest} there)", dir.display())]
    NotSdk { dir: PathBuf, manifest: &'static str },
    #[error(
        "the JavaScript SDK is not published to npm and no checkout of it was found: pass --sdk DIR, \
         the guest-sdk/js directory of a kubewasm checkout"
    )]
    NoJsSdk,
    #[error("--kind {kind:?}: use UpperCamelCase letters and digits (like `CronTab`)")]
    BadKind { kind: String },
    #[error("--group {group:?}: use a DNS subdomain with a dot (like `stable.example.com`)")]
    BadGroup { group: String },
    #[error("--version {version:?}: use a Kubernetes API version (like `v1`, `v1beta1`, `v2alpha1`)")]
    BadVersion { version: String },
}

/// The language a new plugin is written in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Language {
    /// A crate built to `wasm32-wasip2` with the `kubewasm-sdk` crate (`guest-sdk`).
    #[default]
    Rust,
    /// A module built with componentize-py by the `kubewasm` package (`guest-sdk/python`).
    Python,
    /// An npm package whose `app.js` is built with jco by `@kubewasm/sdk` (`guest-sdk/js`).
    JavaScript,
    /// The same with an `app.ts`, type-checked by `tsc` in its tests.
    TypeScript,
    /// A Go module on `kubewasm.dev/sdk` (`guest-sdk/go`), built for `wasip1` and made a
    /// component by `kubewasm componentize`.
    Go,
}

impl Language {
    /// The SDK's folder in a checkout, under `guest-sdk`.
    fn sdk_folder(self) -> &'static str {
        match self {
            Language::Rust => "",
            Language::Python => "python",
            Language::JavaScript | Language::TypeScript => "js",
            Language::Go => "go",
        }
    }

    /// The file that marks a folder as the SDK.
    fn sdk_manifest(self) -> &'static str {
        match self {
            Language::Rust => "Cargo.toml",
            Language::Python => "pyproject.toml",
            Language::JavaScript | Language::TypeScript => "package.json",
            Language::Go => "go.mod",
        }
    }
}

/// Where the new plugin gets the guest SDK from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Sdk {
    /// A checkout's `guest-sdk` directory.
    Path(PathBuf),
    /// The project's git repository.
    Git(String),
}

impl Sdk {
    /// The SDK for `language` beside the sources this binary was built from, when they
    /// are still there (a checkout); otherwise the project's repository.
    pub fn of_this_build(language: Language) -> Sdk {
        let local = Path::new(env!("CARGO_MANIFEST_DIR")).join("../guest-sdk").join(language.sdk_folder());
        Sdk::at(&local, language).unwrap_or_else(|_| Sdk::Git(env!("CARGO_PKG_REPOSITORY").to_string()))
    }

    /// The SDK for `language` in `dir`, made absolute: the new plugin is elsewhere.
    ///
    /// # Errors
    ///
    /// [`Error::NotSdk`] when `dir` holds no `Cargo.toml` (Rust), `pyproject.toml` (Python)
    /// or `package.json` (JavaScript, TypeScript).
    pub fn at(dir: &Path, language: Language) -> Result<Sdk, Error> {
        let manifest = language.sdk_manifest();
        match dir.canonicalize() {
            Ok(path) if path.join(manifest).is_file() => Ok(Sdk::Path(path)),
            _ => Err(Error::NotSdk { dir: dir.to_path_buf(), manifest }),
        }
    }

    /// The dependency's value in `Cargo.toml`.
    fn dependency(&self) -> String {
        let quoted = |s: &str| toml::Value::String(s.to_string()).to_string();
        match self {
            Sdk::Path(path) => format!("{{ path = {}, features = [\"crd\"] }}", quoted(&path.display().to_string())),
            Sdk::Git(url) => format!("{{ git = {}, features = [\"crd\"] }}", quoted(url)),
        }
    }

    /// What `pip install` takes for the Python SDK with its `test` extra, quoted for a shell.
    fn pip_requirement(&self) -> String {
        let requirement = match self {
            Sdk::Path(path) => format!("{}[test]", path.display()),
            Sdk::Git(url) => format!("kubewasm[test] @ git+{url}#subdirectory=guest-sdk/python"),
        };
        shell_quoted(&requirement)
    }

    /// Where `go.mod`'s `replace` finds the Go SDK: a quoted path, or for the git
    /// repository the path of a checkout beside the plugin (Go fetches no module from git
    /// without a module proxy).
    fn go_replacement(&self) -> String {
        match self {
            Sdk::Path(path) => serde_json::Value::String(path.display().to_string()).to_string(),
            Sdk::Git(_) => "../kubewasm/guest-sdk/go".into(),
        }
    }

    /// The dependency's value in `package.json`: the checkout's SDK, linked by npm. (npm
    /// cannot take a package from a git repository's subdirectory; [`create`] refuses a
    /// JavaScript plugin without a checkout.)
    fn npm_dependency(&self) -> String {
        let spec = match self {
            Sdk::Path(path) => format!("file:{}", path.display()),
            Sdk::Git(url) => url.clone(),
        };
        serde_json::Value::String(spec).to_string()
    }
}

/// `text` as one word for a POSIX shell.
fn shell_quoted(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// Where it is, as a person reads it.
impl std::fmt::Display for Sdk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Sdk::Path(path) => write!(f, "{}", path.display()),
            Sdk::Git(url) => f.write_str(url),
        }
    }
}

/// The parent kind of a new plugin; what is not given follows from the plugin's name.
#[derive(Clone, Debug, Default)]
pub struct Parent {
    /// The API group (default `example.com`).
    pub group: Option<String>,
    /// The version (default `v1`).
    pub version: Option<String>,
    /// The kind (default: the name in upper camel case, `hello-world` -> `HelloWorld`).
    pub kind: Option<String>,
    /// Cluster-scoped rather than namespaced.
    pub cluster: bool,
}

/// The names one plugin name gives: crate, kind, plural, API group.
#[derive(Debug)]
struct Names {
    name: String,
    krate: String,
    kind: String,
    plural: String,
    singular: String,
    group: String,
    version: String,
    cluster: bool,
}

impl Names {
    fn of(name: &str, parent: &Parent, language: Language) -> Result<Names, Error> {
        let bad = |why| Err(Error::BadName { name: name.to_string(), why });
        if name.is_empty() || name.len() > 40 {
            return bad("use 1 to 40 characters");
        }
        if !name.starts_with(|c: char| c.is_ascii_lowercase())
            || name.ends_with('-')
            || name.contains("--")
            || !name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        {
            return bad("use lowercase letters, digits and single dashes, starting with a letter (like `hello-world`)");
        }
        let krate = name.replace('-', "_");
        if language == Language::Rust && RESERVED.contains(&krate.as_str()) {
            return bad("it is a Rust keyword or the name of a standard crate");
        }
        let kind = match &parent.kind {
            Some(kind) => {
                let camel = kind.starts_with(|c: char| c.is_ascii_uppercase())
                    && kind.chars().all(|c| c.is_ascii_alphanumeric())
                    && kind.len() <= 63;
                if !camel {
                    return Err(Error::BadKind { kind: kind.clone() });
                }
                kind.clone()
            }
            None => name
                .split('-')
                .map(|part| {
                    let mut chars = part.chars();
                    chars.next().map(|c| c.to_ascii_uppercase().to_string() + chars.as_str()).unwrap_or_default()
                })
                .collect(),
        };
        let group = parent.group.clone().unwrap_or_else(|| "example.com".into());
        let dns = group.contains('.')
            && group.len() <= 253
            && group.split('.').all(|label| {
                !label.is_empty()
                    && !label.starts_with('-')
                    && !label.ends_with('-')
                    && label.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
            });
        if !dns {
            return Err(Error::BadGroup { group });
        }
        let version = parent.version.clone().unwrap_or_else(|| "v1".into());
        if !is_api_version(&version) {
            return Err(Error::BadVersion { version });
        }
        let singular = kind.to_ascii_lowercase();
        let plural = plural_of(&singular);
        Ok(Names { name: name.to_string(), krate, kind, plural, singular, group, version, cluster: parent.cluster })
    }

    fn fill(&self, template: &str, sdk: &Sdk) -> String {
        let filled = template
            .replace("{{name}}", &self.name)
            .replace("{{crate}}", &self.krate)
            .replace("{{kind}}", &self.kind)
            .replace("{{plural}}", &self.plural)
            .replace("{{singular}}", &self.singular)
            .replace("{{group}}", &self.group)
            .replace("{{version}}", &self.version)
            .replace("{{go_sdk}}", &sdk.go_replacement())
            .replace("{{sdk}}", &sdk.dependency())
            .replace("{{npm_sdk}}", &sdk.npm_dependency())
            .replace("{{sh_sdk}}", &shell_quoted(&sdk.to_string()))
            .replace("{{pip_sdk}}", &sdk.pip_requirement());
        BY_SCOPE.iter().fold(filled, |text, (placeholder, namespaced, cluster)| {
            text.replace(placeholder, if self.cluster { cluster } else { namespaced })
        })
    }
}

/// The placeholders that differ between a namespaced and a cluster-scoped parent:
/// (placeholder, namespaced, cluster-scoped). A cluster-scoped parent's namespaced
/// children need a namespace.
const BY_SCOPE: &[(&str, &str, &str)] = &[
    ("{{scope}}", "Namespaced", "Cluster"),
    ("{{kube_scope}}", ", namespaced", ""),
    ("{{child_meta}}", "parent.child_meta(parent.name())", r#"parent.child_meta_in(parent.name(), "default")"#),
    ("{{json_namespace}}", r#", "namespace": "default""#, ""),
    ("{{yaml_namespace}}", "  namespace: default\n", ""),
    ("{{py_crd_scope}}", "", "\n    namespaced=False,"),
    ("{{py_child_meta}}", "parent.child_meta(parent.name)", r#"parent.child_meta_in(parent.name, "default")"#),
    ("{{js_crd_scope}}", "", "\n  namespaced: false,"),
    ("{{js_child_meta}}", "parent.childMeta(parent.name)", "parent.childMetaIn(parent.name, 'default')"),
    ("{{go_crd_scope}}", "", " ClusterScoped: true,"),
    ("{{go_child_meta}}", "parent.ChildMeta(parent.Name())", r#"parent.ChildMetaIn(parent.Name(), "default")"#),
    ("{{go_json_namespace}}", r#", "namespace": "default""#, ""),
];

/// `v1`, `v2beta1`, `v1alpha2`: a Kubernetes API version.
fn is_api_version(version: &str) -> bool {
    let Some(rest) = version.strip_prefix('v') else { return false };
    let digits = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
    let (major, tail) = rest.split_at(digits);
    let number = |n: &str| !n.is_empty() && !n.starts_with('0') && n.chars().all(|c| c.is_ascii_digit());
    number(major)
        && (tail.is_empty() || ["alpha", "beta"].iter().any(|stage| tail.strip_prefix(stage).is_some_and(number)))
}

/// The plural of a lowercase kind, as Kubernetes tooling forms it (`policy` -> `policies`,
/// `box` -> `boxes`, `app` -> `apps`).
fn plural_of(singular: &str) -> String {
    if singular.ends_with(['s', 'x', 'z']) || singular.ends_with("ch") || singular.ends_with("sh") {
        format!("{singular}es")
    } else if let Some(stem) = singular.strip_suffix('y')
        && !stem.ends_with(['a', 'e', 'i', 'o', 'u'])
    {
        format!("{stem}ies")
    } else {
        format!("{singular}s")
    }
}

/// Names cargo or rustc refuse for a crate.
const RESERVED: &[&str] = &[
    "alloc",
    "as",
    "async",
    "await",
    "break",
    "const",
    "continue",
    "core",
    "crate",
    "dyn",
    "else",
    "enum",
    "extern",
    "false",
    "fn",
    "for",
    "if",
    "impl",
    "in",
    "let",
    "loop",
    "match",
    "mod",
    "move",
    "mut",
    "proc_macro",
    "pub",
    "ref",
    "return",
    "self",
    "static",
    "std",
    "struct",
    "super",
    "test",
    "trait",
    "true",
    "type",
    "unsafe",
    "use",
    "where",
    "while",
];

/// A template file of `host/templates/`, built into the binary.
macro_rules! template {
    ($path:expr) => {
        include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/templates/", $path))
    };
}

/// One language's templates from its folder of `host/templates/`: (path in the plugin,
/// template file) for its own files; its `README.md` and `.gitignore` follow the
/// shared ones; then its webhooks.
macro_rules! templates {
    ($folder:literal, [$(($path:literal, $file:literal)),* $(,)?], $webhooks:expr) => {
        Templates {
            own: &[$(($path, template!(concat!($folder, "/", $file)))),*],
            readme: template!(concat!($folder, "/README.md.tmpl")),
            gitignore: template!(concat!($folder, "/gitignore.tmpl")),
            webhooks: $webhooks,
        }
    };
}

/// The files of a new plugin in one language: `{{name}}` in a path is the plugin's name.
struct Templates {
    /// (path in the plugin, template) of the language's own files.
    own: &'static [(&'static str, &'static str)],
    readme: &'static str,
    gitignore: &'static str,
    /// What `--webhooks` changes.
    webhooks: Webhooks,
}

/// A template's defaulting and validating webhooks: its placeholders filled one way
/// with `--webhooks`, the other without, and files only a plugin with webhooks has.
struct Webhooks {
    /// (placeholder, without webhooks, with them); the text filled in may hold the
    /// plugin's own placeholders (`{{kind}}`...).
    fills: &'static [(&'static str, &'static str, &'static str)],
    /// (path in the plugin, template).
    files: &'static [(&'static str, &'static str)],
}

impl Templates {
    /// Every file: the language's own, the CRD and examples every language shares,
    /// those of its webhooks when `webhooks`, then its README and `.gitignore`.
    fn files(&self, webhooks: bool) -> impl Iterator<Item = (&'static str, &'static str)> {
        let last = [("README.md", self.readme), (".gitignore", self.gitignore)];
        let hooks = if webhooks { self.webhooks.files } else { &[] };
        self.own.iter().copied().chain(SHARED.iter().copied()).chain(hooks.iter().copied()).chain(last)
    }

    /// `template` of this language filled in for `names`, with its webhooks or without.
    fn fill(&self, template: &str, names: &Names, sdk: &Sdk, webhooks: bool) -> String {
        let template = self.webhooks.fills.iter().fold(template.to_string(), |text, (placeholder, without, with)| {
            text.replace(placeholder, if webhooks { with } else { without })
        });
        names.fill(&template, sdk)
    }
}

/// The Rust crate's examples, which every language's plugin has too.
const SHARED: &[(&str, &str)] = &[
    ("examples/parent.yaml", template!("plugin/parent.yaml.tmpl")),
    ("examples/{{name}}.yaml", template!("plugin/object.yaml.tmpl")),
];

/// A Rust crate, with `impl Admission` and its tests when it has webhooks.
const RUST: Templates = templates!(
    "plugin",
    [("Cargo.toml", "Cargo.toml.tmpl"), ("src/lib.rs", "lib.rs.tmpl")],
    Webhooks {
        fills: &[
            (
                "{{webhooks_doc}}",
                "",
                "//! Webhooks:       `kubewasm render target/wasm32-wasip2/plugin/{{crate}}.wasm --admission create \
                 --object examples/no-message.yaml`\n",
            ),
            (
                "{{webhooks_manifest}}",
                "",
                "\n            .defaults(AdmissionRule::new(KindRef::of_crd::<{{kind}}>()))\
                 \n            .validates(AdmissionRule::new(KindRef::of_crd::<{{kind}}>()))",
            ),
            ("{{webhooks}}", "", template!("plugin/webhooks.rs.tmpl")),
            (
                "{{export}}",
                "kubewasm_sdk::export_reconciler!({{kind}}Reconciler);",
                "kubewasm_sdk::export_plugin!(reconciler: {{kind}}Reconciler, admission: {{kind}}Reconciler);",
            ),
            ("{{webhooks_tests}}", "", template!("plugin/webhooks_tests.rs.tmpl")),
            ("{{webhooks_readme}}", "", template!("plugin/README-webhooks.md.tmpl")),
            ("{{component}}", "", "target/wasm32-wasip2/plugin/{{crate}}.wasm"),
        ],
        files: NO_MESSAGE,
    }
);

/// The write a new plugin's defaulting completes, for every language's webhooks.
const NO_MESSAGE: &[(&str, &str)] = &[("examples/no-message.yaml", template!("plugin/no-message.yaml.tmpl"))];

/// `Webhooks:` in a plugin's opening comment, after `prefix` (`// `, `//\t`...).
macro_rules! webhooks_doc {
    ($prefix:literal) => {
        concat!(
            $prefix,
            "Webhooks:       kubewasm render {{name}}.wasm --admission create --object examples/no-message.yaml\n"
        )
    };
}

/// A Python plugin: its own module, tests and README; with webhooks, `default` and
/// `validate` methods of the plugin class and their tests.
const PYTHON: Templates = templates!(
    "plugin-python",
    [("pyproject.toml", "pyproject.toml.tmpl"), ("app.py", "app.py.tmpl"), ("tests/test_app.py", "test_app.py.tmpl")],
    Webhooks {
        fills: &[
            ("{{webhooks_doc}}", "", webhooks_doc!("")),
            (
                "{{webhooks_constants}}",
                "",
                "\n# The longest message a {{kind}} may hold: its validation refuses longer ones.\nMAX_MESSAGE = 1024\n",
            ),
            (
                "{{webhooks_manifest}}",
                "",
                "\n            defaults=[kubewasm.AdmissionRule(RESOURCE.kind_ref)],\
                 \n            validates=[kubewasm.AdmissionRule(RESOURCE.kind_ref)],",
            ),
            ("{{webhooks}}", "", template!("plugin-python/webhooks.py.tmpl")),
            ("{{webhooks_tests}}", "", template!("plugin-python/test_webhooks.py.tmpl")),
            ("{{webhooks_readme}}", "", template!("plugin-python/README-webhooks.md.tmpl")),
            ("{{component}}", "", "{{name}}.wasm"),
        ],
        files: NO_MESSAGE,
    }
);

/// What `--webhooks` fills in a JavaScript or TypeScript plugin (`webhooks`, `tests` and
/// `readme`: the language's files), and `types`, the type-only imports.
macro_rules! npm_webhooks {
    ($webhooks:literal, $tests:literal, $readme:literal, $types:literal) => {
        Webhooks {
            fills: &[
                ("{{webhooks_doc}}", "", webhooks_doc!("// ")),
                ("{{webhooks_imports}}", "", "AdmissionRule, Denial, "),
                ("{{webhooks_types}}", "", $types),
                (
                    "{{webhooks_constants}}",
                    "",
                    "\n/** The longest message a {{kind}} may hold: its validation refuses longer ones. */\n\
                     const MAX_MESSAGE = 1024;\n",
                ),
                (
                    "{{webhooks_manifest}}",
                    "",
                    "\n      defaults: [new AdmissionRule(resource.kindRef)],\
                     \n      validates: [new AdmissionRule(resource.kindRef)],",
                ),
                ("{{webhooks}}", "", template!($webhooks)),
                ("{{webhooks_tests}}", "", template!($tests)),
                ("{{webhooks_readme}}", "", template!($readme)),
                ("{{component}}", "", "{{name}}.wasm"),
            ],
            files: NO_MESSAGE,
        }
    };
}

/// A JavaScript plugin: an npm package with its module, `node --test` tests and README.
const JS: Templates = templates!(
    "plugin-js",
    [("package.json", "package.json.tmpl"), ("app.js", "app.js.tmpl"), ("test/app.test.js", "app.test.js.tmpl")],
    npm_webhooks!(
        "plugin-js/webhooks.js.tmpl",
        "plugin-js/webhooks.test.js.tmpl",
        "plugin-js/README-webhooks.md.tmpl",
        ""
    )
);

/// A TypeScript plugin: the JavaScript one typed, with `tsc` run by its tests.
const TS: Templates = templates!(
    "plugin-ts",
    [
        ("package.json", "package.json.tmpl"),
        ("tsconfig.json", "tsconfig.json.tmpl"),
        ("app.ts", "app.ts.tmpl"),
        ("test/app.test.ts", "app.test.ts.tmpl"),
    ],
    npm_webhooks!(
        "plugin-ts/webhooks.ts.tmpl",
        "plugin-ts/webhooks.test.ts.tmpl",
        "plugin-ts/README-webhooks.md.tmpl",
        "AdmissionRequest, "
    )
);

/// A Go plugin: its own module, tests and README.
const GO: Templates = templates!(
    "plugin-go",
    [("go.mod", "go.mod.tmpl"), ("main.go", "main.go.tmpl"), ("main_test.go", "main_test.go.tmpl")],
    Webhooks {
        fills: &[
            ("{{webhooks_doc}}", "", webhooks_doc!("//\t")),
            ("{{webhooks_imports}}", "", "\n\t\"fmt\"\n"),
            (
                "{{webhooks_constants}}",
                "",
                "\n// maxMessage is the longest message a {{kind}} may hold: its validation refuses longer ones.\n\
                 const maxMessage = 1024\n",
            ),
            (
                "{{webhooks_manifest}}",
                "",
                "\n\n\t\t// The writes the API server asks Default and Validate about.\
                 \n\t\tDefaults:  []kubewasm.AdmissionRule{kubewasm.Admitting(resource.KindRef())},\
                 \n\t\tValidates: []kubewasm.AdmissionRule{kubewasm.Admitting(resource.KindRef())},",
            ),
            ("{{webhooks}}", "", template!("plugin-go/webhooks.go.tmpl")),
            ("{{webhooks_tests}}", "", template!("plugin-go/webhooks_test.go.tmpl")),
            ("{{webhooks_readme}}", "", template!("plugin-go/README-webhooks.md.tmpl")),
            ("{{component}}", "", "{{name}}.wasm"),
        ],
        files: NO_MESSAGE,
    }
);

/// What [`create`] made.
#[derive(Debug)]
pub struct Created {
    /// The parent kind, `Kind.group/version`.
    pub kind: String,
    /// The files written, under the plugin's directory.
    pub files: Vec<PathBuf>,
    /// The commands that test, build and render the new plugin, one a line.
    pub next_steps: Vec<String>,
}

/// Writes a new plugin named `name` in `language` into `dir`, which must not exist yet.
///
/// # Errors
///
/// [`Error::BadName`] for a name that cannot name a crate and a Kubernetes kind,
/// [`Error::BadKind`], [`Error::BadGroup`] or [`Error::BadVersion`] for a parent kind
/// Kubernetes would refuse,
/// [`Error::NoJsSdk`] for a JavaScript or TypeScript plugin with the SDK only in git,
/// [`Error::Exists`] when `dir` exists, [`Error::Write`] when a file cannot be
/// written.
pub fn create(
    name: &str,
    parent: &Parent,
    dir: &Path,
    sdk: &Sdk,
    language: Language,
    webhooks: bool,
) -> Result<Created, Error> {
    let names = Names::of(name, parent, language)?;
    let npm = matches!(language, Language::JavaScript | Language::TypeScript);
    if npm && matches!(sdk, Sdk::Git(_)) {
        return Err(Error::NoJsSdk);
    }
    if dir.exists() {
        return Err(Error::Exists(dir.to_path_buf()));
    }
    let mut files = Vec::new();
    let templates = match language {
        Language::Rust => &RUST,
        Language::Python => &PYTHON,
        Language::JavaScript => &JS,
        Language::TypeScript => &TS,
        Language::Go => &GO,
    };
    for (path, template) in templates.files(webhooks) {
        let path = dir.join(path.replace("{{name}}", name));
        let write = |path: &Path| -> std::io::Result<()> {
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::write(path, templates.fill(template, &names, sdk, webhooks))
        };
        write(&path).map_err(|source| Error::Write { path: path.clone(), source })?;
        files.push(path);
    }
    let watch =
        format!("kubewasm dev --plugins PLUGIN_DIR --watch {}   # rebuilt and live at every save", dir.display());
    let mut next_steps = match language {
        Language::Rust => vec![
            format!("cd {} && cargo test", dir.display()),
            "cargo build --profile plugin --target wasm32-wasip2".into(),
            format!("kubewasm render target/wasm32-wasip2/plugin/{}.wasm --parent examples/parent.yaml", names.krate),
        ],
        Language::Python => vec![
            format!("cd {} && python3 -m venv .venv && .venv/bin/pip install {}", dir.display(), sdk.pip_requirement()),
            ".venv/bin/pytest".into(),
            format!(".venv/bin/python -m kubewasm build app.py -o {name}.wasm"),
            format!("kubewasm render {name}.wasm --parent examples/parent.yaml"),
        ],
        Language::JavaScript | Language::TypeScript => vec![
            format!("npm install --prefix {}", shell_quoted(&sdk.to_string())),
            format!("cd {} && npm install", dir.display()),
            "npm test".into(),
            "npm run build".into(),
            format!("kubewasm render {name}.wasm --parent examples/parent.yaml"),
        ],
        Language::Go => vec![
            format!("cd {} && go test ./...", dir.display()),
            format!("GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o {name}.core.wasm ."),
            format!("kubewasm componentize {name}.core.wasm -o {name}.wasm"),
            format!("kubewasm render {name}.wasm --parent examples/parent.yaml"),
        ],
    };
    if webhooks {
        let component = match language {
            Language::Rust => format!("target/wasm32-wasip2/plugin/{}.wasm", names.krate),
            _ => format!("{name}.wasm"),
        };
        next_steps.push(format!("kubewasm render {component} --admission create --object examples/no-message.yaml"));
    }
    next_steps.push(watch);
    Ok(Created { kind: format!("{}.{}/{}", names.kind, names.group, names.version), files, next_steps })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_gives_the_crate_the_kind_and_its_plural() {
        let names = Names::of("hello-world", &Parent::default(), Language::Rust).unwrap();
        assert_eq!(
            (names.krate.as_str(), names.kind.as_str(), names.plural.as_str(), names.singular.as_str()),
            ("hello_world", "HelloWorld", "helloworlds", "helloworld")
        );
    }

    #[test]
    fn names_that_cannot_be_a_crate_or_a_kind_are_refused() {
        for name in ["", "Hello", "9lives", "two--dashes", "trailing-", "under_score", "self", "test"] {
            assert!(
                matches!(Names::of(name, &Parent::default(), Language::Rust), Err(Error::BadName { .. })),
                "{name:?} was accepted"
            );
        }
    }

    #[test]
    fn a_given_kind_group_and_version_are_checked_and_pluralized() {
        let parent = |kind: &str, group: &str, version: &str| Parent {
            kind: Some(kind.into()),
            group: Some(group.into()),
            version: Some(version.into()),
            cluster: true,
        };
        let names = Names::of("cron", &parent("CronPolicy", "batch.example.io", "v1beta1"), Language::Rust).unwrap();
        assert_eq!((names.plural.as_str(), names.version.as_str()), ("cronpolicies", "v1beta1"));
        assert_eq!(plural_of("box"), "boxes");
        assert_eq!(plural_of("gateway"), "gateways");
        assert_eq!(plural_of("app"), "apps");
        assert!(matches!(Names::of("x", &parent("cronTab", "a.io", "v1"), Language::Rust), Err(Error::BadKind { .. })));
        assert!(matches!(
            Names::of("x", &parent("CronTab", "nodot", "v1"), Language::Rust),
            Err(Error::BadGroup { .. })
        ));
        assert!(matches!(
            Names::of("x", &parent("CronTab", "Up.io", "v1"), Language::Rust),
            Err(Error::BadGroup { .. })
        ));
        for bad in ["1", "v0", "v1gamma1", "v1beta", "V1", "v01"] {
            assert!(
                matches!(
                    Names::of("x", &parent("CronTab", "a.io", bad), Language::Rust),
                    Err(Error::BadVersion { .. })
                ),
                "{bad}"
            );
        }
    }

    #[test]
    fn every_placeholder_of_every_template_is_filled() {
        // `{{name}}`, not Go's `[]T{{Field: ...}}`.
        fn has_placeholder(text: &str) -> bool {
            text.match_indices("{{").any(|(at, _)| {
                let rest = &text[at + 2..];
                let word = rest.find(|c: char| !(c.is_ascii_lowercase() || c == '_')).unwrap_or(rest.len());
                word > 0 && rest[word..].starts_with("}}")
            })
        }
        let sdk = Sdk::Git("https://example.com/kubewasm.git".into());
        let languages = [
            (Language::Rust, &RUST),
            (Language::Python, &PYTHON),
            (Language::JavaScript, &JS),
            (Language::TypeScript, &TS),
            (Language::Go, &GO),
        ];
        for (language, templates) in languages {
            for (cluster, webhooks) in [(false, false), (true, false), (false, true), (true, true)] {
                let names = Names::of("hello-world", &Parent { cluster, ..Parent::default() }, language).unwrap();
                for (path, template) in templates.files(webhooks) {
                    let text = templates.fill(template, &names, &sdk, webhooks);
                    assert!(!has_placeholder(&text), "{language:?} {path} keeps a placeholder: {text}");
                }
            }
        }
    }

    #[test]
    fn python_plugins_may_take_names_rust_reserves_and_install_the_sdk_by_a_quoted_requirement() {
        assert!(Names::of("self", &Parent::default(), Language::Python).is_ok());
        let local = Sdk::Path(PathBuf::from("/src/it's/guest-sdk/python"));
        assert_eq!(local.pip_requirement(), r"'/src/it'\''s/guest-sdk/python[test]'");
        let git = Sdk::Git("https://example.com/kubewasm.git".into());
        assert_eq!(
            git.pip_requirement(),
            "'kubewasm[test] @ git+https://example.com/kubewasm.git#subdirectory=guest-sdk/python'"
        );
    }

    #[test]
    fn the_go_sdk_is_replaced_by_a_quoted_path_or_a_checkout_beside_the_plugin() {
        let local = Sdk::Path(PathBuf::from(r#"/src/odd "dir"/guest-sdk/go"#));
        assert_eq!(local.go_replacement(), r#""/src/odd \"dir\"/guest-sdk/go""#);
        let git = Sdk::Git("https://example.com/kubewasm.git".into());
        assert_eq!(git.go_replacement(), "../kubewasm/guest-sdk/go");
    }

    #[test]
    fn the_sdk_dependency_is_valid_toml_whatever_the_path() {
        let sdk = Sdk::Path(PathBuf::from(r#"C:\odd "dir"\guest-sdk"#));
        let manifest = format!("[dependencies]\nkubewasm-sdk = {}\n", sdk.dependency());
        let parsed: toml::Table = toml::from_str(&manifest).unwrap();
        assert_eq!(parsed["dependencies"]["kubewasm-sdk"]["path"].as_str(), Some(r#"C:\odd "dir"\guest-sdk"#));
    }

    #[test]
    fn the_npm_sdk_dependency_is_valid_json_whatever_the_path() {
        let names = Names::of("hello", &Parent::default(), Language::JavaScript).unwrap();
        let sdk = Sdk::Path(PathBuf::from(r#"/src/odd "dir"\guest-sdk/js"#));
        let package: serde_json::Value = serde_json::from_str(&names.fill(JS.own[0].1, &sdk)).unwrap();
        assert_eq!(package["dependencies"]["@kubewasm/sdk"], r#"file:/src/odd "dir"\guest-sdk/js"#);
    }

    #[test]
    fn a_javascript_plugin_needs_the_sdk_of_a_checkout() {
        let dir = std::env::temp_dir().join("kubewasm-scaffold-no-js-sdk");
        let git = Sdk::Git("https://example.com/kubewasm.git".into());
        for language in [Language::JavaScript, Language::TypeScript] {
            assert!(matches!(create("hello", &Parent::default(), &dir, &git, language, false), Err(Error::NoJsSdk)));
        }
        assert!(!dir.exists(), "nothing is written");
    }
}
