// kubewatch's resource list: the key of each kind in its `resource:` configuration (the
// lower-cased Go field names its YAML parser reads, not the json tags of its
// `config.go`), and the kind it watches (robusta-dev/kubewatch `pkg/controller`).

import { KindRef } from '@kubewasm/sdk';

const kind = (group: string, version: string, k: string, plural: string, namespaced: boolean) => new KindRef(group, version, k, plural, namespaced);

/** Each `resource:` key and its kind. */
export const RESOURCES: readonly (readonly [string, KindRef])[] = [
  ['deployment', kind('apps', 'v1', 'Deployment', 'deployments', true)],
  ['replicationcontroller', kind('', 'v1', 'ReplicationController', 'replicationcontrollers', true)],
  ['replicaset', kind('apps', 'v1', 'ReplicaSet', 'replicasets', true)],
  ['daemonset', kind('apps', 'v1', 'DaemonSet', 'daemonsets', true)],
  ['statefulset', kind('apps', 'v1', 'StatefulSet', 'statefulsets', true)],
  ['services', kind('', 'v1', 'Service', 'services', true)],
  ['pod', kind('', 'v1', 'Pod', 'pods', true)],
  ['job', kind('batch', 'v1', 'Job', 'jobs', true)],
  ['node', kind('', 'v1', 'Node', 'nodes', false)],
  ['clusterrole', kind('rbac.authorization.k8s.io', 'v1', 'ClusterRole', 'clusterroles', false)],
  ['clusterrolebinding', kind('rbac.authorization.k8s.io', 'v1', 'ClusterRoleBinding', 'clusterrolebindings', false)],
  ['serviceaccount', kind('', 'v1', 'ServiceAccount', 'serviceaccounts', true)],
  ['persistentvolume', kind('', 'v1', 'PersistentVolume', 'persistentvolumes', false)],
  ['namespace', kind('', 'v1', 'Namespace', 'namespaces', false)],
  ['secret', kind('', 'v1', 'Secret', 'secrets', true)],
  ['configmap', kind('', 'v1', 'ConfigMap', 'configmaps', true)],
  ['ingress', kind('networking.k8s.io', 'v1', 'Ingress', 'ingresses', true)],
  ['hpa', kind('autoscaling', 'v2', 'HorizontalPodAutoscaler', 'horizontalpodautoscalers', true)],
  ['event', kind('events.k8s.io', 'v1', 'Event', 'events', true)],
  ['coreevent', kind('', 'v1', 'Event', 'events', true)],
];

/** The `resource:` key of `k`, if kubewatch watches it. */
export function keyOf(k: KindRef): string | undefined {
  return RESOURCES.find(([, r]) => r.group === k.group && r.version === k.version && r.kind === k.kind)?.[0];
}
