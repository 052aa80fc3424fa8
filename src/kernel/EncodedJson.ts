/**
 * A value of type `A` already written as JSON text: a handler of a hot path may build the text of a
 * large answer from pieces it keeps encoded, and the HTTP edge sends it as it is.
 */
export class EncodedJson<A> {
  declare readonly _A: A
  constructor(readonly text: string) {}
}
