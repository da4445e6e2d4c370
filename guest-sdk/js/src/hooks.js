// Module hooks for native tests (see register.js): what `kubewasm-js build` does with
// TypeScript and text imports, done as node loads each file.

import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';

import { TEXT_EXTENSIONS } from './text-extensions.js';

export async function load(url, context, next) {
  if (url.startsWith('file:')) {
    const path = fileURLToPath(url);
    if (TEXT_EXTENSIONS.some((ext) => path.endsWith(ext))) {
      const text = await readFile(path, 'utf8');
      return { format: 'module', source: `export default ${JSON.stringify(text)};`, shortCircuit: true };
    }
    if (path.endsWith('.ts') || path.endsWith('.mts')) {
      const { transformSync } = await import('rolldown/experimental');
      const source = await readFile(path, 'utf8');
      const out = transformSync(path, source, { lang: 'ts', sourcemap: false });
      if (out.errors?.length) throw new SyntaxError(`${path}: ${out.errors.map((e) => e.message).join('; ')}`);
      return { format: 'module', source: out.code, shortCircuit: true };
    }
  }
  return next(url, context);
}
