// gate402's own implementation of the x402 / Solana Foundation payment-channels program
// (CHNLxYvVA28MJP9PrFuDXccuoGXAx7jBacfLEkahyGsX), written from its published documentation
// (docs/001-payment-channel-state-machine.md and docs/003-program-instructions.md of
// solana-foundation/payment-channels) and from the accounts, data layouts, PDAs and discriminators
// the stock @x402/svm `upto` client and facilitator use. It is loaded on the embedded localnet only:
// the stock `upto` scheme escrows through this program and no package ships its binary.
//
// Plain C for stock LLVM's `bpf` target (no Solana toolchain): built by build.ts with
// `clang -target bpf -mcpu=v1` and linked by tools/sbpf-link.ts into an SBPF v0 ELF.
// Rules that follow from that: no writable globals, no libc, no calls with more than five
// arguments, stack frames under 512 bytes (large scratch lives on the 32 KiB program heap),
// no 128-bit arithmetic.
//
// Differences from the reference program (documented in docs/chains.md):
// - no Anchor-style events (`Opened`, `PayoutRedirected`) are emitted; `emitEvent` (228) only checks
//   that the event authority signed;
// - distribute hard-fails on an unusable recipient/payee/payer token account instead of
//   redirecting that share to the treasury;
// - Token-2022 accounts are accepted without checking their extensions.

typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long u64;
typedef long i64;

typedef struct {
  u8 x[32];
} Pubkey;

// ---- syscalls (resolved by name at load time) ----
extern void sol_log_(const char *msg, u64 len);
extern void sol_log_64_(u64, u64, u64, u64, u64);
typedef struct {
  const u8 *addr;
  u64 len;
} SolBytes;
extern u64 sol_sha256(const SolBytes *vals, u64 len, u8 *out);
extern u64 sol_try_find_program_address(const SolBytes *seeds, u64 n, const Pubkey *program, Pubkey *out,
                                        u8 *bump);
extern u64 sol_create_program_address(const SolBytes *seeds, u64 n, const Pubkey *program, Pubkey *out);
extern u64 sol_get_clock_sysvar(void *out);
extern u64 sol_get_rent_sysvar(void *out);
extern u64 sol_curve_validate_point(u64 curve, const u8 *point, u8 *result);

typedef struct {
  const Pubkey *pubkey;
  u8 is_writable;
  u8 is_signer;
} SolAccountMeta;
typedef struct {
  const Pubkey *program_id;
  const SolAccountMeta *accounts;
  u64 account_len;
  const u8 *data;
  u64 data_len;
} SolInstruction;
typedef struct {
  const Pubkey *key;
  u64 *lamports;
  u64 data_len;
  u8 *data;
  const Pubkey *owner;
  u64 rent_epoch;
  u8 is_signer;
  u8 is_writable;
  u8 executable;
} SolAccountInfo;
typedef struct {
  const SolBytes *addr;
  u64 len;
} SolSignerSeeds;
extern u64 sol_invoke_signed_c(const SolInstruction *ix, const SolAccountInfo *infos, u64 n,
                               const SolSignerSeeds *seeds, u64 nseeds);

// ---- ids ----
// CHNLxYvVA28MJP9PrFuDXccuoGXAx7jBacfLEkahyGsX
static const Pubkey PROGRAM_ID = {{167, 161, 251, 164, 235, 43, 9, 9, 147, 247, 210, 223, 214, 43, 137, 226,
                                   184, 114, 7, 122, 99, 159, 215, 215, 71, 168, 233, 159, 99, 212, 21, 174}};
// 11111111111111111111111111111111
static const Pubkey SYSTEM_PROGRAM_ID = {{0}};
// TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA
static const Pubkey TOKEN_PROGRAM_ID = {{6, 221, 246, 225, 215, 101, 161, 147, 217, 203, 225, 70, 206, 235, 121, 172,
                                         28, 180, 133, 237, 95, 91, 55, 145, 58, 140, 245, 133, 126, 255, 0, 169}};
// TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb
static const Pubkey TOKEN_2022_PROGRAM_ID = {{6, 221, 246, 225, 238, 117, 143, 222, 24, 66, 93, 188, 228, 108, 205, 218,
                                              182, 26, 252, 77, 131, 185, 13, 39, 254, 189, 249, 40, 216, 161, 139, 252}};
// ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL
static const Pubkey ATA_PROGRAM_ID = {{140, 151, 37, 143, 78, 36, 137, 241, 187, 61, 16, 41, 20, 142, 13, 131,
                                       11, 90, 19, 153, 218, 255, 16, 132, 4, 142, 123, 216, 219, 233, 248, 89}};
// Ed25519SigVerify111111111111111111111111111
static const Pubkey ED25519_PROGRAM_ID = {{3, 125, 70, 214, 124, 147, 251, 190, 18, 249, 66, 143, 131, 141, 64, 255,
                                           5, 112, 116, 73, 39, 244, 138, 100, 252, 202, 112, 68, 128, 0, 0, 0}};
// Sysvar1nstructions1111111111111111111111111
static const Pubkey INSTRUCTIONS_SYSVAR_ID = {{6, 167, 213, 23, 24, 123, 209, 102, 53, 218, 212, 4, 85, 253, 194, 192,
                                               193, 36, 198, 143, 33, 86, 117, 165, 219, 186, 203, 95, 8, 0, 0, 0}};
// SysvarRent111111111111111111111111111111111
static const Pubkey RENT_SYSVAR_ID = {{6, 167, 213, 23, 25, 44, 92, 81, 33, 140, 201, 76, 61, 74, 241, 127,
                                       88, 218, 238, 8, 155, 161, 253, 68, 227, 219, 217, 138, 0, 0, 0, 0}};
// 4zTeC5mVqWLruDexgU2mV66p9t5vCA9JyiZqdGDUspap: the treasury owner the stock @x402/svm facilitator
// derives the treasury token account from on Solana devnet, the network the localnet stands in for
// (stock x402 packages know only mainnet, devnet and testnet ids).
static const Pubkey TREASURY_OWNER = {{59, 75, 74, 76, 62, 205, 126, 89, 214, 52, 174, 103, 229, 222, 187, 236,
                                       10, 208, 111, 32, 77, 240, 19, 166, 149, 163, 55, 106, 87, 185, 141, 5}};
// 75c2huVzDW1Eq4kD86by5392sjdJzuAT195XNgP2f2tX = PDA(["event_authority"], PROGRAM_ID)
static const Pubkey EVENT_AUTHORITY = {{90, 84, 13, 123, 107, 30, 43, 43, 181, 23, 82, 25, 201, 163, 240, 96,
                                        16, 146, 65, 202, 140, 79, 23, 12, 193, 202, 45, 72, 238, 234, 249, 208}};

