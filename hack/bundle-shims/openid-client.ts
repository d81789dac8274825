// What @kubernetes/client-node's OIDC authenticator imports from openid-client, for the CLI
// bundle (hack/bundle.ts): both are called only for a kubeconfig user with an OIDC auth
// provider, so openid-client (and its JOSE and OAuth libraries) is loaded then, not by every process.
import type * as oidc from 'openid-client';

export async function discovery(...args: Parameters<typeof oidc.discovery>): ReturnType<typeof oidc.discovery> {
    return (await import('openid-client')).discovery(...args);
}

export async function refreshTokenGrant(...args: Parameters<typeof oidc.refreshTokenGrant>): ReturnType<typeof oidc.refreshTokenGrant> {
    return (await import('openid-client')).refreshTokenGrant(...args);
}
