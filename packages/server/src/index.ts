export { type AppDeps, buildApp } from './app.ts';
export { type Config, ConfigError, loadConfig } from './config.ts';
export { type RunningServer, startServer } from './server.ts';
