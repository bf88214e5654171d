// The reference: @x402/core's x402Facilitator with @x402/svm's exact facilitator scheme, served by a
// minimal Express app (POST /verify, POST /settle: 200 on success, 402 on a refusal), on the RPC endpoint and fee-payer key given in RPC_URL and
// FEE_PAYER_SECRET (hex). Prints its port, then serves until killed.
import { createKeyPairSignerFromBytes } from '@solana/kit';
import { x402Facilitator } from '@x402/core/facilitator';
import { toFacilitatorSvmSigner } from '@x402/svm';
import { ExactSvmScheme } from '@x402/svm/exact/facilitator';
import express from 'express';

const DEVNET = 'solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1';
const rpcUrl = process.env.RPC_URL ?? '';
const signer = await createKeyPairSignerFromBytes(Buffer.from(process.env.FEE_PAYER_SECRET ?? '', 'hex'));
const facilitator = new x402Facilitator().register(
  DEVNET,
  new ExactSvmScheme(toFacilitatorSvmSigner(signer, { defaultRpcUrl: rpcUrl })),
);
const app = express();
app.use(express.json());
app.post('/verify', async (req, res) => {
  try {
    res.json(await facilitator.verify(req.body.paymentPayload, req.body.paymentRequirements));
  } catch (error) {
    res.status(500).json({ error: error instanceof Error ? error.message : String(error) });
  }
});
app.post('/settle', async (req, res) => {
  try {
    const answer = await facilitator.settle(req.body.paymentPayload, req.body.paymentRequirements);
    res.status(answer.success ? 200 : 402).json(answer);
  } catch (error) {
    res.status(500).json({ error: error instanceof Error ? error.message : String(error) });
  }
});
const listening = app.listen(0, '127.0.0.1', () => {
  const address = listening.address();
  process.stdout.write(`PORT ${typeof address === 'object' && address ? address.port : 0}\n`);
});
