// Text files a plugin imports as strings (`import crd from './crd.yaml'`): the build puts
// their text in the component, which has no files; native tests read them.
declare module '*.yaml' {
  const text: string;
  export default text;
}
declare module '*.yml' {
  const text: string;
  export default text;
}
declare module '*.txt' {
  const text: string;
  export default text;
}
