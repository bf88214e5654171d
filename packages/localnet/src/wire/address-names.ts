// Base58 names of 32-byte keys, remembered by raw key. The same few accounts (fee payers,
// recipients, programs) appear in transaction after transaction, and a Map lookup by raw key
// costs a fraction of a base58 encoding.
import { encodeBase58 } from './base58.ts';

export class AddressNames {
  private readonly names = new Map<string, string>();

  /** Beyond `limit` names the cache starts over, so memory stays bounded whatever the traffic. */
  constructor(private readonly limit: number) {}

  /** The base58 name of `bytes`; `raw` is `rawKey(bytes)`. */
  name(raw: string, bytes: Uint8Array): string {
    let name = this.names.get(raw);
    if (name === undefined) {
      if (this.names.size >= this.limit) this.names.clear();
      name = encodeBase58(bytes);
      this.names.set(raw, name);
    }
    return name;
  }
}
