/**
 * Copying text to the clipboard: the Clipboard API where the page may use it, else a hidden
 * textarea and `execCommand('copy')` (an insecure origin, no focus).
 */

/** The browser did not copy (and gave no reason). */
export class CopyRefusedError extends Error {
  constructor() {
    super('the browser refused to copy');
    this.name = 'CopyRefusedError';
  }
}

/** Copies text to the clipboard (injectable for tests). */
export type CopyText = (text: string) => Promise<void>;

/** The clipboard, or a hidden textarea and `execCommand('copy')` where there is none. */
export async function copyToClipboard(text: string): Promise<void> {
  try {
    if (typeof navigator !== 'undefined' && navigator.clipboard?.writeText) {
      await navigator.clipboard.writeText(text);
      return;
    }
  } catch {
    // not allowed (no focus, insecure origin): the fallback below
  }
  const area = document.createElement('textarea');
  area.value = text;
  area.setAttribute('readonly', '');
  area.style.position = 'fixed';
  area.style.opacity = '0';
  document.body.appendChild(area);
  area.select();
  try {
    if (!document.execCommand('copy')) {
      throw new CopyRefusedError();
    }
  } finally {
    area.remove();
  }
}