// ---- errors: ProgramError::Custom(code) of the reference program ----
#define E_MISSING_SIGNATURE 1
#define E_INVALID_STATUS 2
#define E_INVALID_DISCRIMINATOR 3
#define E_UNSUPPORTED_VERSION 4
#define E_INVALID_PAYER 5
#define E_INVALID_PAYEE 6
#define E_INVALID_MINT 7
#define E_INVALID_EVENT_AUTHORITY 8
#define E_NOT_ENOUGH_ACCOUNT_KEYS 9
#define E_INVALID_RENT_PAYER 10
#define E_CHANNEL_ACCOUNT_MISMATCH 50
#define E_INVALID_CHANNEL_TOKEN_ACCOUNT 51
#define E_MINT_ACCOUNT_MISMATCH 53
#define E_INVALID_MINT_TOKEN_PROGRAM 54
#define E_PAYER_ACCOUNT_MISMATCH 57
#define E_PAYEE_ACCOUNT_MISMATCH 60
#define E_DEPOSIT_ZERO 200
#define E_GRACE_ZERO 201
#define E_MISSING_ED25519 230
#define E_MALFORMED_ED25519 231
#define E_VOUCHER_CHANNEL_MISMATCH 232
#define E_VOUCHER_EXPIRED 233
#define E_VOUCHER_NOT_MONOTONIC 234
#define E_VOUCHER_OVER_DEPOSIT 235
#define E_VOUCHER_SIGNER_MISMATCH 237
#define E_VOUCHER_BAD_MAGIC 238
#define E_INVALID_RECIPIENT_COUNT 260
#define E_INVALID_SPLIT_CONFIG 261
#define E_DUPLICATE_RECIPIENT 263
#define E_CHANNEL_ADDRESS_MISMATCH 2000
#define E_PAYER_PAYEE_MUST_DIFFER 2001
#define E_INVALID_AUTHORIZED_SIGNER 2002
#define E_OPEN_SLOT_OUT_OF_WINDOW 2003
#define E_TOP_UP_OVERFLOW 2100
#define E_SEAL_DEADLINE_OVERFLOW 2200
#define E_SEAL_GRACE_NOT_ELAPSED 2201
#define E_PAYER_ALREADY_WITHDRAWN 2300
#define E_REFUND_UNDERFLOW 2301
#define E_NOT_DISTRIBUTABLE 2400
#define E_TREASURY_ACCOUNT_MISMATCH 2401
#define E_RECIPIENT_ACCOUNT_MISMATCH 2404
#define E_INVALID_DISTRIBUTION_HASH 2407
#define E_NOTHING_TO_DISTRIBUTE 2408
#define E_RECIPIENT_COUNT_MISMATCH 2409
#define E_POOL_UNDERFLOW 2410
#define E_RENT_PAYER_OVERFLOW 2412
#define E_CLOSE_TOO_EARLY 2414
// Builtin program errors (`ProgramError` variants are returned shifted left by 32).
#define BUILTIN(n) ((u64)(n) << 32)
#define E_INVALID_ARGUMENT BUILTIN(2)
#define E_INVALID_INSTRUCTION_DATA BUILTIN(3)
#define E_INVALID_ACCOUNT_DATA BUILTIN(4)
#define E_INCORRECT_PROGRAM_ID BUILTIN(7)
#define E_ACCOUNT_ALREADY_INITIALIZED BUILTIN(9)
#define E_ACCOUNT_NOT_WRITABLE BUILTIN(11)

#define TRY(expr)                                                                                                      \
  do {                                                                                                                 \
    u64 _e = (expr);                                                                                                   \
    if (_e) return _e;                                                                                                 \
  } while (0)

// ---- constants ----
#define OPEN_SLOT_WINDOW 1500
#define BPS_DENOMINATOR 10000
#define MAX_RECIPIENTS 32
#define CHANNEL_SIZE 256
#define CHANNEL_DISCRIMINATOR 1
#define CHANNEL_VERSION 1
#define STATUS_OPEN 0
#define STATUS_CLOSING 1
#define STATUS_SEALED 2
#define STATUS_DISTRIBUTED 3
#define MAX_PERMITTED_DATA_INCREASE 10240

// ---- channel layout (byte offsets) ----
#define C_DISC 0
#define C_VERSION 1
#define C_BUMP 2
#define C_STATUS 3
#define C_SALT 4
#define C_DEPOSIT 12
#define C_SETTLED 20
#define C_PAYOUT_WATERMARK 28
#define C_CLOSURE_STARTED_AT 36
#define C_PAYER_WITHDRAWN_AT 44
#define C_GRACE_PERIOD 52
#define C_DISTRIBUTION_HASH 56
#define C_PAYER 88
#define C_PAYEE 120
#define C_AUTHORIZED_SIGNER 152
#define C_MINT 184
#define C_RENT_PAYER 216
#define C_OPEN_SLOT 248

// ---- helpers ----
static void copy(u8 *dst, const u8 *src, u64 n) {
  for (u64 i = 0; i < n; i++) dst[i] = src[i];
}
static void zero(u8 *dst, u64 n) {
  for (u64 i = 0; i < n; i++) dst[i] = 0;
}
static int key_eq(const Pubkey *a, const Pubkey *b) {
  const u64 *x = (const u64 *)a->x;
  const u64 *y = (const u64 *)b->x;
  return x[0] == y[0] && x[1] == y[1] && x[2] == y[2] && x[3] == y[3];
}
static int bytes_eq(const u8 *a, const u8 *b, u64 n) {
  for (u64 i = 0; i < n; i++)
    if (a[i] != b[i]) return 0;
  return 1;
}
static u64 rd64(const u8 *p) {
  u64 v = 0;
  for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
  return v;
}
static u32 rd32(const u8 *p) { return (u32)p[0] | ((u32)p[1] << 8) | ((u32)p[2] << 16) | ((u32)p[3] << 24); }
static u16 rd16(const u8 *p) { return (u16)(p[0] | (p[1] << 8)); }
static void wr64(u8 *p, u64 v) {
  for (int i = 0; i < 8; i++) p[i] = (u8)(v >> (8 * i));
}
static void wr32(u8 *p, u32 v) {
  for (int i = 0; i < 4; i++) p[i] = (u8)(v >> (8 * i));
}
#define LOG(s) sol_log_(s, sizeof(s) - 1)

// ---- input ----
typedef struct {
  Pubkey *key;
  Pubkey *owner;
  u64 *lamports;
  u64 *data_len;
  u8 *data;
  u8 is_signer;
  u8 is_writable;
  u8 executable;
} Account;

#define MAX_ACCOUNTS 64
// Scratch on the program heap (MM_HEAP_START), zeroed by the runtime for each instruction.
#define HEAP ((u8 *)0x300000000UL)
#define ACCOUNTS ((Account *)HEAP)
#define HEAP_SCRATCH (HEAP + sizeof(Account) * MAX_ACCOUNTS)
// Account infos and metas of the CPI being made (CPIs never re-enter this program, so one area serves).
#define CPI_INFOS ((SolAccountInfo *)(HEAP + 16384))
#define CPI_METAS ((SolAccountMeta *)(HEAP + 16384 + 8 * sizeof(SolAccountInfo)))

