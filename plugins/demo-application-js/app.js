// DemoApplication: one image, a replica count and some ports become a Deployment and,
// when there are ports, a Service in front of it. The same plugin as
// plugins/demo-application, in JavaScript.
//
// The plugin only decides. The host applies both children, deletes the Service when the
// ports go away, reverts hand edits and writes the status.

import { KindRef, Manifest, Response, kinds, plugin } from '@kubewasm/sdk';

// The Rust plugin's CRD: the build puts the file's text in the component.
import CRD from '../demo-application/crd.yaml';

export const reconciler = plugin({
  describe() {
    return new Manifest('demo-application-js', new KindRef('paas.cmft.com', 'v1beta1', 'DemoApplication', 'demoapplications'), {
      children: [kinds.Deployment, kinds.Service],
      crds: [CRD],
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
