// Failures whose kind the reconciler runtime (controller.ts) acts on, apart so that any writer
// may throw them without importing the runtime.

/** The key's own input is wrong: retrying cannot help. `reason` is the Warning Event's reason. */
export class InvalidError extends Error {
    override readonly name: string = 'InvalidError';
    constructor(
        message: string,
        readonly reason = 'Invalid',
    ) {
        super(message);
    }
}
