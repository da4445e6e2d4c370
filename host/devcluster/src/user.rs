//! Who makes a request, as authentication finds out (`user.Info` of kube-apiserver).

/// An authenticated user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct User {
    pub name: String,
    pub groups: Vec<String>,
}

impl User {
    /// The administrator of a cluster its kubeconfig reaches without credentials, as
    /// `kubectl auth whoami` answers for a kind or kubeadm cluster's admin.
    pub(crate) fn admin() -> User {
        User {
            name: "kubernetes-admin".to_string(),
            groups: vec!["system:masters".to_string(), "system:authenticated".to_string()],
        }
    }
}
