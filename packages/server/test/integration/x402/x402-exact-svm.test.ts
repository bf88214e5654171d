import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  address,
  appendTransactionMessageInstructions,
  createSolanaRpc,
  createTransactionMessage,
  generateKeyPairSigner,
  getBase64EncodedWireTransaction,
  type Instruction,
  type KeyPairSigner,
  partiallySignTransactionMessageWithSigners,
  pipe,
  setTransactionMessageFeePayer,
  setTransactionMessageLifetimeUsingBlockhash,
} from '@solana/kit';
import {
  getSetComputeUnitLimitInstruction,
  getSetComputeUnitPriceInstruction,
} from '@solana-program/compute-budget';
import { getTransferSolInstruction } from '@solana-program/system';
import {
  findAssociatedTokenPda,
  getTransferCheckedInstruction,
  TOKEN_PROGRAM_ADDRESS,
} from '@solana-program/token';
import { NetworkRegistry } from '../../../src/chains/network-registry.ts';
import { MEMO_PROGRAM } from '../../../src/chains/solana/solana-adapter.ts';
import { startTestGateway, type TestGateway } from '../../support/test-gateway.ts';
import { startTestChain, type TestChain } from '../../support/test-localnet.ts';

/**
 * The Solana `exact` checks of the built-in facilitator, on transactions built by hand: what a stock
 * client builds verifies; anything that could make the fee payer pay more than a bounded fee, or pay
 * anyone, is refused with x402's reason, before anything is signed or sent.
 */
