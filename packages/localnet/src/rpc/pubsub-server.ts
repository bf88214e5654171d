// Solana PubSub over WebSocket: signature, account, program, slot, slots-updates, root and logs
// subscriptions with Agave's message shapes. Notifications for `confirmed` and `finalized` are sent when the slot
// clock moves a landed transaction's slot to that commitment.
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { type WebSocket, WebSocketServer } from 'ws';
import type { Chain, ChainListener, Commitment } from '../chain/chain.ts';
import type { TransactionErrorJson } from '../chain/transaction-error.ts';
import type { TransactionRecord } from '../chain/transaction-record.ts';
import { encodeBase58 } from '../wire/base58.ts';
import { decodeWireTransaction, isStaticWritable } from '../wire/wire-transaction.ts';
import { type AccountView, accountView, encodeAccount } from './account-encoding.ts';
import { errorResponse, type JsonRpcResponse } from './dispatcher.ts';
import { stringifyJson } from './json-text.ts';
import { type Filter, readFilters } from './methods/account-methods.ts';
import { type BlockOptions, blockOptions, encodeBlock } from './methods/block-methods.ts';
import {
  config,
  type Params,
  pubkey,
  pubkeyParam,
  commitment as readCommitment,
  signature,
} from './params.ts';
import { invalidParams, invalidRequest, methodNotFound, parseError, RpcError } from './rpc-error.ts';

export const MAX_SUBSCRIPTIONS_PER_CONNECTION = 1000;
export const MAX_MESSAGE_BYTES = 1024 * 1024;
const CLOSE_GRACE_MS = 500;

type Kind = 'signature' | 'account' | 'program' | 'block' | 'slot' | 'slotsUpdates' | 'root' | 'logs';

interface Subscription {
  readonly id: number;
  readonly kind: Kind;
  readonly socket: WebSocket;
  readonly commitment: Commitment;
  /** signature, account address or program id */
  readonly key?: string;
  /** program: getProgramAccounts' filters */
  readonly filters?: readonly Filter[];
  /** block: getBlock's options */
  readonly block?: BlockOptions;
  readonly view?: AccountView;
  /** logs: undefined = all, else the one mentioned address */
  readonly mentions?: string;
  /** signature: `enableReceivedNotification`, a "receivedSignature" notification first. */
  readonly received?: boolean;
}

interface Connection {
  readonly subscriptions: Map<number, Subscription>;
}

const UNSUBSCRIBE: Readonly<Record<string, Kind>> = {
  signatureUnsubscribe: 'signature',
  accountUnsubscribe: 'account',
  programUnsubscribe: 'program',
  blockUnsubscribe: 'block',
  slotUnsubscribe: 'slot',
  slotsUpdatesUnsubscribe: 'slotsUpdates',
  rootUnsubscribe: 'root',
  logsUnsubscribe: 'logs',
};

export class PubSubServer implements ChainListener {
  private readonly wss = new WebSocketServer({ noServer: true, maxPayload: MAX_MESSAGE_BYTES });
  private readonly connections = new Map<WebSocket, Connection>();
  private readonly bySignature = new Map<string, Set<Subscription>>();
  private readonly byAccount = new Map<string, Set<Subscription>>();
  private readonly byProgram = new Map<string, Set<Subscription>>();
  private readonly slotsUpdatesSubscriptions = new Set<Subscription>();
  private readonly blockSubscriptions = new Set<Subscription>();
  private readonly slotSubscriptions = new Set<Subscription>();
  private readonly rootSubscriptions = new Set<Subscription>();
  private readonly logsSubscriptions = new Set<Subscription>();
  private nextId = 0;

  constructor(private readonly chain: Chain) {
    chain.addListener(this);
  }

