// Kubernetes' name and label formats, as the apiserver checks them (k8s.io/apimachinery
// v0.35.4, pkg/api/validate/content/dns.go and kube.go, pkg/util/validation/validation.go,
// pkg/api/validation/generic.go). Pure. The patterns are ASCII only, so any string they
// accept has as many bytes as UTF-16 units and Go's len() equals String.length here.

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const LABEL_KEY_NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;

/** IsDNS1123Label: at most 63 characters of a-z, 0-9 and "-", alphanumeric at both ends. */
export function isDNS1123Label(value: string): boolean {
    return value.length <= 63 && DNS1123_LABEL.test(value);
}

/** IsDNS1123Subdomain: at most 253 characters, dot-separated DNS-1123 labels. */
export function isDNS1123Subdomain(value: string): boolean {
    return value.length <= 253 && DNS1123_SUBDOMAIN.test(value);
}

/**
 * NameIsDNSSubdomain(name, prefix=true), how a generateName is checked: maskTrailingDash
 * turns a final "-" into "a" (the random suffix follows it), then it must be a subdomain.
 */
export function isGenerateNamePrefix(value: string): boolean {
    const masked = value.length > 1 && value.endsWith('-') ? `${value.slice(0, -2)}a` : value;
    return isDNS1123Subdomain(masked);
}

/**
 * A generateName the apiserver accepts and whose names it accepts: it cuts the prefix to 58
 * characters and appends 5 alphanumerics (apiserver pkg/storage/names/generate.go), then
 * checks the name. "web.-" passes as a prefix (masked to "weba") but yields "web.-x2b4k".
 */
export function isUsableGenerateName(prefix: string): boolean {
    return isGenerateNamePrefix(prefix) && isDNS1123Subdomain(`${prefix.slice(0, 58)}xxxxx`);
}

/** IsQualifiedName (content.IsLabelKey): [subdomain prefix "/"] name of at most 63 characters. */
export function isQualifiedName(value: string): boolean {
    // indexOf, not split: every label key of every slice written is checked.
    const slash = value.indexOf('/');
    let name = value;
    if (slash >= 0) {
        if (value.indexOf('/', slash + 1) >= 0 || !isDNS1123Subdomain(value.slice(0, slash))) return false;
        name = value.slice(slash + 1);
    }
    return name.length <= 63 && LABEL_KEY_NAME.test(name);
}

/** IsValidLabelValue (content.IsLabelValue): empty, or a label key's name part. */
export function isLabelValue(value: string): boolean {
    return value === '' || (value.length <= 63 && LABEL_KEY_NAME.test(value));
}
