#!/usr/bin/env node
// The `gate402` command: the compiled JavaScript (npm run build, run by `npm install` through the
// repository's `prepare` and by `npm pack`). In the repository, `npm start` runs the TypeScript sources.
import '../dist/cli/gate402.js';
