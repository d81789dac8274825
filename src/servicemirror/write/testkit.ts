// The service mirror's local side for unit tests (not part of the public API): the caches of
// our mirror Services, their slices and the namespaces, on an apiserver in memory
// (testing/memory-rest.ts), and the MirrorSync that writes through it.
import { Registry } from 'prom-client';
import { Informer } from '../../kube/informer.js';
import { logFn, newLogger } from '../../kube/log.js';
import { Namespaces, Services } from '../../kube/resources.js';
import { SliceOwner } from '../../kube/slice-owner.js';
import type { KubeObject } from '../../kube/store.js';
import { MemoryRest } from '../../testing/memory-rest.js';
import { CLUSTER_NAME_LABEL, HEADLESS_MIRROR_SVC_NAME_LABEL, MIRROR_SLICE_MANAGED_BY } from '../api/keys.js';
import type { CompactService } from '../cache/compact.js';
import { ServiceMirrorMetrics } from '../link/metrics.js';
import { MirrorSync } from './mirror-sync.js';

/** The local caches and writer, the namespace `namespace` created. */
export function localSide(namespace: string) {
    const rest = new MemoryRest();
    const log = logFn(newLogger('silent'));
    const services = new Informer<CompactService>(rest, { resource: Services, log });
    services.store.indexLabel(CLUSTER_NAME_LABEL);
    services.store.indexLabel(HEADLESS_MIRROR_SVC_NAME_LABEL);
    const namespaces = new Informer<KubeObject>(rest, { resource: Namespaces, log });
    const slices = new SliceOwner({ rest, managedBy: MIRROR_SLICE_MANAGED_BY, log });
    rest.serve('services', services);
    rest.serve('namespaces', namespaces);
    rest.serve('endpointslices', slices.informer);
    rest.add('namespaces', { metadata: { name: namespace } });
    const metrics = new ServiceMirrorMetrics(new Registry());
    const mirrors = new MirrorSync({ rest, owner: slices, services, namespaces, metrics, maxEndpointsPerSlice: 100 });
    return { rest, log, services, namespaces, slices, metrics, mirrors };
}
