import { heldRefundSuites } from './held-refund-suite.ts';

heldRefundSuites('Solana localnet');
