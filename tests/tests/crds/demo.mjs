// DemoApplication's CRD (plugins/demo-application/crd.yaml) from the JavaScript SDK's
// schema builder: prints it for the end-to-end test.

import { CustomResource, s } from '../../../guest-sdk/js/src/crd.js';

const port = () => s.int32().min(1).max(65535);

const demo = new CustomResource({
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

console.log(demo.crd());