typedef struct {
  Account *accounts;
  u64 n;
  const u8 *data;
  u64 data_len;
} Input;

__attribute__((noinline)) static u64 deserialize(u8 *in, Input *out) {
  u64 n = rd64(in);
  in += 8;
  if (n > MAX_ACCOUNTS) return E_INVALID_ARGUMENT;
  Account *accounts = ACCOUNTS;
  for (u64 i = 0; i < n; i++) {
    u8 dup = *in;
    if (dup != 0xff) {
      accounts[i] = accounts[dup];
      in += 8;
      continue;
    }
    Account *a = &accounts[i];
    a->is_signer = in[1];
    a->is_writable = in[2];
    a->executable = in[3];
    in += 8;
    a->key = (Pubkey *)in;
    in += 32;
    a->owner = (Pubkey *)in;
    in += 32;
    a->lamports = (u64 *)in;
    in += 8;
    a->data_len = (u64 *)in;
    u64 len = *(u64 *)in;
    in += 8;
    a->data = in;
    in += len + MAX_PERMITTED_DATA_INCREASE;
    in = (u8 *)(((u64)in + 7) & ~7UL);
    in += 8; // rent epoch
  }
  out->accounts = accounts;
  out->n = n;
  out->data_len = *(u64 *)in;
  in += 8;
  out->data = in;
  return 0;
}

static void to_info(const Account *a, SolAccountInfo *info) {
  info->key = a->key;
  info->lamports = a->lamports;
  info->data_len = *a->data_len;
  info->data = a->data;
  info->owner = a->owner;
  info->rent_epoch = 0;
  info->is_signer = a->is_signer;
  info->is_writable = a->is_writable;
  info->executable = a->executable;
}

typedef struct {
  u64 slot;
  i64 epoch_start_timestamp;
  u64 epoch;
  u64 leader_schedule_epoch;
  i64 unix_timestamp;
} Clock;

// ---- PDAs ----
__attribute__((noinline)) static u64 ata_address(const Pubkey *owner, const Pubkey *token_program, const Pubkey *mint, Pubkey *out) {
  SolBytes seeds[3] = {{owner->x, 32}, {token_program->x, 32}, {mint->x, 32}};
  u8 bump;
  return sol_try_find_program_address(seeds, 3, &ATA_PROGRAM_ID, out, &bump);
}

// Checks `account` is ATA(owner, token_program, mint).
__attribute__((noinline)) static u64 check_ata(const Account *account, const Pubkey *owner, const Pubkey *token_program, const Pubkey *mint,
                     u64 err) {
  Pubkey expected;
  if (ata_address(owner, token_program, mint, &expected)) return err;
  return key_eq(account->key, &expected) ? 0 : err;
}

// The channel's seeds: "channel", payer, payee, mint, authorized_signer, salt (LE), open_slot (LE), [bump].
typedef struct {
  SolBytes seeds[8];
  u8 bump;
} ChannelSeeds;

static void channel_seeds(const u8 *c, ChannelSeeds *s) {
  static const char label[] = "channel";
  s->seeds[0] = (SolBytes){(const u8 *)label, 7};
  s->seeds[1] = (SolBytes){c + C_PAYER, 32};
  s->seeds[2] = (SolBytes){c + C_PAYEE, 32};
  s->seeds[3] = (SolBytes){c + C_MINT, 32};
  s->seeds[4] = (SolBytes){c + C_AUTHORIZED_SIGNER, 32};
  s->seeds[5] = (SolBytes){c + C_SALT, 8};
  s->seeds[6] = (SolBytes){c + C_OPEN_SLOT, 8};
  s->bump = c[C_BUMP];
  s->seeds[7] = (SolBytes){&s->bump, 1};
}

// ---- channel loading ----
static u64 load_channel(const Account *a, u8 **out) {
  if (!key_eq(a->owner, &PROGRAM_ID)) return E_CHANNEL_ACCOUNT_MISMATCH;
  if (*a->data_len != CHANNEL_SIZE) return E_INVALID_ACCOUNT_DATA;
  u8 *c = a->data;
  if (c[C_DISC] != CHANNEL_DISCRIMINATOR) return E_INVALID_DISCRIMINATOR;
  if (c[C_VERSION] != CHANNEL_VERSION) return E_UNSUPPORTED_VERSION;
  if (!a->is_writable) return E_ACCOUNT_NOT_WRITABLE;
  *out = c;
  return 0;
}

// The channel's address re-derived from its stored seeds and bump.
__attribute__((noinline)) static u64 check_channel_address(const Account *a, const u8 *c) {
  ChannelSeeds s;
  channel_seeds(c, &s);
  Pubkey derived;
  if (sol_create_program_address(s.seeds, 8, &PROGRAM_ID, &derived)) return E_CHANNEL_ACCOUNT_MISMATCH;
  return key_eq(&derived, a->key) ? 0 : E_CHANNEL_ACCOUNT_MISMATCH;
}

static u64 check_token_program(const Account *token_program, const Account *mint) {
  if (!key_eq(token_program->key, &TOKEN_PROGRAM_ID) && !key_eq(token_program->key, &TOKEN_2022_PROGRAM_ID))
    return E_INVALID_MINT_TOKEN_PROGRAM;
  if (!key_eq(mint->owner, token_program->key) || *mint->data_len < 82 || mint->data[45] != 1)
    return E_MINT_ACCOUNT_MISMATCH;
  return 0;
}

// Deallocates the channel: every lamport to the rent payer, data cleared, owner back to the system
// program (the runtime removes the zero-lamport account at the end of the transaction).
__attribute__((noinline)) static u64 deallocate(Account *channel, Account *rent_payer) {
  u64 total = *rent_payer->lamports + *channel->lamports;
  if (total < *rent_payer->lamports) return E_RENT_PAYER_OVERFLOW;
  *rent_payer->lamports = total;
  *channel->lamports = 0;
  zero(channel->data, *channel->data_len);
  *channel->data_len = 0;
  copy(channel->owner->x, SYSTEM_PROGRAM_ID.x, 32);
  return 0;
}

// distribute's fixed accounts
enum {
  D_CHANNEL,
  D_PAYER,
  D_RENT_PAYER,
  D_CHANNEL_TOKEN,
  D_PAYER_TOKEN,
  D_PAYEE_TOKEN,
  D_TREASURY_TOKEN,
  D_MINT,
  D_TOKEN_PROGRAM,
  D_EVENT_AUTHORITY,
  D_SELF_PROGRAM,
  D_FIXED
};

