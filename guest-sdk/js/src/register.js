// `node --import @kubewasm/sdk/register`: lets native tests load what the build bundles,
// TypeScript modules (types stripped) and text files imported as strings
// (`import crd from './crd.yaml'`).

import { register } from 'node:module';

register('./hooks.js', import.meta.url);
