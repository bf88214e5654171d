export { type AppDeps, buildApp } from './app.ts';
export { type Config, ConfigError, loadConfig } from './config.ts';
export { createGateway, type Gateway, type GatewayOverrides } from './gateway.ts';
export { createLogger, type RunningServer, startServer } from './server.ts';
export type {
  FacilitatorAbort,
  FacilitatorAfterSettleHook,
  FacilitatorAfterVerifyHook,
  FacilitatorBeforeSettleHook,
  FacilitatorBeforeVerifyHook,
  FacilitatorHookContext,
  FacilitatorHookName,
  FacilitatorHooks,
  FacilitatorOnSettleFailureHook,
  FacilitatorOnVerifyFailureHook,
  FacilitatorSettleFailureContext,
  FacilitatorSettleHookContext,
  FacilitatorSettleResultContext,
  FacilitatorVerifyFailureContext,
  FacilitatorVerifyResultContext,
} from './services/facilitator/facilitator-hooks.ts';