describe('x402 exact on Solana: what the facilitator refuses', () => {
  let chain: TestChain;
  let gw: TestGateway;
  let key: string;
  let feePayer: string;
  let seller: string;
  let buyer: KeyPairSigner;
  const mint = () => address(chain.localnet.usdcMint.address);

  const verify = async (transaction: string, overrides: Record<string, unknown> = {}) => {
    const requirements = {
      scheme: 'exact',
      network: chain.adapter.info.id,
      asset: chain.localnet.usdcMint.address,
      amount: '5000',
      payTo: seller,
      maxTimeoutSeconds: 60,
      extra: { feePayer },
      ...overrides,
    };
    const res = await gw.app.inject({
      method: 'POST',
      url: '/facilitator/verify',
      headers: { authorization: `Bearer ${key}` },
      payload: {
        x402Version: 2,
        paymentPayload: { x402Version: 2, accepted: requirements, payload: { transaction } },
        paymentRequirements: requirements,
      },
    });
    assert.equal(res.statusCode, 200, res.body);
    return res.json() as { isValid: boolean; invalidReason?: string; payer?: string };
  };

  /** A payment as a stock client builds it, with the changes a test asks for. */
  const build = async (
    options: {
      price?: bigint;
      limit?: number;
      amount?: bigint;
      authority?: KeyPairSigner;
      extra?: Instruction[];
      payer?: string;
      /** Whose associated token account the transfer pays; default the seller. */
      payee?: string;
    } = {},
  ) => {
    const authority = options.authority ?? buyer;
    const [source] = await findAssociatedTokenPda({
      mint: mint(),
      owner: authority.address,
      tokenProgram: TOKEN_PROGRAM_ADDRESS,
    });
    const [destination] = await findAssociatedTokenPda({
      mint: mint(),
      owner: address(options.payee ?? seller),
      tokenProgram: TOKEN_PROGRAM_ADDRESS,
    });
    const { value: blockhash } = await createSolanaRpc(chain.localnet.rpcUrl).getLatestBlockhash().send();
    const message = pipe(
      createTransactionMessage({ version: 0 }),
      (m) => setTransactionMessageFeePayer(address(options.payer ?? feePayer), m),
      (m) =>
        appendTransactionMessageInstructions(
          [
            getSetComputeUnitLimitInstruction({ units: options.limit ?? 20_000 }),
            getSetComputeUnitPriceInstruction({ microLamports: options.price ?? 1n }),
            getTransferCheckedInstruction({
              source,
              mint: mint(),
              destination,
              authority,
              amount: options.amount ?? 5000n,
              decimals: 6,
            }),
            { programAddress: MEMO_PROGRAM, data: new TextEncoder().encode('order-1') },
            ...(options.extra ?? []),
          ],
          m,
        ),
      (m) => setTransactionMessageLifetimeUsingBlockhash(blockhash, m),
    );
    return getBase64EncodedWireTransaction(await partiallySignTransactionMessageWithSigners(message));
  };

  before(async () => {
    chain = await startTestChain();
    gw = await startTestGateway({ networks: new NetworkRegistry([chain.adapter]) });
    await gw.services.facilitator.start();
    key = (await gw.newCaller('premium')).key;
    const supported = await gw.app.inject({
      method: 'GET',
      url: '/facilitator/supported',
      headers: { authorization: `Bearer ${key}` },
    });
    feePayer = supported.json().kinds[0].extra.feePayer;
    seller = (await generateKeyPairSigner()).address;
    buyer = await generateKeyPairSigner();
    await chain.adapter.faucet?.fundToken('USDC', seller, 1n);
    await chain.adapter.faucet?.fundToken('USDC', buyer.address, 1_000_000n);
  });

  after(async () => {
    await gw?.close();
    await chain?.close();
  });

  it('verifies the layout a stock client builds, naming the buyer as payer', async () => {
    assert.deepEqual(await verify(await build()), { isValid: true, payer: buyer.address });
  });

  it('refuses priority fees and compute limits over the caps, which the fee payer would pay', async () => {
    assert.equal(
      (await verify(await build({ price: 5_000_001n }))).invalidReason,
      'invalid_exact_svm_payload_transaction_instructions_compute_price_instruction_too_high',
    );
    assert.equal(
      (await verify(await build({ limit: 50_001 }))).invalidReason,
      'invalid_exact_svm_payload_transaction_instructions_compute_limit_instruction_too_high',
    );
  });

  it('refuses an instruction that is not a memo after the transfer (e.g. moving the fee payer’s SOL)', async () => {
    const drain = getTransferSolInstruction({
      source: { address: address(feePayer) } as never,
      destination: buyer.address,
      amount: 1_000_000n,
    });
    const result = await verify(await build({ extra: [drain] }));
    assert.equal(result.isValid, false);
    assert.match(
      result.invalidReason ?? '',
      /^invalid_exact_svm_payload_(unknown_optional_instruction|transaction_fee_payer_transferring_funds)$/,
    );
  });

  it('refuses another amount, another recipient, another mint and another fee payer', async () => {
    assert.equal(
      (await verify(await build({ amount: 4999n }))).invalidReason,
      'invalid_exact_svm_payload_amount_mismatch',
    );
    assert.equal(
      (await verify(await build(), { payTo: buyer.address })).invalidReason,
      'invalid_exact_svm_payload_recipient_mismatch',
    );
    // Requirements naming a mint this facilitator does not settle (any address: no network lists it).
    assert.equal((await verify(await build(), { asset: buyer.address })).invalidReason, 'unsupported_asset');
    // A payTo that is not an address at all is a refusal too, not a failure of the facilitator.
    for (const payTo of ['', 'x', '0x10', seller.slice(1), `${seller}1`, 'é'.repeat(40)]) {
      assert.equal(
        (await verify(await build(), { payTo })).invalidReason,
        'invalid_exact_svm_payload_recipient_mismatch',
        payTo,
      );
    }
    const stranger = (await generateKeyPairSigner()).address;
    assert.equal(
      (await verify(await build({ payer: stranger }), { extra: { feePayer: stranger } })).invalidReason,
      'invalid_exact_svm_payload_missing_fee_payer',
    );
  });

  it('refuses a payer without the funds (simulation) and a transaction that is not one', async () => {
    const poor = await generateKeyPairSigner();
    await chain.adapter.faucet?.fundToken('USDC', poor.address, 10n);
    assert.equal((await verify(await build({ authority: poor }))).invalidReason, 'insufficient_funds');
    assert.equal(
      (await verify('AAAA')).invalidReason,
      'invalid_exact_svm_payload_transaction_could_not_be_decoded',
    );
  });

  it('refuses a payment to a payTo without a token account for the asset with x402’s own reason, on verify and settle, sending nothing', async () => {
    const payee = (await generateKeyPairSigner()).address;
    const transaction = await build({ payee });
    const verified = await verify(transaction, { payTo: payee });
    assert.deepEqual(
      [verified.isValid, verified.invalidReason],
      [false, 'invalid_exact_svm_payload_transaction_receiver_ata_not_found'],
    );
    assert.match(
      (verified as { invalidMessage?: string }).invalidMessage ?? '',
      new RegExp(`${payee} has no token account`),
    );
    const requirements = {
      scheme: 'exact',
      network: chain.adapter.info.id,
      asset: chain.localnet.usdcMint.address,
      amount: '5000',
      payTo: payee,
      maxTimeoutSeconds: 60,
      extra: { feePayer },
    };
    const settled = await gw.app.inject({
      method: 'POST',
      url: '/facilitator/settle',
      headers: { authorization: `Bearer ${key}` },
      payload: {
        x402Version: 2,
        paymentPayload: { x402Version: 2, accepted: requirements, payload: { transaction } },
        paymentRequirements: requirements,
      },
    });
    assert.deepEqual(
      [settled.json().success, settled.json().errorReason, settled.json().transaction],
      [false, 'invalid_exact_svm_payload_transaction_receiver_ata_not_found', ''],
    );
    // Once the account exists, the same payment verifies.
    await chain.adapter.faucet?.fundToken('USDC', payee, 1n);
    assert.equal((await verify(transaction, { payTo: payee })).isValid, true);
  });

  it('refuses a transaction whose buyer signature does not verify', async () => {
    const wire = Buffer.from(await build(), 'base64');
    // Signatures follow a one-byte count; the buyer's is the second. Flip one of its bits.
    wire[1 + 64 + 10] = (wire[1 + 64 + 10] ?? 0) ^ 1;
    assert.equal(
      (await verify(wire.toString('base64'))).invalidReason,
      'invalid_exact_svm_payload_signature_invalid',
    );
  });
});