// ---- token CPIs ----
// TransferChecked of `amount` from `from` to `to` by `authority`; signed by the channel's seeds when
// `channel` is given.
typedef struct {
  const Account *token_program;
  const Account *mint;
  const Account *from;
  const Account *to;
  const Account *authority;
  const u8 *channel;
  u64 amount;
} Transfer;

__attribute__((noinline)) static u64 transfer_checked(const Transfer *t) {
  u8 data[10];
  data[0] = 12;
  wr64(data + 1, t->amount);
  data[9] = t->mint->data[44];
  SolAccountMeta *metas = CPI_METAS;
  metas[0] = (SolAccountMeta){t->from->key, 1, 0};
  metas[1] = (SolAccountMeta){t->mint->key, 0, 0};
  metas[2] = (SolAccountMeta){t->to->key, 1, 0};
  metas[3] = (SolAccountMeta){t->authority->key, 0, 1};
  SolInstruction ix = {t->token_program->key, metas, 4, data, 10};
  SolAccountInfo *infos = CPI_INFOS;
  to_info(t->from, &infos[0]);
  to_info(t->mint, &infos[1]);
  to_info(t->to, &infos[2]);
  to_info(t->authority, &infos[3]);
  to_info(t->token_program, &infos[4]);
  if (t->channel) {
    ChannelSeeds s;
    channel_seeds(t->channel, &s);
    SolSignerSeeds signer = {s.seeds, 8};
    return sol_invoke_signed_c(&ix, infos, 5, &signer, 1);
  }
  return sol_invoke_signed_c(&ix, infos, 5, 0, 0);
}

// A transfer out of the escrow, signed by the channel.
__attribute__((noinline)) static u64 pay_out(const Account *a, const Account *to, u64 amount, const u8 *c) {
  Transfer t = {&a[D_TOKEN_PROGRAM], &a[D_MINT], &a[D_CHANNEL_TOKEN], to, &a[D_CHANNEL], c, amount};
  return transfer_checked(&t);
}

__attribute__((noinline)) static u64 close_token_account(const Account *token_program, const Account *account, const Account *destination,
                               const Account *channel, const u8 *channel_data) {
  u8 data[1] = {9};
  SolAccountMeta *metas = CPI_METAS;
  metas[0] = (SolAccountMeta){account->key, 1, 0};
  metas[1] = (SolAccountMeta){destination->key, 1, 0};
  metas[2] = (SolAccountMeta){channel->key, 0, 1};
  SolInstruction ix = {token_program->key, metas, 3, data, 1};
  SolAccountInfo *infos = CPI_INFOS;
  to_info(account, &infos[0]);
  to_info(destination, &infos[1]);
  to_info(channel, &infos[2]);
  to_info(token_program, &infos[3]);
  ChannelSeeds s;
  channel_seeds(channel_data, &s);
  SolSignerSeeds signer = {s.seeds, 8};
  return sol_invoke_signed_c(&ix, infos, 4, &signer, 1);
}

static u64 token_amount(const Account *token_account) {
  if (*token_account->data_len < 165) return 0;
  return rd64(token_account->data + 64);
}

// ---- system CPIs ----
typedef struct {
  const Account *system_program;
  const u8 *data;
  u64 data_len;
  const Account *a; // signer
  const Account *b; // optional second account
  const SolSignerSeeds *signer;
} SystemCall;

__attribute__((noinline)) static u64 system_invoke(const SystemCall *call) {
  SolAccountMeta *metas = CPI_METAS;
  SolAccountInfo *infos = CPI_INFOS;
  u64 n = 0;
  metas[n] = (SolAccountMeta){call->a->key, 1, 1};
  to_info(call->a, &infos[n++]);
  if (call->b) {
    metas[n] = (SolAccountMeta){call->b->key, 1, 0};
    to_info(call->b, &infos[n++]);
  }
  to_info(call->system_program, &infos[n]);
  SolInstruction ix = {call->system_program->key, metas, n, call->data, call->data_len};
  return sol_invoke_signed_c(&ix, infos, n + 1, call->signer, call->signer ? 1 : 0);
}

// ---- open (1) ----
enum {
  O_PAYER,
  O_RENT_PAYER,
  O_PAYEE,
  O_MINT,
  O_AUTHORIZED_SIGNER,
  O_CHANNEL,
  O_PAYER_TOKEN,
  O_CHANNEL_TOKEN,
  O_TOKEN_PROGRAM,
  O_SYSTEM_PROGRAM,
  O_RENT,
  O_ATA_PROGRAM,
  O_EVENT_AUTHORITY,
  O_SELF_PROGRAM,
  O_COUNT
};

__attribute__((noinline)) static u64 create_escrow_ata(const Account *a) {
  const Account *channel = &a[O_CHANNEL];
  u8 data[1] = {1};
  SolAccountMeta *metas = CPI_METAS;
  metas[0] = (SolAccountMeta){a[O_RENT_PAYER].key, 1, 1};
  metas[1] = (SolAccountMeta){a[O_CHANNEL_TOKEN].key, 1, 0};
  metas[2] = (SolAccountMeta){channel->key, 0, 0};
  metas[3] = (SolAccountMeta){a[O_MINT].key, 0, 0};
  metas[4] = (SolAccountMeta){a[O_SYSTEM_PROGRAM].key, 0, 0};
  metas[5] = (SolAccountMeta){a[O_TOKEN_PROGRAM].key, 0, 0};
  SolInstruction ix = {&ATA_PROGRAM_ID, metas, 6, data, 1};
  SolAccountInfo *infos = CPI_INFOS;
  to_info(&a[O_RENT_PAYER], &infos[0]);
  to_info(&a[O_CHANNEL_TOKEN], &infos[1]);
  to_info(channel, &infos[2]);
  to_info(&a[O_MINT], &infos[3]);
  to_info(&a[O_SYSTEM_PROGRAM], &infos[4]);
  to_info(&a[O_TOKEN_PROGRAM], &infos[5]);
  to_info(&a[O_ATA_PROGRAM], &infos[6]);
  return sol_invoke_signed_c(&ix, infos, 7, 0, 0);
}

// Checks the distribution preimage `count (u32) || (recipient, bps u16) * count` and returns its length.
__attribute__((noinline)) static u64 check_recipients(const u8 *p, u64 len, const Pubkey *channel, u64 *preimage_len) {
  if (len < 4) return E_INVALID_INSTRUCTION_DATA;
  u32 count = rd32(p);
  if (count > MAX_RECIPIENTS) return E_INVALID_RECIPIENT_COUNT;
  if (len != 4 + (u64)count * 34) return E_INVALID_INSTRUCTION_DATA;
  u64 sum = 0;
  for (u32 i = 0; i < count; i++) {
    const u8 *e = p + 4 + i * 34;
    u16 bps = rd16(e + 32);
    if (bps == 0) return E_INVALID_SPLIT_CONFIG;
    sum += bps;
    if (key_eq((const Pubkey *)e, channel)) return E_INVALID_SPLIT_CONFIG;
    for (u32 j = 0; j < i; j++)
      if (key_eq((const Pubkey *)e, (const Pubkey *)(p + 4 + j * 34))) return E_DUPLICATE_RECIPIENT;
  }
  if (sum > BPS_DENOMINATOR) return E_INVALID_SPLIT_CONFIG;
  *preimage_len = len;
  return 0;
}

