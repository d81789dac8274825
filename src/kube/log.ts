// Structured logs (pino, JSON on stdout). Controllers get child loggers; the runtime's
// small `log(level, msg, fields)` callbacks adapt to them so it needs no pino import.
//
// No log line carries a secret: the code logs names, reasons and counts, never a Secret, a
// kubeconfig or a request's headers. Should a field of that kind reach a logger all the same
// (an object logged whole, an error carrying what it was given), pino replaces it: REDACTED
// lists the fields that hold credentials in a Secret, a kubeconfig (client-node's and its
// YAML spelling) or an HTTP request, at the top of a log line's fields or one level down.
import { pino, type Logger } from 'pino';

export type { Logger };
export type LogFn = (level: 'info' | 'warn' | 'debug' | 'error', msg: string, fields?: Record<string, unknown>) => void;

const SECRET_FIELDS = [
    'data', // a Secret's data and stringData
    'stringData',
    'kubeconfig',
    'token',
    'bearerToken',
    'password',
    'authorization',
    'Authorization',
    'certData', // client-node's names for a kubeconfig's inline material
    'keyData',
    'caData',
    'authProvider',
    'exec',
    '["client-key-data"]', // the kubeconfig YAML's
    '["client-certificate-data"]',
    '["certificate-authority-data"]',
    '["auth-provider"]',
];

export const REDACTED = [
    ...SECRET_FIELDS,
    ...SECRET_FIELDS.map((f) => (f.startsWith('[') ? `*${f}` : `*.${f}`)),
    'headers.authorization',
    '*.headers.authorization',
    '*.headers.Authorization',
];

export function newLogger(level = process.env.LOG_LEVEL ?? 'info', destination?: pino.DestinationStream): Logger {
    const options = { level, base: { pid: process.pid }, timestamp: pino.stdTimeFunctions.isoTime, redact: { paths: REDACTED, censor: '[redacted]' } };
    return destination ? pino(options, destination) : pino(options);
}

export function logFn(logger: Logger): LogFn {
    return (level, msg, fields) => logger[level](fields ?? {}, msg);
}

/**
 * The log of an informer of an optional API: its CRD missing is how a cluster without that API
 * looks, said at info level, not as an error.
 */
export function optionalApiLog(log: LogFn): LogFn {
    return (level, msg, fields) => log(level === 'error' && fields?.crd !== undefined ? 'info' : level, msg, fields);
}
