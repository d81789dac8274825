// The one place mesh-endpoints gets client-node's KubeConfig from (the credentials of every
// request: tokens, client certs, exec plugins, in-cluster service account). A kubeconfig we did
// not write (a Link's credentials Secret) goes through untrusted-kubeconfig.ts first.
// KubeConfig comes from the package's config module, not its index: the index loads the
// whole generated API (about 2 500 model classes and every API group's client, 21 MB of
// JavaScript) that nothing here uses.
// config.js still imports the generated index for two small helpers; the CLI bundle `npm run
// build` makes (hack/bundle.ts) leaves the unused generated modules out. Loading all of
// client-node costs a process about 70 MB of RSS (docs/benchmarks.md, "where the memory goes").
export { KubeConfig } from '@kubernetes/client-node/dist/config.js';
