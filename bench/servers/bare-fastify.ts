// The reference: a bare Fastify route returning a constant. Prints its port, then serves until killed.
import Fastify from 'fastify';

const app = Fastify({ logger: false });
app.get('/constant', async () => ({ ok: true }));
// The same for a JSON body (parsed, then ignored): the reference for POST measures.
app.post('/constant', async () => ({ ok: true }));
await app.listen({ port: 0, host: '127.0.0.1' });
const address = app.server.address();
process.stdout.write(`PORT ${typeof address === 'object' && address ? address.port : 0}\n`);
