// Package kinds names the built-in Kubernetes kinds plugins use most.
package kinds

import "kubewasm.dev/sdk"

func core(kind, plural string) kubewasm.KindRef { return kubewasm.Namespaced("", "v1", kind, plural) }

// The built-in kinds, as manifests and queries name them.
var (
	ConfigMap               = core("ConfigMap", "configmaps")
	Secret                  = core("Secret", "secrets")
	Service                 = core("Service", "services")
	ServiceAccount          = core("ServiceAccount", "serviceaccounts")
	Pod                     = core("Pod", "pods")
	PersistentVolumeClaim   = core("PersistentVolumeClaim", "persistentvolumeclaims")
	Namespace               = kubewasm.ClusterScoped("", "v1", "Namespace", "namespaces")
	Deployment              = kubewasm.Namespaced("apps", "v1", "Deployment", "deployments")
	StatefulSet             = kubewasm.Namespaced("apps", "v1", "StatefulSet", "statefulsets")
	DaemonSet               = kubewasm.Namespaced("apps", "v1", "DaemonSet", "daemonsets")
	Job                     = kubewasm.Namespaced("batch", "v1", "Job", "jobs")
	CronJob                 = kubewasm.Namespaced("batch", "v1", "CronJob", "cronjobs")
	Ingress                 = kubewasm.Namespaced("networking.k8s.io", "v1", "Ingress", "ingresses")
	NetworkPolicy           = kubewasm.Namespaced("networking.k8s.io", "v1", "NetworkPolicy", "networkpolicies")
	Role                    = kubewasm.Namespaced("rbac.authorization.k8s.io", "v1", "Role", "roles")
	RoleBinding             = kubewasm.Namespaced("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings")
	ClusterRole             = kubewasm.ClusterScoped("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles")
	ClusterRoleBinding      = kubewasm.ClusterScoped("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings")
	HorizontalPodAutoscaler = kubewasm.Namespaced("autoscaling", "v2", "HorizontalPodAutoscaler", "horizontalpodautoscalers")
	PodDisruptionBudget     = kubewasm.Namespaced("policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets")
)
