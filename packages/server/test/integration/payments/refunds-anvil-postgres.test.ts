import { refundSuites } from './refund-suite.ts';

refundSuites('anvil', 'PostgreSQL');
