import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { Gate402Client, isGate402Error } from '@gate402/client';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  CallToolRequestSchema,
  type CallToolResult,
  ListToolsRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { NetworkRegistry } from '../../../src/chains/network-registry.ts';
import { agentClient } from '../../support/mcp-agent.ts';
import { startTestGateway, type TestGateway } from '../../support/test-gateway.ts';
import { startTestChain, type TestChain } from '../../support/test-localnet.ts';

const PRICE = 0.01;
const RESOURCE = 'mcp://weather-seller/tools/forecast';

/**
 * A seller's paid MCP tool with gate402 as the facilitator (docs/agents-and-mcp.md, "Sellers"): no
 * @x402/mcp package exists, so the tool asks for a gate402 proof and checks it with POST /payment/receive.
 * The seller's server and the agent's client are the MCP SDK's, linked in process; the gateway, its chain
 * and both accounts are real.
 */
function sellerServer(gate402: Gate402Client, payTo: string): Server {
  const server = new Server({ name: 'weather-seller', version: '1.0.0' }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: [
      {
        name: 'forecast',
        description: `The forecast for a city; costs ${PRICE} SOL, paid with a gate402 proof.`,
        inputSchema: {
          type: 'object',
          properties: { city: { type: 'string' }, paymentProof: { type: 'string' } },
          required: ['city'],
        },
      },
    ],
  }));
  server.setRequestHandler(CallToolRequestSchema, async (request): Promise<CallToolResult> => {
    const args = request.params.arguments as { city: string; paymentProof?: string };
    if (args.paymentProof === undefined) {
      const paymentRequired = { payTo, amount: PRICE, currency: 'SOL', resource: RESOURCE };
      return { isError: true, content: [{ type: 'text', text: JSON.stringify({ paymentRequired }) }] };
    }
    try {
      await gate402.receivePayment({
        walletAddress: payTo,
        paymentProof: args.paymentProof,
        expectedAmount: PRICE,
        resource: RESOURCE,
      });
    } catch (error) {
      if (!isGate402Error(error)) throw error;
      return { isError: true, content: [{ type: 'text', text: `${error.code}: ${error.message}` }] };
    }
    return { content: [{ type: 'text', text: `Sunny in ${args.city}.` }] };
  });
  return server;
}

describe('a paid MCP tool of a seller, with gate402 as its facilitator', () => {
  let chain: TestChain;
  let gw: TestGateway;
  let seller: Gate402Client;
  let buyer: Gate402Client;
  let payTo: string;
  let from: string;

  before(async () => {
    chain = await startTestChain();
    gw = await startTestGateway({ networks: new NetworkRegistry([chain.adapter]) });
    await gw.app.listen({ port: 0, host: '127.0.0.1' });
    const url = `http://127.0.0.1:${(gw.app.server.address() as AddressInfo).port}`;
    seller = new Gate402Client({ url, apiKey: (await gw.newCaller('standard')).key });
    buyer = new Gate402Client({ url, apiKey: (await gw.newCaller('standard')).key });
    payTo = (await seller.createWallet({ chain: 'solana' })).address;
    from = (await buyer.createWallet({ chain: 'solana' })).address;
    await buyer.faucet({ address: from, amount: 1 });
  });
  after(async () => {
    await gw?.close();
    await chain?.close();
  });

  async function connectedAgent() {
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await sellerServer(seller, payTo).connect(serverSide);
    const client = agentClient();
    await client.connect(clientSide);
    return client;
  }

  const text = (result: unknown) => ((result as CallToolResult).content[0] as { text: string }).text;
  const pay = (amount: number, resource: string) =>
    buyer.sendPayment({ walletAddress: from, recipientAddress: payTo, amount, resource });

  it('asks for payment, serves once per proof, and refuses a proof for less or for another resource', async () => {
    const client = await connectedAgent();
    try {
      const unpaid = await client.callTool({ name: 'forecast', arguments: { city: 'Oslo' } });
      assert.equal(unpaid.isError, true);
      const { paymentRequired } = JSON.parse(text(unpaid));
      assert.deepEqual(paymentRequired, { payTo, amount: PRICE, currency: 'SOL', resource: RESOURCE });

      const sent = await pay(paymentRequired.amount, paymentRequired.resource);
      const paid = await client.callTool({
        name: 'forecast',
        arguments: { city: 'Oslo', paymentProof: sent.paymentProof },
      });
      assert.equal(paid.isError, undefined);
      assert.equal(text(paid), 'Sunny in Oslo.');

      const again = await client.callTool({
        name: 'forecast',
        arguments: { city: 'Bergen', paymentProof: sent.paymentProof },
      });
      assert.equal(again.isError, true);
      assert.match(text(again), /^INVALID_PAYMENT_PROOF: .*already/);

      const tooLittle = await pay(PRICE / 2, RESOURCE);
      const short = await client.callTool({
        name: 'forecast',
        arguments: { city: 'Oslo', paymentProof: tooLittle.paymentProof },
      });
      assert.equal(short.isError, true);
      assert.match(
        text(short),
        /^PAYMENT_VERIFICATION_FAILED: .*paid 0\.005 SOL, less than the expected 0\.01 SOL/,
      );

      const elsewhere = await pay(PRICE, 'mcp://weather-seller/tools/other');
      const wrongTool = await client.callTool({
        name: 'forecast',
        arguments: { city: 'Oslo', paymentProof: elsewhere.paymentProof },
      });
      assert.equal(wrongTool.isError, true);
      assert.match(text(wrongTool), /^INVALID_PAYMENT_PROOF/);

      const received = await seller.paymentHistory(payTo, { type: 'received' });
      assert.deepEqual(
        received.payments.map((p) => [p.signature, p.amount, p.resource]),
        [[sent.signature, PRICE, RESOURCE]],
        'one payment taken: the one that paid the right amount for the right tool',
      );
    } finally {
      await client.close();
    }
  });
});
