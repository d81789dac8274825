// The one spelling of an IP address family in mesh-endpoints: Kubernetes' own, as an
// EndpointSlice's addressType and a Service's spec.ipFamilies write it. Not 4 | 6 (node's
// net.isIP answer): that is turned into this at the edge that asks node.
export type AddressType = 'IPv4' | 'IPv6';
