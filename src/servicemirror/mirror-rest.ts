// The local-cluster client of the service mirror: src/kube/rest.ts's KubeRest with one
// workaround, kept here until rest.ts is fixed (reported; not our file to edit).
//
// Node 20 sends a DELETE request's body with neither Content-Length nor Transfer-Encoding
// (it only frames bodies of methods that usually have one). The apiserver therefore reads the
// DELETE as bodiless, never sees its DeleteOptions, and takes the body bytes for the start of
// the next request on the keep-alive connection, which then fails with a bare "400 Bad
// Request" (reproduced against our kube-apiserver: delete with a body, then any request).
// Sending no body has the same effect on the server as today (the preconditions were never
// applied) without breaking the next request. Once rest.ts sets Content-Length, drop this.
import { KubeRest, type Query } from '../kube/rest.js';

export class MirrorRest extends KubeRest {
    override delete(path: string, query?: Query, _body?: unknown): Promise<unknown> {
        return super.delete(path, query);
    }
}
