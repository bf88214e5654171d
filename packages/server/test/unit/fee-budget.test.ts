import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config.ts';
import type { NetworkInfo } from '../../src/domain/network.ts';
import { feeDayOf, secondsUntilNextFeeDay } from '../../src/domain/sponsored-fees.ts';
import { GatewayMetrics } from '../../src/metrics/gateway-metrics.ts';
import { FeeBudget } from '../../src/services/facilitator/fee-budget.ts';

const USDC_SOLANA = 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v';
const USDC_BASE = '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913';

const solana: NetworkInfo = {
  id: 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp',
  family: 'solana',
  name: 'Solana',
  nativeCurrency: { symbol: 'SOL', decimals: 9 },
  isDefault: true,
  isLocal: false,
  rpcUrl: 'https://rpc.invalid',
  wsUrl: undefined,
  tokens: [{ symbol: 'USDC', address: USDC_SOLANA, decimals: 6 }],
};
const base: NetworkInfo = {
  ...solana,
  id: 'eip155:8453',
  family: 'evm',
  name: 'Base',
  nativeCurrency: { symbol: 'ETH', decimals: 18 },
  tokens: [{ symbol: 'USDC', address: USDC_BASE, decimals: 6 }],
};
const decimals = (n: number) => async () => n;

describe('x402 fee budget and minimum settle amounts', () => {
  it('has the documented defaults: 0.011 SOL and 0.2 ETH a day per account, at least 0.001 USDC', async () => {
    const budget = new FeeBudget();
    assert.equal(budget.dailyLimit(solana), 11_000_000n);
    assert.equal(budget.dailyLimit(base), 200_000_000_000_000_000n);
    // 1,000 stock @x402/svm settlements (2 × 5,000 + 1 lamports) fit the Solana default.
    assert.ok(1_000n * 10_001n <= budget.dailyLimit(solana));
    assert.deepEqual(await budget.minimum(solana, USDC_SOLANA, decimals(6)), {
      atomic: 1_000n,
      text: '0.001',
      name: 'USDC',
    });
    assert.equal((await budget.minimum(base, USDC_BASE.toLowerCase(), decimals(6)))?.atomic, 1_000n);
    assert.equal(
      await budget.minimum(base, '0x0000000000000000000000000000000000000001', decimals(18)),
      undefined,
    );
  });

  it('reads the budget by network id over its family, and minimums by address or symbol, rounding up past the decimals', async () => {
    const budget = new FeeBudget({
      budgets: { evm: '0.5', 'eip155:8453': '0.01', solana: '0' },
      minimums: { [USDC_BASE.toLowerCase()]: '0.0000005', USDC: '2' },
    });
    assert.equal(budget.dailyLimit(base), 10_000_000_000_000_000n);
    assert.equal(budget.dailyLimit({ ...base, id: 'eip155:1' }), 500_000_000_000_000_000n);
    assert.equal(budget.dailyLimit(solana), 0n, '"0" sponsors nothing');
    // Named by its address (any case) first; 0.0000005 of a 6-decimal token is at least 1 atomic unit.
    assert.deepEqual(await budget.minimum(base, USDC_BASE, decimals(6)), {
      atomic: 1n,
      text: '0.0000005',
      name: USDC_BASE.toLowerCase(),
    });
    assert.equal((await budget.minimum(solana, USDC_SOLANA, decimals(6)))?.atomic, 2_000_000n);
  });

  it('is configured by X402_FEE_BUDGET (families not named keep their default) and X402_MIN_SETTLE_AMOUNT; bad values are named', () => {
    const config = loadConfig({
      X402_FEE_BUDGET: '{"eip155:8453":"0.01","solana":0.02}',
      X402_MIN_SETTLE_AMOUNT: '{"USDC":"0.005"}',
    });
    assert.deepEqual(config.x402FeeBudget, { solana: '0.02', evm: '0.2', 'eip155:8453': '0.01' });
    assert.deepEqual(config.x402MinSettleAmount, { USDC: '0.005' });
    assert.deepEqual(loadConfig({}).x402FeeBudget, { solana: '0.011', evm: '0.2' });
    assert.deepEqual(loadConfig({}).x402MinSettleAmount, { USDC: '0.001' });
    try {
      loadConfig({ X402_FEE_BUDGET: '{"bitcoin":"1"}', X402_MIN_SETTLE_AMOUNT: '{"USDC":"-1"}' });
      assert.fail('accepted');
    } catch (error) {
      assert.ok(error instanceof ConfigError);
      assert.deepEqual(error.problems, [
        'X402_FEE_BUDGET: "bitcoin" is not a family or CAIP-2 id',
        'X402_MIN_SETTLE_AMOUNT: the amount of "USDC" must be a non-negative decimal such as "0.011"',
      ]);
    }
    assert.throws(() => loadConfig({ X402_FEE_BUDGET: '[1]' }), /X402_FEE_BUDGET: must be a JSON object/);
  });

  it('charges a UTC day, renewed at 00:00 UTC', () => {
    const at = Date.UTC(2026, 10, 28, 23, 59, 30, 500);
    assert.equal(feeDayOf(at), '2026-11-28');
    assert.equal(feeDayOf(at + 30_000), '2026-11-29');
    assert.equal(secondsUntilNextFeeDay(at), 30);
    assert.equal(secondsUntilNextFeeDay(Date.UTC(2026, 10, 29)), 86_400);
  });

  it('counts sponsored fees per account and network for /metrics, in whole native units', async () => {
    const metrics = new GatewayMetrics();
    metrics.feeSponsored('acct_a', solana, 10_001n);
    metrics.feeSponsored('acct_a', solana, 10_001n);
    metrics.feeSponsored('acct_b', base, 91_200_000_000_000n);
    const text = await metrics.registry.metrics();
    const value = (series: string) =>
      Number(
        text
          .split('\n')
          .find((l) => l.startsWith(`${series} `))
          ?.slice(series.length + 1),
      );
    const a = `{account="acct_a",network="${solana.id}"}`;
    assert.equal(value(`gate402_x402_sponsored_fees_total${a}`), 0.000020002);
    assert.equal(value(`gate402_x402_sponsored_settlements_total${a}`), 2);
    assert.equal(
      value(`gate402_x402_sponsored_fees_total{account="acct_b",network="${base.id}"}`),
      0.0000912,
    );
  });
});