typedef struct {
  Clock clock;
  ChannelSeeds seeds;
  Pubkey derived;
  u8 bump;
  struct {
    u64 lamports_per_byte_year;
    u64 exemption_threshold_bits;
    u8 burn_percent;
  } rent;
  u8 sys[40];
} OpenScratch;

__attribute__((noinline)) static u64 open(Input *in) {
  if (in->n < O_COUNT) return E_NOT_ENOUGH_ACCOUNT_KEYS;
  if (in->n > O_COUNT) return E_INVALID_ARGUMENT;
  Account *a = in->accounts;
  const u8 *d = in->data + 1;
  u64 dl = in->data_len - 1;
  if (dl < 28) return E_INVALID_INSTRUCTION_DATA;
  u64 salt = rd64(d), deposit = rd64(d + 8), open_slot = rd64(d + 20);
  u32 grace = rd32(d + 16);
  u64 preimage_len;
  TRY(check_recipients(d + 28, dl - 28, a[O_CHANNEL].key, &preimage_len));

  if (!a[O_PAYER].is_signer || !a[O_RENT_PAYER].is_signer) return E_MISSING_SIGNATURE;
  if (!a[O_PAYER].is_writable || !a[O_RENT_PAYER].is_writable || !a[O_CHANNEL].is_writable ||
      !a[O_PAYER_TOKEN].is_writable || !a[O_CHANNEL_TOKEN].is_writable)
    return E_ACCOUNT_NOT_WRITABLE;
  if (deposit == 0) return E_DEPOSIT_ZERO;
  if (grace == 0) return E_GRACE_ZERO;
  if (key_eq(a[O_PAYER].key, a[O_PAYEE].key)) return E_PAYER_PAYEE_MUST_DIFFER;
  u8 on_curve = 1;
  if (sol_curve_validate_point(0, a[O_AUTHORIZED_SIGNER].key->x, &on_curve) != 0)
    return E_INVALID_AUTHORIZED_SIGNER;
  OpenScratch *x = (OpenScratch *)(HEAP_SCRATCH + CHANNEL_SIZE);
  sol_get_clock_sysvar(&x->clock);
  if (open_slot > x->clock.slot || x->clock.slot - open_slot > OPEN_SLOT_WINDOW) return E_OPEN_SLOT_OUT_OF_WINDOW;

  if (!key_eq(a[O_SYSTEM_PROGRAM].key, &SYSTEM_PROGRAM_ID)) return E_INCORRECT_PROGRAM_ID;
  if (!key_eq(a[O_RENT].key, &RENT_SYSVAR_ID)) return E_INVALID_ARGUMENT;
  if (!key_eq(a[O_ATA_PROGRAM].key, &ATA_PROGRAM_ID)) return E_INCORRECT_PROGRAM_ID;
  if (!key_eq(a[O_EVENT_AUTHORITY].key, &EVENT_AUTHORITY)) return E_INVALID_EVENT_AUTHORITY;
  if (!key_eq(a[O_SELF_PROGRAM].key, &PROGRAM_ID)) return E_INCORRECT_PROGRAM_ID;
  TRY(check_token_program(&a[O_TOKEN_PROGRAM], &a[O_MINT]));

  // The channel PDA, with the canonical bump.
  u8 *state = HEAP_SCRATCH; // the channel's seeds are built in its final layout first
  zero(state, CHANNEL_SIZE);
  copy(state + C_PAYER, a[O_PAYER].key->x, 32);
  copy(state + C_PAYEE, a[O_PAYEE].key->x, 32);
  copy(state + C_MINT, a[O_MINT].key->x, 32);
  copy(state + C_AUTHORIZED_SIGNER, a[O_AUTHORIZED_SIGNER].key->x, 32);
  wr64(state + C_SALT, salt);
  wr64(state + C_OPEN_SLOT, open_slot);
  channel_seeds(state, &x->seeds);
  if (sol_try_find_program_address(x->seeds.seeds, 7, &PROGRAM_ID, &x->derived, &x->bump))
    return E_CHANNEL_ADDRESS_MISMATCH;
  if (!key_eq(&x->derived, a[O_CHANNEL].key)) return E_CHANNEL_ADDRESS_MISMATCH;
  state[C_BUMP] = x->bump;
  channel_seeds(state, &x->seeds);

  TRY(check_ata(&a[O_PAYER_TOKEN], a[O_PAYER].key, a[O_TOKEN_PROGRAM].key, a[O_MINT].key, E_PAYER_ACCOUNT_MISMATCH));
  TRY(check_ata(&a[O_CHANNEL_TOKEN], a[O_CHANNEL].key, a[O_TOKEN_PROGRAM].key, a[O_MINT].key,
                E_INVALID_CHANNEL_TOKEN_ACCOUNT));

  // Create the channel account, tolerating lamports already sent to its address.
  Account *channel = &a[O_CHANNEL];
  if (!key_eq(channel->owner, &SYSTEM_PROGRAM_ID) || *channel->data_len != 0) return E_ACCOUNT_ALREADY_INITIALIZED;
  sol_get_rent_sysvar(&x->rent);
  // Rent exemption = lamports per byte-year * (128 + size) * threshold, the threshold being 2.0 (years)
  // or, once the threshold was folded into the per-byte price, 1.0. No floating point here.
  u64 years;
  if (x->rent.exemption_threshold_bits == 0x4000000000000000UL) years = 2;
  else if (x->rent.exemption_threshold_bits == 0x3ff0000000000000UL) years = 1;
  else return E_INVALID_ARGUMENT;
  u64 needed = x->rent.lamports_per_byte_year * (128 + CHANNEL_SIZE) * years;
  SolSignerSeeds signer = {x->seeds.seeds, 8};
  u8 *sys = x->sys;
  if (*channel->lamports < needed) {
    wr32(sys, 2); // Transfer
    wr64(sys + 4, needed - *channel->lamports);
    SystemCall transfer = {&a[O_SYSTEM_PROGRAM], sys, 12, &a[O_RENT_PAYER], channel, 0};
    TRY(system_invoke(&transfer));
  }
  wr32(sys, 8); // Allocate
  wr64(sys + 4, CHANNEL_SIZE);
  SystemCall allocate = {&a[O_SYSTEM_PROGRAM], sys, 12, channel, 0, &signer};
  TRY(system_invoke(&allocate));
  wr32(sys, 1); // Assign
  copy(sys + 4, PROGRAM_ID.x, 32);
  SystemCall assign = {&a[O_SYSTEM_PROGRAM], sys, 36, channel, 0, &signer};
  TRY(system_invoke(&assign));

  // The escrow ATA (idempotent: an escrow ATA created beforehand is accepted).
  TRY(create_escrow_ata(a));

  // The deposit, signed by the payer.
  Transfer t = {&a[O_TOKEN_PROGRAM], &a[O_MINT], &a[O_PAYER_TOKEN], &a[O_CHANNEL_TOKEN], &a[O_PAYER], 0, deposit};
  TRY(transfer_checked(&t));

  state[C_DISC] = CHANNEL_DISCRIMINATOR;
  state[C_VERSION] = CHANNEL_VERSION;
  state[C_STATUS] = STATUS_OPEN;
  wr64(state + C_DEPOSIT, deposit);
  wr32(state + C_GRACE_PERIOD, grace);
  SolBytes preimage = {d + 28, preimage_len};
  sol_sha256(&preimage, 1, state + C_DISTRIBUTION_HASH);
  copy(state + C_RENT_PAYER, a[O_RENT_PAYER].key->x, 32);
  if (*channel->data_len != CHANNEL_SIZE) return E_INVALID_ACCOUNT_DATA;
  copy(channel->data, state, CHANNEL_SIZE);
  return 0;
}

