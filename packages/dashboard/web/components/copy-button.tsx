import { useState } from 'react';

/** Copies `text` to the clipboard and says so where screen readers hear it. */
export function CopyButton({ text, label }: { text: string; label: string }) {
  const [state, setState] = useState<'idle' | 'copied' | 'failed'>('idle');
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text);
      setState('copied');
    } catch {
      // Clipboard access needs a secure context (https or localhost); select-and-copy still works.
      setState('failed');
    }
  };
  return (
    <>
      <button type="button" className="secondary small" onClick={copy} aria-label={label}>
        Copy
      </button>
      <span className="copy-state" aria-live="polite">
        {state === 'copied' ? 'Copied' : state === 'failed' ? 'Copy failed; select the text instead' : ''}
      </span>
    </>
  );
}
