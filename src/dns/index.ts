// dns/: turns a Link's spec.gatewayAddress into the IP addresses a mirror Service's slices
// may carry. It owns parsing the entries, resolving hostnames (A + AAAA with TTLs), the
// refresh and failure policy, and the per-name status and metrics. It must not touch the
// Kubernetes API, write slices, Events or Link status, or log: the service mirror does that
// from onChange and from mirrorGatewayAddresses / nameStatus.
//
// Failure policy, in one place:
// - An IP literal is used as written (canonical form), never resolved; a loopback,
//   link-local, multicast or unspecified literal is a parse error.
// - A hostname is re-resolved when the shortest TTL of its answers runs out, clamped to
//   [minTtlMs, maxTtlMs] (5 s, 1 h). The same answer again is not a change.
// - NXDOMAIN, SERVFAIL, timeout, an empty answer, or answers that are all unusable: the name
//   keeps its last good addresses, ready, for staleWindowMs (5 min), then not ready, until
//   DNS answers again. Retries back off 1 s, 2 s, 4 s … capped at 30 s.
// - One family failing hard while the other answers keeps that family's last good addresses
//   under the same stale rule; NODATA for one family just means the name lacks it.
// - A name that never resolved publishes nothing: never its own text, never "".
export { parseGatewayAddress, compareAddresses, normalizeName } from './gateway-address.js';
export type { GatewayEntry, ParsedGatewayAddress, UnusableReason } from './gateway-address.js';
export {
    DEFAULT_DNS_POLICY,
    initialNameState,
    onAnswer,
    onFailure,
    onResolution,
    addressesOf,
    nextWakeAt,
    retryDelay,
} from './name-state.js';
export type {
    AddressRecord,
    DnsPolicy,
    DroppedAddress,
    FamilyErrors,
    GatewayAddress,
    NameResolution,
    NameState,
    ResolutionError,
    ResolutionErrorCode,
    ResolvedAddress,
    Transition,
} from './name-state.js';
export { mirrorGatewayAddresses } from './gateway-endpoints.js';
export { gatewayResolutionStatus, nameStatus, type GatewayNameStatus } from './resolution-status.js';
export { GatewayResolver, resolutionErrorOf, type GatewayResolverOptions, type NameResolver } from './resolver.js';
export { GatewayWatcher, type GatewayWatcherOptions } from './gateway-watcher.js';
export { GatewayDnsMetrics, noGatewayDnsMetrics, type GatewayDnsObserver, type ResolutionResult } from './metrics.js';
