/** Files imported as their text (`import crd from './crd.yaml'`), by the build and in tests. */
export const TEXT_EXTENSIONS = ['.yaml', '.yml', '.txt', '.json.txt'];
