import { ConversationStore } from './conversation-store';
import { ProxyAuth } from './proxy-auth';
import { ProxySettings } from './proxy-settings';
import { ProxyService } from './proxy.service';

/** The proxy's providers, registered by AppModule next to ProxyController. */
export const proxyProviders = [ProxyAuth, ProxySettings, ConversationStore, ProxyService];