// ---- vouchers ----
// Reads the Ed25519 precompile instruction right before the current one from the instructions
// sysvar, requires the canonical single-signature layout whose key, signature and 50-byte message
// all sit in that instruction's own data, and applies the voucher to the channel.
__attribute__((noinline)) static u64 apply_voucher(const Account *sysvar, const Account *channel, u8 *c) {
  if (!key_eq(sysvar->key, &INSTRUCTIONS_SYSVAR_ID)) return E_INVALID_ARGUMENT;
  const u8 *sv = sysvar->data;
  u64 sv_len = *sysvar->data_len;
  if (sv_len < 4) return E_MISSING_ED25519;
  u16 count = rd16(sv);
  u16 current = rd16(sv + sv_len - 2);
  if (current == 0 || current > count) return E_MISSING_ED25519;
  u16 at = rd16(sv + 2 + 2 * (u64)(current - 1));
  if ((u64)at + 2 > sv_len) return E_MISSING_ED25519;
  const u8 *p = sv + at;
  u64 naccounts = rd16(p);
  p += 2 + naccounts * 33;
  if ((u64)(p - sv) + 34 > sv_len) return E_MISSING_ED25519;
  if (!key_eq((const Pubkey *)p, &ED25519_PROGRAM_ID)) return E_MISSING_ED25519;
  p += 32;
  u16 len = rd16(p);
  p += 2;
  if ((u64)(p - sv) + len > sv_len) return E_MALFORMED_ED25519;
  if (len != 162 || p[0] != 1 || p[1] != 0 || rd16(p + 2) != 48 || rd16(p + 4) != 0xffff || rd16(p + 6) != 16 ||
      rd16(p + 8) != 0xffff || rd16(p + 10) != 112 || rd16(p + 12) != 50 || rd16(p + 14) != 0xffff)
    return E_MALFORMED_ED25519;
  const u8 *signer = p + 16;
  const u8 *msg = p + 112;
  if (msg[0] != 0x56 || msg[1] != 0x01) return E_VOUCHER_BAD_MAGIC;
  if (!bytes_eq(msg + 2, channel->key->x, 32)) return E_VOUCHER_CHANNEL_MISMATCH;
  u64 cumulative = rd64(msg + 34);
  i64 expires_at = (i64)rd64(msg + 42);
  if (expires_at != 0) {
    Clock clock;
    sol_get_clock_sysvar(&clock);
    if (clock.unix_timestamp >= expires_at) return E_VOUCHER_EXPIRED;
  }
  if (cumulative > rd64(c + C_DEPOSIT)) return E_VOUCHER_OVER_DEPOSIT;
  if (cumulative <= rd64(c + C_SETTLED)) return E_VOUCHER_NOT_MONOTONIC;
  if (!bytes_eq(signer, c + C_AUTHORIZED_SIGNER, 32)) return E_VOUCHER_SIGNER_MISMATCH;
  wr64(c + C_SETTLED, cumulative);
  return 0;
}

// ---- settle (2) ----
__attribute__((noinline)) static u64 settle(Input *in) {
  if (in->n < 2) return E_NOT_ENOUGH_ACCOUNT_KEYS;
  if (in->n > 2 || in->data_len != 1) return E_INVALID_ARGUMENT;
  u8 *c;
  TRY(load_channel(&in->accounts[0], &c));
  if (c[C_STATUS] != STATUS_OPEN) return E_INVALID_STATUS;
  return apply_voucher(&in->accounts[1], &in->accounts[0], c);
}

// ---- top_up (3) ----
__attribute__((noinline)) static u64 top_up(Input *in) {
  if (in->n < 6) return E_NOT_ENOUGH_ACCOUNT_KEYS;
  if (in->n > 6 || in->data_len != 9) return E_INVALID_ARGUMENT;
  Account *a = in->accounts;
  u64 amount = rd64(in->data + 1);
  if (!a[0].is_signer) return E_MISSING_SIGNATURE;
  u8 *c;
  TRY(load_channel(&a[1], &c));
  if (!bytes_eq(a[0].key->x, c + C_PAYER, 32)) return E_INVALID_PAYER;
  if (amount == 0) return E_DEPOSIT_ZERO;
  if (c[C_STATUS] != STATUS_OPEN) return E_INVALID_STATUS;
  if (!bytes_eq(a[4].key->x, c + C_MINT, 32)) return E_INVALID_MINT;
  TRY(check_token_program(&a[5], &a[4]));
  TRY(check_ata(&a[2], a[0].key, a[5].key, a[4].key, E_PAYER_ACCOUNT_MISMATCH));
  TRY(check_ata(&a[3], a[1].key, a[5].key, a[4].key, E_INVALID_CHANNEL_TOKEN_ACCOUNT));
  u64 deposit = rd64(c + C_DEPOSIT);
  if (deposit + amount < deposit) return E_TOP_UP_OVERFLOW;
  Transfer t = {&a[5], &a[4], &a[2], &a[3], &a[0], 0, amount};
  TRY(transfer_checked(&t));
  wr64(c + C_DEPOSIT, deposit + amount);
  return 0;
}

