/**
 * A least-recently-used cache of keys derived from secrets, holding at most `capacity`: decoding or
 * importing a key costs more than signing with it, and a hit moves the key to the young end, so the
 * endpoints that deliver all the time keep theirs while a burst of rare ones passes through.
 */
export const keyCache = <K>(make: (secret: string) => K, capacity = 1000): (secret: string) => K => {
  // A Map iterates in insertion order: deleting and setting again on a hit keeps it in use order.
  const keys = new Map<string, K>()
  return (secret) => {
    let key = keys.get(secret)
    if (key !== undefined) {
      keys.delete(secret)
    } else {
      if (keys.size >= capacity) keys.delete(keys.keys().next().value!)
      key = make(secret)
    }
    keys.set(secret, key)
    return key
  }
}
