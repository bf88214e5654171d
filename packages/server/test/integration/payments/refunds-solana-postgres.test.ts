import { refundSuites } from './refund-suite.ts';

refundSuites('Solana localnet', 'PostgreSQL');
