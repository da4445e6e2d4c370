//! What a new version of a plugin file, or new settings for it, does to its
//! controller: decided by one pure function, so every case is a unit test.

use crate::plugin::{Manifest, Settings};

/// A plugin version with the settings it runs (or would run) under.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Version<'a> {
    pub manifest: &'a Manifest,
    pub settings: &'a Settings,
}

/// What to do with a plugin's controller and event handler.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Decision {
    /// Nothing new to apply (nothing loaded, or what was loaded was refused).
    Keep,
    /// Hand the new version (or config) to the running controller: same kinds, same
    /// finalizer, same namespace, so its watches and queue stay; every parent is
    /// reconciled again.
    Swap,
    /// Stop what runs (if anything) and start the new version: its watches differ.
    Restart,
    /// The settings disable the plugin: stop its controller, leave its children.
    Stop,
}

/// Decides from what runs now (`None`: no controller runs for this file) and what
/// was just loaded (`None`: nothing new, or only a refused file).
pub(crate) fn decide(running: Option<Version<'_>>, next: Option<Version<'_>>) -> Decision {
    let Some(next) = next else { return Decision::Keep };
    if !next.settings.enabled {
        return Decision::Stop;
    }
    match running {
        Some(running)
            if running.manifest.same_contract(next.manifest)
                && running.settings.namespace == next.settings.namespace
                && running.settings.service_account == next.settings.service_account
                && running.settings.events == next.settings.events
                && secret_refs(running.settings) == secret_refs(next.settings) =>
        {
            Decision::Swap
        }
        _ => Decision::Restart,
    }
}

/// The Secrets the settings name: a change restarts what follows them.
fn secret_refs(settings: &Settings) -> Vec<crate::secrets::SecretRef> {
    crate::secrets::refs(&settings.config).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugin::KindRef;

    fn manifest(name: &str) -> Manifest {
        Manifest::new(name, KindRef::namespaced("x.io", "v1", "App", "apps")).child(KindRef::namespaced(
            "apps",
            "v1",
            "Deployment",
            "deployments",
        ))
    }

    #[allow(clippy::unnecessary_wraps)] // reads as the argument it stands for
    fn v<'a>(manifest: &'a Manifest, settings: &'a Settings) -> Option<Version<'a>> {
        Some(Version { manifest, settings })
    }

    #[test]
    fn nothing_new_keeps_what_runs() {
        let (m, s) = (manifest("a"), Settings::default());
        assert_eq!(decide(v(&m, &s), None), Decision::Keep);
        assert_eq!(decide(None, None), Decision::Keep);
    }

    #[test]
    fn a_first_version_starts() {
        let (m, s) = (manifest("a"), Settings::default());
        assert_eq!(decide(None, v(&m, &s)), Decision::Restart);
    }

    #[test]
    fn new_logic_or_config_on_the_same_kinds_swaps_in_place() {
        let (old, new) = (manifest("a"), manifest("a").limits(crate::plugin::DeclaredLimits::default()));
        let s = Settings::default();
        assert_eq!(decide(v(&old, &s), v(&new, &s)), Decision::Swap);
        let configured = Settings { config: serde_json::json!({"replicas": 3}), ..Settings::default() };
        assert_eq!(decide(v(&old, &s), v(&old, &configured)), Decision::Swap, "config is handed over");
    }

    #[test]
    fn other_kinds_a_finalizer_a_rename_or_another_namespace_restart() {
        let s = Settings::default();
        let old = manifest("a");
        let more_kinds = manifest("a").related(KindRef::namespaced("", "v1", "Secret", "secrets"));
        let finalizer = manifest("a").finalizer();
        let renamed = manifest("b");
        for new in [&more_kinds, &finalizer, &renamed] {
            assert_eq!(decide(v(&old, &s), v(new, &s)), Decision::Restart, "{new:?}");
        }
        let scoped = Settings { namespace: Some("team-a".into()), ..Settings::default() };
        assert_eq!(decide(v(&old, &s), v(&old, &scoped)), Decision::Restart, "the watches change namespace");
    }

    #[test]
    fn disabled_stops_whatever_runs() {
        let m = manifest("a");
        let (on, off) = (Settings::default(), Settings { enabled: false, ..Settings::default() });
        assert_eq!(decide(v(&m, &on), v(&m, &off)), Decision::Stop);
        assert_eq!(decide(None, v(&m, &off)), Decision::Stop);
        assert_eq!(decide(None, v(&m, &on)), Decision::Restart, "enabled again: started");
    }
}
