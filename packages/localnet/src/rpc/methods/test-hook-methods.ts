// Test-only methods: answered only when the localnet was started with `testHooks` (else "Method
// not found"), and refused on a public cluster's genesis. See the README's "Test hooks".
import { DropSlotsRefused } from '../../chain/chain.ts';
import { integer, type Params } from '../params.ts';
import { invalidParams, methodNotFound } from '../rpc-error.ts';
import type { RpcMethod } from '../rpc-method.ts';

export const testHookMethods: Record<string, RpcMethod> = {
  /** params [n]: drops the newest n ended slots and the open one (Chain.dropSlots). */
  localnet_dropSlots: (params: Params, { chain }) => {
    if (!chain.testHooks) throw methodNotFound();
    const count = integer(params[0], 'usize');
    try {
      const droppedSlots = chain.dropSlots(count);
      return { droppedSlots, slot: chain.slot };
    } catch (error) {
      if (error instanceof DropSlotsRefused) throw invalidParams(`Invalid params: ${error.message}`);
      throw error;
    }
  },
};