  /** Hands an HTTP upgrade request to the WebSocket server. */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    this.wss.handleUpgrade(req, socket, head, (ws) => this.accept(ws));
  }

  /**
   * Closes every connection with 1000 (normal closure), which tells clients such as web3.js not
   * to reconnect; a peer that does not answer the close handshake is cut after CLOSE_GRACE_MS.
   */
  async closeAll(): Promise<void> {
    const closing = [...this.connections.keys()].map(
      (ws) =>
        new Promise<void>((resolve) => {
          if (ws.readyState === ws.CLOSED) {
            resolve();
            return;
          }
          const timer = setTimeout(() => ws.terminate(), CLOSE_GRACE_MS);
          ws.once('close', () => {
            clearTimeout(timer);
            resolve();
          });
          ws.close(1000, 'localnet closing');
        }),
    );
    await Promise.all(closing);
    this.wss.close();
  }

  private accept(ws: WebSocket): void {
    const connection: Connection = { subscriptions: new Map() };
    this.connections.set(ws, connection);
    ws.on('message', (data, isBinary) => {
      const response = isBinary
        ? errorResponse(null, invalidRequest())
        : this.handle(ws, connection, data.toString());
      if (response) this.reply(ws, response);
    });
    ws.on('close', () => {
      for (const sub of connection.subscriptions.values()) this.remove(sub);
      this.connections.delete(ws);
    });
    ws.on('error', () => ws.terminate());
  }

  private reply(ws: WebSocket, response: JsonRpcResponse): void {
    if (ws.readyState === ws.OPEN) ws.send(stringifyJson(response));
  }

  /** The answer to one message, or undefined when it was already sent (subscriptions). */
  private handle(ws: WebSocket, connection: Connection, text: string): JsonRpcResponse | undefined {
    let request: unknown;
    try {
      request = JSON.parse(text);
    } catch {
      return errorResponse(null, parseError());
    }
    if (typeof request !== 'object' || request === null || Array.isArray(request)) {
      return errorResponse(null, invalidRequest());
    }
    const { jsonrpc, method, params, id: rawId } = request as Record<string, unknown>;
    const id = typeof rawId === 'number' || typeof rawId === 'string' ? rawId : null;
    if (jsonrpc !== '2.0' || typeof method !== 'string') return errorResponse(id, invalidRequest());
    if (params !== undefined && !Array.isArray(params)) {
      return errorResponse(id, invalidParams('Invalid params: invalid type: map, expected a tuple.'));
    }
    const list: Params = (params as unknown[] | undefined) ?? [];
    try {
      const kind = UNSUBSCRIBE[method];
      if (kind !== undefined) return { jsonrpc: '2.0', result: this.unsubscribe(connection, kind, list), id };
      const subscribe = this.subscribeMethods[method];
      if (!subscribe) return errorResponse(id, methodNotFound());
      const sub = subscribe(ws, list);
      if (connection.subscriptions.size >= MAX_SUBSCRIPTIONS_PER_CONNECTION) {
        throw new RpcError(-32603, 'Internal Error: Subscription refused. Node subscription limit reached');
      }
      connection.subscriptions.set(sub.id, sub);
      this.add(sub);
      // Answer first, then catch up on what already happened (e.g. a signature that already landed).
      this.reply(ws, { jsonrpc: '2.0', result: sub.id, id });
      this.catchUp(sub);
      return undefined;
    } catch (error) {
      if (error instanceof RpcError) return errorResponse(id, error);
      throw error;
    }
  }

  private readonly subscribeMethods: Readonly<
    Record<string, (ws: WebSocket, params: Params) => Subscription>
  > = {
    signatureSubscribe: (socket, params) => {
      const cfg = config(params, 1);
      return {
        id: ++this.nextId,
        kind: 'signature',
        socket,
        key: signature(params[0]),
        commitment: readCommitment(cfg),
        received: cfg.enableReceivedNotification === true,
      };
    },
    accountSubscribe: (socket, params) => {
      const key = encodeBase58(pubkeyParam(params, 0));
      const cfg = config(params, 1);
      return {
        id: ++this.nextId,
        kind: 'account',
        socket,
        key,
        commitment: readCommitment(cfg),
        view: accountView(cfg),
      };
    },
    programSubscribe: (socket, params) => {
      const key = encodeBase58(pubkeyParam(params, 0));
      const cfg = config(params, 1);
      return {
        id: ++this.nextId,
        kind: 'program',
        socket,
        key,
        commitment: readCommitment(cfg),
        view: accountView(cfg),
        filters: readFilters(cfg.filters),
      };
    },
    blockSubscribe: (socket, params) => {
      const filter = params[0];
      let mentions: string | undefined;
      if (typeof filter === 'object' && filter !== null && 'mentionsAccountOrProgram' in filter)
        mentions = encodeBase58(pubkey(String((filter as Record<string, unknown>).mentionsAccountOrProgram)));
      else if (filter !== 'all')
        throw invalidParams('Invalid params: unknown variant, expected `all` or `mentionsAccountOrProgram`.');
      const cfg = config(params, 1);
      const commitment = readCommitment(cfg);
      // As Agave: blocks exist from confirmed on.
      if (commitment === 'processed')
        throw invalidParams('Invalid params: processed commitment not supported');
      return {
        id: ++this.nextId,
        kind: 'block',
        socket,
        commitment,
        block: blockOptions(cfg),
        ...(mentions === undefined ? {} : { mentions }),
      };
    },
    slotSubscribe: (socket) => ({ id: ++this.nextId, kind: 'slot', socket, commitment: 'processed' }),
    slotsUpdatesSubscribe: (socket) => ({
      id: ++this.nextId,
      kind: 'slotsUpdates',
      socket,
      commitment: 'processed',
    }),
    rootSubscribe: (socket) => ({ id: ++this.nextId, kind: 'root', socket, commitment: 'finalized' }),
    logsSubscribe: (socket, params) => {
      const filter = params[0];
      const commitment = readCommitment(config(params, 1));
      if (filter === 'all' || filter === 'allWithVotes')
        return { id: ++this.nextId, kind: 'logs', socket, commitment };
      const mentions =
        typeof filter === 'object' && filter !== null
          ? (filter as Record<string, unknown>).mentions
          : undefined;
      if (!Array.isArray(mentions))
        throw invalidParams('Invalid params: unknown variant, expected `all`, `allWithVotes` or `mentions`.');
      if (mentions.length !== 1) throw invalidParams('Invalid Request: Only 1 address supported');
      const address = encodeBase58(pubkey(String(mentions[0])));
      return { id: ++this.nextId, kind: 'logs', socket, commitment, mentions: address };
    },
  };

  private unsubscribe(connection: Connection, kind: Kind, params: Params): boolean {
    const id = params[0];
    const sub = typeof id === 'number' ? connection.subscriptions.get(id) : undefined;
    if (!sub || sub.kind !== kind) throw invalidParams('Invalid subscription id.');
    this.remove(sub);
    return true;
  }

  private add(sub: Subscription): void {
    if (sub.kind === 'signature') indexAdd(this.bySignature, sub.key as string, sub);
    else if (sub.kind === 'account') indexAdd(this.byAccount, sub.key as string, sub);
    else if (sub.kind === 'program') indexAdd(this.byProgram, sub.key as string, sub);
    else if (sub.kind === 'slotsUpdates') this.slotsUpdatesSubscriptions.add(sub);
    else if (sub.kind === 'block') this.blockSubscriptions.add(sub);
    else if (sub.kind === 'slot') this.slotSubscriptions.add(sub);
    else if (sub.kind === 'root') this.rootSubscriptions.add(sub);
    else this.logsSubscriptions.add(sub);
  }

  private remove(sub: Subscription): void {
    this.connections.get(sub.socket)?.subscriptions.delete(sub.id);
    if (sub.kind === 'signature') indexDelete(this.bySignature, sub.key as string, sub);
    else if (sub.kind === 'account') indexDelete(this.byAccount, sub.key as string, sub);
    else if (sub.kind === 'program') indexDelete(this.byProgram, sub.key as string, sub);
    else if (sub.kind === 'slotsUpdates') this.slotsUpdatesSubscriptions.delete(sub);
    else if (sub.kind === 'block') this.blockSubscriptions.delete(sub);
    else if (sub.kind === 'slot') this.slotSubscriptions.delete(sub);
    else if (sub.kind === 'root') this.rootSubscriptions.delete(sub);
    else this.logsSubscriptions.delete(sub);
  }

  private catchUp(sub: Subscription): void {
    if (sub.kind !== 'signature') return;
    const status = this.chain.signatureStatus(sub.key as string, true);
    if (status && this.chain.reachedCommitment(status.slot, sub.commitment)) {
      this.notifySignature(sub, status.slot, status.err);
    }
  }

  private notify(sub: Subscription, method: string, result: unknown): void {
    if (sub.socket.readyState !== sub.socket.OPEN) return;
    sub.socket.send(stringifyJson({ jsonrpc: '2.0', method, params: { result, subscription: sub.id } }));
  }

  private notifySignature(sub: Subscription, slot: number, err: TransactionErrorJson | null): void {
    this.notify(sub, 'signatureNotification', { context: { slot }, value: { err } });
    // A signature subscription ends with its notification.
    this.remove(sub);
  }

  // ChainListener

  /**
   * Only account notifications go out when a transaction lands: they carry the processed state,
   * which a crash may roll back as a skipped slot would. Signature and logs notifications say a
   * transaction landed, so they wait for its slot's durable commit (onSlot).
   */
  onTransaction(record: TransactionRecord, writable: readonly string[]): void {
    // Received is not landed: Agave sends it when the transaction reaches the validator.
    const signatureSubs = this.bySignature.get(record.signature);
    if (signatureSubs) {
      for (const sub of signatureSubs) {
        if (sub.received)
          this.notify(sub, 'signatureNotification', {
            context: { slot: record.slot },
            value: 'receivedSignature',
          });
      }
    }
    if (this.byAccount.size === 0 && this.byProgram.size === 0) return;
    for (const address of writable) this.notifyAccountChange(address, 'processed');
  }

  /** Account and program subscriptions at `level` about an account a transaction stored. */
  private notifyAccountChange(address: string, level: Commitment): void {
    const subs = this.byAccount.get(address);
    if (subs) for (const sub of subs) if (sub.commitment === level) this.notifyAccount(sub, address);
    if (this.byProgram.size === 0) return;
    const account = this.chain.accountAt(pubkey(address), level);
    const programSubs = account && this.byProgram.get(account.owner);
    if (!account || !programSubs) return;
    for (const sub of programSubs) {
      if (sub.commitment !== level || !(sub.filters ?? []).every((f) => f(account))) continue;
      this.notify(sub, 'programNotification', {
        context: { slot: this.chain.slotAt(level) },
        value: {
          pubkey: address,
          account: encodeAccount(account, sub.view ?? accountView({}), this.chain, address),
        },
      });
    }
  }

  onSlot(slot: number): void {
    // Slot numbers may have gaps (dropped slots, a test hook): the root is `finalizedDepth` blocks
    // below, never moves back, and a root is announced (and finalized deliveries made) once.
    const rootSlot = slot < this.chain.finalizedDepth ? -1 : this.chain.rootOf(slot);
    const newRoot = rootSlot > this.lastRoot;
    if (newRoot) this.lastRoot = rootSlot;
    const root = newRoot ? rootSlot : -1;
    const parent = this.chain.block(slot)?.parentSlot ?? Math.max(0, slot - 1);
    for (const sub of this.slotSubscriptions) {
      this.notify(sub, 'slotNotification', { parent, root: Math.max(0, this.lastRoot), slot });
    }
    if (root >= 0) for (const sub of this.rootSubscriptions) this.notify(sub, 'rootNotification', root);
    if (this.slotsUpdatesSubscriptions.size > 0) this.notifySlotsUpdates(slot, root);
    // Slot `slot - 1` was just committed: it is processed and confirmed at once (after dropped
    // slots it is a dropped one, and nothing is delivered).
    this.deliverSlot(slot - 1, 'processed');
    this.deliverSlot(slot - 1, 'confirmed');
    if (root >= 0) this.deliverSlot(root, 'finalized');
    if (this.blockSubscriptions.size > 0) {
      this.notifyBlock(slot - 1, 'confirmed');
      if (root >= 0) this.notifyBlock(root, 'finalized');
    }
  }

  /** The last root announced (-1: none yet). */
  private lastRoot = -1;

  /**
   * Notifies about the transactions of a slot that just reached `level`, reading them back from
   * the ledger (flushed at every slot): nothing per transaction is held in memory for this.
   */
  private deliverSlot(slot: number, level: Commitment): void {
    if (slot < 0) return;
    if (this.bySignature.size > 0) {
      for (const { signature, err } of this.chain.statusesInSlot(slot)) {
        const subs = this.bySignature.get(signature);
        if (!subs) continue;
        for (const sub of [...subs]) if (sub.commitment === level) this.notifySignature(sub, slot, err);
      }
    }
    // Processed account notifications went out when each transaction landed.
    const accounts = level !== 'processed' && (this.byAccount.size > 0 || this.byProgram.size > 0);
    if (!accounts && this.logsSubscriptions.size === 0) return;
    for (const record of this.chain.transactionsInSlot(slot)) this.deliver(record, level, accounts);
  }

  /** Notifies the account (if `accounts`) and logs subscriptions at `level` about a record that reached it. */
  private deliver(record: TransactionRecord, level: Commitment, accounts: boolean): void {
    if (accounts) for (const address of this.writableKeys(record)) this.notifyAccountChange(address, level);
    for (const sub of this.logsSubscriptions) {
      if (sub.commitment !== level) continue;
      if (sub.mentions !== undefined && !record.accountKeys.includes(sub.mentions)) continue;
      this.notify(sub, 'logsNotification', {
        context: { slot: record.slot },
        value: { err: record.err, logs: record.meta.logMessages, signature: record.signature },
      });
    }
  }

  /**
   * blockNotification for the subscriptions at `level`: the block as getBlock answers it; with
   * `mentionsAccountOrProgram`, only its transactions that name the account, and only if any do.
   */
  private notifyBlock(slot: number, level: Commitment): void {
    if (slot < 0) return;
    const block = this.chain.block(slot);
    if (!block) return;
    let transactions: readonly TransactionRecord[] | undefined;
    for (const sub of this.blockSubscriptions) {
      if (sub.commitment !== level) continue;
      transactions ??= this.chain.transactionsInSlot(slot);
      const mentions = sub.mentions;
      const shown =
        mentions === undefined ? transactions : transactions.filter((r) => r.accountKeys.includes(mentions));
      if (mentions !== undefined && shown.length === 0) continue;
      this.notify(sub, 'blockNotification', {
        context: { slot },
        value: { slot, err: null, block: encodeBlock(block, shown, sub.block as BlockOptions) },
      });
    }
  }

  /**
   * Agave's slot updates for a new slot: its bank created; the slot before it frozen (with its
   * transaction counts) and optimistically confirmed at once (one node votes here); the new root.
   * No shreds here, so no firstShredReceived or completed.
   */
  private notifySlotsUpdates(slot: number, root: number): void {
    const timestamp = Date.now();
    const updates: Record<string, unknown>[] = [
      { type: 'createdBank', slot, parent: Math.max(0, slot - 1), timestamp },
    ];
    if (slot > 0) {
      const statuses = this.chain.statusesInSlot(slot - 1);
      const failed = statuses.filter((s) => s.err !== null).length;
      updates.push(
        {
          type: 'frozen',
          slot: slot - 1,
          timestamp,
          stats: {
            numTransactionEntries: statuses.length,
            numSuccessfulTransactions: statuses.length - failed,
            numFailedTransactions: failed,
            maxTransactionsPerEntry: statuses.length > 0 ? 1 : 0,
          },
        },
        { type: 'optimisticConfirmation', slot: slot - 1, timestamp },
      );
    }
    if (root >= 0) updates.push({ type: 'root', slot: root, timestamp });
    for (const sub of this.slotsUpdatesSubscriptions)
      for (const update of updates) this.notify(sub, 'slotsUpdatesNotification', update);
  }

  /** The accounts a landed transaction stored, recomputed from its bytes for later commitments. */
  private writableKeys(record: TransactionRecord): readonly string[] {
    const tx = decodeWireTransaction(record.wire);
    const programs = new Set(tx.instructions.map((ix) => ix.programIdIndex));
    const writable = tx.staticKeys
      .filter((_, i) => isStaticWritable(tx, i) && !programs.has(i))
      .map(encodeBase58);
    return [...writable, ...record.meta.loadedAddresses.writable];
  }

  private notifyAccount(sub: Subscription, address: string): void {
    const account = this.chain.accountAt(pubkey(address), sub.commitment);
    const value = account
      ? encodeAccount(account, sub.view ?? accountView({}), this.chain, address)
      : {
          data: ['', 'base64'],
          executable: false,
          lamports: 0,
          owner: '11111111111111111111111111111111',
          rentEpoch: 0,
          space: 0,
        };
    this.notify(sub, 'accountNotification', { context: { slot: this.chain.slot }, value });
  }
}

function indexAdd(index: Map<string, Set<Subscription>>, key: string, sub: Subscription): void {
  let set = index.get(key);
  if (!set) {
    set = new Set();
    index.set(key, set);
  }
  set.add(sub);
}

function indexDelete(index: Map<string, Set<Subscription>>, key: string, sub: Subscription): void {
  const set = index.get(key);
  if (!set) return;
  set.delete(sub);
  if (set.size === 0) index.delete(key);
}
