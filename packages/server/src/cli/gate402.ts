// The `gate402` command's entry point: bin/gate402.js runs the compiled form, `npm start` in the
// repository runs this source through tsx.
import { main } from './main.ts';

process.exitCode = await main(process.argv.slice(2));
