// The framing of a watch's answer: one JSON event per line, read as chunks arrive. Apart from
// the transport because it holds the watch's own rules (an event is handled after the I/O of the
// chunk that brought it; a line too long to hold is dropped as it streams, only its start kept)
// and the transport only opens the stream.
import type { IncomingMessage } from 'node:http';

/** A bound on each line of a watch: a longer one is never held, only its start is told (WatchBounds.oversized). */
export interface WatchBounds {
    /** In characters of the decoded stream (bytes, for the ASCII JSON an apiserver sends). */
    maxLineChars: number;
    /** A line longer than maxLineChars was dropped: its first OVERSIZED_PREFIX_CHARS characters and its length. May throw to end the watch. */
    oversized(prefix: string, chars: number): void;
}

/** How much of a dropped line is kept to tell what it was (its kind and metadata come first). */
export const OVERSIZED_PREFIX_CHARS = 4096;

const OBJECT_METADATA = /"metadata":\{"name":"((?:[^"\\]|\\.)*)"(?:,"generateName":"(?:[^"\\]|\\.)*")?(?:,"namespace":"((?:[^"\\]|\\.)*)")?/;

/** The namespace/name of the object of a watch event, read from its start (apiservers write metadata's name and namespace first). */
export function objectOfEventPrefix(prefix: string): { namespace?: string; name: string } | undefined {
    const m = OBJECT_METADATA.exec(prefix);
    if (!m) return undefined;
    const unquote = (text: string) => JSON.parse(`"${text}"`) as string;
    try {
        return m[2] === undefined ? { name: unquote(m[1]!) } : { namespace: unquote(m[2]), name: unquote(m[1]!) };
    } catch {
        return undefined;
    }
}

/**
 * Hands each non-empty line of a streamed body to onLine; resolves at its end, rejects when it
 * fails or onLine throws. Chunks are read as they come (onChunk) and their lines handled after
 * the event loop's I/O (setImmediate): a watch event of a write is sent with that write's
 * answer, and the worker waiting on the answer sends its next request first.
 */
export function readLines(res: IncomingMessage, onLine: (line: string) => void, onChunk: () => void, bounds?: WatchBounds): Promise<void> {
    return new Promise((resolve, reject) => {
        let pending = '';
        let scheduled: NodeJS.Immediate | undefined;
        /** The line being dropped (longer than bounds.maxLineChars): its start and length so far. */
        let dropping: { prefix: string; chars: number } | undefined;
        const max = bounds?.maxLineChars ?? Infinity;
        const fail = (err: unknown) => {
            reject(err as Error);
            res.destroy();
        };
        const handleLines = (): boolean => {
            scheduled = undefined;
            try {
                let newline: number;
                while ((newline = pending.indexOf('\n')) >= 0) {
                    const line = pending.slice(0, newline).trim();
                    pending = pending.slice(newline + 1);
                    if (line.length > max) bounds!.oversized(line.slice(0, OVERSIZED_PREFIX_CHARS), line.length);
                    else if (line) onLine(line);
                }
                if (pending.length > max) {
                    dropping = { prefix: pending.slice(0, OVERSIZED_PREFIX_CHARS), chars: pending.length };
                    pending = '';
                }
                return true;
            } catch (err) {
                fail(err);
                return false;
            }
        };
        res.setEncoding('utf8'); // a character split between two chunks is decoded whole
        res.on('data', (chunk: string) => {
            onChunk();
            if (dropping) {
                const newline = chunk.indexOf('\n');
                if (newline < 0) {
                    dropping.chars += chunk.length;
                    return;
                }
                const dropped = dropping;
                dropping = undefined;
                try {
                    bounds!.oversized(dropped.prefix, dropped.chars + newline);
                } catch (err) {
                    fail(err);
                    return;
                }
                chunk = chunk.slice(newline + 1);
            }
            pending += chunk;
            scheduled ??= setImmediate(handleLines);
        });
        res.once('end', () => {
            clearImmediate(scheduled);
            if (handleLines()) resolve();
        });
        res.once('error', reject);
        res.once('close', () => {
            clearImmediate(scheduled);
            if (!res.complete) reject(new Error('response closed before its end'));
        });
    });
}
