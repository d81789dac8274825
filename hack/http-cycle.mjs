// A preload for measuring: how many POSTs this process had out at once, from the client's side,
// and where each spent its time, to set beside the creates the apiserver counted inside its
// handlers (hack/write-phase.ts's "in flight at the apiserver"): the difference is time in transit,
// a create's bytes waiting for the apiserver or its answer waiting for our event loop.
// Node's diagnostics channels: http.client.request.start is published once the request is
// flushed into its socket, http.client.response.finish once the answer's headers are parsed.
// At exit, writes DIR/<pid>.txt with one line per phase of POSTs (a gap of a second ends one).
//   NODE_OPTIONS=--import=$PWD/hack/http-cycle.mjs HTTP_CYCLE_DIR=/tmp/cycle WRITE_PHASE_LIKE_SYNC=1 npx tsx hack/write-phase.ts 2
// (the bench process and the controllers it starts each write their own file)
import { subscribe } from 'node:diagnostics_channel';
import { mkdirSync, writeFileSync } from 'node:fs';

const dir = process.env.HTTP_CYCLE_DIR;
if (dir) {
    /** flushed, headers parsed, body ended (performance.now()) of each POST */
    const posts = [];
    subscribe('http.client.request.start', ({ request }) => {
        if (request.method === 'POST') posts.push((request.cycle = { flushed: performance.now() }));
    });
    subscribe('http.client.response.finish', ({ request, response }) => {
        const cycle = request.cycle;
        if (!cycle) return;
        cycle.headers = performance.now();
        response.once('end', () => (cycle.end = performance.now()));
    });
    const quantile = (values, q) => values.sort((a, b) => a - b)[Math.floor(values.length * q)] ?? NaN;
    const describe = (phase) => {
        const wall = Math.max(...phase.map((c) => c.end)) - phase[0].flushed;
        const out = phase.reduce((n, c) => n + (c.end - c.flushed), 0) / wall;
        const toHeaders = phase.map((c) => c.headers - c.flushed);
        const body = phase.map((c) => c.end - c.headers);
        return `${phase.length} POSTs in ${wall.toFixed(0)} ms: ${out.toFixed(2)} out at once on average; flushed -> headers median ${quantile(toHeaders, 0.5).toFixed(2)} p90 ${quantile(toHeaders, 0.9).toFixed(2)} ms, headers -> end median ${quantile(body, 0.5).toFixed(3)} ms`;
    };
    process.on('exit', () => {
        const done = posts.filter((c) => c.end !== undefined);
        const phases = [];
        for (const c of done) {
            const last = phases.at(-1);
            if (last && c.flushed - last.at(-1).flushed < 1000) last.push(c);
            else phases.push([c]);
        }
        const lines = phases.filter((p) => p.length >= 100).map(describe);
        if (lines.length === 0) return;
        mkdirSync(dir, { recursive: true });
        writeFileSync(`${dir}/${process.pid}.txt`, `${process.argv.slice(1).join(' ')}\n${lines.join('\n')}\n`);
    });
}
