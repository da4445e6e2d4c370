// The behaviour of plugins/demo-application (its Rust unit tests), for the TypeScript port.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { PermanentError, kinds } from '@kubewasm/sdk';
import * as testing from '@kubewasm/sdk/testing';

import { reconciler } from '../app.ts';

const app = (spec: Record<string, unknown>) => ({
  apiVersion: 'paas.cmft.com/v1beta1',
  kind: 'DemoApplication',
  metadata: { name: 'web', namespace: 'shop', uid: 'u-1', labels: { team: 'a' } },
  spec,
});

const run = (spec: Record<string, unknown>, inputs?: Parameters<typeof testing.reconcile>[2]) => testing.reconcile(reconciler, app(spec), inputs);

test('the Service exposes the ports, targetPort defaulting to port', () => {
  const { spec } = run({ image: 'nginx:1.27', ports: [{ port: 80, targetPort: 8080 }, { port: 443 }] }).child(kinds.Service, 'web');
  assert.equal(spec.type, 'ClusterIP');
  assert.deepEqual(spec.selector, { app: 'web' });
  assert.deepEqual(spec.ports, [
    { name: 'port-80', protocol: 'TCP', port: 80, targetPort: 8080 },
    { name: 'port-443', protocol: 'TCP', port: 443, targetPort: 443 },
  ]);
});

test('the Service exposes node ports', () => {
  const { spec } = run({ image: 'nginx', ports: [{ port: 80, nodePort: 30080 }, { port: 81 }] }).child(kinds.Service, 'web');
  assert.equal(spec.type, 'NodePort');
  assert.equal(spec.ports[0].nodePort, 30080);
  assert.ok(!('nodePort' in spec.ports[1]));
});

test('the Deployment runs the image with the replicas, ports and labels', () => {
  const deployment = run({ image: 'nginx:1.27', replica: 3, ports: [{ port: 80, targetPort: 8080 }, { port: 443 }] }).child(kinds.Deployment, 'web');
  assert.equal(deployment.namespace, 'shop');
  assert.deepEqual(deployment.labels, { app: 'web', team: 'a' });
  const { spec } = deployment;
  assert.equal(spec.replicas, 3);
  assert.deepEqual(spec.selector, { matchLabels: { app: 'web' } });
  assert.deepEqual(spec.template.metadata, { labels: { app: 'web' } });
  assert.deepEqual(spec.template.spec.containers, [
    { name: 'app', image: 'nginx:1.27', ports: [{ containerPort: 8080, protocol: 'TCP' }, { containerPort: 443, protocol: 'TCP' }] },
  ]);
});

test('replica defaults to one', () => {
  assert.equal(run({ image: 'nginx' }).child(kinds.Deployment, 'web').spec.replicas, 1);
});

test('no ports means no Service and no container ports', () => {
  const out = run({ image: 'nginx', ports: [] });
  assert.deepEqual(out.childrenOf(kinds.Service), []);
  const [deployment] = out.childrenOf(kinds.Deployment);
  assert.ok(!('ports' in deployment.spec.template.spec.containers[0]));
});

test('the status reports the available replicas of the observed Deployment', () => {
  const observed = { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'web', namespace: 'shop' }, status: { availableReplicas: 2 } };
  assert.deepEqual(run({ image: 'nginx', replica: 2 }, { children: [observed] }).status, { availableReplicas: 2 });
  assert.deepEqual(run({ image: 'nginx' }).status, { availableReplicas: 0 });
});

test('a spec without image is a permanent error naming the field', () => {
  assert.throws(() => run({ replica: 1 }), (e: unknown) => e instanceof PermanentError && !e.retryable && e.message === 'DemoApplication shop/web: spec.image: missing field');
});

test('a port of the wrong type is a permanent error naming it', () => {
  assert.throws(() => run({ image: 'nginx', ports: [{ port: 80 }, { port: 'http' }] }), {
    message: 'DemoApplication shop/web: spec.ports[1].port: expected an integer, found a string',
  });
});

test('the manifest declares the parent, the children and the Rust plugin CRD', () => {
  const manifest = testing.describe(reconciler);
  assert.equal(manifest.name, 'demo-application-ts');
  assert.equal(manifest.parent?.plural, 'demoapplications');
  assert.deepEqual(manifest.children, [kinds.Deployment, kinds.Service]);
  assert.equal(JSON.parse(manifest.crds[0]).metadata.name, 'demoapplications.paas.cmft.com');
});
