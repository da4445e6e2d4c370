"""Kubernetes kinds and the REST resources that serve them.

``KindRef`` names a kind in a manifest (the parent, the children a plugin may own, the
kinds it reads) and in related queries. The built-in kinds plugins use most are here
by name: ``kinds.Deployment``, ``kinds.Service``...
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping


@dataclass(frozen=True)
class KindRef:
    """A Kubernetes kind and its REST resource (``plural``, for RBAC and paths).

    ``KindRef("example.com", "v1", "Echo", "echoes")`` is namespaced; pass
    ``namespaced=False`` for a cluster-scoped kind.
    """

    group: str
    """API group; empty for the core group (Pods, Services, ConfigMaps...)."""
    version: str
    kind: str
    plural: str
    namespaced: bool = True
    """Whether objects of this kind live in a namespace (``False``: cluster-scoped)."""

    @property
    def api_version(self) -> str:
        """``group/version``, or just ``version`` for the core group, as in ``apiVersion``."""
        return f"{self.group}/{self.version}" if self.group else self.version

    def matches(self, obj: Any) -> bool:
        """Whether ``obj`` (a JSON object) is of this kind."""
        return (
            isinstance(obj, Mapping)
            and obj.get("kind") == self.kind
            and obj.get("apiVersion") == self.api_version
        )

    def __str__(self) -> str:
        return f"{self.api_version} {self.kind}"


def _core(kind: str, plural: str, namespaced: bool = True) -> KindRef:
    return KindRef("", "v1", kind, plural, namespaced)


ConfigMap = _core("ConfigMap", "configmaps")
Secret = _core("Secret", "secrets")
Service = _core("Service", "services")
ServiceAccount = _core("ServiceAccount", "serviceaccounts")
Pod = _core("Pod", "pods")
PersistentVolumeClaim = _core("PersistentVolumeClaim", "persistentvolumeclaims")
Namespace = _core("Namespace", "namespaces", namespaced=False)
Deployment = KindRef("apps", "v1", "Deployment", "deployments", True)
StatefulSet = KindRef("apps", "v1", "StatefulSet", "statefulsets", True)
DaemonSet = KindRef("apps", "v1", "DaemonSet", "daemonsets", True)
Job = KindRef("batch", "v1", "Job", "jobs", True)
CronJob = KindRef("batch", "v1", "CronJob", "cronjobs", True)
Ingress = KindRef("networking.k8s.io", "v1", "Ingress", "ingresses", True)
NetworkPolicy = KindRef("networking.k8s.io", "v1", "NetworkPolicy", "networkpolicies", True)
Role = KindRef("rbac.authorization.k8s.io", "v1", "Role", "roles", True)
RoleBinding = KindRef("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings", True)
ClusterRole = KindRef("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", False)
ClusterRoleBinding = KindRef(
    "rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings", False
)
HorizontalPodAutoscaler = KindRef(
    "autoscaling", "v2", "HorizontalPodAutoscaler", "horizontalpodautoscalers", True
)
PodDisruptionBudget = KindRef("policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets", True)
