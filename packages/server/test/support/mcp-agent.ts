import assert from 'node:assert/strict';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Gate402Client } from '@gate402/client';
import { expressPaywall } from '@gate402/client/express';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import express from 'express';

/** An agent-style MCP client, as an agent framework makes one. */
export function agentClient(): Client {
  return new Client({ name: 'test-agent', version: '1.0.0' });
}

/** A tool call's outcome: its structured content, and whether it failed. */
export async function callTool(
  client: Client,
  name: string,
  args: Record<string, unknown> = {},
): Promise<{ isError: boolean; value: Record<string, unknown>; result: CallToolResult }> {
  const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
  assert.ok(result.structuredContent !== undefined, `${name} answers structured content`);
  return { isError: result.isError === true, value: result.structuredContent, result };
}

/** The error a failed tool call carried. */
export function toolError(outcome: { isError: boolean; value: Record<string, unknown> }) {
  assert.equal(outcome.isError, true, JSON.stringify(outcome.value));
  return outcome.value.error as { code: string; message: string; details?: Record<string, string> };
}

export interface GateSeller {
  /** The paid resource. */
  readonly url: string;
  close(): Promise<void>;
}

/**
 * A seller behind gate402's own paywall (@gate402/client/express) on a free loopback port: GET /weather
 * costs `price` native currency, paid to `payTo`, checked with the seller's gateway at `gatewayUrl`.
 */
export async function startGateSeller(options: {
  gatewayUrl: string;
  key: string;
  payTo: string;
  price: string;
}): Promise<GateSeller> {
  const { protect } = expressPaywall(new Gate402Client({ url: options.gatewayUrl, apiKey: options.key }));
  const app = express();
  app.get('/weather', protect({ price: options.price, payTo: options.payTo }), (_req, res) => {
    res.json({ forecast: 'sunny', paidWith: res.locals.payment?.paymentId });
  });
  const server: Server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/weather`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
