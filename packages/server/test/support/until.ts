/** Waits (bounded) for `condition`, polling every 20 ms; throws, naming `what`, when it does not come in `ms`. */
export async function until(what: string, condition: () => Promise<boolean>, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
