// DemoApplication: one image, a replica count and some ports become a Deployment and,
// when there are ports, a Service in front of it. The same plugin as
// plugins/demo-application, in JavaScript.
//
// The plugin only decides. The host applies both children, deletes the Service when the
// ports go away, reverts hand edits and writes the status.

import { Manifest, Response, kinds, plugin } from '@kubewasm/sdk';
import { CustomResource, s } from '@kubewasm/sdk/crd';

const port = () => s.int32().min(1).max(65535);

// The kind and its CRD, whose schema the API server validates and defaults.
export const resource = new CustomResource({
  group: 'paas.cmft.com',
  version: 'v1beta1',
  kind: 'DemoApplication',
  spec: s.object({
    image: s.string().minLength(1),
    replica: s.int32().min(0).default(1),
    ports: s.array(s.object({
      port: port(),
      targetPort: port().optional(),
      nodePort: s.int32().min(30000).max(32767).optional(),
    })).optional(),
  }),
  status: s.object({ availableReplicas: s.int32().optional() }),
  shortNames: ['demoapp'],
  printerColumns: [
    { name: 'Image', type: 'string', jsonPath: '.spec.image' },
    { name: 'Replicas', type: 'integer', jsonPath: '.spec.replica' },
    { name: 'Available', type: 'integer', jsonPath: '.status.availableReplicas' },
  ],
});

export const reconciler = plugin({
  describe() {
    return new Manifest('demo-application-js', resource.kindRef, {
      children: [kinds.Deployment, kinds.Service],
      crds: [resource.crd()],
    });
  },

  reconcile(request) {
    const app = request.parent;
    const spec = readSpec(app);
    const labels = { app: app.name };

    const response = new Response().child(deployment(app, spec, labels));
    // No ports, no Service: leaving it out is what makes the host delete an old one.
    if (spec.ports.length > 0) response.child(service(app, spec, labels));

    const observed = request.child(kinds.Deployment, app.name);
    response.status = { availableReplicas: observed?.status?.availableReplicas ?? 0 };
    return response;
  },
});

/** The parent's spec as this plugin reads it; a field that is missing or of the wrong
 * type is a permanent error naming it. */
function readSpec(app) {
  const ports = app.field('spec.ports', 'array', []).map((_, i) => {
    const port = app.field(`spec.ports[${i}].port`, 'integer');
    return {
      port,
      // Defaults to `port`, as a Service's targetPort does.
      target: app.field(`spec.ports[${i}].targetPort`, 'integer', port),
      // Setting it on any port turns the Service into a NodePort Service.
      nodePort: app.field(`spec.ports[${i}].nodePort`, 'integer', null),
    };
  });
  return {
    image: app.field('spec.image', 'string'),
    // The CRD defaults it too; this covers objects stored before the default existed.
    replica: app.field('spec.replica', 'integer', 1),
    ports,
  };
}

/** Child metadata: the parent's labels, then `app: <name>`, which the selectors rely on. */
function meta(app, labels) {
  const m = app.childMeta(app.name);
  return { ...m, labels: { ...m.labels, ...labels } };
}

function deployment(app, spec, labels) {
  const container = { name: 'app', image: spec.image };
  if (spec.ports.length > 0) container.ports = spec.ports.map((p) => ({ containerPort: p.target, protocol: 'TCP' }));
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: meta(app, labels),
    spec: {
      replicas: spec.replica,
      selector: { matchLabels: labels },
      template: { metadata: { labels }, spec: { containers: [container] } },
    },
  };
}

function service(app, spec, labels) {
  const ports = spec.ports.map((p) => {
    const port = { name: `port-${p.port}`, protocol: 'TCP', port: p.port, targetPort: p.target };
    if (p.nodePort !== null) port.nodePort = p.nodePort;
    return port;
  });
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: meta(app, labels),
    spec: { type: spec.ports.some((p) => p.nodePort !== null) ? 'NodePort' : 'ClusterIP', selector: labels, ports },
  };
}
