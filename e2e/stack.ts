// Where the e2e stack listens. The Playwright config starts these servers; tests read the URLs.
export const API_PORT = 3100;
export const DASHBOARD_PORT = 3101;
/** A second dashboard, pointed at a port where nothing listens, for the "API is down" pages. */
export const DASHBOARD_NO_API_PORT = 3102;

export const API_URL = `http://127.0.0.1:${API_PORT}`;
export const DASHBOARD_URL = `http://127.0.0.1:${DASHBOARD_PORT}`;
export const DASHBOARD_NO_API_URL = `http://127.0.0.1:${DASHBOARD_NO_API_PORT}`;
/** Port 1 (tcpmux, privileged): nothing listens there on a development or CI machine, unlike a high port another server may take. */
export const DEAD_API_URL = 'http://127.0.0.1:1';

/** The key the e2e API gives its default tenant (COMPACTOR_INIT_API_KEY): tests seed through the public API with it and enter it in Settings. */
export const E2E_API_KEY = 'e2e_dashboard_key_0123456789abcdef';
/** API and worker share one queue prefix, so appends that cross the threshold compact in the background. */
export const E2E_QUEUE_PREFIX = 'compactor-e2e';
