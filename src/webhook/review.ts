// The ConversionReview (apiextensions.k8s.io/v1) the apiserver sends to a CRD's conversion
// webhook, and the answer: every object converted, or a Failure naming the first object
// that could not be (the apiserver then fails the whole request and stores nothing).
type Converter = (object: unknown, desiredAPIVersion: string) => { ok: true; object: unknown } | { ok: false; message: string };

export interface ConversionReview {
    apiVersion: 'apiextensions.k8s.io/v1';
    kind: 'ConversionReview';
    response: {
        uid: string;
        convertedObjects?: unknown[];
        result: { status: 'Success' } | { status: 'Failure'; message: string };
    };
}

export type ReviewOutcome = { ok: true; review: ConversionReview; objects: number } | { ok: false; message: string };

/** Answers one review; `ok: false` is a request too malformed to answer (HTTP 400). */
export function answerConversionReview(body: unknown, convert: Converter): ReviewOutcome {
    const review = body as { apiVersion?: unknown; kind?: unknown; request?: { uid?: unknown; desiredAPIVersion?: unknown; objects?: unknown } } | null;
    if (review?.kind !== 'ConversionReview' || review.apiVersion !== 'apiextensions.k8s.io/v1') {
        return { ok: false, message: 'expected an apiextensions.k8s.io/v1 ConversionReview (conversionReviewVersions: ["v1"])' };
    }
    const request = review.request;
    if (typeof request?.uid !== 'string' || typeof request.desiredAPIVersion !== 'string' || !Array.isArray(request.objects)) {
        return { ok: false, message: 'the ConversionReview has no request with uid, desiredAPIVersion and objects' };
    }
    const answer = (response: Omit<ConversionReview['response'], 'uid'>): ConversionReview => ({
        apiVersion: 'apiextensions.k8s.io/v1',
        kind: 'ConversionReview',
        response: { uid: request.uid as string, ...response },
    });
    const converted: unknown[] = [];
    for (const [i, object] of request.objects.entries()) {
        const result = convert(object, request.desiredAPIVersion);
        if (!result.ok) {
            const { namespace, name } = ((object as { metadata?: { namespace?: string; name?: string } })?.metadata ?? {});
            const which = name ? `${namespace ? `${namespace}/` : ''}${name}` : `object ${i}`;
            return { ok: true, objects: i, review: answer({ result: { status: 'Failure', message: `${which}: ${result.message}` } }) };
        }
        converted.push(result.object);
    }
    return { ok: true, objects: converted.length, review: answer({ convertedObjects: converted, result: { status: 'Success' } }) };
}
