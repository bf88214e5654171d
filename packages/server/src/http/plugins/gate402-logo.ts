/**
 * gate402's mark for the API documentation's top bar and the browser tab: a gate (two posts and a bar)
 * beside the name, in the documentation bar's white on its dark background. Plain SVG, no external font.
 */
export const GATE402_LOGO_SVG = `<svg xmlns="http://www.w3.org/2000/svg" width="168" height="40" viewBox="0 0 168 40">
<rect x="4" y="6" width="6" height="28" rx="1" fill="#ffffff"/>
<rect x="30" y="6" width="6" height="28" rx="1" fill="#ffffff"/>
<rect x="4" y="14" width="32" height="5" fill="#49cc90"/>
<text x="46" y="28" font-family="system-ui, -apple-system, Segoe UI, Helvetica, Arial, sans-serif" font-size="22" font-weight="700" fill="#ffffff">gate402</text>
</svg>`;

/** The mark alone (the gate), for a favicon. */
export const GATE402_ICON_SVG = `<svg xmlns="http://www.w3.org/2000/svg" width="32" height="32" viewBox="0 0 40 40">
<rect width="40" height="40" rx="6" fill="#1b1b1b"/>
<rect x="6" y="6" width="6" height="28" rx="1" fill="#ffffff"/>
<rect x="28" y="6" width="6" height="28" rx="1" fill="#ffffff"/>
<rect x="6" y="14" width="28" height="5" fill="#49cc90"/>
</svg>`;