// ---- settle_and_seal (4) ----
__attribute__((noinline)) static u64 settle_and_seal(Input *in) {
  if (in->n < 3) return E_NOT_ENOUGH_ACCOUNT_KEYS;
  if (in->n > 3 || in->data_len != 2) return E_INVALID_ARGUMENT;
  Account *a = in->accounts;
  u8 *c;
  TRY(load_channel(&a[1], &c));
  if (!a[0].is_signer) return E_MISSING_SIGNATURE;
  if (!bytes_eq(a[0].key->x, c + C_PAYEE, 32)) return E_INVALID_PAYEE;
  if (c[C_STATUS] == STATUS_CLOSING) {
    Clock clock;
    sol_get_clock_sysvar(&clock);
    i64 started = (i64)rd64(c + C_CLOSURE_STARTED_AT);
    i64 deadline = started + (i64)rd32(c + C_GRACE_PERIOD);
    if (deadline < started) return E_SEAL_DEADLINE_OVERFLOW;
    if (clock.unix_timestamp >= deadline) return E_INVALID_STATUS;
  } else if (c[C_STATUS] != STATUS_OPEN) {
    return E_INVALID_STATUS;
  }
  if (in->data[1] != 0) TRY(apply_voucher(&a[2], &a[1], c));
  else if (!key_eq(a[2].key, &INSTRUCTIONS_SYSVAR_ID)) return E_INVALID_ARGUMENT;
  c[C_STATUS] = STATUS_SEALED;
  wr64(c + C_CLOSURE_STARTED_AT, 0);
  return 0;
}

// ---- request_close (5) ----
__attribute__((noinline)) static u64 request_close(Input *in) {
  if (in->n < 2) return E_NOT_ENOUGH_ACCOUNT_KEYS;
  if (in->n > 2 || in->data_len != 1) return E_INVALID_ARGUMENT;
  Account *a = in->accounts;
  u8 *c;
  TRY(load_channel(&a[1], &c));
  if (!a[0].is_signer) return E_MISSING_SIGNATURE;
  if (!bytes_eq(a[0].key->x, c + C_PAYER, 32)) return E_INVALID_PAYER;
  if (c[C_STATUS] != STATUS_OPEN) return E_INVALID_STATUS;
  Clock clock;
  sol_get_clock_sysvar(&clock);
  c[C_STATUS] = STATUS_CLOSING;
  wr64(c + C_CLOSURE_STARTED_AT, (u64)clock.unix_timestamp);
  return 0;
}

// ---- seal (6) ----
__attribute__((noinline)) static u64 seal(Input *in) {
  if (in->n < 1) return E_NOT_ENOUGH_ACCOUNT_KEYS;
  if (in->n > 1 || in->data_len != 1) return E_INVALID_ARGUMENT;
  u8 *c;
  TRY(load_channel(&in->accounts[0], &c));
  if (c[C_STATUS] != STATUS_CLOSING) return E_INVALID_STATUS;
  Clock clock;
  sol_get_clock_sysvar(&clock);
  i64 started = (i64)rd64(c + C_CLOSURE_STARTED_AT);
  i64 deadline = started + (i64)rd32(c + C_GRACE_PERIOD);
  if (deadline < started) return E_SEAL_DEADLINE_OVERFLOW;
  if (clock.unix_timestamp < deadline) return E_SEAL_GRACE_NOT_ELAPSED;
  c[C_STATUS] = STATUS_SEALED;
  wr64(c + C_CLOSURE_STARTED_AT, 0);
  return 0;
}

// ---- distribute (7) ----

// floor(amount * bps / 10000) without 128-bit arithmetic (bps <= 10000).
static u64 share(u64 amount, u64 bps) {
  return (amount / BPS_DENOMINATOR) * bps + ((amount % BPS_DENOMINATOR) * bps) / BPS_DENOMINATOR;
}

__attribute__((noinline)) static u64 distribute(Input *in) {
  if (in->n < D_FIXED) return E_NOT_ENOUGH_ACCOUNT_KEYS;
  Account *a = in->accounts;
  u8 *c;
  TRY(load_channel(&a[D_CHANNEL], &c));
  u8 status = c[C_STATUS];
  if (status != STATUS_OPEN && status != STATUS_SEALED) return E_NOT_DISTRIBUTABLE;
  if (!bytes_eq(a[D_PAYER].key->x, c + C_PAYER, 32)) return E_INVALID_PAYER;
  if (!bytes_eq(a[D_RENT_PAYER].key->x, c + C_RENT_PAYER, 32)) return E_INVALID_RENT_PAYER;
  if (!bytes_eq(a[D_MINT].key->x, c + C_MINT, 32)) return E_INVALID_MINT;
  if (!key_eq(a[D_EVENT_AUTHORITY].key, &EVENT_AUTHORITY)) return E_INVALID_EVENT_AUTHORITY;
  if (!key_eq(a[D_SELF_PROGRAM].key, &PROGRAM_ID)) return E_INCORRECT_PROGRAM_ID;
  TRY(check_token_program(&a[D_TOKEN_PROGRAM], &a[D_MINT]));
  const Pubkey *tp = a[D_TOKEN_PROGRAM].key;
  const Pubkey *mint = a[D_MINT].key;

  // The committed splits preimage.
  const u8 *pre = in->data + 1;
  u64 pre_len = in->data_len - 1;
  if (in->data_len < 5) return E_INVALID_INSTRUCTION_DATA;
  u32 count = rd32(pre);
  if (count > MAX_RECIPIENTS) return E_INVALID_RECIPIENT_COUNT;
  if (pre_len != 4 + (u64)count * 34) return E_INVALID_INSTRUCTION_DATA;
  u8 hash[32];
  SolBytes preimage = {pre, pre_len};
  sol_sha256(&preimage, 1, hash);
  if (!bytes_eq(hash, c + C_DISTRIBUTION_HASH, 32)) return E_INVALID_DISTRIBUTION_HASH;
  if (in->n != D_FIXED + count) return E_RECIPIENT_COUNT_MISMATCH;

  TRY(check_ata(&a[D_CHANNEL_TOKEN], a[D_CHANNEL].key, tp, mint, E_INVALID_CHANNEL_TOKEN_ACCOUNT));
  TRY(check_ata(&a[D_PAYEE_TOKEN], (const Pubkey *)(c + C_PAYEE), tp, mint, E_PAYEE_ACCOUNT_MISMATCH));
  TRY(check_ata(&a[D_TREASURY_TOKEN], &TREASURY_OWNER, tp, mint, E_TREASURY_ACCOUNT_MISMATCH));
  if (status == STATUS_SEALED)
    TRY(check_ata(&a[D_PAYER_TOKEN], a[D_PAYER].key, tp, mint, E_PAYER_ACCOUNT_MISMATCH));

  u64 settled = rd64(c + C_SETTLED);
  u64 watermark = rd64(c + C_PAYOUT_WATERMARK);
  if (watermark > settled) return E_POOL_UNDERFLOW;
  if (status == STATUS_OPEN && settled == watermark) return E_NOTHING_TO_DISTRIBUTE;
  u64 escrow_at_entry = token_amount(&a[D_CHANNEL_TOKEN]);

  // Recipients' cumulative floor deltas, then the payee's implicit remainder.
  u64 paid = 0, bps_sum = 0;
  for (u32 i = 0; i < count; i++) {
    const u8 *e = pre + 4 + i * 34;
    Account *recipient = &a[D_FIXED + i];
    TRY(check_ata(recipient, (const Pubkey *)e, tp, mint, E_RECIPIENT_ACCOUNT_MISMATCH));
    u64 bps = rd16(e + 32);
    bps_sum += bps;
    u64 delta = share(settled, bps) - share(watermark, bps);
    if (delta) {
      TRY(pay_out(a, recipient, delta, c));
      paid += delta;
    }
  }
  if (bps_sum > BPS_DENOMINATOR) return E_INVALID_SPLIT_CONFIG;
  u64 remainder_bps = BPS_DENOMINATOR - bps_sum;
  u64 payee_delta = share(settled, remainder_bps) - share(watermark, remainder_bps);
  if (payee_delta) {
    TRY(pay_out(a, &a[D_PAYEE_TOKEN], payee_delta, c));
    paid += payee_delta;
  }
  wr64(c + C_PAYOUT_WATERMARK, settled);
  if (status == STATUS_OPEN) return 0;

  // SEALED: refund the unspent deposit, sweep residual dust to the treasury, close the escrow.
  u64 deposit = rd64(c + C_DEPOSIT);
  if (settled > deposit) return E_REFUND_UNDERFLOW;
  if (rd64(c + C_PAYER_WITHDRAWN_AT) == 0) {
    u64 refund = deposit - settled;
    if (refund) {
      TRY(pay_out(a, &a[D_PAYER_TOKEN], refund, c));
      paid += refund;
    }
    Clock clock;
    sol_get_clock_sysvar(&clock);
    wr64(c + C_PAYER_WITHDRAWN_AT, clock.unix_timestamp > 0 ? (u64)clock.unix_timestamp : 1);
  }
  if (paid > escrow_at_entry) return E_POOL_UNDERFLOW;
  u64 residual = escrow_at_entry - paid;
  if (residual)
    TRY(pay_out(a, &a[D_TREASURY_TOKEN], residual, c));
  TRY(close_token_account(&a[D_TOKEN_PROGRAM], &a[D_CHANNEL_TOKEN], &a[D_RENT_PAYER], &a[D_CHANNEL], c));

  Clock clock;
  sol_get_clock_sysvar(&clock);
  if (clock.slot > rd64(c + C_OPEN_SLOT) + OPEN_SLOT_WINDOW) return deallocate(&a[D_CHANNEL], &a[D_RENT_PAYER]);
  c[C_STATUS] = STATUS_DISTRIBUTED;
  return 0;
}

