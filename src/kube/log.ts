// Structured logs (pino, JSON on stdout). Controllers get child loggers; the runtime's
// small `log(level, msg, fields)` callbacks adapt to them so it needs no pino import.
import { pino, type Logger } from 'pino';

export type { Logger };
export type LogFn = (level: 'info' | 'warn' | 'debug' | 'error', msg: string, fields?: Record<string, unknown>) => void;

export function newLogger(level = process.env.LOG_LEVEL ?? 'info'): Logger {
    return pino({ level, base: { pid: process.pid }, timestamp: pino.stdTimeFunctions.isoTime });
}

export function logFn(logger: Logger): LogFn {
    return (level, msg, fields) => logger[level](fields ?? {}, msg);
}
