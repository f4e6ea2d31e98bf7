import { ConversationRecorder } from './conversation-recorder';
import { ConversationResolver } from './conversation-resolver';
import { ConversationStore } from './conversation-store';
import { ProxyAuth } from './proxy-auth';
import { ProxySettings } from './proxy-settings';
import { ProxyService } from './proxy.service';
import { KeyedLock } from './session-lock';
import { UpstreamForwarder } from './upstream-forwarder';

/** The proxy's providers, registered by AppModule next to ProxyController. */
export const proxyProviders = [ProxyAuth, ProxySettings, ConversationStore, KeyedLock, ConversationRecorder, ConversationResolver, UpstreamForwarder, ProxyService];
