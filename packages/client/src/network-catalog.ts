import type { Gate402Client } from './gate402-client.ts';
import type { components } from './generated/openapi-types.ts';

export type NetworkInfo = components['schemas']['Network'];

const EVM_ADDRESS = /^0x[0-9a-fA-F]{40}$/;

/** The chain family an address belongs to, by its format (EVM `0x…` hex, else Solana base58). */
export function addressFamily(address: string): NetworkInfo['family'] {
  return EVM_ADDRESS.test(address) ? 'evm' : 'solana';
}

/**
 * The gateway's networks (GET /networks), asked once and kept: a network's id and native decimals do not
 * change while a gateway runs. A failed lookup is not kept, so the next request asks again.
 */
export class NetworkCatalog {
  #networks: Promise<readonly NetworkInfo[]> | undefined;

  constructor(private readonly gateway: Gate402Client) {}

  /** The network `id` names, or else the gateway's default network for `address`'s family. */
  async resolve(address: string, id?: string): Promise<NetworkInfo | undefined> {
    const networks = await this.#all();
    if (id !== undefined) return networks.find((n) => n.id === id);
    const family = addressFamily(address);
    return networks.find((n) => n.family === family && n.isDefault);
  }

  /** Every network the gateway serves. */
  all(): Promise<readonly NetworkInfo[]> {
    return this.#all();
  }

  #all(): Promise<readonly NetworkInfo[]> {
    this.#networks ??= this.gateway.networks().then(
      (answer) => answer.networks,
      (error: unknown) => {
        this.#networks = undefined;
        throw error;
      },
    );
    return this.#networks;
  }
}
