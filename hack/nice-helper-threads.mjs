// A preload for measuring, not for production: every thread of the process but the main one
// (V8's compiler and GC helpers, libuv's pool) at nice 10, so that on a busy machine the main
// thread, which sends every request, is not kept off a CPU by its own process's compiler.
// Linux only (setpriority on a thread id acts on that thread); threads started later are
// caught within 200 ms.
//   WRITE_PHASE_LIKE_SYNC=1 WRITE_PHASE_VARIANTS="default=|nice=--import=$PWD/hack/nice-helper-threads.mjs" npx tsx hack/write-phase.ts 4
import { readdirSync } from 'node:fs';
import { setPriority } from 'node:os';

const NICE = Number(process.env.HELPER_THREADS_NICE ?? 10);
const lowered = new Set();
function lower() {
    for (const tid of readdirSync('/proc/self/task').map(Number)) {
        if (tid === process.pid || lowered.has(tid)) continue;
        try {
            setPriority(tid, NICE);
            lowered.add(tid);
        } catch {
            // exited meanwhile
        }
    }
}
lower();
setInterval(lower, 200).unref();
