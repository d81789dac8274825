// How the demo speaks: a `==> ` line per step, then what the step shows.
export const say = (text: string): void => {
    process.stdout.write(`${text}\n`);
};

export const step = (text: string): void => say(`\n==> ${text}`);

/** Seconds with one decimal, for measured times. */
export const seconds = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;
