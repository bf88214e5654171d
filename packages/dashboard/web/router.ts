import { useEffect, useState } from 'react';

/** The dashboard's pages live under /dashboard/<page>; the gateway answers index.html for each. */
const BASE = '/dashboard';

export function currentPage(): string {
  const rest = window.location.pathname.startsWith(BASE) ? window.location.pathname.slice(BASE.length) : '';
  return rest.replace(/^\/+|\/+$/g, '');
}

export function navigate(page: string): void {
  window.history.pushState(null, '', `${BASE}/${page}`);
  window.dispatchEvent(new PopStateEvent('popstate'));
}

/** The current page, kept in step with the address bar (links, back and forward). */
export function usePage(): string {
  const [page, setPage] = useState(currentPage);
  useEffect(() => {
    const update = () => setPage(currentPage());
    window.addEventListener('popstate', update);
    return () => window.removeEventListener('popstate', update);
  }, []);
  return page;
}
