//! Who makes a request, as authentication finds out (`user.Info` of kube-apiserver), and the
//! names of the users and groups the server itself gives meaning to (`k8s.io/apiserver`'s
//! `authentication/user` and `authentication/serviceaccount`).

use std::collections::BTreeMap;

/// The group whose members may do anything, whatever RBAC says (`user.SystemPrivilegedGroup`).
pub(crate) const MASTERS: &str = "system:masters";
/// Added to every authenticated user's groups (`user.AllAuthenticated`).
pub(crate) const AUTHENTICATED: &str = "system:authenticated";
/// The group of requests without credentials (`user.AllUnauthenticated`).
pub(crate) const UNAUTHENTICATED: &str = "system:unauthenticated";
/// The user of requests without credentials (`user.Anonymous`).
pub(crate) const ANONYMOUS: &str = "system:anonymous";
/// The group of every service account (`serviceaccount.AllServiceAccountsGroup`).
pub(crate) const SERVICE_ACCOUNTS: &str = "system:serviceaccounts";
/// What a service account's user name starts with (`serviceaccount.ServiceAccountUsernamePrefix`).
const SERVICE_ACCOUNT_PREFIX: &str = "system:serviceaccount:";

/// An authenticated user.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct User {
    pub name: String,
    pub uid: String,
    pub groups: Vec<String>,
    pub extra: BTreeMap<String, Vec<String>>,
}

impl User {
    /// A user of `name` in `groups` (`system:authenticated` not added).
    pub(crate) fn new(name: &str, groups: &[&str]) -> User {
        User { name: name.to_string(), groups: groups.iter().map(ToString::to_string).collect(), ..User::default() }
    }

    /// The administrator: the user of the kubeconfig the server writes, as `kubectl auth
    /// whoami` answers for a kind or kubeadm cluster's admin.
    pub(crate) fn admin() -> User {
        User::new("kubernetes-admin", &[MASTERS, AUTHENTICATED])
    }

    /// The user of a request without credentials.
    pub(crate) fn anonymous() -> User {
        User::new(ANONYMOUS, &[UNAUTHENTICATED])
    }

    /// Whether the user is in `group`.
    pub(crate) fn in_group(&self, group: &str) -> bool {
        self.groups.iter().any(|g| g == group)
    }

    /// Adds `system:authenticated`, as the authenticated-group adder does after every
    /// authenticator but the anonymous one, unless it or `system:unauthenticated` is there.
    pub(crate) fn authenticated(mut self) -> User {
        if !self.in_group(AUTHENTICATED) && !self.in_group(UNAUTHENTICATED) {
            self.groups.push(AUTHENTICATED.to_string());
        }
        self
    }
}

/// The user name of the service account `name` in `namespace` (`serviceaccount.MakeUsername`).
pub(crate) fn service_account_name(namespace: &str, name: &str) -> String {
    format!("{SERVICE_ACCOUNT_PREFIX}{namespace}:{name}")
}

/// The namespace and name of a service account's user name; `None` for other users.
pub(crate) fn split_service_account(user: &str) -> Option<(&str, &str)> {
    let rest = user.strip_prefix(SERVICE_ACCOUNT_PREFIX)?;
    let (namespace, name) = rest.split_once(':')?;
    (!namespace.is_empty() && !name.is_empty() && !name.contains(':')).then_some((namespace, name))
}

/// The groups of a service account of `namespace` (`serviceaccount.MakeGroupNames`).
pub(crate) fn service_account_groups(namespace: &str) -> Vec<String> {
    vec![SERVICE_ACCOUNTS.to_string(), format!("{SERVICE_ACCOUNTS}:{namespace}")]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn service_account_user_names_are_split_as_upstream_splits_them() {
        assert_eq!(split_service_account("system:serviceaccount:ns:sa"), Some(("ns", "sa")));
        assert_eq!(split_service_account("system:serviceaccount:ns"), None);
        assert_eq!(split_service_account("system:serviceaccount:ns:sa:x"), None);
        assert_eq!(split_service_account("alice"), None);
        assert_eq!(service_account_name("ns", "sa"), "system:serviceaccount:ns:sa");
    }

    #[test]
    fn the_authenticated_group_is_added_once_and_never_to_anonymous() {
        let alice = User::new("alice", &["dev"]).authenticated().authenticated();
        assert_eq!(alice.groups, ["dev", AUTHENTICATED]);
        assert_eq!(User::anonymous().authenticated().groups, [UNAUTHENTICATED]);
    }
}
