// CRDs from the schema builder: what the API server reads of them, for each Kubebuilder
// marker, and the errors that name what does not fit.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { KindRef, Manifest } from '@kubewasm/sdk';
import { CustomResource, crd, s } from '@kubewasm/sdk/crd';

const database = new CustomResource({
  group: 'example.com',
  version: 'v1',
  kind: 'Database',
  spec: s.object({
    owner: s.string().minLength(1).maxLength(63).pattern(/^[a-z][a-z0-9-]*$/),
    engine: s.enum(['postgres', 'mysql']),
    replicas: s.integer().min(1).max(9).default(1),
    ports: s.array(s.object({ port: s.int32().min(1).max(65535), protocol: s.enum(['TCP', 'UDP']).default('TCP') })).maxItems(4).optional(),
    labels: s.record(s.string()).optional(),
    raw: s.any().optional(),
    ratio: s.number().gt(0).lt(1).optional(),
  }),
  status: s.object({ ready: s.boolean().optional(), readyReplicas: s.int32().optional() }),
  shortNames: ['db'],
  categories: ['all'],
  printerColumns: [{ name: 'Engine', type: 'string', jsonPath: '.spec.engine' }],
});

const parsed = (text) => JSON.parse(text);

test('the kind is the resource\'s', () => {
  assert.deepEqual(database.kindRef, new KindRef('example.com', 'v1', 'Database', 'databases'));
  const zone = new CustomResource({ group: 'example.com', version: 'v1', kind: 'Zone', plural: 'zonez', namespaced: false, spec: s.object({}) });
  assert.deepEqual(zone.kindRef, new KindRef('example.com', 'v1', 'Zone', 'zonez', false));
  assert.equal(parsed(zone.crd()).spec.scope, 'Cluster');
});

test('names, scope, columns and the status subresource', () => {
  const document = parsed(new Manifest('db', database.kindRef, { crds: [database.crd()] }).crds[0]);
  assert.equal(document.apiVersion, 'apiextensions.k8s.io/v1');
  assert.equal(document.kind, 'CustomResourceDefinition');
  assert.equal(document.metadata.name, 'databases.example.com');
  assert.equal(document.spec.scope, 'Namespaced');
  assert.deepEqual(document.spec.names, { kind: 'Database', listKind: 'DatabaseList', plural: 'databases', singular: 'database', shortNames: ['db'], categories: ['all'] });
  const [version] = document.spec.versions;
  assert.deepEqual([version.name, version.served, version.storage], ['v1', true, true]);
  assert.deepEqual(version.subresources, { status: {} });
  assert.deepEqual(version.additionalPrinterColumns, [{ name: 'Engine', type: 'string', jsonPath: '.spec.engine' }]);
});

test('markers become the schema the API server validates', () => {
  const root = parsed(database.crd()).spec.versions[0].schema.openAPIV3Schema;
  const spec = root.properties.spec;
  assert.deepEqual(spec.required, ['owner', 'engine'], 'neither optional nor defaulted');
  const fields = spec.properties;
  assert.deepEqual(fields.owner, { type: 'string', minLength: 1, maxLength: 63, pattern: '^[a-z][a-z0-9-]*$' });
  assert.deepEqual(fields.engine, { type: 'string', enum: ['postgres', 'mysql'] });
  assert.deepEqual(fields.replicas, { type: 'integer', minimum: 1, maximum: 9, default: 1 });
  assert.deepEqual(fields.ports, {
    type: 'array',
    maxItems: 4,
    items: {
      type: 'object',
      properties: {
        port: { type: 'integer', format: 'int32', minimum: 1, maximum: 65535 },
        protocol: { type: 'string', enum: ['TCP', 'UDP'], default: 'TCP' },
      },
      required: ['port'],
    },
  });
  assert.deepEqual(fields.labels, { type: 'object', additionalProperties: { type: 'string' } });
  assert.deepEqual(fields.raw, { 'x-kubernetes-preserve-unknown-fields': true });
  assert.deepEqual(fields.ratio, { type: 'number', minimum: 0, exclusiveMinimum: true, maximum: 1, exclusiveMaximum: true });
  assert.deepEqual(root.properties.status, { type: 'object', properties: { ready: { type: 'boolean' }, readyReplicas: { type: 'integer', format: 'int32' } } });
});

test('a builder is a value: a marker makes a new one', () => {
  const port = s.integer();
  const bounded = port.min(1);
  assert.deepEqual(port.json(), { type: 'integer' });
  assert.deepEqual(bounded.json(), { type: 'integer', minimum: 1 });
});

test('several versions, one storage version', () => {
  const v2 = new CustomResource({ group: 'example.com', version: 'v2', kind: 'Database', shortNames: ['db'], spec: s.object({ instances: s.integer() }) });
  const document = parsed(crd([database, v2], { storage: 'v2' }));
  assert.deepEqual(document.spec.versions.map((v) => [v.name, v.storage]), [['v1', false], ['v2', true]]);
  assert.deepEqual(document.spec.versions[1].schema.openAPIV3Schema.properties.spec.required, ['instances']);
  assert.equal(document.spec.versions[1].subresources, undefined);
  assert.deepEqual(document.spec.names.shortNames, ['db']);
});

test('what does not fit is refused, naming it', () => {
  const v2 = new CustomResource({ group: 'example.com', version: 'v2', kind: 'Database', spec: s.object({}) });
  assert.throws(() => crd([database, v2]), /storage version undefined is not among v1, v2/);
  assert.throws(() => crd([database, v2], { storage: 'v3' }), /storage version "v3" is not among/);
  const table = new CustomResource({ group: 'example.com', version: 'v2', kind: 'Table', spec: s.object({}) });
  assert.throws(() => crd([database, table], { storage: 'v1' }), /version v2 is not of Database.example.com/);
  assert.throws(() => s.object({ replicas: 3 }), /field replicas is not a schema/);
  assert.throws(() => new CustomResource({ group: 'example.com', version: 'v1', kind: 'Bad', spec: s.string() }), /Bad: spec must be an s.object/);
});
