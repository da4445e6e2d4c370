// The built-in kinds plugins use most, by name: `kinds.Deployment`, `kinds.Service`...

import { KindRef } from './kinds.js';

const core = (kind, plural, namespaced = true) => new KindRef('', 'v1', kind, plural, namespaced);

export const ConfigMap = core('ConfigMap', 'configmaps');
export const Secret = core('Secret', 'secrets');
export const Service = core('Service', 'services');
export const ServiceAccount = core('ServiceAccount', 'serviceaccounts');
export const Pod = core('Pod', 'pods');
export const PersistentVolumeClaim = core('PersistentVolumeClaim', 'persistentvolumeclaims');
export const Namespace = core('Namespace', 'namespaces', false);
export const Deployment = new KindRef('apps', 'v1', 'Deployment', 'deployments');
export const StatefulSet = new KindRef('apps', 'v1', 'StatefulSet', 'statefulsets');
export const DaemonSet = new KindRef('apps', 'v1', 'DaemonSet', 'daemonsets');
export const Job = new KindRef('batch', 'v1', 'Job', 'jobs');
export const CronJob = new KindRef('batch', 'v1', 'CronJob', 'cronjobs');
export const Ingress = new KindRef('networking.k8s.io', 'v1', 'Ingress', 'ingresses');
export const NetworkPolicy = new KindRef('networking.k8s.io', 'v1', 'NetworkPolicy', 'networkpolicies');
export const Role = new KindRef('rbac.authorization.k8s.io', 'v1', 'Role', 'roles');
export const RoleBinding = new KindRef('rbac.authorization.k8s.io', 'v1', 'RoleBinding', 'rolebindings');
export const ClusterRole = new KindRef('rbac.authorization.k8s.io', 'v1', 'ClusterRole', 'clusterroles', false);
export const ClusterRoleBinding = new KindRef('rbac.authorization.k8s.io', 'v1', 'ClusterRoleBinding', 'clusterrolebindings', false);
export const HorizontalPodAutoscaler = new KindRef('autoscaling', 'v2', 'HorizontalPodAutoscaler', 'horizontalpodautoscalers');
export const PodDisruptionBudget = new KindRef('policy', 'v1', 'PodDisruptionBudget', 'poddisruptionbudgets');