// ---- withdraw_payer (8) ----
__attribute__((noinline)) static u64 withdraw_payer(Input *in) {
  if (in->n < 6) return E_NOT_ENOUGH_ACCOUNT_KEYS;
  if (in->n > 6 || in->data_len != 1) return E_INVALID_ARGUMENT;
  Account *a = in->accounts;
  u8 *c;
  TRY(load_channel(&a[1], &c));
  if (!a[0].is_signer) return E_MISSING_SIGNATURE;
  if (!bytes_eq(a[0].key->x, c + C_PAYER, 32)) return E_INVALID_PAYER;
  if (c[C_STATUS] != STATUS_SEALED) return E_INVALID_STATUS;
  if (rd64(c + C_PAYER_WITHDRAWN_AT) != 0) return E_PAYER_ALREADY_WITHDRAWN;
  if (!bytes_eq(a[4].key->x, c + C_MINT, 32)) return E_INVALID_MINT;
  TRY(check_token_program(&a[5], &a[4]));
  TRY(check_ata(&a[2], a[1].key, a[5].key, a[4].key, E_INVALID_CHANNEL_TOKEN_ACCOUNT));
  TRY(check_ata(&a[3], a[0].key, a[5].key, a[4].key, E_PAYER_ACCOUNT_MISMATCH));
  TRY(check_channel_address(&a[1], c));
  u64 deposit = rd64(c + C_DEPOSIT), settled = rd64(c + C_SETTLED);
  if (settled > deposit) return E_REFUND_UNDERFLOW;
  if (deposit - settled) {
    Transfer t = {&a[5], &a[4], &a[2], &a[3], &a[1], c, deposit - settled};
    TRY(transfer_checked(&t));
  }
  Clock clock;
  sol_get_clock_sysvar(&clock);
  wr64(c + C_PAYER_WITHDRAWN_AT, clock.unix_timestamp > 0 ? (u64)clock.unix_timestamp : 1);
  return 0;
}

// ---- reclaim (9) ----
__attribute__((noinline)) static u64 reclaim(Input *in) {
  if (in->n < 2) return E_NOT_ENOUGH_ACCOUNT_KEYS;
  if (in->n > 2 || in->data_len != 1) return E_INVALID_ARGUMENT;
  Account *a = in->accounts;
  u8 *c;
  TRY(load_channel(&a[0], &c));
  if (c[C_STATUS] != STATUS_DISTRIBUTED) return E_INVALID_STATUS;
  if (!bytes_eq(a[1].key->x, c + C_RENT_PAYER, 32)) return E_INVALID_RENT_PAYER;
  if (!a[1].is_writable) return E_ACCOUNT_NOT_WRITABLE;
  Clock clock;
  sol_get_clock_sysvar(&clock);
  if (clock.slot <= rd64(c + C_OPEN_SLOT) + OPEN_SLOT_WINDOW) return E_CLOSE_TOO_EARLY;
  return deallocate(&a[0], &a[1]);
}

// ---- emit_event (228) ----
__attribute__((noinline)) static u64 emit_event(Input *in) {
  if (in->n < 1) return E_NOT_ENOUGH_ACCOUNT_KEYS;
  if (!in->accounts[0].is_signer || !key_eq(in->accounts[0].key, &EVENT_AUTHORITY)) return E_INVALID_EVENT_AUTHORITY;
  return 0;
}

u64 entrypoint(u8 *input) {
  Input in;
  TRY(deserialize(input, &in));
  if (in.data_len == 0) return E_INVALID_INSTRUCTION_DATA;
  switch (in.data[0]) {
  case 1:
    LOG("Instruction: Open");
    return open(&in);
  case 2:
    LOG("Instruction: Settle");
    return settle(&in);
  case 3:
    LOG("Instruction: TopUp");
    return top_up(&in);
  case 4:
    LOG("Instruction: SettleAndSeal");
    return settle_and_seal(&in);
  case 5:
    LOG("Instruction: RequestClose");
    return request_close(&in);
  case 6:
    LOG("Instruction: Seal");
    return seal(&in);
  case 7:
    LOG("Instruction: Distribute");
    return distribute(&in);
  case 8:
    LOG("Instruction: WithdrawPayer");
    return withdraw_payer(&in);
  case 9:
    LOG("Instruction: Reclaim");
    return reclaim(&in);
  case 228:
    return emit_event(&in);
  default:
    return E_INVALID_INSTRUCTION_DATA;
  }
}
